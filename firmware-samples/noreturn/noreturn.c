// faultline test firmware: a call to a noreturn function as the very last
// instruction of its caller. The return address the BL leaves in LR is then
// the first byte of the next function, and every tool that looks up a
// return address must look at the call (PC-1), not at PC. The crash
// happens inside the noreturn callee, two ordinary frames below it.
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
volatile uint32_t sink;
volatile uint32_t crash_scenario = 1;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

// Scenario 1: an undefined instruction in the noreturn callee.
NOINLINE __attribute__((noreturn)) void fail_trap(uint32_t code) {
	sink = code;
	__builtin_trap();
}

// Scenario 2: a store to an unmapped address in the noreturn callee.
NOINLINE __attribute__((noreturn)) void fail_store(uint32_t code) {
	*(volatile uint32_t *)0x70000000 = code;
	for (;;) {}
}

// The calls to fail_* are the last instructions of these functions.
NOINLINE void check_range(uint32_t v) {
	if (v > 100) {
		sink = v;
		return;
	}
	fail_trap(v);
}

NOINLINE void check_store(uint32_t v) {
	if (v > 100) {
		sink = v;
		return;
	}
	fail_store(v);
}

NOINLINE void worker(uint32_t scenario) {
	if (scenario == 2) {
		check_store(scenario);
	} else {
		check_range(scenario);
	}
	sink = 9;
}

int main(void) {
	worker(crash_scenario);
	for (;;) {}
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata;
	for (uint32_t *dst = &_sdata; dst < &_edata;) {
		*dst++ = *src++;
	}
	for (uint32_t *dst = &_sbss; dst < &_ebss;) {
		*dst++ = 0;
	}
	main();
}
