/*
 * Definitions of the exception-entry corpus (README.md), apart from ../../src/fw.h
 * on purpose: its scenario numbers and vector layout are its own. QEMU mps2-an385/386.
 */
#ifndef FAULTLINE_EXCENTRY_FW_H
#define FAULTLINE_EXCENTRY_FW_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* NVIC (ARMv7-M ARM B3.4). */
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_STIR  REG32(0xE000EF00u)

/* Crash scenario numbers: keep in sync with scenarios.txt. */
enum {
	SCENARIO_VECTOR_UNMAPPED = 1,
	SCENARIO_SVC_NESTED = 2,
	SCENARIO_BIG_FRAME_FFFF = 3,
};

/* The IRQ whose vector points at UNMAPPED_HANDLER. */
#define UNMAPPED_IRQ 9u
/* An address QEMU's MPS2 map leaves unmapped: an instruction fetch there
 * raises a BusFault (IBUSERR), escalated to HardFault. */
#define UNMAPPED_HANDLER 0x30000000u

extern volatile uint32_t crash_scenario;

/* Filled by fl_capture_sysregs (startup.c) for the oracle script. */
struct fl_sysregs {
	uint32_t magic;
	uint32_t msp;
	uint32_t psp;
	uint32_t control;
	uint32_t primask;
	uint32_t basepri;
	uint32_t faultmask;
};
extern volatile struct fl_sysregs fl_sysregs;

void SVC_Handler(void);
int main(void);

#endif
