/*
 * Non-secure image of the faultline TrustZone sample: asks the Secure
 * image which scenario to run, then either hands Secure code a callback
 * that faults (scenario 1) or passes a Secure service a bad pointer
 * (scenario 2). Calls into Secure code go through the CMSE veneers of the
 * Secure image's import library.
 */
#include "../include/tz_api.h"

volatile uint32_t ns_counter;

FW_NOINLINE static uint32_t ns_store(uint32_t v)
{
	*(volatile uint32_t *)UNMAPPED_ADDR = v;
	return v + 1;
}

/* Called back from Secure code (s_dispatch) with FNC_RETURN in LR. */
FW_NOINLINE static uint32_t ns_callback(uint32_t v)
{
	ns_counter += v;
	return ns_store(v * 3u) + ns_counter;
}

/* The Non-secure interrupt handler (NS_IRQ), entered while Secure code
 * runs (scenario 3): its work faults. */
FW_NOINLINE static void ns_irq_work(uint32_t v)
{
	ns_counter += ns_store(v ^ 0x5au);
}

void ns_irq_handler(void)
{
	ns_irq_work(ns_counter + 1u);
}

FW_NOINLINE static uint32_t ns_run(uint32_t scenario)
{
	switch (scenario) {
	case SCENARIO_NS_CALLBACK:
		return s_run_callback(ns_callback, 7u);
	case SCENARIO_SECURE_SERVICE:
		return s_checksum((const uint32_t *)UNMAPPED_ADDR, 4u);
	case SCENARIO_NS_IRQ:
		return s_poll_with_irq(100000u);
	}
	return 0;
}

int main(void)
{
	uint32_t r = ns_run(s_scenario());
	ns_counter += r;
	for (;;)
		__asm volatile("" ::: "memory");
}
