/*
 * Vector table and reset handler of the rtk test firmware. The fault
 * handlers only loop: the oracle breaks on HardFault_Handler's first
 * instruction.
 */
#include <stdint.h>

extern uint32_t _estack[], _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
int main(void);
void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);
void SVC_Handler(void);
void PendSV_Handler(void);
void SysTick_Handler(void);
void device_irq_handler(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t vector_table[16 + 8] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	Default_Handler, /* NMI */
	HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, /* MemManage, BusFault, UsageFault */
	0, 0, 0, 0,
	SVC_Handler,
	Default_Handler, /* DebugMon */
	0,
	PendSV_Handler,
	SysTick_Handler,
	device_irq_handler, /* IRQ 0 */
	Default_Handler, Default_Handler, Default_Handler,
	Default_Handler, Default_Handler, Default_Handler, Default_Handler,
};

__attribute__((noinline)) void HardFault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

void Reset_Handler(void)
{
	uint32_t *s = _sidata, *d = _sdata;
	while (d < _edata)
		*d++ = *s++;
	for (d = _sbss; d < _ebss;)
		*d++ = 0;
#if defined(__ARM_FP)
	*(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
	__asm volatile("dsb\n\tisb" ::: "memory");
#endif
	main();
	for (;;)
		;
}

/*
 * For the oracle: QEMU's gdbstub does not expose MSP, PSP or CONTROL, so
 * GDB sets PC here (from the HardFault breakpoint) and reads rtk_sysregs
 * at rtk_capture_done. Uses only r0 and r1.
 */
__attribute__((used)) volatile uint32_t rtk_sysregs[4]; /* msp, psp, control, primask */

__attribute__((naked, used, section(".rtk_oracle.done"))) void rtk_capture_done(void)
{
	__asm volatile("b rtk_capture_done\n\t");
}

__attribute__((naked, used, section(".rtk_oracle.sysregs"))) void rtk_capture_sysregs(void)
{
	__asm volatile(
		".syntax unified\n\t"
		"ldr r0, =rtk_sysregs\n\t"
		"mrs r1, msp\n\t"
		"str r1, [r0, #0]\n\t"
		"mrs r1, psp\n\t"
		"str r1, [r0, #4]\n\t"
		"mrs r1, control\n\t"
		"str r1, [r0, #8]\n\t"
		"mrs r1, primask\n\t"
		"str r1, [r0, #12]\n\t"
		"b rtk_capture_done\n\t"
		".ltorg\n\t");
}
