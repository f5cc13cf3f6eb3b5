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
void ns_irq_handler(void);
int main(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t ns_vector_table[16 + NS_IRQ + 1] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	NS_Default_Handler, NS_Default_Handler, NS_Default_Handler,
	NS_Default_Handler, NS_Default_Handler, 0, 0, 0, 0,
	NS_Default_Handler, NS_Default_Handler, 0,
	NS_Default_Handler, NS_Default_Handler,
	[16 ... 16 + NS_IRQ - 1] = NS_Default_Handler,
	[16 + NS_IRQ] = ns_irq_handler,
};

FW_NOINLINE void NS_Default_Handler(void)
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
