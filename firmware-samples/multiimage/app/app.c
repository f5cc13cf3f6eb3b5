/*
 * Application of the faultline bootloader + application sample: its own
 * vectors (the bootloader points VTOR here), the header the bootloader
 * reads, and the two crash scenarios: a fault in the application's code,
 * and a fault inside the bootloader's CRC service the application calls
 * through the bootloader's table. Also the routine the QEMU/GDB oracle
 * runs to read MSP/PSP/CONTROL (QEMU's gdbstub has none).
 */
#include "../include/boot_api.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void app_Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);
void app_start(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t app_vectors[16] = {
	(vector_t)(uintptr_t)_estack, app_Reset_Handler,
	Default_Handler, HardFault_Handler, Default_Handler,
	Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0,
	Default_Handler, Default_Handler,
};

__attribute__((section(".app_header"), used))
const struct app_header app_header = { APP_HEADER_MAGIC, app_start };

volatile uint32_t crash_scenario = SCENARIO_APP_FAULT;
volatile uint32_t app_result;

FW_NOINLINE void HardFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE static void app_store(uint32_t v)
{
	*(volatile uint32_t *)UNMAPPED_ADDR = v;
}

FW_NOINLINE static uint32_t app_process(uint32_t v)
{
	app_store(v * 5u);
	return v + app_result;
}

FW_NOINLINE static uint32_t app_verify(void)
{
	const struct boot_api *api = BOOT_API;
	if (api->magic != BOOT_API_MAGIC)
		return 0;
	return api->crc32((const uint8_t *)UNMAPPED_ADDR, 16u) + 1u;
}

FW_NOINLINE static void app_main(void)
{
	switch (crash_scenario) {
	case SCENARIO_APP_FAULT:
		app_result = app_process(3u);
		break;
	case SCENARIO_BOOT_SERVICE:
		app_result = app_verify();
		break;
	}
	for (;;)
		__asm volatile("" ::: "memory");
}

/* Called by the bootloader (app_header.entry) on its stack. */
void app_start(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss; dst++)
		*dst = 0;
	app_main();
}

/* Only when the application is started without the bootloader. */
void app_Reset_Handler(void)
{
	app_start();
}

struct fl_sysregs {
	uint32_t magic, msp, psp, control, primask, basepri, faultmask;
};
__attribute__((used)) volatile struct fl_sysregs fl_sysregs;

/* Run by the oracle with PC set here after the fault state is recorded:
 * stores the special registers without using the stack, then stops at
 * fl_capture_done. Clobbers r0, r1. */
__attribute__((naked, used)) void fl_capture_sysregs(void)
{
	__asm volatile(
		"movw r0, #:lower16:fl_sysregs\n"
		"movt r0, #:upper16:fl_sysregs\n"
		"mrs r1, msp\n"
		"str r1, [r0, #4]\n"
		"mrs r1, psp\n"
		"str r1, [r0, #8]\n"
		"mrs r1, control\n"
		"str r1, [r0, #12]\n"
		"mrs r1, primask\n"
		"str r1, [r0, #16]\n"
		"mrs r1, basepri\n"
		"str r1, [r0, #20]\n"
		"mrs r1, faultmask\n"
		"str r1, [r0, #24]\n"
		"movw r1, #0xc0de\n"
		"movt r1, #0xfa17\n"
		"str r1, [r0, #0]\n"
		".global fl_capture_done\n"
		".thumb_func\n"
		"fl_capture_done:\n"
		"b fl_capture_done\n");
}
