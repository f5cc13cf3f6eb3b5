/*
 * Shared definitions for the faultline sample firmware (Cortex-M3/M4F on
 * QEMU mps2-an385 / mps2-an386). Freestanding: no libc.
 */
#ifndef FAULTLINE_FW_H
#define FAULTLINE_FW_H

#include <stdint.h>

/* Keep call chains intact at every optimisation level. GCC would otherwise
 * clone or specialise small functions; clang has no noclone. */
#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif
#define FW_USED __attribute__((used))

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* System Control Block (ARMv7-M ARM, B3.2.2). */
#define SCB_ICSR   REG32(0xE000ED04u)
#define SCB_VTOR   REG32(0xE000ED08u)
#define SCB_CCR    REG32(0xE000ED14u)
#define SCB_SHCSR  REG32(0xE000ED24u)
#define SCB_CFSR   REG32(0xE000ED28u)
#define SCB_HFSR   REG32(0xE000ED2Cu)
#define SCB_CPACR  REG32(0xE000ED88u)
#define CCR_DIV_0_TRP (1u << 4)

/* PMSAv7 MPU (B3.5). */
#define MPU_CTRL   REG32(0xE000ED94u)
#define MPU_RNR    REG32(0xE000ED98u)
#define MPU_RBAR   REG32(0xE000ED9Cu)
#define MPU_RASR   REG32(0xE000EDA0u)

/* NVIC (B3.4). */
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_ISPR0 REG32(0xE000E200u)
#define NVIC_STIR  REG32(0xE000EF00u)

/* FP extension (B3.2.20). */
#define FPU_FPCCR  REG32(0xE000EF34u)

/* Crash scenario numbers: stable, documented in README.md. */
enum {
	SCENARIO_NULL_WRITE_DEEP = 1,
	SCENARIO_NULL_FNPTR = 2,
	SCENARIO_UDF = 3,
	SCENARIO_DIV0 = 4,
	SCENARIO_IRQ_CRASH = 5,
	SCENARIO_PSP_THREAD = 6,
	SCENARIO_FPU_CRASH = 7,
};

/* The IRQ the irq_crash scenario pends (external interrupt number). */
#define CRASH_IRQ 7u

/* An address QEMU's MPS2 map leaves unmapped: accesses raise a precise
 * BusFault (real silicon would usually report stores as imprecise). */
#define UNMAPPED_ADDR 0x30000010u

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

void fl_mpu_guard_null(void);
void fl_switch_to_psp(void (*entry)(void), uint32_t *stack_top);
void fl_crash_irq_handler(void);
int main(void);

#endif
