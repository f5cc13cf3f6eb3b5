/*
 * faultline sample matrix: shared definitions.
 *
 * The same sources build for ARMv6-M (Cortex-M0+), ARMv7-M (M3), ARMv7E-M
 * (M4F, M7) and ARMv8-M Mainline (M33), as C or, in the C++ builds, as C++
 * (scenarios.c is written in the common subset and compiled with -x c++;
 * its functions keep C linkage so their ELF symbols are the same in both).
 * The scenario is chosen by crash_scenario (faultline emulate --set
 * crash_scenario=N); the numbers are stable and documented in README.md.
 */
#ifndef FAULTLINE_MATRIX_FW_H
#define FAULTLINE_MATRIX_FW_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
#define FW_EXTERN_C_BEGIN extern "C" {
#define FW_EXTERN_C_END }
#else
#define FW_EXTERN_C_BEGIN
#define FW_EXTERN_C_END
#endif

/* Every function of a crash chain keeps its own frame and its own ELF
 * symbol at every optimisation level: no inlining and, for GCC, no cloning
 * (constprop/isra copies would rename the symbol in the truth). */
#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif
#define FW_NORETURN __attribute__((noreturn))
#define FW_USED __attribute__((used))

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* Architecture of the build. */
#if defined(__ARM_ARCH_6M__)
#define FW_V6M 1
#elif defined(__ARM_ARCH_8M_MAIN__)
#define FW_V8M 1
#else
#define FW_V7M 1
#endif
#if defined(__ARM_FP)
#define FW_FPU 1
#endif

/* System Control Block (ARMv7-M ARM B3.2.2; ARMv6-M has ICSR, VTOR, CCR). */
#define SCB_ICSR   REG32(0xE000ED04u)
#define SCB_CCR    REG32(0xE000ED14u)
#define SCB_SHCSR  REG32(0xE000ED24u)
#define SCB_CPACR  REG32(0xE000ED88u)
#define CCR_DIV_0_TRP (1u << 4)

/* MPU: PMSAv7 (B3.5) on v7-M; PMSAv8 (RBAR/RLAR, MAIR0) on v8-M. */
#define MPU_CTRL   REG32(0xE000ED94u)
#define MPU_RNR    REG32(0xE000ED98u)
#define MPU_RBAR   REG32(0xE000ED9Cu)
#define MPU_RASR   REG32(0xE000EDA0u) /* v8-M: MPU_RLAR */
#define MPU_MAIR0  REG32(0xE000EDC0u)

/* NVIC (B3.4). STIR does not exist on ARMv6-M: ISPR works everywhere. */
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_ISPR0 REG32(0xE000E200u)

/* External interrupts the scenarios pend (exception number 16 + n). */
#define IRQ_NESTED 3u
#define IRQ_LAZYFP 4u

/* Nothing is mapped at 0x60000000 in these images (the emulator maps only
 * the ELF's flash and RAM): every access there is a bus error. */
#define FW_BAD_ADDR 0x60000040u

/* Crash scenario numbers: stable. */
enum {
	SCN_DEEP_CHAIN = 1,
	SCN_CALLEE_SAVED = 2,
	SCN_VPUSH = 3,
	SCN_RECURSION = 4,
	SCN_TAIL_CALL = 5,
	SCN_NORETURN = 6,
	SCN_FNPTR = 7,
	SCN_QSORT_CB = 8,
	SCN_MEMCPY_BAD = 9,
	SCN_ALLOCA_VLA = 10,
	SCN_IRQ_NESTED = 11,
	SCN_PSP_THREAD = 12,
	SCN_LAZY_FP = 13,
	SCN_STACK_GUARD = 14,
	SCN_IMPRECISE = 15,
	SCN_ASSERT_ABORT = 16,
	SCN_DIV0 = 17,
	SCN_CXX_DTOR = 18,
	SCN_CXX_CATCH = 19,
};

FW_EXTERN_C_BEGIN

extern volatile uint32_t crash_scenario;
extern volatile uint32_t fw_inputs[8];
extern volatile uint32_t fw_sink;
extern volatile uint32_t fw_zero;
extern volatile uint32_t *volatile fw_bad_ptr;

/* Linker script symbols. */
extern uint32_t _estack[], _stack_guard[];

void run_scenario(uint32_t n);
void fw_irq_nested_handler(void);
void fw_irq_lazyfp_handler(void);
void fw_switch_to_psp(void (*entry)(void), uint32_t *stack_top);

/* cxx_scenarios.cpp (C++ builds only). */
void scenario_cxx_dtor(void);
void scenario_cxx_catch(void); void scenario_cxx_terminate(void);

FW_EXTERN_C_END

int main(void);

#endif
