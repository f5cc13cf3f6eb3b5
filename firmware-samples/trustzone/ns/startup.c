/*
 * Non-secure image startup: its vector table (VTOR_NS, set by the Secure
 * image), reset handler (entered from Secure code by a
 * cmse_nonsecure_call: LR holds FNC_RETURN) and a looping default
 * handler. Every fault of this sample goes to the Secure HardFault
 * (AIRCR.BFHFNMINS = 0).
 */
#include "../include/tz_api.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void NS_Default_Handler(void);
int main(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t ns_vector_table[16] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	NS_Default_Handler, NS_Default_Handler, NS_Default_Handler,
	NS_Default_Handler, NS_Default_Handler, 0, 0, 0, 0,
	NS_Default_Handler, NS_Default_Handler, 0,
	NS_Default_Handler, NS_Default_Handler,
};

FW_NOINLINE void NS_Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

/* Non-secure thread code runs on PSP_NS, as under an RTOS: switch before
 * anything is pushed (naked: no frame), then continue in ns_start. */
void ns_start(void);
__attribute__((naked)) void Reset_Handler(void)
{
	__asm volatile(
		"mrs r0, msp\n"
		"msr psp, r0\n"
		"mrs r0, control\n"
		"orr r0, r0, #2\n"
		"msr control, r0\n"
		"isb\n"
		"b ns_start\n");
}

void ns_start(void)
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
