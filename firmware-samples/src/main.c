/*
 * Crash scenarios for the faultline sample firmware. The scenario is chosen
 * by crash_scenario, a .data global that a debugger or emulator may change
 * before main runs. Every chain is built from FW_NOINLINE functions whose
 * results are used after each call, so neither inlining nor tail calls
 * remove frames at any optimisation level. See README.md for the catalogue.
 */
#include "fw.h"

volatile uint32_t crash_scenario = SCENARIO_NULL_WRITE_DEEP;

/* Values the compiler cannot predict. */
volatile uint32_t fl_inputs[8] = {3, 5, 7, 11, 13, 17, 19, 23};
volatile uint32_t fl_zero;                 /* divisor for div0: stays 0 */
volatile uint32_t fl_sink;                 /* results are stored here */
volatile uint32_t *volatile fl_null_ptr;   /* a pointer nobody initialised */
void (*volatile fl_null_handler)(uint32_t); /* a callback nobody registered */

/* ------------------------------------------------------------------ */
/* helpers (not on the stack at the time of a fault)                   */

FW_NOINLINE static void fill_words(uint32_t *buf, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		buf[i] = seed + i * 2654435761u + fl_inputs[i & 7];
}

FW_NOINLINE static uint32_t sum_words(const uint32_t *buf, uint32_t n)
{
	uint32_t s = 0;
	for (uint32_t i = 0; i < n; i++)
		s = (s << 1 | s >> 31) ^ buf[i];
	return s;
}

/* ------------------------------------------------------------------ */
/* MPU: make a NULL access fault (address 0 is RAM on the MPS2 boards)  */

void fl_mpu_guard_null(void)
{
	/* Region 0: base 0, 32 bytes (SIZE=4), AP=000 no access, XN. With
	 * PRIVDEFENA the rest of memory keeps the default map; HFNMIENA=0
	 * so HardFault runs with the MPU off. */
	MPU_RNR = 0;
	MPU_RBAR = 0x00000000u;
	MPU_RASR = (1u << 28) | (0u << 24) | (4u << 1) | 1u;
	MPU_CTRL = (1u << 2) | 1u;
	__asm volatile("dsb\n isb" ::: "memory");
}

/* ------------------------------------------------------------------ */
/* 1. null_write_deep                                                  */

FW_NOINLINE static void null_store(uint32_t value)
{
	*fl_null_ptr = value; /* MemManage DACCVIOL, MMFAR = 0 */
	fl_sink = value;
}

FW_NOINLINE static uint32_t deep5_mixed(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t k = fl_inputs[a & 7] * c;
	null_store(a + b + k);
	return k ^ fl_inputs[b & 7];
}

/* A frame of about 2 KiB whose size is not a Thumb-2 modified immediate:
 * GCC allocates it with subw (12-bit immediate), clang with a constant. */
FW_NOINLINE static uint32_t deep4_huge_locals(uint32_t a, uint32_t b)
{
	uint32_t buf[513];
	fill_words(buf, 513, a);
	uint32_t r = deep5_mixed(a, buf[b % 513], b);
	return r + sum_words(buf, 513);
}

/* Many values live across the call: lots of callee-saved registers. */
FW_NOINLINE static uint32_t deep3_callee_saved(uint32_t a, uint32_t b)
{
	uint32_t v0 = fl_inputs[0] * a, v1 = fl_inputs[1] + b;
	uint32_t v2 = fl_inputs[2] ^ a, v3 = fl_inputs[3] - b;
	uint32_t v4 = fl_inputs[4] * b, v5 = fl_inputs[5] + a;
	uint32_t v6 = fl_inputs[6] ^ b, v7 = fl_inputs[7] - a;
	uint32_t r = deep4_huge_locals(a ^ b, v0 + v7);
	return r + v0 * v1 + v2 * v3 + v4 * v5 + v6 * v7 + (v0 ^ v3 ^ v6);
}

/* 320 bytes of locals. */
FW_NOINLINE static uint32_t deep2_big_locals(uint32_t a)
{
	uint32_t buf[80];
	fill_words(buf, 80, a);
	uint32_t r = deep3_callee_saved(buf[a % 80], a + 1);
	return r ^ sum_words(buf, 80);
}

FW_NOINLINE static uint32_t deep1_entry(uint32_t a)
{
	uint32_t r = deep2_big_locals(a * 3 + 1);
	return r + a;
}

FW_NOINLINE static void scenario_null_write_deep(void)
{
	fl_sink = deep1_entry(fl_inputs[0]);
}

/* ------------------------------------------------------------------ */
/* 2. null_fnptr                                                       */

FW_NOINLINE static uint32_t fnptr_dispatch(uint32_t event)
{
	fl_null_handler(event); /* branch to 0 with the Thumb bit clear */
	return fl_inputs[event & 7] + 1;
}

FW_NOINLINE static uint32_t fnptr_event_loop(uint32_t n)
{
	uint32_t r = fnptr_dispatch(n + 2);
	return r * n;
}

FW_NOINLINE static void scenario_null_fnptr(void)
{
	fl_sink = fnptr_event_loop(fl_inputs[1]);
}

/* ------------------------------------------------------------------ */
/* 3. udf                                                              */

FW_NOINLINE static uint32_t udf_assert_fail(uint32_t code)
{
	fl_sink = code;
	__asm volatile("udf #0" ::: "memory"); /* UNDEFINSTR */
	return fl_inputs[code & 7];
}

FW_NOINLINE static uint32_t udf_check(uint32_t v)
{
	uint32_t r = 0;
	if (v != 0)
		r = udf_assert_fail(v * 7);
	return r + v;
}

FW_NOINLINE static uint32_t udf_process(uint32_t v)
{
	uint32_t r = udf_check(v + 4);
	return r ^ v;
}

FW_NOINLINE static void scenario_udf(void)
{
	fl_sink = udf_process(fl_inputs[2]);
}

/* ------------------------------------------------------------------ */
/* 4. div0                                                             */

/* A leaf with several values live: the registers it saves decide whether
 * the stack is 8-byte aligned at the fault (README records it per build). */
FW_NOINLINE static uint32_t div0_average(uint32_t total, uint32_t extra)
{
	uint32_t a = fl_inputs[0], b = fl_inputs[1], c = fl_inputs[2];
	uint32_t d = fl_inputs[3], e = fl_inputs[4], f = fl_inputs[5];
	uint32_t q = (total + a * b) / fl_zero; /* DIVBYZERO */
	return q + (a ^ c) * (b + d) + (e ^ f) * extra + c * d * e;
}

FW_NOINLINE static uint32_t div0_stats(uint32_t n)
{
	uint32_t r = div0_average(n * 100, n + 9);
	return r - n;
}

FW_NOINLINE static uint32_t div0_report(uint32_t n)
{
	uint32_t r = div0_stats(n + 1);
	return r * 3;
}

FW_NOINLINE static void scenario_div0(void)
{
	SCB_CCR |= CCR_DIV_0_TRP;
	__asm volatile("dsb\n isb" ::: "memory");
	fl_sink = div0_report(fl_inputs[3]);
}

/* ------------------------------------------------------------------ */
/* 5. irq_crash: the interrupt handler faults while thread code runs   */

FW_NOINLINE static void irq_touch_device(uint32_t v)
{
	REG32(UNMAPPED_ADDR) = v; /* precise BusFault in QEMU, BFAR valid */
	fl_sink = v;
}

FW_NOINLINE static uint32_t irq_service(uint32_t v)
{
	irq_touch_device(v ^ 0x5a5a5a5au);
	return fl_inputs[v & 7] + v;
}

void fl_crash_irq_handler(void)
{
	fl_sink = irq_service(fl_inputs[4]);
}

FW_NOINLINE static uint32_t irq_raise(uint32_t v)
{
	NVIC_ISER0 = 1u << CRASH_IRQ;
	NVIC_STIR = CRASH_IRQ;
	__asm volatile("dsb\n isb" ::: "memory");
	return fl_inputs[v & 7] + v; /* the interrupt is taken before this */
}

FW_NOINLINE static uint32_t irq_worker(uint32_t v)
{
	uint32_t r = irq_raise(v + 1);
	return r * 5;
}

FW_NOINLINE static void scenario_irq_crash(void)
{
	fl_sink = irq_worker(fl_inputs[5]);
}

/* ------------------------------------------------------------------ */
/* 6. psp_thread: a "thread" on the process stack                      */

static uint64_t thread_stack[128]; /* 1 KiB, 8-byte aligned */

FW_NOINLINE static void psp_store(uint32_t v)
{
	*fl_null_ptr = v; /* MemManage DACCVIOL on the PSP stack */
	fl_sink = v + 1; /* differs from null_store: no identical code folding */
}

FW_NOINLINE static uint32_t psp_work(uint32_t v)
{
	uint32_t local[12];
	fill_words(local, 12, v);
	psp_store(local[v % 12]);
	return sum_words(local, 12);
}

FW_NOINLINE static void psp_thread_entry(void)
{
	fl_sink = psp_work(fl_inputs[6]);
	for (;;)
		__asm volatile("" ::: "memory");
}

/*
 * Switch Thread mode to PSP at stack_top and jump to entry with LR =
 * 0xFFFFFFFF (the reset value, "end of stack"), as an RTOS starting its
 * first thread would. Never returns.
 */
__attribute__((naked, noreturn)) void fl_switch_to_psp(__attribute__((unused)) void (*entry)(void),
		      __attribute__((unused)) uint32_t *stack_top)
{
	__asm volatile(
		"msr psp, r1\n"
		"mrs r2, control\n"
		"orr r2, r2, #2\n"
		"msr control, r2\n"
		"isb\n"
		"mov r2, #0xffffffff\n"
		"mov lr, r2\n"
		"bx r0\n");
}

FW_NOINLINE static void scenario_psp_thread(void)
{
	fl_switch_to_psp(psp_thread_entry, (uint32_t *)&thread_stack[128]);
}

/* ------------------------------------------------------------------ */
/* 7. fpu_crash (Cortex-M4F builds only)                               */

#if defined(__ARM_FP)
volatile float fl_fin[4] = {1.5f, 2.25f, -3.0f, 0.125f};

FW_NOINLINE static void fpu_store(float x)
{
	*fl_null_ptr = (uint32_t)(int32_t)(x * 16.0f); /* DACCVIOL, FPCA=1 */
	fl_sink = (uint32_t)x;
}

FW_NOINLINE static float fpu_filter(float x, float k)
{
	float y = x * k + fl_fin[2];
	fpu_store(y);
	return y * fl_fin[3] + k; /* k and y live across the call: s16.. */
}

FW_NOINLINE static float fpu_integrate(float x)
{
	float acc = x * fl_fin[1];
	float r = fpu_filter(acc, x + fl_fin[0]);
	return r + acc * x;
}

FW_NOINLINE static void scenario_fpu_crash(void)
{
	SCB_CPACR |= 0xFu << 20; /* CP10, CP11 full access */
	__asm volatile("dsb\n isb" ::: "memory");
	float r = fpu_integrate(fl_fin[0] + (float)fl_inputs[7]);
	fl_sink = (uint32_t)r;
}
#endif

/* ------------------------------------------------------------------ */

FW_NOINLINE static void run_scenario(uint32_t n)
{
	switch (n) {
	case SCENARIO_NULL_WRITE_DEEP: scenario_null_write_deep(); break;
	case SCENARIO_NULL_FNPTR: scenario_null_fnptr(); break;
	case SCENARIO_UDF: scenario_udf(); break;
	case SCENARIO_DIV0: scenario_div0(); break;
	case SCENARIO_IRQ_CRASH: scenario_irq_crash(); break;
	case SCENARIO_PSP_THREAD: scenario_psp_thread(); break;
#if defined(__ARM_FP)
	case SCENARIO_FPU_CRASH: scenario_fpu_crash(); break;
#endif
	default: break;
	}
	fl_sink = n;
}

int main(void)
{
	fl_mpu_guard_null();
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
