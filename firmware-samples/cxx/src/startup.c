/*
 * Startup code for the faultline C++ corpus: vector table, reset handler
 * (.data/.bss, FPU enable, C++ constructors, main), fault handlers, the
 * NULL guard of the MPU and the register-capture routine the QEMU/GDB
 * oracle jumps to (fixtures/oracle/). Always compiled as C.
 */
#include "fw.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
typedef void (*fw_ctor_t)(void);
extern fw_ctor_t __preinit_array_start[], __preinit_array_end[];
extern fw_ctor_t __init_array_start[], __init_array_end[];

void Reset_Handler(void);
void NMI_Handler(void);
void HardFault_Handler(void);
void MemManage_Handler(void);
void BusFault_Handler(void);
void UsageFault_Handler(void);
void SVC_Handler(void);
void DebugMon_Handler(void);
void PendSV_Handler(void);
void SysTick_Handler(void);
void Default_Handler(void);

typedef void (*vector_t)(void);

#define N_IRQS 16

/* ARMv7-M vector table (B1.5.3). */
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
	/* IRQ 0..15; CRASH_IRQ (5) is the one the irq_stir scenario pends. */
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, fw_irq_handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
};

/* The fault handlers loop: the oracle breaks on their first instruction,
 * faultline emulate stops there. Separate functions, so a backtrace names
 * the exception. */
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
FW_NOINLINE void SVC_Handler(void) { Default_Handler(); }
FW_NOINLINE void DebugMon_Handler(void) { Default_Handler(); }
FW_NOINLINE void SysTick_Handler(void) { Default_Handler(); }

/* PendSV does the deferred work of the pendsv_icsr scenario. */
void PendSV_Handler(void)
{
	fw_pendsv_handler();
}

/* MPU region 0: base 0, 32 bytes, no access, XN; the rest of memory keeps
 * the default map (PRIVDEFENA). Address 0 is RAM on the MPS2 boards, so
 * without it a NULL access would not fault. HFNMIENA=0: HardFault runs
 * with the MPU off. */
void fl_mpu_guard_null(void)
{
	MPU_RNR = 0;
	MPU_RBAR = 0x00000000u;
	MPU_RASR = (1u << 28) | (0u << 24) | (4u << 1) | 1u;
	MPU_CTRL = (1u << 2) | 1u;
	__asm volatile("dsb\n isb" ::: "memory");
}

void Reset_Handler(void)
{
#if defined(__ARM_FP)
	/* CP10/CP11 full access before any FP instruction (B3.2.20). */
	SCB_CPACR |= 0xFu << 20;
	__asm volatile("dsb\n\tisb" ::: "memory");
#endif
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss;)
		*dst++ = 0;
	for (fw_ctor_t *c = __preinit_array_start; c < __preinit_array_end; c++)
		(*c)();
	for (fw_ctor_t *c = __init_array_start; c < __init_array_end; c++)
		(*c)();
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
