/*
 * Crash scenarios of the exception-entry corpus (README.md). The scenario
 * is chosen by crash_scenario, a .data global the oracle sets at main.
 * Every chain is built from FW_NOINLINE functions whose results are used
 * after each call, so neither inlining nor tail calls remove frames.
 */
#include "fw.h"

volatile uint32_t crash_scenario = SCENARIO_VECTOR_UNMAPPED;

/* Values the compiler cannot predict. */
volatile uint32_t fl_inputs[4] = {3, 5, 7, 11};
volatile uint32_t fl_sink;

/* ------------------------------------------------------------------ */
/* 1. vector_unmapped: an interrupt whose vector points at an address  */
/*    nothing is mapped at. The core stacks the interrupted context,   */
/*    then faults fetching the handler's first instruction: HardFault  */
/*    (FORCED, BusFault IBUSERR) with PC = UNMAPPED_HANDLER, LR =      */
/*    EXC_RETURN and SP at the interrupt's exception frame.            */

FW_NOINLINE static uint32_t vec_raise(uint32_t v)
{
	NVIC_ISER0 = 1u << UNMAPPED_IRQ;
	NVIC_STIR = UNMAPPED_IRQ;
	__asm volatile("dsb\n isb" ::: "memory");
	fl_sink = v;
	return v + fl_inputs[1];
}

FW_NOINLINE static uint32_t vec_worker(uint32_t v)
{
	uint32_t r = vec_raise(v * 3u);
	fl_sink = r;
	return r ^ v;
}

FW_NOINLINE static void scenario_vector_unmapped(void)
{
	fl_sink = vec_worker(fl_inputs[0]);
}

/* ------------------------------------------------------------------ */
/* 2. svc_nested: thread code issues svc as the last instruction of a  */
/*    noreturn function; SVC_Handler calls two levels deep and the     */
/*    innermost faults (UDF). Only frame 0 has the xPSR (IPSR 11): the */
/*    handler's exception number must carry across the calls for the  */
/*    interrupted frame to be looked up at its svc.                    */

FW_NOINLINE static uint32_t svc_fail(uint32_t code)
{
	if (code == 2u)
		__asm volatile("udf #2" ::: "memory");
	return code * 7u + fl_inputs[2];
}

FW_NOINLINE static uint32_t svc_dispatch(uint32_t code)
{
	uint32_t r = svc_fail(code);
	fl_sink = r;
	return r + code;
}

void SVC_Handler(void)
{
	fl_sink = svc_dispatch(fl_inputs[0] - 1u);
}

__attribute__((noreturn)) FW_NOINLINE static void svc_request(void)
{
	__asm volatile("svc #2" ::: "memory");
	__builtin_unreachable();
}

FW_NOINLINE static void scenario_svc_nested(void)
{
	/* Code follows the call, so its return address stays in this
	 * function (a call to a noreturn function at the very end is another
	 * matter, covered elsewhere). */
	if (fl_inputs[3] != 0u)
		svc_request();
	fl_sink = fl_inputs[3];
}

/* ------------------------------------------------------------------ */
/* 3. big_frame_ffff: a thread (on PSP) whose large frame holds one    */
/*    local word 0xFFFFFFFF (the reset value of LR) far below its      */
/*    saved return address; the function it calls faults.             */

static uint32_t thread_stack[512] __attribute__((aligned(8)));

FW_NOINLINE static uint32_t big_leaf(const volatile uint32_t *buf, uint32_t n)
{
	uint32_t s = 0;
	for (uint32_t i = 0; i < n; i++)
		s += buf[i];
	if (s != 0u)
		__asm volatile("udf #3" ::: "memory");
	return s;
}

FW_NOINLINE static uint32_t big_frame(uint32_t seed)
{
	volatile uint32_t buf[96];
	/* Even words only (no return address look-alikes), one of them -1. */
	for (uint32_t i = 0; i < 96; i++)
		buf[i] = (seed + i) * 4u;
	buf[5] = 0xFFFFFFFFu;
	uint32_t r = big_leaf(buf, 96);
	fl_sink = buf[7];
	return r + buf[5];
}

FW_NOINLINE static void big_thread(void)
{
	fl_sink = big_frame(fl_inputs[1]);
	for (;;)
		__asm volatile("" ::: "memory");
}

/* Enter big_thread on the process stack with LR = 0xFFFFFFFF (the value
 * a thread's outermost function would see out of reset). */
__attribute__((naked, noreturn)) static void switch_to_psp(__attribute__((unused)) void (*entry)(void),
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

FW_NOINLINE static void scenario_big_frame_ffff(void)
{
	switch_to_psp(big_thread, &thread_stack[512]);
}

/* ------------------------------------------------------------------ */

FW_NOINLINE static void run_scenario(uint32_t n)
{
	switch (n) {
	case SCENARIO_VECTOR_UNMAPPED: scenario_vector_unmapped(); break;
	case SCENARIO_SVC_NESTED: scenario_svc_nested(); break;
	case SCENARIO_BIG_FRAME_FFFF: scenario_big_frame_ffff(); break;
	default: break;
	}
	fl_sink += n; /* no tail call: run_scenario stays on the stack */
}

int main(void)
{
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
