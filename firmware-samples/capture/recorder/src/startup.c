/*
 * Startup code of the allocation recorder's sample firmware: the vector
 * table (HardFault goes to the capture handler, faultline_capture.c), the
 * reset handler (.data/.bss, main, exit through semihosting).
 */
#include "fw.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void HardFault_Handler(void); /* faultline_capture.c */
void Default_Handler(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t vector_table[16] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	Default_Handler,   /* NMI */
	HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, /* MemManage, BusFault, UsageFault */
	0, 0, 0, 0,
	Default_Handler,   /* SVCall */
	Default_Handler,   /* DebugMonitor */
	0,
	Default_Handler,   /* PendSV */
	Default_Handler,   /* SysTick */
};

FW_NOINLINE void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

/* Semihosting SYS_EXIT_EXTENDED (0x20): reason ADP_Stopped_ApplicationExit
 * and the status. */
void fw_exit(int status)
{
	static volatile uint32_t block[2];
	block[0] = 0x20026u;
	block[1] = (uint32_t)status;
	register uint32_t r0 __asm("r0") = 0x20u;
	register volatile uint32_t *r1 __asm("r1") = block;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	for (;;)
		__asm volatile("" ::: "memory");
}

void Reset_Handler(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss;)
		*dst++ = 0;
	fw_exit(main());
}
