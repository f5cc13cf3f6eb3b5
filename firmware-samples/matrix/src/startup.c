/*
 * Startup for the faultline sample matrix: vector table, Reset_Handler
 * (.data/.bss, FPU enable, C++ constructors, main) and the fault handlers.
 * Always compiled as C.
 */
#include "fw.h"

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

/* Vector table (ARMv7-M B1.5.3; the same layout on v6-M and v8-M, where
 * the v7-M-only entries are reserved). */
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
	/* IRQ 0..15 */
	Default_Handler, Default_Handler, Default_Handler, fw_irq_nested_handler,
#if defined(FW_FPU)
	fw_irq_lazyfp_handler,
#else
	Default_Handler,
#endif
	Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
};

/* The fault handlers loop: faultline emulate stops at their first
 * instruction. Separate functions, so a backtrace names the exception. */
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
FW_NOINLINE void PendSV_Handler(void) { Default_Handler(); }
FW_NOINLINE void SysTick_Handler(void) { Default_Handler(); }

void Reset_Handler(void)
{
#if defined(FW_FPU)
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
