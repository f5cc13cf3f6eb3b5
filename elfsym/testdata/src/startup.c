/* Minimal Cortex-M startup for the elfsym test programs. */
#include <stdint.h>

extern uint32_t _estack;
extern uint32_t _sidata, _sdata, _edata, _sramfunc, _eramfunc, _siramfunc;
int main(void);

void Reset_Handler(void)
{
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	src = &_siramfunc;
	for (dst = &_sramfunc; dst < &_eramfunc;)
		*dst++ = *src++;
	main();
	for (;;)
		;
}

void Default_Handler(void)
{
	for (;;)
		;
}

__attribute__((section(".isr_vector"), used))
const void *const g_pfnVectors[16] = {
	&_estack,
	Reset_Handler,
	Default_Handler,	/* NMI */
	Default_Handler,	/* HardFault */
};
