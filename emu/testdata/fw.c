// Test firmware for package emu. One image, many crashes: the global
// crash_scenario (set with Config.Sets, like --set) selects what main does.
// Functions are noinline so the call chains the tests check exist in the
// binary as written.
#include <stdint.h>

#define NOINLINE __attribute__((noinline))
#define REG(a) (*(volatile uint32_t *)(a))
#define SCB_CCR REG(0xE000ED14)
#define SCB_SHCSR REG(0xE000ED24)
#define SCB_CPACR REG(0xE000ED88)

volatile uint32_t crash_scenario = 0;
volatile uint32_t iterations = 1000;
volatile uint32_t sink;
volatile uint32_t divisor = 0;
uint32_t data_word = 0x12345678; // in .data: checks the LMA->VMA copy
void (*volatile fnptr)(void);

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }
void MemManage_Handler(void) { for (;;) {} }
void BusFault_Handler(void) { for (;;) {} }
void UsageFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	MemManage_Handler, BusFault_Handler, UsageFault_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

// Scenario 1: a store to an unmapped address three calls deep.
NOINLINE void store_leaf(volatile uint32_t *p, uint32_t v) { *p = v; sink = v; }
NOINLINE void store_mid(uint32_t v) { store_leaf((volatile uint32_t *)0x70000000, v + 1); sink = 1; }
NOINLINE void store_top(void) { store_mid(41); sink = 2; }

// Scenario 2: call through a NULL function pointer.
NOINLINE void call_null(void) { fnptr(); sink = 3; }

// Scenario 3: permanently undefined instruction.
NOINLINE void do_udf(void) { __asm volatile("udf #42"); sink = 4; }

// Scenario 4: divide by zero with CCR.DIV_0_TRP (v7-M).
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
NOINLINE uint32_t do_div(uint32_t a, uint32_t b) { return a / b; }
#endif

// Scenario 5: load from an unmapped address.
NOINLINE uint32_t load_bad(void) { return REG(0x70000010); }

// Scenario 6: fault in Thread mode on the process stack.
static uint32_t psp_stack[256] __attribute__((aligned(8)));
NOINLINE void psp_leaf(void) { store_leaf((volatile uint32_t *)0x70000020, 6); }
NOINLINE void psp_thread(void) { psp_leaf(); sink = 6; }

// Scenario 7: fault with the FPU in use (CONTROL.FPCA, extended frame).
#if __ARM_FP
NOINLINE float fp_work(float x) { return x * 1.5f + 0.25f; }
NOINLINE void fp_crash(void) {
	volatile float f = fp_work((float)sink);
	sink = (uint32_t)f;
	store_leaf((volatile uint32_t *)0x70000030, sink);
}
#endif

// Scenario 8: UDF with UsageFault enabled in SHCSR: no escalation.
// Scenario 9: recursion, then a fault at the bottom.
NOINLINE void recurse(uint32_t n) {
	if (n)
		recurse(n - 1);
	else
		store_leaf((volatile uint32_t *)0x70000040, n);
	sink = n;
}

// Scenario 10: busy work (calls and loops), then a fault.
NOINLINE uint32_t mix(uint32_t a, uint32_t b) { return (a << 5) ^ (b >> 3) ^ (a + b); }
NOINLINE uint32_t fib(uint32_t n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
NOINLINE void busy(void) {
	uint32_t acc = 1;
	for (uint32_t i = 0; i < iterations; i++) {
		acc = mix(acc, i);
		acc += fib(10);
	}
	sink = acc;
	store_leaf((volatile uint32_t *)0x70000050, acc);
}

// Scenario 11: jump to an unmapped address (instruction bus error).
NOINLINE void jump_bad(void) { ((void (*)(void))0x70000001)(); sink = 11; }

// Scenario 12: never faults.
// Scenario 13: fault with SP 4 mod 8 (stacked xPSR bit 9).
NOINLINE void misaligned(void) {
	__asm volatile(
		"sub sp, sp, #4\n"
		"ldr r0, =0x70000060\n"
		"str r0, [r0]\n"
		"add sp, sp, #4\n" ::: "r0", "memory");
}

// Scenario 14: store into flash (read-only memory).
NOINLINE void write_flash(void) { REG(0x100) = 1; }

int main(void) {
	switch (crash_scenario) {
	case 1:
		store_top();
		break;
	case 2:
		call_null();
		break;
	case 3:
		do_udf();
		break;
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
	case 4:
		SCB_CCR |= 1u << 4;
		sink = do_div(10, divisor);
		break;
#endif
	case 5:
		sink = load_bad();
		break;
	case 6:
		__asm volatile("msr psp, %0" ::"r"(&psp_stack[256]));
		__asm volatile("msr control, %0\n isb" ::"r"(2));
		psp_thread();
		break;
#if __ARM_FP
	case 7:
		fp_crash();
		break;
#endif
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
	case 8:
		SCB_SHCSR |= 1u << 18;
		do_udf();
		break;
#endif
	case 9:
		recurse(5);
		break;
	case 10:
		busy();
		break;
	case 11:
		jump_bad();
		break;
	case 12:
		for (;;)
			sink++;
	case 13:
		misaligned();
		break;
	case 14:
		write_flash();
		break;
	}
	for (;;) {}
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
#if __ARM_FP
	SCB_CPACR |= 0xfu << 20;
	__asm volatile("dsb\n isb");
#endif
	main();
}
