/*
 * The console side: formats a message from its package as Zephyr's
 * log_output prints it with the default UART flags (timestamp, level, no
 * colours): "[hh:mm:ss.mmm,uuu] <lvl> module: text\r\n", a hexdump's bytes
 * in lines of 16 indented under the text. Our own printf subset: flags
 * '-' and '0', width, precision, l/ll/h, d i u x X c s p %.
 */
#include <stddef.h>
#include "zlog.h"

#define UART0 ((volatile uint32_t *)0x40004000u)

static uint32_t freq;
static uint32_t timestamp_div;

void uart_init(void)
{
	UART0[4] = 16; /* BAUDDIV */
	UART0[2] = 1;  /* CTRL: TX enable */
}

static uint32_t col; /* characters since the line's start */

static void out(char c)
{
	while (UART0[1] & 1u) /* STATE: TX full */
		;
	UART0[0] = (uint8_t)c;
	col = c == '\n' ? 0 : col + 1;
}

void uart_puts(const char *s)
{
	while (*s)
		out(*s++);
}

void log_output_timestamp_freq_set(uint32_t frequency)
{
	timestamp_div = 1;
	while (frequency > 1000000u) { /* keep the arithmetic in 32 bits */
		frequency /= 2u;
		timestamp_div *= 2u;
	}
	freq = frequency;
}

static void out_uint(unsigned long long v, unsigned base, int upper, int width, int zero, int left,
		     int prec, const char *prefix, int neg)
{
	char d[24];
	int n = 0;
	do {
		unsigned r = (unsigned)(v % base);
		d[n++] = (char)(r < 10 ? '0' + r : (upper ? 'A' : 'a') + r - 10);
		v /= base;
	} while (v && n < 24);
	int digits = n > prec ? n : prec;
	int plen = (neg ? 1 : 0);
	for (const char *p = prefix; *p; p++)
		plen++;
	int padn = width > digits + plen ? width - digits - plen : 0;
	if (!left && !(zero && prec < 0))
		for (; padn > 0; padn--)
			out(' ');
	if (neg)
		out('-');
	for (const char *p = prefix; *p; p++)
		out(*p);
	if (!left && zero && prec < 0)
		for (; padn > 0; padn--)
			out('0');
	for (int i = n; i < prec; i++)
		out('0');
	while (n)
		out(d[--n]);
	for (; left && padn > 0; padn--)
		out(' ');
}

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static const char *appended(const uint8_t *pkg, uint32_t word)
{
	const uint8_t *p = pkg + pkg[0] * 4 + pkg[2] + 2 * pkg[3];
	for (int k = 0; k < pkg[1]; k++) {
		if (*p == word)
			return (const char *)p + 1;
		p++;
		while (*p)
			p++;
		p++;
	}
	return NULL;
}

static void pkg_print(const uint8_t *pkg)
{
	const char *fmt = (const char *)rd32(pkg + 4);
	uint32_t off = 8;
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			out(*p);
			continue;
		}
		p++;
		int left = 0, zero = 0, width = 0, prec = -1, l = 0;
		for (; *p == '-' || *p == '0'; p++) {
			left |= *p == '-';
			zero |= *p == '0';
		}
		for (; *p >= '0' && *p <= '9'; p++)
			width = width * 10 + (*p - '0');
		if (*p == '.') {
			prec = 0;
			for (p++; *p >= '0' && *p <= '9'; p++)
				prec = prec * 10 + (*p - '0');
		}
		for (; *p == 'l' || *p == 'h'; p++)
			l += *p == 'l';
		if (*p == '%') {
			out('%');
			continue;
		}
		unsigned long long v;
		if (l == 2) {
			off = (off + 7) & ~7u;
			v = rd32(pkg + off) | (unsigned long long)rd32(pkg + off + 4) << 32;
			off += 8;
		} else {
			v = rd32(pkg + off);
			off += 4;
		}
		switch (*p) {
		case 'd':
		case 'i': {
			long long s = l == 2 ? (long long)v : (long long)(int32_t)v;
			out_uint(s < 0 ? 0ull - (unsigned long long)s : (unsigned long long)s, 10, 0, width, zero,
				 left, prec, "", s < 0);
			break;
		}
		case 'u':
			out_uint(v, 10, 0, width, zero, left, prec, "", 0);
			break;
		case 'x':
		case 'X':
			out_uint(v, 16, *p == 'X', width, zero, left, prec, "", 0);
			break;
		case 'p':
			out_uint(v, 16, 0, width, 0, left, prec, "0x", 0);
			break;
		case 'c':
			out((char)v);
			break;
		case 's': {
			const char *s = appended(pkg, off / 4 - 1);
			if (!s)
				s = (const char *)(uint32_t)v;
			int n = 0;
			while (s[n] && (prec < 0 || n < prec))
				n++;
			for (int i = n; !left && i < width; i++)
				out(' ');
			for (int i = 0; i < n; i++)
				out(s[i]);
			for (int i = n; left && i < width; i++)
				out(' ');
			break;
		}
		}
	}
}

static const char *const severity[] = {0, "err", "wrn", "inf", "dbg"};

static void dec(uint32_t v, int w)
{
	out_uint(v, 10, 0, w, 1, 0, -1, "", 0);
}

void log_output_msg_process(const uint32_t *msg)
{
	uint32_t h = msg[0];
	uint32_t level = (h >> 6) & 7, plen = (h >> 9) & 0x7ff, dlen = h >> 20;
	const struct log_source_const_data *src = (const void *)msg[1];
	uint32_t ts = msg[2] / timestamp_div;
	uint32_t s = ts / freq, hours = s / 3600u, mins, rem, ms, us;
	s -= hours * 3600u;
	mins = s / 60u;
	s -= mins * 60u;
	rem = ts % freq;
	ms = rem * 1000u / freq;
	us = 1000u * (rem * 1000u - ms * freq) / freq;
	out('[');
	dec(hours, 2);
	out(':');
	dec(mins, 2);
	out(':');
	dec(s, 2);
	out('.');
	dec(ms, 3);
	out(',');
	dec(us, 3);
	uart_puts("] <");
	uart_puts(severity[level]);
	uart_puts("> ");
	if (src) {
		uart_puts(src->name);
		uart_puts(": ");
	}
	uint32_t prefix = col;
	const uint8_t *pkg = (const uint8_t *)&msg[4];
	pkg_print(pkg);
	const uint8_t *data = pkg + plen;
	for (uint32_t k = 0; k < dlen; k += 16) {
		uart_puts("\r\n");
		for (uint32_t i = 0; i < prefix; i++)
			out(' ');
		for (uint32_t i = 0; i < 16; i++) {
			if (i && !(i % 8))
				out(' ');
			if (k + i < dlen) {
				out_uint(data[k + i], 16, 0, 2, 1, 0, -1, "", 0);
				out(' ');
			} else {
				uart_puts("   ");
			}
		}
		out('|');
		for (uint32_t i = 0; i < 16; i++) {
			if (i && !(i % 8))
				out(' ');
			uint8_t c = k + i < dlen ? data[k + i] : ' ';
			out(c >= 0x20 && c < 0x7f ? (char)c : '.');
		}
	}
	uart_puts("\r\n");
}
