/*
 * Startup of the exception-entry corpus, kept apart from ../../src/startup.c on
 * purpose: its vector table has 16 IRQs, no SVC, and IRQ UNMAPPED_IRQ pointing at
 * unmapped memory, which the shared table cannot express without moving the line
 * tables of every other sample. Reset, fault handlers, capture routine as there.
 */
#include "fw.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void NMI_Handler(void);
void HardFault_Handler(void);
void MemManage_Handler(void);
void BusFault_Handler(void);
void UsageFault_Handler(void);
void DebugMon_Handler(void);
void PendSV_Handler(void);
void SysTick_Handler(void);
void Default_Handler(void);

typedef void (*vector_t)(void);

#define N_IRQS 16

/* ARMv7-M vector table (B1.5.3): initial MSP, then exception handlers. */
__attribute__((section(".isr_vector"), used))
const vector_t vector_table[16 + N_IRQS] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	NMI_Handler,
	HardFault_Handler,
	MemManage_Handler,
	BusFault_Handler,
	UsageFault_Handler,
	0, 0, 0, 0,
	SVC_Handler,
	DebugMon_Handler,
	0,
	PendSV_Handler,
	SysTick_Handler,
	/* IRQ 0..15: UNMAPPED_IRQ's handler is nowhere (Thumb bit set). */
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, (vector_t)(uintptr_t)(UNMAPPED_HANDLER | 1u), Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
};

/* The fault handlers only loop: the oracle breaks on their first
 * instruction, where LR holds EXC_RETURN and SP points at the stacked
 * exception frame. */
FW_NOINLINE void HardFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void MemManage_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void BusFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void UsageFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE void NMI_Handler(void) { Default_Handler(); }
FW_NOINLINE void DebugMon_Handler(void) { Default_Handler(); }
FW_NOINLINE void PendSV_Handler(void) { Default_Handler(); }
FW_NOINLINE void SysTick_Handler(void) { Default_Handler(); }

void Reset_Handler(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss;)
		*dst++ = 0;
#if defined(__ARM_FP)
	REG32(0xE000ED88u) |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
	__asm volatile("dsb\n isb" ::: "memory");
#endif
	main();
	for (;;)
		__asm volatile("" ::: "memory");
}

volatile struct fl_sysregs fl_sysregs;

/*
 * Oracle support: QEMU's gdbstub does not expose MSP, PSP, CONTROL or the
 * mask registers. After the oracle has read everything else at the
 * HardFault breakpoint it sets PC here and continues to fl_capture_done.
 * The routine touches no stack and only clobbers r0/r1 (already captured).
 */
__attribute__((naked, used, section(".fl_oracle.capture")))
void fl_capture_sysregs(void)
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
		"b fl_capture_done\n");
}

__attribute__((naked, used, section(".fl_oracle.done")))
void fl_capture_done(void)
{
	__asm volatile("b fl_capture_done\n");
}
