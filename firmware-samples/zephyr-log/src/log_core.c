/*
 * The packet ring and the message layout (Zephyr 3.x log_msg):
 *   struct log_msg (zlog.h): the descriptor word (valid:1 busy:1 type:1
 *   domain:3 level:3 package_len:11 data_len:12), the source (struct
 *   log_source_const_data *), the timestamp (cycles), padding to the
 *   package's 8-byte alignment
 *   then the package, then the hexdump data; the message padded to 8 bytes.
 * The package: a descriptor word (length in words, appended strings,
 * read-only and read-write string index counts), the format pointer, the
 * arguments (4-byte slots, long long 8-aligned), then each string copied
 * from RAM as its argument's word index and its bytes with the NUL.
 * The ring's skip item (valid 0, busy 1, length in words from bit 2) pads
 * its end when a message does not fit there.
 */
#include <stdarg.h>
#include <stddef.h>
#include "zlog.h"

struct mpsc_pbuf_buffer {
	uint32_t tmp_wr_idx;
	uint32_t wr_idx;
	uint32_t tmp_rd_idx;
	uint32_t rd_idx;
	uint32_t flags;
	void (*notify_drop)(void);
	uint32_t (*get_wlen)(const uint32_t *item);
	uint32_t *buf;
	uint32_t size;
	uint32_t max_usage;
	uint32_t sem[2];
};

#define BUF_WORDS 128
static uint32_t buf32[BUF_WORDS] __attribute__((aligned(8)));
static struct mpsc_pbuf_buffer log_buffer;
static uint32_t cycles;
uint32_t dropped_cnt;

static uint32_t msg_wlen(const uint32_t *item)
{
	uint32_t h = item[0];
	uint32_t bytes = 16 + ((h >> 9) & 0x7ff) + (h >> 20);
	return ((bytes + 7) & ~7u) / 4;
}

void log_init(uint32_t cycles_per_sec)
{
	log_buffer.buf = buf32;
	log_buffer.size = BUF_WORDS;
	log_buffer.get_wlen = msg_wlen;
	log_buffer.flags = 1;
	log_output_timestamp_freq_set(cycles_per_sec);
}

void log_set_cycles(uint32_t c) { cycles = c; }

static uint32_t used_words(void)
{
	return (log_buffer.wr_idx + BUF_WORDS - log_buffer.rd_idx) % BUF_WORDS;
}

/* Reserves wlen words; a skip item pads the end when they do not fit
 * there. Drops the message (counted) when the ring is full. */
static uint32_t *msg_alloc(uint32_t wlen)
{
	uint32_t wr = log_buffer.tmp_wr_idx;
	uint32_t need = wlen + (wr + wlen > BUF_WORDS ? BUF_WORDS - wr : 0);
	if (used_words() + need >= BUF_WORDS) {
		dropped_cnt++;
		return NULL;
	}
	if (wr + wlen > BUF_WORDS) {
		buf32[wr] = 2u | ((BUF_WORDS - wr) << 2);
		wr = 0;
		log_buffer.wr_idx = 0;
	}
	log_buffer.tmp_wr_idx = (wr + wlen) % BUF_WORDS;
	return &buf32[wr];
}

__attribute__((noinline)) void z_log_msg_finalize(struct log_msg *msg, const void *source,
						  struct log_msg_desc desc)
{
	msg->hdr.source = source;
	msg->hdr.timestamp = cycles;
	for (unsigned i = 0; i < sizeof msg->padding; i++)
		msg->padding[i] = 0;
	desc.valid = 1; /* committed */
	msg->hdr.desc = desc;
	log_buffer.wr_idx = log_buffer.tmp_wr_idx;
	uint32_t u = used_words();
	if (u > log_buffer.max_usage)
		log_buffer.max_usage = u;
}

static int in_ram(const char *s) { return (uint32_t)s >= 0x20000000u; }

/* Builds the package of fmt's arguments into pkg (NULL: size only). */
static uint32_t package(uint8_t *pkg, const char *fmt, va_list ap)
{
	uint32_t off = 8, nstr = 0;
	uint8_t locs[8];
	const char *strs[8];
	for (const char *p = fmt; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		while (*p == '-' || *p == '0' || *p == '+' || *p == ' ' || *p == '#' ||
		       (*p >= '1' && *p <= '9') || *p == '.')
			p++;
		int ll = 0;
		while (*p == 'l' || *p == 'h') {
			ll += *p == 'l';
			p++;
		}
		if (*p == '%')
			continue;
		if (ll == 2) {
			off = (off + 7) & ~7u;
			long long v = va_arg(ap, long long);
			if (pkg) {
				for (int i = 0; i < 8; i++)
					pkg[off + i] = (uint8_t)((unsigned long long)v >> (8 * i));
			}
			off += 8;
			continue;
		}
		uint32_t v;
		if (*p == 's') {
			const char *s = va_arg(ap, const char *);
			v = (uint32_t)s;
			if (in_ram(s) && nstr < 8) {
				locs[nstr] = (uint8_t)(off / 4);
				strs[nstr++] = s;
			}
		} else if (*p == 'p') {
			v = (uint32_t)va_arg(ap, void *);
		} else {
			v = (uint32_t)va_arg(ap, int);
		}
		if (pkg) {
			for (int i = 0; i < 4; i++)
				pkg[off + i] = (uint8_t)(v >> (8 * i));
		}
		off += 4;
	}
	uint32_t len = off;
	if (pkg) {
		pkg[0] = (uint8_t)(off / 4);
		pkg[1] = (uint8_t)nstr;
		pkg[2] = 0;
		pkg[3] = 0;
		uint32_t f = (uint32_t)fmt;
		for (int i = 0; i < 4; i++)
			pkg[4 + i] = (uint8_t)(f >> (8 * i));
	}
	for (uint32_t k = 0; k < nstr; k++) {
		if (pkg)
			pkg[len] = locs[k];
		len++;
		const char *s = strs[k];
		do {
			if (pkg)
				pkg[len] = (uint8_t)*s;
			len++;
		} while (*s++);
	}
	return len;
}

static void vlog(const struct log_source_const_data *src, int level, const void *data,
		 uint32_t dlen, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	uint32_t plen = package(NULL, fmt, ap2);
	va_end(ap2);
	uint32_t wlen = ((16 + plen + dlen + 7) & ~7u) / 4;
	uint32_t *msg = msg_alloc(wlen);
	if (!msg)
		return;
	struct log_msg *m = (struct log_msg *)msg;
	uint8_t *pkg = m->data;
	package(pkg, fmt, ap);
	for (uint32_t i = 0; i < dlen; i++)
		pkg[plen + i] = ((const uint8_t *)data)[i];
	struct log_msg_desc desc = {.level = (uint32_t)level, .package_len = plen, .data_len = dlen};
	z_log_msg_finalize(m, src, desc);
}

void z_log(const struct log_source_const_data *src, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(src, level, NULL, 0, fmt, ap);
	va_end(ap);
}

void z_log_hexdump(const struct log_source_const_data *src, int level, const void *data,
		   uint32_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(src, level, data, len, fmt, ap);
	va_end(ap);
}

int log_process(void)
{
	uint32_t rd = log_buffer.rd_idx;
	if (rd == log_buffer.wr_idx)
		return 0;
	uint32_t *item = &buf32[rd];
	if ((item[0] & 3) == 2) { /* skip item */
		log_buffer.rd_idx = log_buffer.tmp_rd_idx = (rd + (item[0] >> 2)) % BUF_WORDS;
		return log_process();
	}
	item[0] |= 2; /* claimed */
	log_buffer.tmp_rd_idx = (rd + msg_wlen(item)) % BUF_WORDS;
	log_output_msg_process(item);
	item[0] &= ~3u; /* freed */
	log_buffer.rd_idx = log_buffer.tmp_rd_idx;
	return 1;
}

void log_panic(void)
{
	for (int n = 0; n < BUF_WORDS && log_process(); n++)
		;
}
