// Test firmware for the emulator's asynchronous exceptions (package emu,
// irq_test.go): SysTick running from its own registers (ARMv7-M ARM B3.3),
// BASEPRI masking and priority preemption between NVIC interrupts (B1.5.4,
// B3.4). Built for Cortex-M3; see the Makefile. The global crash_scenario
// (Config.Sets) selects what main does; every crash is a store to the
// unmapped address 0x70000000 in crash_leaf, a precise BusFault that
// escalates to HardFault (BusFault is not enabled).
#include <stdint.h>

#define NOINLINE __attribute__((noinline))
#define REG(a) (*(volatile uint32_t *)(a))
#define SYST_CSR REG(0xE000E010)
#define SYST_RVR REG(0xE000E014)
#define SYST_CVR REG(0xE000E018)
#define NVIC_ISER0 REG(0xE000E100)
#define NVIC_ISPR0 REG(0xE000E200)
#define NVIC_IABR0 REG(0xE000E300)
#define NVIC_IPR(n) (*(volatile uint8_t *)(0xE000E400 + (n)))

volatile uint32_t crash_scenario = 0;
volatile uint32_t reload;      // SYST_RVR (scenarios 1, 2)
volatile uint32_t ticks;       // SysTick handler entries
volatile uint32_t tick_cvr[8]; // SYST_CVR read first thing in each SysTick handler
volatile uint32_t polls;       // COUNTFLAG seen set (scenario 2)
volatile uint32_t spins;
volatile uint32_t phase;                // where main is (scenario 3)
volatile uint32_t pending_while_masked; // NVIC_ISPR0 bit 0 under BASEPRI
volatile uint32_t irq0_phase, irq1_phase;
volatile uint32_t order[8], norder; // handler entries and exits, in order
volatile uint32_t early;            // IRQ4/IRQ5 entries seen right after pending them in IRQ2
volatile uint32_t ispr_in_irq3, iabr_in_irq3;

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }
void SysTick_Handler(void);
void IRQ0_Handler(void);
void IRQ1_Handler(void);
void IRQ2_Handler(void);
void IRQ3_Handler(void);
void IRQ4_Handler(void);
void IRQ5_Handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[22])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, SysTick_Handler,
	IRQ0_Handler, IRQ1_Handler, IRQ2_Handler, IRQ3_Handler, IRQ4_Handler, IRQ5_Handler,
};

NOINLINE void crash_leaf(uint32_t v) { REG(0x70000000) = v; }
static void record(uint32_t what) {
	uint32_t n = norder;
	if (n < 8)
		order[n] = what;
	norder = n + 1;
}
static void barrier(void) { __asm volatile("dsb\n isb" ::: "memory"); }
static void set_basepri(uint32_t v) { __asm volatile("msr basepri, %0\n isb" ::"r"(v) : "memory"); }
NOINLINE void idle(void) {
	for (;;)
		spins++;
}

// Scenario 1: SysTick with TICKINT; the fifth tick crashes.
NOINLINE void tick_crash(uint32_t n) { crash_leaf(n); }
void SysTick_Handler(void) {
	uint32_t cvr = SYST_CVR;
	uint32_t n = ticks;
	if (n < 8)
		tick_cvr[n] = cvr;
	ticks = n + 1;
	if (n + 1 == 5)
		tick_crash(n + 1);
}
static void systick_start(uint32_t csr) {
	SYST_RVR = reload;
	SYST_CVR = 0; // clears the counter: it reloads on the next tick
	SYST_CSR = csr;
}

// Scenario 2: SysTick without TICKINT, polled through COUNTFLAG.
NOINLINE void poll_systick(void) {
	systick_start(5); // ENABLE, CLKSOURCE
	while (polls < 3)
		if (SYST_CSR & (1u << 16))
			polls++;
	crash_leaf(polls);
}

// Scenario 3: BASEPRI masks IRQ 0 (priority 0x80) but not IRQ 1 (0x20).
void IRQ0_Handler(void) {
	irq0_phase = phase;
	crash_leaf(0x10);
}
void IRQ1_Handler(void) { irq1_phase = phase; }
NOINLINE void basepri_test(void) {
	NVIC_IPR(0) = 0x80;
	NVIC_IPR(1) = 0x20;
	NVIC_ISER0 = 3;
	set_basepri(0x40);
	phase = 1;
	NVIC_ISPR0 = 1; // masked: stays pending
	barrier();
	for (uint32_t i = 0; i < 50; i++)
		spins++;
	pending_while_masked = NVIC_ISPR0 & 1;
	NVIC_ISPR0 = 2; // priority 0x20 is above BASEPRI: taken at once
	barrier();
	phase = 2;
	set_basepri(0); // IRQ 0 is taken here
	phase = 3;
}

// Scenarios 4 and 5: IRQ 2 (0x80) pends IRQ 4 (0x80, the same priority)
// and IRQ 5 (0xC0, lower), which must wait, then IRQ 3 (0x40, higher),
// which preempts it. Scenario 4 crashes in IRQ 3, nested on IRQ 2;
// scenario 5 lets everything return and crashes in IRQ 5, which runs last.
void IRQ2_Handler(void) {
	record(2);
	NVIC_ISPR0 = 1u << 4 | 1u << 5;
	barrier();
	early = norder - 1;
	NVIC_ISPR0 = 1u << 3;
	barrier();
	record(0x22);
}
void IRQ3_Handler(void) {
	record(3);
	ispr_in_irq3 = NVIC_ISPR0;
	iabr_in_irq3 = NVIC_IABR0;
	if (crash_scenario == 4)
		crash_leaf(3);
	record(0x33);
}
void IRQ4_Handler(void) { record(4); }
void IRQ5_Handler(void) {
	record(5);
	crash_leaf(5);
}
NOINLINE void preempt_test(void) {
	NVIC_IPR(2) = 0x80;
	NVIC_IPR(3) = 0x40;
	NVIC_IPR(4) = 0x80;
	NVIC_IPR(5) = 0xC0;
	NVIC_ISER0 = 0x3c;
	NVIC_ISPR0 = 1u << 2;
	barrier();
	idle();
}

int main(void) {
	switch (crash_scenario) {
	case 1:
		systick_start(7); // ENABLE, TICKINT, CLKSOURCE
		idle();
		break;
	case 2:
		poll_systick();
		break;
	case 3:
		basepri_test();
		break;
	case 4:
	case 5:
		preempt_test();
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
