/*
 * Secure image startup: vector table (Secure VTOR resets to 0x10000000 on
 * the AN505), reset handler, fault handlers that loop, and the routine the
 * QEMU/GDB oracle runs to read the banked stack pointers (QEMU's gdbstub
 * gives GDB no MSP_NS/PSP_NS/CONTROL_NS).
 */
#include "../include/tz_api.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void HardFault_Handler(void);
void SecureFault_Handler(void);
void Default_Handler(void);
int main(void);

typedef void (*vector_t)(void);

/* ARMv8-M vector table (B3.30): initial MSP_S, then handlers; 7 is
 * SecureFault. */
__attribute__((section(".isr_vector"), used))
const vector_t vector_table[16] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	Default_Handler,     /* NMI */
	HardFault_Handler,
	Default_Handler,     /* MemManage */
	Default_Handler,     /* BusFault */
	Default_Handler,     /* UsageFault */
	SecureFault_Handler,
	0, 0, 0,
	Default_Handler,     /* SVCall */
	Default_Handler,     /* DebugMonitor */
	0,
	Default_Handler,     /* PendSV */
	Default_Handler,     /* SysTick */
};

FW_NOINLINE void HardFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void SecureFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

void Reset_Handler(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss; dst++)
		*dst = 0;
	main();
	for (;;)
		__asm volatile("" ::: "memory");
}

/* What fl_capture_sysregs stores; read by the oracle. */
struct fl_sysregs {
	uint32_t magic;
	uint32_t msp_s, psp_s, msp_ns, psp_ns, control_s, control_ns;
};
__attribute__((used)) volatile struct fl_sysregs fl_sysregs;

/* Runs with PC set by the debugger after the fault state is recorded:
 * reads the banked stack pointers and CONTROLs (MRS with the _NS
 * encodings, ARMv8-M ARM C2.4.104) into fl_sysregs without touching the
 * stack, then stops at fl_capture_done. Clobbers r0, r1. */
__attribute__((naked, used)) void fl_capture_sysregs(void)
{
	__asm volatile(
		"movw r0, #:lower16:fl_sysregs\n"
		"movt r0, #:upper16:fl_sysregs\n"
		"mrs r1, msp\n"
		"str r1, [r0, #4]\n"
		"mrs r1, psp\n"
		"str r1, [r0, #8]\n"
		"mrs r1, msp_ns\n"
		"str r1, [r0, #12]\n"
		"mrs r1, psp_ns\n"
		"str r1, [r0, #16]\n"
		"mrs r1, control\n"
		"str r1, [r0, #20]\n"
		"mrs r1, control_ns\n"
		"str r1, [r0, #24]\n"
		"movw r1, #0xc0de\n"
		"movt r1, #0xfa17\n"
		"str r1, [r0, #0]\n"
		".global fl_capture_done\n"
		".thumb_func\n"
		"fl_capture_done:\n"
		"b fl_capture_done\n");
}
