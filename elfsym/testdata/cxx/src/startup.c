/*
 * Startup of the libstdc++ test firmware: the vector table, the reset
 * handler (copies .data, zeroes .bss, runs the constructors, calls main)
 * and the fault handlers. The firmware is symbolized, never run on a
 * board; it still is a complete image that boots in an emulator.
 */
#include <stdint.h>

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);
int main(void);

void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);

__attribute__((section(".isr_vector"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))_estack,
	Reset_Handler,
	Default_Handler,   /* NMI */
	HardFault_Handler, /* HardFault */
	Default_Handler,   /* MemManage */
	Default_Handler,   /* BusFault */
	Default_Handler,   /* UsageFault */
};

void Reset_Handler(void)
{
	uint32_t *s = _sidata, *d = _sdata;
	while (d < _edata)
		*d++ = *s++;
	for (d = _sbss; d < _ebss;)
		*d++ = 0;
	for (void (**f)(void) = __init_array_start; f < __init_array_end; f++)
		(*f)();
	main();
	for (;;)
		__asm__ volatile("bkpt #1");
}

void HardFault_Handler(void)
{
	for (;;)
		__asm__ volatile("bkpt #2");
}

void Default_Handler(void)
{
	for (;;)
		__asm__ volatile("bkpt #3");
}
