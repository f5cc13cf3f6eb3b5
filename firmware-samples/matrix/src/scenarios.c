/*
 * Crash scenarios of the faultline sample matrix, selected by
 * crash_scenario (see fw.h for the numbers, README.md for the catalogue).
 *
 * Written in the common subset of C11 and C++17: the C++ builds compile
 * this file with -x c++ (so it gets C++ code generation and, with
 * exceptions on, .ARM.exidx for every function) while every function keeps
 * C linkage and therefore the same ELF symbol as in the C builds.
 *
 * Rules that keep the emulator's truth stable across compilers and -O
 * levels: each function of a chain is FW_NOINLINE (no inlining, no GCC
 * clones) and differs from every other one (no identical-code folding);
 * results are used after each call unless the scenario wants a tail call;
 * the bad pointers are volatile so no compiler can prove the access
 * undefined and drop it.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "fw.h"

FW_EXTERN_C_BEGIN

volatile uint32_t crash_scenario = SCN_DEEP_CHAIN;

/* Values the compiler cannot predict. */
volatile uint32_t fw_inputs[8] = {3, 5, 7, 11, 13, 17, 19, 23};
volatile uint32_t fw_sink;
volatile uint32_t fw_zero;
/* Points into unmapped memory (0x60000000 region): a bus error. */
volatile uint32_t *volatile fw_bad_ptr = (volatile uint32_t *)(uintptr_t)FW_BAD_ADDR;

/* ------------------------------------------------------------------ */
/* helpers (never on the stack at a fault)                             */

FW_NOINLINE void fw_fill_words(uint32_t *buf, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		buf[i] = seed + i * 2654435761u + fw_inputs[i & 7];
}

FW_NOINLINE uint32_t fw_sum_words(const uint32_t *buf, uint32_t n)
{
	uint32_t s = 0;
	for (uint32_t i = 0; i < n; i++)
		s = (s << 1 | s >> 31) ^ buf[i];
	return s;
}

/* ------------------------------------------------------------------ */
/* 1. deep_chain: large frames                                         */

FW_NOINLINE void deep_store(uint32_t v)
{
	fw_bad_ptr[0] = v; /* precise bus error (store) */
	fw_sink = v ^ 0x11u;
}

/* 5000 bytes of locals: neither a Thumb-2 modified immediate nor a 12-bit
 * one, so the compilers load the size into a register (movw/ldr literal)
 * and move SP by that register. */
FW_NOINLINE uint32_t deep4_reg_frame(uint32_t a, uint32_t b)
{
	uint32_t buf[1250];
	fw_fill_words(buf, 1250, a);
	deep_store(buf[b % 1250u] + a);
	return fw_sum_words(buf, 1250);
}

/* 4096 bytes: sub.w sp, sp, #4096 (a modified immediate). */
FW_NOINLINE uint32_t deep3_wide_frame(uint32_t a)
{
	uint32_t buf[1024];
	fw_fill_words(buf, 1024, a * 7u);
	uint32_t r = deep4_reg_frame(buf[a % 1024u], a + 5u);
	return r ^ fw_sum_words(buf, 1024);
}

/* 2060 bytes: subw sp, sp, #imm12 on GCC. */
FW_NOINLINE uint32_t deep2_imm12_frame(uint32_t a)
{
	uint32_t buf[515];
	fw_fill_words(buf, 515, a + 1u);
	uint32_t r = deep3_wide_frame(buf[a % 515u]);
	return r + fw_sum_words(buf, 515);
}

/* 320 bytes: the 16-bit sub sp, #imm. */
FW_NOINLINE uint32_t deep1_small_frame(uint32_t a)
{
	uint32_t buf[80];
	fw_fill_words(buf, 80, a ^ 0x5au);
	uint32_t r = deep2_imm12_frame(buf[a % 80u]);
	return r - fw_sum_words(buf, 80);
}

FW_NOINLINE void scenario_deep_chain(void)
{
	fw_sink = deep1_small_frame(fw_inputs[0]);
}

/* ------------------------------------------------------------------ */
/* 2. callee_saved: r4-r11 all live across the crashing call           */

FW_NOINLINE void cs_leaf(uint32_t v)
{
	fw_bad_ptr[1] = v;
	fw_sink = v + 0x22u;
}

FW_NOINLINE uint32_t cs_many_live(uint32_t a, uint32_t b)
{
	uint32_t v0 = fw_inputs[0] * a, v1 = fw_inputs[1] + b;
	uint32_t v2 = fw_inputs[2] ^ a, v3 = fw_inputs[3] - b;
	uint32_t v4 = fw_inputs[4] * b, v5 = fw_inputs[5] + a;
	uint32_t v6 = fw_inputs[6] ^ b, v7 = fw_inputs[7] - a;
	uint32_t v8 = fw_inputs[0] + fw_inputs[7], v9 = fw_inputs[1] ^ fw_inputs[6];
	cs_leaf(a ^ b);
	return v0 * v1 + v2 * v3 + v4 * v5 + v6 * v7 + v8 * v9 + (v0 ^ v3 ^ v6 ^ v9);
}

FW_NOINLINE uint32_t cs_outer(uint32_t a)
{
	uint32_t r = cs_many_live(a + 2u, a * 3u);
	return r ^ a;
}

FW_NOINLINE void scenario_callee_saved(void)
{
	fw_sink = cs_outer(fw_inputs[1]);
}

/* ------------------------------------------------------------------ */
/* 3. vpush: FP callee-saved registers (s16..) live (FPU builds)       */

#if defined(FW_FPU)
volatile float fw_fin[4] = {1.5f, 2.25f, -3.0f, 0.125f};
volatile float fw_fsink;

FW_NOINLINE void vp_benign(float x)
{
	fw_fsink = x;
}
/* Called through a pointer: the compilers cannot know which registers it
 * clobbers, so floats live across vp_stage's caller's call must sit in
 * the callee-saved s16-s31, saved by vpush. */
void (*volatile fw_fp_hook)(float) = vp_benign;

FW_NOINLINE void vp_store(float x)
{
	fw_bad_ptr[2] = (uint32_t)(int32_t)(x * 16.0f);
	fw_sink = (uint32_t)(int32_t)x;
}

FW_NOINLINE float vp_stage(float x, float y)
{
	fw_fp_hook(x * y);
	vp_store(x - y);
	return x + y;
}

FW_NOINLINE float vp_accumulate(float a)
{
	float k0 = a * fw_fin[0], k1 = a + fw_fin[1];
	float k2 = a - fw_fin[2], k3 = a * fw_fin[3];
	float k4 = k0 * k1 + fw_fin[2], k5 = k2 * k3 - fw_fin[0];
	float r = vp_stage(k0, k1);
	return r + k0 * k1 + k2 * k3 + k4 * k5 + k4 / (k5 + 7.0f);
}

FW_NOINLINE void scenario_vpush(void)
{
	float r = vp_accumulate(fw_fin[1] + (float)fw_inputs[2]);
	fw_sink = (uint32_t)(int32_t)r;
}
#endif

/* ------------------------------------------------------------------ */
/* 4. recursion: 24 levels                                             */

FW_NOINLINE void rec_bottom(uint32_t acc)
{
	fw_bad_ptr[3] = acc;
	fw_sink = acc + 0x33u;
}

FW_NOINLINE uint32_t rec_descend(uint32_t depth, uint32_t acc)
{
	uint32_t local[3];
	local[0] = fw_inputs[depth & 7] + acc;
	local[1] = acc ^ depth;
	local[2] = fw_inputs[(depth + 3) & 7];
	uint32_t r;
	if (depth == 0) {
		rec_bottom(acc);
		r = local[1];
	} else {
		r = rec_descend(depth - 1, acc * 3u + local[depth % 3u]);
	}
	return r + local[(r ^ depth) % 3u]; /* work after the call: no TCO */
}

FW_NOINLINE void scenario_recursion(void)
{
	fw_sink = rec_descend(24, fw_inputs[4]);
}

/* ------------------------------------------------------------------ */
/* 5. tail_call: a sibling call (b/b.w at -O2; a frame at -O0)          */

FW_NOINLINE uint32_t tc_leaf(uint32_t x)
{
	fw_bad_ptr[4] = x;
	return x + fw_inputs[5];
}

/* Nothing after the call: GCC and clang emit a branch, not BL, from -O1
 * on, and tc_sibling is then not on the stack at the fault. */
FW_NOINLINE uint32_t tc_sibling(uint32_t x)
{
	return tc_leaf(x * 5u + fw_inputs[2]);
}

FW_NOINLINE uint32_t tc_caller(uint32_t x)
{
	uint32_t r = tc_sibling(x + 1u);
	return r * 7u;
}

FW_NOINLINE void scenario_tail_call(void)
{
	fw_sink = tc_caller(fw_inputs[3]);
}

/* ------------------------------------------------------------------ */
/* 6. noreturn: a call to a noreturn function is the last instruction   */

FW_NOINLINE FW_NORETURN void nr_fatal(uint32_t code)
{
	fw_bad_ptr[5] = code;
	for (;;)
		fw_sink = code;
}

/* Ends with "bl nr_fatal": the return address is the first byte after
 * the function (often the next function's first instruction). */
FW_NOINLINE FW_NORETURN void nr_report(uint32_t v)
{
	fw_sink = v * 3u;
	nr_fatal(v + 0x100u);
}

FW_NOINLINE uint32_t nr_check(uint32_t v)
{
	if (fw_inputs[0] != 0)
		nr_report(v ^ 0x44u);
	return v + 1u;
}

FW_NOINLINE void scenario_noreturn(void)
{
	fw_sink = nr_check(fw_inputs[6]);
}

/* ------------------------------------------------------------------ */
/* 7. fnptr: calls through function pointers                           */

typedef uint32_t (*fw_handler_t)(uint32_t);

FW_NOINLINE uint32_t fn_on_tick(uint32_t v)
{
	return v + fw_inputs[1];
}

FW_NOINLINE uint32_t fn_on_rx(uint32_t v)
{
	return v ^ fw_inputs[2];
}

FW_NOINLINE uint32_t fn_on_error(uint32_t v)
{
	fw_bad_ptr[6] = v;
	return v * fw_inputs[3];
}

fw_handler_t volatile fw_handlers[3] = {fn_on_tick, fn_on_rx, fn_on_error};

FW_NOINLINE uint32_t fn_dispatch(uint32_t event)
{
	fw_handler_t h = fw_handlers[event % 3u];
	uint32_t r = h(event);
	return r + 1u;
}

FW_NOINLINE uint32_t fn_loop(uint32_t n, uint32_t (*dispatch)(uint32_t))
{
	uint32_t r = dispatch(n);
	return r * 2u;
}

uint32_t (*volatile fw_dispatcher)(uint32_t) = fn_dispatch;

FW_NOINLINE void scenario_fnptr(void)
{
	/* event 8: handler 8 % 3 = 2, fn_on_error */
	fw_sink = fn_loop(fw_inputs[0] + 5u, fw_dispatcher);
}

/* ------------------------------------------------------------------ */
/* 8. qsort_cb: the comparator dereferences a bad pointer inside qsort  */

struct qs_rec {
	uint32_t key;
	volatile uint32_t *weight;
};

static volatile uint32_t qs_weights[8];
static struct qs_rec qs_recs[8];

FW_NOINLINE int qs_compare(const void *a, const void *b)
{
	const struct qs_rec *x = (const struct qs_rec *)a;
	const struct qs_rec *y = (const struct qs_rec *)b;
	uint32_t wx = *x->weight, wy = *y->weight; /* one weight is bad */
	uint32_t kx = x->key * wx, ky = y->key * wy;
	return (kx > ky) - (kx < ky);
}

FW_NOINLINE uint32_t qs_sort_records(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		qs_weights[i] = fw_inputs[i & 7];
		qs_recs[i].key = fw_inputs[(i * 5u) & 7] ^ i;
		qs_recs[i].weight = &qs_weights[i];
	}
	qs_recs[n / 2u].weight = fw_bad_ptr; /* a record with a corrupt pointer */
	qsort(qs_recs, n, sizeof qs_recs[0], qs_compare);
	return qs_recs[0].key;
}

FW_NOINLINE void scenario_qsort_cb(void)
{
	fw_sink = qs_sort_records(8);
}

/* ------------------------------------------------------------------ */
/* 9. memcpy_bad: the fault is inside newlib's memcpy                  */

static uint8_t mc_buffer[64];

FW_NOINLINE uint32_t mc_copy_packet(uint8_t *dst, uint32_t len)
{
	const void *src = (const void *)(uintptr_t)fw_bad_ptr;
	memcpy(dst, src, len); /* a call to memcpy (-fno-builtin-memcpy) */
	return dst[0] + dst[len - 1u];
}

FW_NOINLINE uint32_t mc_receive(uint32_t n)
{
	uint32_t r = mc_copy_packet(mc_buffer, n);
	return r ^ n;
}

FW_NOINLINE void scenario_memcpy_bad(void)
{
	fw_sink = mc_receive(fw_inputs[7] + 9u); /* 32 bytes */
}

/* ------------------------------------------------------------------ */
/* 10. alloca_vla: frames whose size is only known at run time          */

FW_NOINLINE void av_consume(const uint32_t *buf, uint32_t n)
{
	fw_bad_ptr[7] = buf[n - 1u];
	fw_sink = buf[0];
}

FW_NOINLINE uint32_t av_vla(uint32_t n)
{
	uint32_t vla[n]; /* a VLA (a GNU extension in C++) */
	fw_fill_words(vla, n, n * 9u);
	av_consume(vla, n);
	return fw_sum_words(vla, n);
}

FW_NOINLINE uint32_t av_alloca(uint32_t n)
{
	uint32_t *p = (uint32_t *)__builtin_alloca(n * sizeof(uint32_t));
	fw_fill_words(p, n, n + 1u);
	uint32_t r = av_vla(n + fw_inputs[0]);
	return r + fw_sum_words(p, n);
}

FW_NOINLINE void scenario_alloca_vla(void)
{
	fw_sink = av_alloca(fw_inputs[6] + 4u); /* 23 words, then 26 */
}

/* ------------------------------------------------------------------ */
/* 11. irq_nested: the ISR faults two calls deep over thread code       */

FW_NOINLINE void irqn_touch(uint32_t v)
{
	fw_bad_ptr[8] = v;
	fw_sink = v + 0x55u;
}

FW_NOINLINE uint32_t irqn_service(uint32_t v)
{
	irqn_touch(v ^ 0xa5a5a5a5u);
	return fw_inputs[v & 7] + v;
}

void fw_irq_nested_handler(void)
{
	fw_sink = irqn_service(fw_inputs[4]);
}

/* Pend the interrupt through the NVIC; it is taken after the ISB. */
FW_NOINLINE uint32_t irqn_raise(uint32_t v)
{
	NVIC_ISER0 = 1u << IRQ_NESTED;
	NVIC_ISPR0 = 1u << IRQ_NESTED;
	__asm volatile("dsb\n\tisb" ::: "memory");
	return fw_inputs[v & 7] + v;
}

FW_NOINLINE uint32_t irqn_level3(uint32_t v)
{
	uint32_t r = irqn_raise(v + 1u);
	return r * 5u;
}

FW_NOINLINE uint32_t irqn_level2(uint32_t v)
{
	uint32_t r = irqn_level3(v ^ 3u);
	return r + 9u;
}

FW_NOINLINE uint32_t irqn_level1(uint32_t v)
{
	uint32_t r = irqn_level2(v * 3u);
	return r ^ 0x77u;
}

FW_NOINLINE void scenario_irq_nested(void)
{
	fw_sink = irqn_level1(fw_inputs[5]);
}

/* ------------------------------------------------------------------ */
/* 12. psp_thread: a thread on the process stack                       */

static uint64_t psp_stack[256]; /* 2 KiB, 8-byte aligned */

FW_NOINLINE void psp_store(uint32_t v)
{
	fw_bad_ptr[9] = v;
	fw_sink = v + 0x66u;
}

FW_NOINLINE uint32_t psp_work(uint32_t v)
{
	uint32_t local[16];
	fw_fill_words(local, 16, v);
	psp_store(local[v % 16u]);
	return fw_sum_words(local, 16);
}

FW_NOINLINE uint32_t psp_step(uint32_t v)
{
	uint32_t r = psp_work(v + 2u);
	return r * 3u;
}

FW_NOINLINE void psp_thread_entry(void)
{
	fw_sink = psp_step(fw_inputs[6]);
	for (;;)
		__asm volatile("" ::: "memory");
}

/*
 * Switch Thread mode to the PSP at stack_top and jump to entry with LR =
 * 0xFFFFFFFF (the reset value: the end of the stack), as an RTOS starts
 * its first thread. Thumb-1 only, so it assembles for ARMv6-M too.
 */
__attribute__((naked, noreturn)) void fw_switch_to_psp(__attribute__((unused)) void (*entry)(void),
							__attribute__((unused)) uint32_t *stack_top)
{
	/* GCC assumes divided syntax for inline assembly unless told. */
	__asm volatile(
		".syntax unified\n\t"
		"msr psp, r1\n\t"
		"mrs r2, control\n\t"
		"movs r3, #2\n\t"
		"orrs r2, r3\n\t"
		"msr control, r2\n\t"
		"isb\n\t"
		"movs r2, #0\n\t"
		"mvns r2, r2\n\t"
		"mov lr, r2\n\t"
		"bx r0\n\t");
}

FW_NOINLINE void scenario_psp_thread(void)
{
	fw_switch_to_psp(psp_thread_entry, (uint32_t *)&psp_stack[256]);
}

/* ------------------------------------------------------------------ */
/* 13. lazy_fp: an ISR faults while the thread's FP context is active    */

#if defined(FW_FPU)
FW_NOINLINE void lz_touch(uint32_t v)
{
	fw_bad_ptr[10] = v;
	fw_sink = v + 0x77u;
}

FW_NOINLINE uint32_t lz_service(uint32_t v)
{
	lz_touch(v * 11u);
	return fw_inputs[v & 7] ^ v;
}

/* Integer code only: the handler never touches the FPU, so the lazily
 * reserved S0-S15 area of the interrupted thread's frame stays unwritten
 * (FPCCR.LSPACT stays set, FPCAR points at it). */
void fw_irq_lazyfp_handler(void)
{
	fw_sink = lz_service(fw_inputs[3]);
}

/* The FP store makes the FP context active (CONTROL.FPCA = 1) before the
 * interrupt is pended: it is taken with an extended, lazily stacked frame. */
FW_NOINLINE float lz_pend_with_fp(float x)
{
	float y = x * fw_fin[1];
	fw_fsink = y;
	NVIC_ISER0 = 1u << IRQ_LAZYFP;
	NVIC_ISPR0 = 1u << IRQ_LAZYFP;
	__asm volatile("dsb\n\tisb" ::: "memory");
	return y + x * fw_fin[3];
}

FW_NOINLINE float lz_filter(float x)
{
	float r = lz_pend_with_fp(x * 2.0f + fw_fin[0]);
	return r * fw_fin[2];
}

FW_NOINLINE void scenario_lazy_fp(void)
{
	float r = lz_filter(fw_fin[0] + (float)fw_inputs[1]);
	fw_sink = (uint32_t)(int32_t)r;
}
#endif

/* ------------------------------------------------------------------ */
/* 14. stack_guard: the stack overflows into an MPU guard region        */

#if !defined(FW_V6M)
/*
 * Region 0: a 32-byte no-write guard at the bottom of the main stack
 * (_stack_guard, 32-byte aligned). PRIVDEFENA keeps the default map
 * elsewhere; HFNMIENA=0 turns the MPU off while HardFault runs.
 * PMSAv7: RASR AP=000 (no access), XN, SIZE=4 (32 bytes).
 * PMSAv8: RBAR AP=10 (read-only, privileged), XN; RLAR limit, EN.
 */
FW_NOINLINE void sg_mpu_guard_stack(void)
{
	uint32_t base = (uint32_t)(uintptr_t)_stack_guard;
	MPU_RNR = 0;
#if defined(FW_V8M)
	MPU_MAIR0 = 0x44u; /* attribute 0: normal memory, non-cacheable */
	MPU_RBAR = base | (2u << 1) | 1u;
	MPU_RASR = ((base + 31u) & ~31u) | 1u; /* RLAR: limit, AttrIndx 0, EN */
#else
	MPU_RBAR = base;
	MPU_RASR = (1u << 28) | (0u << 24) | (4u << 1) | 1u;
#endif
	MPU_CTRL = (1u << 2) | 1u;
	__asm volatile("dsb\n\tisb" ::: "memory");
}

/*
 * The stack user that overflows: it allocates a buffer that reaches past
 * the bottom of the stack and fills it from the bottom up, as memset
 * would. The first store that lands in the guard faults (DACCVIOL), with
 * SP already below the guard, so the exception frame is stacked intact
 * below it. (A push that hits the guard would make the exception entry
 * fault too: see README.md, stack_guard.)
 */
FW_NOINLINE void sg_hog(uint32_t seed)
{
	uint8_t *sp;
	__asm volatile("mov %0, sp" : "=r"(sp));
	uint32_t n = (uint32_t)(sp - (uint8_t *)_stack_guard) + 256u;
	volatile uint32_t *buf = (volatile uint32_t *)__builtin_alloca(n);
	for (uint32_t i = 0; i < n / 4u; i++)
		buf[i] = seed + i;
	fw_sink = buf[n / 8u];
}

FW_NOINLINE uint32_t sg_eat(uint32_t depth, uint32_t seed)
{
	uint32_t pad[48];
	fw_fill_words(pad, 48, seed);
	uint32_t r = 0;
	if (depth == 0)
		sg_hog(seed ^ 0x99u);
	else
		r = sg_eat(depth - 1u, pad[depth % 48u]);
	return r + pad[(r + depth) % 48u];
}

FW_NOINLINE void scenario_stack_guard(void)
{
	sg_mpu_guard_stack();
	fw_sink = sg_eat(6, fw_inputs[2]);
}
#endif

/* ------------------------------------------------------------------ */
/* 15. imprecise: a buffered store to unmapped memory                  */

#if !defined(FW_V6M)
/* With --imprecise-stores the emulator takes the BusFault two
 * instructions after the store: the volatile accesses after it keep the
 * stacked PC inside this function. */
FW_NOINLINE uint32_t imp_post(uint32_t v)
{
	fw_bad_ptr[11] = v;
	uint32_t a = fw_inputs[1];
	uint32_t b = fw_inputs[2];
	fw_sink = a + v;
	fw_sink = b ^ v;
	fw_sink = a * b;
	return a - b;
}

FW_NOINLINE uint32_t imp_driver(uint32_t v)
{
	uint32_t r = imp_post(v + 8u);
	return r ^ v;
}

FW_NOINLINE void scenario_imprecise(void)
{
	fw_sink = imp_driver(fw_inputs[7]);
}
#endif

/* ------------------------------------------------------------------ */
/* 16. assert_abort: assert -> __assert_func -> abort -> _exit (UDF)     */

FW_NOINLINE uint32_t as_validate(uint32_t v)
{
	assert(v < 100u);
	return v * 2u;
}

FW_NOINLINE uint32_t as_process(uint32_t v)
{
	uint32_t r = as_validate(v + 200u);
	return r + 1u;
}

FW_NOINLINE void scenario_assert_abort(void)
{
	fw_sink = as_process(fw_inputs[2]);
}

/* ------------------------------------------------------------------ */
/* 17. div0: integer divide by zero with CCR.DIV_0_TRP (v7-M, v8-M)     */

#if !defined(FW_V6M)
FW_NOINLINE uint32_t dv_ratio(uint32_t total, uint32_t count)
{
	uint32_t a = fw_inputs[0], b = fw_inputs[1];
	uint32_t q = (total + a * b) / (count * fw_zero); /* UDIV by 0 */
	return q + (a ^ b) * count;
}

FW_NOINLINE uint32_t dv_stats(uint32_t n)
{
	uint32_t r = dv_ratio(n * 100u, n + 1u);
	return r - n;
}

FW_NOINLINE void scenario_div0(void)
{
	SCB_CCR |= CCR_DIV_0_TRP;
	__asm volatile("dsb\n\tisb" ::: "memory");
	fw_sink = dv_stats(fw_inputs[3]);
}
#endif

/* ------------------------------------------------------------------ */

/*
 * Dispatch through a table, not a switch: at -Os GCC compiles a switch for
 * ARMv6-M into a call to libgcc's __gnu_thumb1_case_uqi, which "returns"
 * to the selected case label instead of to its caller. The emulator's
 * shadow stack never sees that call return and would keep a stale
 * run_scenario frame at the bottom of every truth.
 */
typedef void (*fw_scenario_fn)(void);

static const fw_scenario_fn fw_scenarios[] = {
	0,
	scenario_deep_chain,   /* 1 */
	scenario_callee_saved, /* 2 */
#if defined(FW_FPU)
	scenario_vpush, /* 3 */
#else
	0,
#endif
	scenario_recursion,  /* 4 */
	scenario_tail_call,  /* 5 */
	scenario_noreturn,   /* 6 */
	scenario_fnptr,      /* 7 */
	scenario_qsort_cb,   /* 8 */
	scenario_memcpy_bad, /* 9 */
	scenario_alloca_vla, /* 10 */
	scenario_irq_nested, /* 11 */
	scenario_psp_thread, /* 12 */
#if defined(FW_FPU)
	scenario_lazy_fp, /* 13 */
#else
	0,
#endif
#if !defined(FW_V6M)
	scenario_stack_guard, /* 14 */
	scenario_imprecise,   /* 15 */
#else
	0,
	0,
#endif
	scenario_assert_abort, /* 16 */
#if !defined(FW_V6M)
	scenario_div0, /* 17 */
#else
	0,
#endif
#if defined(__cplusplus)
	scenario_cxx_dtor,  /* 18 */
	scenario_cxx_catch, scenario_cxx_terminate, /* 19, 20 */
#endif
};

FW_NOINLINE void run_scenario(uint32_t n)
{
	if (n < sizeof fw_scenarios / sizeof fw_scenarios[0] && fw_scenarios[n] != 0)
		fw_scenarios[n]();
	fw_sink = n;
}

FW_EXTERN_C_END

int main(void)
{
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
