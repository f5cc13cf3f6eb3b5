// Test firmware for a lockup (package emu and the CLI, lockup_test.go):
// unbounded recursion on Cortex-M0 runs the main stack down past the start
// of SRAM; the push that leaves SRAM faults, the HardFault entry cannot
// stack its frame below SRAM either, and the core locks up. See the
// Makefile.
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

volatile uint32_t sink;

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	0, 0, 0, 0, 0, 0, 0, Default_Handler, 0, 0, Default_Handler, Default_Handler,
};

#pragma GCC diagnostic ignored "-Winfinite-recursion"
NOINLINE uint32_t descend(uint32_t n) {
	volatile uint32_t local[6];
	local[0] = n;
	return descend(n + 1) + local[0];
}

int main(void) {
	sink = descend(0);
	return 0;
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
	for (;;) {}
}
