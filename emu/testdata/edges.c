// Test firmware for runs at the edges of the memory map (package emu,
// map_test.go, garbage_test.go): a peripheral that exists only with --map,
// and jumps into memory that holds no code. Built for Cortex-M4 (soft
// float); see the Makefile. The global crash_scenario (Config.Sets)
// selects what main does; --call jump_ram starts at the RAM jump.
//
// This image has no initialised data (.data is empty): nothing follows
// .rodata in flash, so the flash mapping ends with zeros after the last
// constant.
#include <stdint.h>

#define NOINLINE __attribute__((noinline))
#define REG(a) (*(volatile uint32_t *)(a))
#define PERIPH 0x40010000u // not in the ELF: mapped with --map or not at all

volatile uint32_t crash_scenario;
volatile uint32_t garbage_offset; // byte offset into noise (scenario 5)
volatile uint32_t periph_before, periph_after, periph_done;
volatile uint32_t sink;
__attribute__((used)) static uint32_t ram_zeros[64]; // .bss: zero

// Data, not code (.rodata). 0xFFFFFFFF is UNDEFINED as a Thumb instruction
// (ARMv7-M ARM A5.3.18, coprocessor space with op1 = 11xxxx); 0xE7FE is
// "b ." (a branch to itself); noise is 256 fixed pseudo-random bytes; the
// zeros are the last constant in flash.
const uint32_t all_ones[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
const uint16_t self_loop[2] = {0xe7fe, 0xe7fe};
const uint32_t noise[64] = {
	0x3b5f1c2e, 0x9d41a7f0, 0x06c8e3b9, 0x7f12d45a, 0xc4a9068d, 0x58e2b1f7, 0xe1037c64, 0x2fb6958a,
	0x91d47e03, 0x4a6c0bf2, 0xd8352a9e, 0x17f8c640, 0xb2e9053d, 0x6c1a8f74, 0x0e57d2c9, 0xf3a4617b,
	0x85c02e9f, 0x3d79b416, 0xa61f5c08, 0x52e4073b, 0xcb8d91e5, 0x2406fa7c, 0x9b73e158, 0x70ad3cc2,
	0x1e9257a4, 0xe86b0d31, 0x47c5f98e, 0xb9307a6d, 0x0d64e2f3, 0x63af1b95, 0xfa18c427, 0x8c5d3e60,
	0x29e7b0d1, 0xd5420f8b, 0x7e9c6a13, 0x10b3d5ec, 0xc67e2149, 0x5b08f7a2, 0xa3d5940e, 0x3f6124b7,
	0x94ca7d50, 0x0b37e8c6, 0xe0f54a19, 0x6d9b1283, 0xbf4206de, 0x47e8d935, 0x1a7cb06f, 0x8531f4ca,
	0xf2096b3d, 0x3ec4a751, 0x98be2c0a, 0x2463d9f8, 0xcd1f8467, 0x71a035b2, 0x06d75e9c, 0xa84bf123,
	0x5f82c7e6, 0xe9364a0d, 0x14d9b3f1, 0x8b6e0d57, 0x37f5a28c, 0xd20c69b4, 0x69a1f04e, 0xb07e3d19,
};
// In a section of its own, placed after .rodata: nothing follows it in flash.
__attribute__((section(".rodata.zeros"))) const uint32_t flash_zeros[16];

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

NOINLINE void do_udf(void) { __asm volatile("udf #2"); }

// Scenario 1: read, write and read back a peripheral register. Without a
// map the read faults; with an rx map the write does; with rw the value
// sticks; with zero it reads 0 and the write is ignored. The run then ends
// at a UDF so that the state can be checked.
NOINLINE void periph_poke(void) {
	periph_before = REG(PERIPH);
	REG(PERIPH + 4) = 0xc0ffee;
	periph_after = REG(PERIPH + 4);
	periph_done = 1;
}

// Jumps to data as if it were a function (a garbage function pointer).
NOINLINE void jump_to(const volatile void *p) { ((void (*)(void))((uint32_t)p | 1))(); }

// --call jump_ram: branch (no call: nothing is pushed on the stack) into
// .bss, which is zero from there to the top of RAM.
__attribute__((naked)) void jump_ram(void) {
	__asm volatile("ldr r0, =ram_zeros + 1\n bx r0\n .ltorg");
}

int main(void) {
	switch (crash_scenario) {
	case 1:
		periph_poke();
		do_udf();
		break;
	case 2: // all ones in flash: an undefined instruction
		jump_to(all_ones);
		break;
	case 3: // the zeros at the end of flash, then the end of the mapping
		jump_to(flash_zeros);
		break;
	case 4: // data that happens to be a branch to itself: never ends
		jump_to(self_loop);
		break;
	case 5: // pseudo-random data
		jump_to((const uint8_t *)noise + garbage_offset);
		break;
	}
	for (;;) {}
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
}
