/*
 * faultline message sample: firmware that is told why it dies before it
 * dies. Each scenario goes through a reporting path whose arguments
 * faultline reads back from the crash dump (issue 24, item 2):
 *
 *   1 assert_newlib   newlib's assert(): __assert_func(file, line, func,
 *                     expr) -> abort() -> _exit() (UDF -> HardFault)
 *   2 vassert         a FreeRTOS-style configASSERT() calling our own
 *                     vAssertCalled(file, line), which traps (UDF)
 *   3 abort_direct    abort() called by the application
 *   4 stack_chk       a local array overflowed; -fstack-protector-strong's
 *                     canary check calls newlib's __stack_chk_fail
 *   5 message_buffer  crash_msg[] and last_error filled, then a BusFault
 *                     (for --message crash_msg / --message last_error)
 *   6 message_raw     crash_msg[] filled to its end with non-text bytes
 *                     and no NUL, last_error pointing at it, then a fault
 *   7 assert_old      newlib's older __assert(file, line, expr)
 *   8 assert_hook     the application's own assert hook, with its
 *                     arguments in the other order: app_assert_hook(line,
 *                     file) (for analyze --assert-hook app_assert_hook)
 *   9 assert_param    an STM32Cube-style assert_param(expr) calling the
 *                     application's assert_failed(uint8_t *file, line)
 *
 * Startup, vector table, fault handlers and the oracle's register capture
 * are the shared ../src/startup.c, linked with ../ld/mps2.ld.
 * crash_scenario selects the crash (the oracle sets it at main).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "../src/fw.h"

enum {
	SCENARIO_ASSERT_NEWLIB = 1,
	SCENARIO_VASSERT = 2,
	SCENARIO_ABORT_DIRECT = 3,
	SCENARIO_STACK_CHK = 4,
	SCENARIO_MESSAGE_BUFFER = 5,
	SCENARIO_MESSAGE_RAW = 6,
	SCENARIO_ASSERT_OLD = 7,
	SCENARIO_ASSERT_HOOK = 8,
	SCENARIO_ASSERT_PARAM = 9,
};

volatile uint32_t crash_scenario = SCENARIO_ASSERT_NEWLIB;
volatile uint32_t fw_sink;

/* The vector table names it; this sample pends no interrupt. */
void fl_crash_irq_handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

/* ---- 1: newlib assert ----------------------------------------------- */

#define QUEUE_MAX 8

struct queue {
	uint32_t n;
	uint32_t item[QUEUE_MAX];
};

static struct queue rx_queue;

FW_NOINLINE void queue_push(struct queue *q, uint32_t v)
{
	assert(q->n < QUEUE_MAX);
	q->item[q->n++] = v;
}

FW_NOINLINE void fill_queue(struct queue *q, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++)
		queue_push(q, 100u + i);
}

/* ---- 2: FreeRTOS-style configASSERT -> vAssertCalled ------------------- */

/* As a FreeRTOSConfig.h commonly defines it. */
#define configASSERT(x)                              \
	do {                                             \
		if ((x) == 0)                                \
			vAssertCalled(__FILE__, __LINE__);       \
	} while (0)

volatile uint32_t assert_line_seen;

/* The application's assert hook (FreeRTOS leaves it to the application):
 * interrupts off, then a trap so that the debugger (or our HardFault
 * handler) stops here. */
FW_NOINLINE __attribute__((noreturn)) void vAssertCalled(const char *pcFile, unsigned long ulLine)
{
	__asm volatile("cpsid i" ::: "memory");
	assert_line_seen = (uint32_t)ulLine + (uint32_t)(uintptr_t)pcFile;
	for (;;)
		__asm volatile("udf #0x42" ::: "memory");
}

struct task {
	const char *name;
	uint32_t prio;
};

FW_NOINLINE uint32_t task_create(const struct task *t, uint32_t max_prio)
{
	configASSERT(t->prio < max_prio);
	return t->prio;
}

/* ---- 3: abort ----------------------------------------------------------- */

FW_NOINLINE void storage_fail(uint32_t code)
{
	fw_sink = code;
	if (code != 0)
		abort();
}

/* ---- 4: stack protector ------------------------------------------------- */

volatile uint32_t overflow_len = 20;

FW_NOINLINE uint32_t parse_packet(const uint8_t *src)
{
	char buf[16];
	uint32_t n = overflow_len;
	for (uint32_t i = 0; i < n; i++)
		((volatile char *)buf)[i] = (char)src[i];
	return (uint32_t)buf[0] + (uint32_t)buf[15];
}

static const uint8_t packet[32] = {
	'H', 'D', 'R', ':', 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
	0x5a, 0x5a, 0x5a, 0x5a, 0xee, 0xee, 0xee, 0xee, 0xdd, 0xdd, 0xdd, 0xdd,
	0xcc, 0xcc, 0xcc, 0xcc, 0xbb, 0xbb, 0xbb, 0xbb,
};

/* ---- 5, 6: a message the firmware writes before faulting --------------- */

char crash_msg[64];
const char *last_error;

FW_NOINLINE void set_message(const char *s)
{
	uint32_t i = 0;
	for (; s[i] != 0 && i < sizeof crash_msg - 1; i++)
		((volatile char *)crash_msg)[i] = s[i];
	((volatile char *)crash_msg)[i] = 0;
}

FW_NOINLINE void fill_raw_message(void)
{
	for (uint32_t i = 0; i < sizeof crash_msg; i++)
		((volatile char *)crash_msg)[i] = (char)(i % 3 == 0 ? 0x80 + i : (i % 3 == 1 ? '"' : 'x'));
	((volatile char *)crash_msg)[10] = '\n';
	((volatile char *)crash_msg)[11] = 0x01;
	last_error = crash_msg;
}

FW_NOINLINE void sensor_read(uint32_t bus)
{
	REG32(UNMAPPED_ADDR) = bus;
}

/* ---- 7: newlib's older __assert ----------------------------------------- */

void __assert(const char *file, int line, const char *failedexpr);

FW_NOINLINE void legacy_check(uint32_t v)
{
	if (v > 3)
		__assert(__FILE__, __LINE__, "v <= 3");
}

/* ---- 8: the application's own hook, (line, file) ------------------------- */

FW_NOINLINE __attribute__((noreturn)) void app_assert_hook(uint32_t line, const char *file)
{
	assert_line_seen = line + (uint32_t)(uintptr_t)file;
	for (;;)
		__asm volatile("udf #0x43" ::: "memory");
}

#define APP_ASSERT(x)                                \
	do {                                             \
		if (!(x))                                    \
			app_assert_hook(__LINE__, __FILE__);     \
	} while (0)

FW_NOINLINE uint32_t mix_config(uint32_t mode)
{
	APP_ASSERT(mode < 4);
	return mode * 3u;
}

/* ---- 9: STM32Cube-style assert_param -> assert_failed ------------------- */

FW_NOINLINE __attribute__((noreturn)) void assert_failed(uint8_t *file, uint32_t line)
{
	assert_line_seen = line + (uint32_t)(uintptr_t)file;
	for (;;)
		__asm volatile("udf #0x44" ::: "memory");
}

#define assert_param(expr) ((expr) ? (void)0U : assert_failed((uint8_t *)__FILE__, __LINE__))

FW_NOINLINE void uart_init(uint32_t baud)
{
	assert_param(baud <= 115200u);
	fw_sink = baud;
}

/* ---- scenario selection --------------------------------------------------- */

extern uintptr_t __stack_chk_guard;

FW_NOINLINE void run_scenario(uint32_t which)
{
	static const struct task big = {"net", 9};
	switch (which) {
	case SCENARIO_ASSERT_NEWLIB:
		fill_queue(&rx_queue, QUEUE_MAX + 1);
		break;
	case SCENARIO_VASSERT:
		fw_sink = task_create(&big, 8);
		break;
	case SCENARIO_ABORT_DIRECT:
		storage_fail(which + 40);
		break;
	case SCENARIO_STACK_CHK:
		fw_sink = parse_packet(packet);
		break;
	case SCENARIO_MESSAGE_BUFFER:
		set_message("sensor 3: i2c timeout after 250 ms");
		last_error = "watchdog pet missed";
		sensor_read(3);
		break;
	case SCENARIO_MESSAGE_RAW:
		fill_raw_message();
		sensor_read(6);
		break;
	case SCENARIO_ASSERT_OLD:
		legacy_check(which);
		break;
	case SCENARIO_ASSERT_HOOK:
		fw_sink = mix_config(which);
		break;
	case SCENARIO_ASSERT_PARAM:
		uart_init(which * 100000u);
		break;
	}
}

int main(void)
{
	/* newlib sets the guard in a constructor this startup code does not
	 * run: give it a value as a real port would. */
	__stack_chk_guard = 0x5e1f0a17u;
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
