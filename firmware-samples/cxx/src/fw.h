/*
 * Shared definitions for the faultline C++ corpus (Cortex-M3/M4F on QEMU
 * mps2-an385 / mps2-an386). Included from C (startup.c, syscalls.c) and
 * C++ (scenarios.cpp).
 */
#ifndef FAULTLINE_CXX_FW_H
#define FAULTLINE_CXX_FW_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif
#define FW_USED __attribute__((used))

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* System Control Block (ARMv7-M ARM, B3.2.2). */
#define SCB_ICSR   REG32(0xE000ED04u)
#define SCB_CPACR  REG32(0xE000ED88u)
#define ICSR_PENDSVSET (1u << 28)

/* PMSAv7 MPU (B3.5). */
#define MPU_CTRL   REG32(0xE000ED94u)
#define MPU_RNR    REG32(0xE000ED98u)
#define MPU_RBAR   REG32(0xE000ED9Cu)
#define MPU_RASR   REG32(0xE000EDA0u)

/* NVIC (B3.4). */
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_STIR  REG32(0xE000EF00u)

/* Crash scenario numbers: stable, listed in scenarios.txt and README.md. */
enum {
	SCN_VECTOR_NULL_ELEM = 1,
	SCN_MAP_NULL_VIRTUAL = 2,
	SCN_STRING_MEMCPY = 3,
	SCN_STRING_STRLEN = 4,
	SCN_SNPRINTF_BAD_STR = 5,
	SCN_QSORT_COMPARATOR = 6,
	SCN_SORT_LAMBDA = 7,
	SCN_FUNCTION_LEAF = 8,
	SCN_BAD_VTABLE = 9,
	SCN_FNPTR_XN = 10,
	SCN_THROW_UNCAUGHT = 11,
	SCN_THROW_NOEXCEPT = 12,
	SCN_ULDIVMOD_ZERO = 13,
	SCN_UDIVMODDI4_BAD = 14,
	SCN_SOFTFLOAT_XN = 15,
	SCN_IRQ_STIR = 16,
	SCN_PENDSV_ICSR = 17,
	SCN_PENDSV_TAIL = 18,
	SCN_STIR_TAIL = 19,
};

/* The IRQ the irq_stir scenario pends (external interrupt number). */
#define CRASH_IRQ 5u

/* An address QEMU's MPS2 map leaves unmapped: accesses raise a precise
 * BusFault. */
#define UNMAPPED_ADDR 0x30000010u

#ifdef __cplusplus
extern "C" {
#endif

extern volatile uint32_t crash_scenario;
extern volatile uint32_t fw_sink;

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
void fw_irq_handler(void);
void fw_pendsv_handler(void);
int main(void);

#ifdef __cplusplus
}
#endif

#endif
