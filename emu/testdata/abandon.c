// Test firmware for calls that are abandoned without a return (package
// emu, abandon_test.go): the shadow stack must drop them (uc/tracker.c,
// fl_prune). Built for Cortex-M0 (abandon-m0.elf: the switches go through
// libgcc's __gnu_thumb1_case_* helpers, which "return" into the caller's
// case code) and Cortex-M3 (abandon-m3.elf: TBB, no helper), both -Os and
// linked with newlib's setjmp/longjmp and libgcc; see the Makefile. The
// global crash_scenario (Config.Sets) selects what main does; every crash
// is a store to the unmapped address 0x70000000, a HardFault.
#include <setjmp.h>
#include <stdint.h>

#define NOINLINE __attribute__((noinline, noclone))
#define REG(a) (*(volatile uint32_t *)(a))
#define BAD REG(0x70000000)
#define NVIC_ISER0 REG(0xE000E100)
#define NVIC_ISPR0 REG(0xE000E200)

volatile uint32_t crash_scenario;
volatile uint32_t pick = 5; // the switch case taken
volatile uint32_t sink;
volatile uint32_t do_jump = 1; // keeps GCC from deducing that lj_* never return
static jmp_buf env;

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }
void IRQ0_Handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[17])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
	IRQ0_Handler,
};

NOINLINE void crash_leaf(uint32_t v) { BAD = v; }

// Eight different things to do, so that no switch becomes a table of values.
NOINLINE void op0(uint32_t v) { sink = v; }
NOINLINE void op1(uint32_t v) { sink = v + 1; }
NOINLINE void op2(uint32_t v) { sink = v ^ 2; }
NOINLINE void op3(uint32_t v) { sink = v * 3; }
NOINLINE void op4(uint32_t v) { sink = v - 4; }
NOINLINE void op6(uint32_t v) { sink = v << 6; }
NOINLINE void op7(uint32_t v) { sink = v >> 7; }

// Scenario 1: the switch helper, then a call from the case code: the call
// to crash_leaf is made at the SP the helper was called with.
NOINLINE void switch_then_call(uint32_t k, uint32_t v) {
	switch (k) {
	case 0: op0(v); break;
	case 1: op1(v); break;
	case 2: op2(v); break;
	case 3: op3(v); break;
	case 4: op4(v); break;
	case 5: crash_leaf(v); break;
	case 6: op6(v); break;
	case 7: op7(v); break;
	}
	sink = v;
}

// Scenario 2: the switch helper, then the case code itself crashes.
NOINLINE void switch_then_crash(uint32_t k, uint32_t v) {
	switch (k) {
	case 0: op0(v); break;
	case 1: op1(v); break;
	case 2: op2(v); break;
	case 3: op3(v); break;
	case 4: op4(v); break;
	case 5: BAD = v; break;
	case 6: op6(v); break;
	case 7: op7(v); break;
	}
	sink = v;
}

// longjmp from a few calls down, back into the function that called setjmp.
NOINLINE void lj_bottom(uint32_t v) {
	if (do_jump)
		longjmp(env, (int)v);
	sink = v;
}
NOINLINE void lj_mid(uint32_t v) {
	lj_bottom(v + 1);
	sink = v;
}
NOINLINE void lj_top(uint32_t v) {
	lj_mid(v + 1);
	sink = v;
}

// Scenario 3: after the longjmp the setjmp caller calls a function that
// crashes.
NOINLINE void lj_then_call(uint32_t v) {
	if (setjmp(env) == 0) {
		lj_top(v);
		return;
	}
	crash_leaf(v);
}

// Scenario 4: after the longjmp the setjmp caller crashes itself.
NOINLINE void lj_then_crash(uint32_t v) {
	if (setjmp(env) == 0) {
		lj_top(v);
		return;
	}
	BAD = v;
}

// Scenario 5: after the longjmp the setjmp caller is interrupted by IRQ 0,
// whose handler crashes: the interrupted level holds the abandoned calls.
void IRQ0_Handler(void) { crash_leaf(0x10); }
NOINLINE void lj_then_irq(uint32_t v) {
	if (setjmp(env) == 0) {
		lj_top(v);
		return;
	}
	NVIC_ISER0 = 1;
	NVIC_ISPR0 = 1;
	__asm volatile("dsb\n isb" ::: "memory");
	for (;;)
		sink = v;
}

// Scenario 6: longjmp out of 24 levels of recursion (more than the 16
// newest entries a return is looked up in); the setjmp caller returns
// without making a call and its caller crashes.
NOINLINE void lj_recurse(uint32_t n) {
	if (n == 0 && do_jump)
		longjmp(env, 1);
	if (n != 0)
		lj_recurse(n - 1);
	sink = n;
}
NOINLINE uint32_t lj_deep(uint32_t v) {
	if (setjmp(env) == 0) {
		lj_recurse(24);
		return 0;
	}
	return v + 1;
}
NOINLINE void lj_deep_caller(uint32_t v) {
	uint32_t r = lj_deep(v);
	BAD = r;
}

// Scenario 7: a noreturn chain whose middle function pushes nothing: its
// call to nr_last is made at the SP it was called with, and both calls are
// live.
__attribute__((noreturn)) NOINLINE void nr_last(uint32_t v) {
	BAD = v;
	for (;;) {}
}
__attribute__((noreturn, naked)) NOINLINE void nr_mid(uint32_t v) {
	(void)v;
	__asm volatile(".syntax unified\n adds r0, #1\n bl nr_last");
}
NOINLINE void nr_first(uint32_t v) {
	nr_mid(v + 1);
}

// Scenario 8: a function that calls itself without pushing anything
// (noreturn): every call is made at the same SP from the function it
// targets, and all of them are live. (No block starts at the return address
// of its self-call: a branch there would look like a return to the shadow
// stack, which cannot tell them apart at an equal SP.)
__attribute__((noreturn, naked)) NOINLINE void self_calls(uint32_t n) {
	(void)n;
	__asm volatile(".syntax unified\n"
	               "cmp r0, #0\n"
	               "bne 1f\n"
	               "movs r0, #8\n"
	               "bl crash_leaf\n"
	               "1: subs r0, #1\n"
	               "bl self_calls");
}

int main(void) {
	uint32_t v = crash_scenario;
	if (v == 1)
		switch_then_call(pick, v);
	else if (v == 2)
		switch_then_crash(pick, v);
	else if (v == 3)
		lj_then_call(v);
	else if (v == 4)
		lj_then_crash(v);
	else if (v == 5)
		lj_then_irq(v);
	else if (v == 6)
		lj_deep_caller(v);
	else if (v == 7)
		nr_first(v);
	else if (v == 8)
		self_calls(3);
	for (;;) {}
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
}
