/* Semihosting and --run-handler test firmware for package emu: prints
 * through SYS_WRITE0/SYS_WRITEC/SYS_WRITE, faults (store to an unmapped
 * address), and its HardFault handler prints and exits with
 * SYS_EXIT_EXTENDED status 7. With exit_mode = 1 main exits (SYS_EXIT,
 * ADP_Stopped_ApplicationExit) before faulting. */
#include <stdint.h>

volatile uint32_t exit_mode;

static uint32_t semihost(uint32_t op, const void *arg)
{
	register uint32_t r0 __asm("r0") = op;
	register const void *r1 __asm("r1") = arg;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

__attribute__((noinline)) void fault_now(void)
{
	*(volatile uint32_t *)0x70000000 = 1;
}

void HardFault_Handler(void)
{
	static const uint32_t args[2] = {0x20026, 7};
	semihost(0x04, "in handler\n");
	semihost(0x20, args);
	for (;;)
		;
}

int main(void)
{
	static const char c = '!';
	static const char msg[] = "to stderr\n";
	uint32_t w[3] = {2, (uint32_t)msg, sizeof msg - 1};
	semihost(0x04, "hello from firmware\n");
	semihost(0x03, &c);
	semihost(0x05, w);
	if (exit_mode == 1)
		semihost(0x18, (const void *)0x20026);
	fault_now();
	for (;;)
		;
}

void Reset_Handler(void) { main(); }

extern uint32_t _estack[];
__attribute__((section(".vectors"), used)) void *const vectors[16] = {
	_estack, (void *)Reset_Handler, 0, (void *)HardFault_Handler,
};
