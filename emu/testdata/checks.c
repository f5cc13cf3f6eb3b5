// Test firmware for the emulator's access checks, stacking errors, per-thread
// shadow stacks (package emu, checks_test.go). The global crash_scenario
// (Config.Sets) selects what main does. Built for Cortex-M4 (soft float),
// Cortex-M3 (thread scenarios) and Cortex-M0 (alignment); see the Makefile.
#include <stdint.h>

#pragma GCC diagnostic ignored "-Winfinite-recursion"

#define NOINLINE __attribute__((noinline))
#define REG(a) (*(volatile uint32_t *)(a))
#define SCB_ICSR REG(0xE000ED04)
#define SCB_CCR REG(0xE000ED14)
#define SCB_SHCSR REG(0xE000ED24)
#define MPU_CTRL REG(0xE000ED94)
#define MPU_RNR REG(0xE000ED98)
#define MPU_RBAR REG(0xE000ED9C)
#define MPU_RASR REG(0xE000EDA0)

volatile uint32_t crash_scenario = 0;
volatile uint32_t sink;
volatile uint32_t switches;

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }
void MemManage_Handler(void) { for (;;) {} }
void BusFault_Handler(void) { for (;;) {} }
void UsageFault_Handler(void) { for (;;) {} }
void SVC_Handler(void) { sink = 0x5c; }
void PendSV_Handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	MemManage_Handler, BusFault_Handler, UsageFault_Handler, 0, 0, 0, 0,
	SVC_Handler, Default_Handler, 0, PendSV_Handler, Default_Handler,
};

static uint8_t bytes[16] __attribute__((aligned(8))) = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

// Alignment (scenarios 1-3, 13).
NOINLINE uint32_t load_word(const volatile void *p) { return *(const volatile uint32_t *)p; }
NOINLINE uint32_t load_half(const volatile void *p) { return *(const volatile uint16_t *)p; }
NOINLINE uint32_t load_multiple(const void *p) {
	register const void *r0 __asm("r0") = p;
	register uint32_t r2 __asm("r2"), r3 __asm("r3");
	__asm volatile("ldmia r0!, {r2, r3}" : "=l"(r2), "=l"(r3), "+l"(r0) : : "memory");
	return r2 + r3;
}
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
NOINLINE uint32_t load_double(const void *p) {
	uint32_t a, b;
	__asm volatile("ldrd %0, %1, [%2]" : "=r"(a), "=r"(b) : "r"(p) : "memory");
	return a + b;
}

// MPU (PMSAv7, ARMv7-M ARM B3.5).
static void mpu_region(uint32_t n, uint32_t base, uint32_t log2size, uint32_t ap, uint32_t xn) {
	MPU_RNR = n;
	MPU_RBAR = base;
	MPU_RASR = xn << 28 | ap << 24 | (log2size - 1) << 1 | 1;
}
static void mpu_on(void) {
	MPU_CTRL = 5; // ENABLE, PRIVDEFENA
	__asm volatile("dsb\n isb" ::: "memory");
}

static uint32_t ro_area[8] __attribute__((aligned(32)));
static uint32_t priv_area[8] __attribute__((aligned(32)));
NOINLINE uint32_t read_null(void) { return *(volatile uint32_t *)0; }
NOINLINE void store_word(volatile uint32_t *p, uint32_t v) { *p = v; }
__attribute__((section(".text.xn"), aligned(32), noinline)) void xn_function(void) { sink = 7; }
NOINLINE void call_xn(void) { xn_function(); sink = 8; }

// Stack overflow into a 32-byte guard region at the bottom of a thread
// stack (scenarios 8, 9): unbounded recursion with a local array.
static uint32_t ov_stack[128] __attribute__((aligned(32)));
NOINLINE uint32_t deep(uint32_t n) {
	volatile uint32_t local[6];
	local[0] = n;
	return deep(n + 1) + local[0];
}
NOINLINE void overflow_thread(void) { sink = deep(0); }
static void run_on(uint32_t *top, void (*fn)(void)) {
	__asm volatile("msr psp, %0\n movs r0, #2\n msr control, r0\n isb" ::"r"(top) : "r0", "memory");
	fn();
}
NOINLINE void svc_thread(void) { __asm volatile("svc #0"); sink = 10; }

// Two threads switched round-robin by PendSV (scenario 11).
static uint32_t t1_stack[128] __attribute__((aligned(8)));
static uint32_t t2_stack[128] __attribute__((aligned(8)));
uint32_t saved_sp[2];
uint32_t current;
__attribute__((naked)) void PendSV_Handler(void) {
	__asm volatile(
		"mrs r0, psp\n"
		"stmdb r0!, {r4-r11}\n"
		"ldr r1, =current\n"
		"ldr r2, [r1]\n"
		"ldr r3, =saved_sp\n"
		"str r0, [r3, r2, lsl #2]\n"
		"eor r2, r2, #1\n"
		"str r2, [r1]\n"
		"ldr r0, [r3, r2, lsl #2]\n"
		"ldmia r0!, {r4-r11}\n"
		"msr psp, r0\n"
		"bx lr\n");
}
NOINLINE void yield(void) {
	switches++;
	SCB_ICSR = 1u << 28; // PENDSVSET
	__asm volatile("dsb\n isb" ::: "memory");
}
NOINLINE void t1_work(uint32_t n) { sink = n; yield(); }
NOINLINE void thread1(void) {
	for (uint32_t i = 0;; i++)
		t1_work(i);
}
NOINLINE void t2_leaf(uint32_t n) {
	if (n == 4)
		*(volatile uint32_t *)0x70000000 = n; // the crash, in thread 2
	yield();
}
NOINLINE void t2_mid(uint32_t n) { t2_leaf(n); sink = n; }
NOINLINE void thread2(void) {
	for (uint32_t i = 0;; i++)
		t2_mid(i);
}
static void start_threads(void) {
	// Thread 2's initial context: r4-r11, then an exception frame that
	// returns to thread2 with the Thumb bit set.
	uint32_t *sp = &t2_stack[128] - 16;
	for (int i = 0; i < 16; i++)
		sp[i] = 0;
	sp[8 + 6] = (uint32_t)thread2 & ~1u; // return address
	sp[8 + 7] = 1u << 24;                // xPSR.T
	saved_sp[1] = (uint32_t)sp;
	current = 0;
	run_on(&t1_stack[128], thread1);
}
#else
void PendSV_Handler(void) { for (;;) {} }
#endif

int main(void) {
	switch (crash_scenario) {
	case 1: // UNALIGN_TRP: an unaligned LDR faults (UsageFault UNALIGNED)
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
		sink = load_word(bytes + 1); // allowed while the trap is off
		SCB_CCR |= 1u << 3;
#endif
		sink = load_word(bytes + 1);
		break;
	case 2: // LDM on an unaligned address: always faults
		sink = load_multiple(bytes + 2);
		break;
#if __ARM_ARCH_7M__ || __ARM_ARCH_7EM__
	case 3: // LDRD on an unaligned address: always faults on v7-M
		sink = load_word(bytes + 1);
		sink = load_double(bytes + 4 + 2);
		break;
	case 4: // NULL read from flash guarded by a no-access region
		mpu_region(0, 0, 5, 0, 1);
		mpu_on();
		sink = read_null();
		break;
	case 5: // store into a read-only region inside RAM
		mpu_region(1, (uint32_t)ro_area, 5, 6, 1);
		mpu_on();
		sink = ro_area[1]; // reads are allowed
		store_word(&ro_area[2], 5);
		break;
	case 6: // privileged-only region: fine privileged, faults unprivileged
		mpu_region(0, 0, 18, 6, 0);          // flash 256K: RO, executable
		mpu_region(1, 0x20000000, 16, 3, 1); // RAM 64K: RW for all
		mpu_region(2, (uint32_t)priv_area, 5, 1, 1);
		mpu_on();
		store_word(&priv_area[0], 1);
		__asm volatile("movs r0, #1\n msr control, r0\n isb" ::: "r0", "memory"); // nPRIV
		sink = priv_area[0];
		break;
	case 7: // execute from an XN region inside flash
		mpu_region(3, (uint32_t)xn_function & ~1u, 5, 3, 1);
		mpu_on();
		call_xn();
		break;
	case 8: // stack overflow into the guard, MemManage enabled
	case 9: // the same with MemManage disabled: lockup
		mpu_region(4, (uint32_t)ov_stack, 5, 0, 1);
		mpu_on();
		if (crash_scenario == 8)
			SCB_SHCSR |= 1u << 16;
		run_on(&ov_stack[128], overflow_thread);
		break;
	case 10: // SVCall whose frame straddles a read-only region: partial frame
		mpu_region(1, (uint32_t)ro_area, 5, 6, 1);
		mpu_on();
		SCB_SHCSR |= 1u << 16;
		run_on(&ro_area[4], svc_thread);
		break;
	case 11:
		start_threads();
		break;
#endif
	case 13: // unaligned halfword load (faults on v6-M only)
		sink = load_half(bytes + 1);
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
	main();
}
