/*
 * RTT log scenario for faultline's log discovery (logs package): the
 * firmware keeps an RTT-layout control block (the layout SEGGER publishes:
 * 16-byte ID, up/down buffer counts, then per buffer name, pointer, size,
 * write offset, read offset, flags) written by our own minimal writer, logs
 * a few lines (a host "reads" the first ones, so the ring later wraps),
 * keeps its own last message and a ring of its own, then executes an
 * undefined instruction (a UsageFault escalated to HardFault).
 */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

struct rtt_buffer {
	const char *name;
	char *buf;
	uint32_t size;
	volatile uint32_t wr;
	volatile uint32_t rd;
	uint32_t flags;
};

struct rtt_cb {
	char id[16];
	int32_t max_up;
	int32_t max_down;
	struct rtt_buffer up[2];
	struct rtt_buffer down[1];
};

struct rtt_cb rtt_control_block;
static char term_buf[64];
static char trace_buf[128];
static char down_buf[16];

/* The firmware's own log: the last message and a ring with its write index. */
char last_message[48];
char log_ring[32];
uint32_t log_head;

static void rtt_init(void) {
	struct rtt_cb *cb = &rtt_control_block;
	cb->max_up = 2;
	cb->max_down = 1;
	cb->up[0] = (struct rtt_buffer){"Terminal", term_buf, sizeof term_buf, 0, 0, 0};
	cb->up[1] = (struct rtt_buffer){"Trace", trace_buf, sizeof trace_buf, 0, 0, 0};
	cb->down[0] = (struct rtt_buffer){"Terminal", down_buf, sizeof down_buf, 0, 0, 0};
	/* The ID last: a reader never sees a half-built block. */
	static const char id[] = "SEGGER RTT";
	for (unsigned i = 0; i < sizeof id; i++)
		((volatile char *)cb->id)[i] = id[i];
}

/* Writes s whole if it fits (the ring keeps one byte free), else drops it. */
static void rtt_write(int ch, const char *s) {
	struct rtt_buffer *b = &rtt_control_block.up[ch];
	uint32_t n = 0;
	while (s[n])
		n++;
	uint32_t wr = b->wr, rd = b->rd;
	uint32_t space = (rd + b->size - wr - 1) % b->size;
	if (n > space)
		return;
	for (uint32_t i = 0; i < n; i++) {
		b->buf[wr] = s[i];
		wr = (wr + 1) % b->size;
	}
	b->wr = wr;
}

/* What the host does when it reads a buffer. */
static void host_read(int ch) { rtt_control_block.up[ch].rd = rtt_control_block.up[ch].wr; }

static void own_log(const char *s) {
	uint32_t i = 0;
	for (; s[i] && i < sizeof last_message - 1; i++)
		last_message[i] = s[i];
	last_message[i] = 0;
	for (i = 0; s[i]; i++) {
		log_ring[log_head] = s[i];
		log_head = (log_head + 1) % sizeof log_ring;
	}
}

__attribute__((noinline)) void sensor_fail(int id) {
	(void)id;
	__builtin_trap();
}

int main(void) {
	static const char *const ticks[] = {"tick 1\n", "tick 2\n", "tick 3\n", "tick 4\n", "tick 5\n", "tick 6\n"};
	rtt_init();
	rtt_write(0, "boot\n");
	rtt_write(0, "init ok\n");
	host_read(0);
	for (unsigned i = 0; i < 6; i++)
		rtt_write(0, ticks[i]);
	rtt_write(1, "trace: start\t\x01\n");
	rtt_write(0, "sensor 3 timeout\n");
	own_log("adc ready;");
	own_log("sensor 3 timeout;");
	own_log("giving up");
	sensor_fail(3);
	return 0;
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
	for (;;)
		;
}

void Default_Handler(void) {
	for (;;)
		;
}

void HardFault_Handler(void) {
	for (;;)
		;
}
