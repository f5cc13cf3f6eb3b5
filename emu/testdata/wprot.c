// Test firmware for a write to read-only memory (flash) made by a
// conditional store in an IT block, in a leaf function (package emu,
// wprot_test.go; issue 23, item 14). Unicorn skips such a write and runs
// the rest of the block before it stops: the harness must still capture
// the state before the store, in the leaf. Cortex-M3, -Os; see the
// Makefile.
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

volatile uint32_t sink;
volatile uint32_t keys[8] = {3, 1, 4, 1, 5, 9, 2, 6};

// In flash (.rodata): read-only on the emulator's map.
const uint32_t table[4] = {10, 20, 30, 40};

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

// A comparator-like leaf: notes equal keys through a pointer (to flash),
// a conditional store; returns a < b.
NOINLINE int note_equal(uint32_t *log, uint32_t a, uint32_t b) {
	if (a == b)
		*log = a;
	return a < b;
}

NOINLINE uint32_t count_less(uint32_t *log) {
	uint32_t n = 0;
	for (int i = 0; i + 1 < 8; i++)
		n += (uint32_t)note_equal(log, keys[i], keys[i + 1] == 9 ? keys[i] : keys[i + 1]);
	return n;
}

int main(void) {
	sink = count_less((uint32_t *)&table[1]);
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
