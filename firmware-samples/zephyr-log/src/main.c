/*
 * Zephyr log buffer scenario for faultline's log decoding (logs package):
 * an application logs through our Zephyr-like deferred logger (zlog.h);
 * the "log thread" prints part of the messages to the UART, the ring
 * wraps, the last messages are still waiting when sensor_fail(3) executes
 * an undefined instruction (a UsageFault escalated to HardFault), whose
 * handler flushes them to the UART as Zephyr's panic does.
 */
#include <stdint.h>
#include "zlog.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

LOG_MODULE(app);
LOG_MODULE(sensor);

#define CPS 12000000u /* timestamp cycles per second */

__attribute__((noinline)) void sensor_fail(int id)
{
	(void)id;
	__builtin_trap();
}

__attribute__((noinline)) void sensor_report(int round, const char *name)
{
	char rw[16] = "dev-";
	rw[4] = (char)('0' + round);
	rw[5] = 0;
	z_log(&log_const_sensor, LOG_LEVEL_WRN, "sensor %s (%s) slow: %u ms", name, rw, 120u + round);
	z_log(&log_const_sensor, LOG_LEVEL_DBG, "%s: raw=0x%08x ll=%lld c=%c", __func__,
	      0xdeadbeefu + round, -1234567890123LL, 'Z');
	z_log(&log_const_sensor, LOG_LEVEL_INF, "n=%d ll=%lld u=%llu", round, 9876543210LL,
	      18446744073709551615ULL);
}

int main(void)
{
	static const uint8_t blob[] = {1, 2, 3, 0xfe, 'h', 'i', 0, 0x7f, 9, 10, 11, 12, 13, 14, 15, 16, 0x41};
	uint32_t t = 0;

	uart_init();
	log_init(CPS);
	uart_puts("*** Booting faultline zephyr-log sample ***\r\n");
	for (int i = 0; i < 14; i++) {
		t += CPS / 50 + 1237u * i;
		log_set_cycles(t);
		z_log(&log_const_app, LOG_LEVEL_INF, "warmup %d of %d", i, 14);
		if (i % 4 == 3) {
			while (log_process())
				;
		}
	}
	t += 3u * CPS + 777u;
	log_set_cycles(t);
	z_log(&log_const_app, LOG_LEVEL_ERR, "pressure %d.%02d kPa, %s", 101, 7, "ok");
	z_log(&log_const_app, LOG_LEVEL_INF, "[%-6s|%5d|%05d|%x|%X|%.3u]", "ab", -42, 42, 0xbeefu, 0xbeefu, 7u);
	log_process();
	t += 3600u * CPS; /* an hour, modulo 2^32 cycles (the counter wraps every 357.9 s) */
	log_set_cycles(t);
	sensor_report(3, "imu");
	z_log_hexdump(&log_const_app, LOG_LEVEL_INF, blob, sizeof blob, "blob");
	z_log(&log_const_app, LOG_LEVEL_INF, "about to crash: %p", (void *)&blob);
	sensor_fail(3);
	return 0;
}

void Reset_Handler(void)
{
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
	for (;;)
		;
}

void Default_Handler(void)
{
	for (;;)
		;
}

void HardFault_Handler(void)
{
	log_panic();
	for (;;)
		;
}
