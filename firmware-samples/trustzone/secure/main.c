/*
 * Secure image of the faultline TrustZone sample: opens the Non-secure
 * memory (MPC blocks, SAU regions, the NSC window), starts the Non-secure
 * image through a
 * cmse_nonsecure_call, and offers three entry functions (tz_api.h).
 * Scenario 1: s_run_callback calls a Non-secure callback (FNC_RETURN in
 * LR), which faults. Scenario 2: s_checksum, called from NS through its
 * veneer, faults in Secure code.
 */
#include <arm_cmse.h>

#include "../include/tz_api.h"

#define REG32(a) (*(volatile uint32_t *)(uintptr_t)(a))

/* SAU (ARMv8-M ARM D1.2.208ff). */
#define SAU_CTRL REG32(0xE000EDD0u)
#define SAU_RNR  REG32(0xE000EDD8u)
#define SAU_RBAR REG32(0xE000EDDCu)
#define SAU_RLAR REG32(0xE000EDE0u)
/* NVIC (ARMv8-M ARM D1.2.x): enable, pend, and target (ITNS) registers. */
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_ISPR0 REG32(0xE000E200u)
#define NVIC_ITNS0 REG32(0xE000E380u)
/* The Non-secure alias of the SCB's VTOR. */
#define VTOR_NS  REG32(0xE002ED08u)
/* IoT Kit Secure privilege control block: NSCCFG (CODENSC = bit 0 makes
 * IDAU region 1 Non-secure callable where the SAU says so). */
#define NSCCFG   REG32(0x50080014u)
/* Memory protection controllers of SSRAM1 and SSRAM3 (AN505). */
#define MPC_SSRAM1 0x58007000u
#define MPC_SSRAM3 0x58009000u

#define NS_CODE_BASE 0x00200000u
#define NS_CODE_END  0x00400000u
#define NS_RAM_BASE  0x28200000u
#define NS_RAM_END   0x28400000u

volatile uint32_t crash_scenario = SCENARIO_NS_CALLBACK;
volatile uint32_t s_calls;

typedef void __attribute__((cmse_nonsecure_call)) ns_entry_t(void);
typedef uint32_t __attribute__((cmse_nonsecure_call)) ns_cb_t(uint32_t);

/* Mark [lo, hi) of the memory behind MPC mpc (based at mem) Non-secure,
 * 32 blocks (one LUT word) at a time: lo and hi are multiples of 32
 * blocks. BLK_LUT is written, never read-modify-written: each access
 * advances BLK_IDX (CTRL.AUTOINC). */
static void mpc_open(uint32_t mpc, uint32_t mem, uint32_t lo, uint32_t hi)
{
	uint32_t blk = 1u << (REG32(mpc + 0x14) + 5); /* BLK_CFG */
	for (uint32_t a = lo; a < hi; a += 32 * blk) {
		REG32(mpc + 0x18) = (a - mem) / blk / 32; /* BLK_IDX */
		REG32(mpc + 0x1C) = 0xFFFFFFFFu;          /* BLK_LUT */
	}
}

static void sau_region(uint32_t n, uint32_t base, uint32_t limit, uint32_t nsc)
{
	SAU_RNR = n;
	SAU_RBAR = base & ~0x1Fu;
	SAU_RLAR = (limit & ~0x1Fu) | (nsc << 1) | 1u;
}

extern uint32_t __sgstubs_start[] __attribute__((weak));

static void tz_setup(void)
{
	mpc_open(MPC_SSRAM1, 0x00000000u, NS_CODE_BASE, NS_CODE_END);
	mpc_open(MPC_SSRAM3, NS_RAM_BASE, NS_RAM_BASE, NS_RAM_END);
	sau_region(0, NS_CODE_BASE, NS_CODE_END - 1, 0);
	sau_region(1, NS_RAM_BASE, NS_RAM_END - 1, 0);
	sau_region(2, 0x1003f000u, 0x1003ffffu, 1);
	NSCCFG = 1u;
	SAU_CTRL = 1u;
	__asm volatile("dsb\n isb" ::: "memory");
}

FW_NOINLINE static void start_ns(void)
{
	const uint32_t *ns_vectors = (const uint32_t *)NS_CODE_BASE;
	VTOR_NS = NS_CODE_BASE;
	__asm volatile("msr msp_ns, %0" ::"r"(ns_vectors[0]));
	ns_entry_t *reset = (ns_entry_t *)cmse_nsfptr_create(ns_vectors[1]);
	reset();
}

int main(void)
{
	tz_setup();
	start_ns();
	for (;;)
		__asm volatile("" ::: "memory");
}

uint32_t __attribute__((cmse_nonsecure_entry)) s_scenario(void)
{
	return crash_scenario;
}

/* Secure service that calls Non-secure code back: the BLXNS leaves
 * FNC_RETURN in LR and the return address on the Secure stack (MSP_S:
 * Secure thread code runs on the main stack here). */
FW_NOINLINE static uint32_t s_dispatch(ns_callback_t *cb, uint32_t arg)
{
	ns_cb_t *fn = (ns_cb_t *)cmse_nsfptr_create(cb);
	s_calls++;
	uint32_t r = fn(arg + s_calls);
	s_calls += r;
	return r;
}

uint32_t __attribute__((cmse_nonsecure_entry)) s_run_callback(ns_callback_t *cb, uint32_t arg)
{
	return s_dispatch(cb, arg) + 1;
}

/* Reads words the Non-secure caller points at without checking the
 * range (the bug): an unmapped address faults in Secure code. */
FW_NOINLINE static uint32_t s_sum_words(const volatile uint32_t *p, uint32_t n)
{
	uint32_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum = (sum << 1) ^ p[i];
	return sum;
}

uint32_t __attribute__((cmse_nonsecure_entry)) s_checksum(const uint32_t *p, uint32_t n)
{
	s_calls++;
	return s_sum_words(p, n) ^ s_calls;
}

volatile uint32_t s_polls;

/* Secure code that a Non-secure interrupt preempts: the core pushes the
 * additional state context (integrity signature, r4-r11) on MSP_S. */
FW_NOINLINE static uint32_t s_poll(uint32_t rounds)
{
	uint32_t acc = 0;
	for (uint32_t i = 0; i < rounds; i++) {
		s_polls++;
		acc = (acc << 3) ^ s_polls;
	}
	return acc;
}

/* Targets NS_IRQ to the Non-secure state, enables and pends it, then
 * polls: the interrupt is taken while Secure code runs. */
uint32_t __attribute__((cmse_nonsecure_entry)) s_poll_with_irq(uint32_t rounds)
{
	NVIC_ITNS0 |= 1u << NS_IRQ;
	NVIC_ISER0 = 1u << NS_IRQ;
	__asm volatile("dsb\n isb" ::: "memory");
	NVIC_ISPR0 = 1u << NS_IRQ;
	return s_poll(rounds) + 1;
}
