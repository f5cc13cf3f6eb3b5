/*
 * faultline_capture: a device-side fault handler for ARMv7-M / ARMv7E-M
 * (Cortex-M3, M4, M4F, M7) that writes a CrashCatcher 3.0 compatible dump
 * of the crash through a function you supply. `faultline analyze --elf
 * FW.elf DUMP` decodes the dump (binary or its hex transcript). See
 * README.md in this directory.
 *
 * Integration, in short:
 *   1. compile faultline_capture.c with your firmware (gcc or clang, any
 *      optimisation level; no libc, no libgcc);
 *   2. define `const struct fl_capture_config fl_capture_config` (below):
 *      your write function, binary or hex, the RAM regions to dump;
 *   3. faultline_capture.c defines HardFault_Handler (a strong symbol that
 *      replaces a weak default); define FL_CAPTURE_NO_HARDFAULT_HANDLER to
 *      keep your own and branch to fl_capture_fault_entry from it instead.
 */
#ifndef FAULTLINE_CAPTURE_H
#define FAULTLINE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An address range [start, end): end is exclusive, as in the dump. */
struct fl_capture_range {
	uint32_t start;
	uint32_t end;
};

/* Output formats. */
enum {
	/* The binary dump, byte for byte (for a host that stores raw bytes). */
	FL_CAPTURE_BINARY = 0,
	/* Upper-case hex, one line ending in CR LF per write call, between a
	 * "CRASH ENCOUNTERED" banner and an "End of dump" line: for a UART
	 * or a console that only carries text. */
	FL_CAPTURE_HEX = 1,
};

struct fl_capture_config {
	/* Called with the dump, a piece at a time (at most
	 * FL_CAPTURE_CHUNK_BYTES bytes of dump, twice that plus 2 in hex
	 * form). buf is in RAM or flash, never in the System Control Space
	 * (fault registers are copied to RAM first).
	 * Runs in the HardFault handler on the capture's own stack (see
	 * FL_CAPTURE_STACK_BYTES): it must not fault, block on interrupts or
	 * use more stack than that. Required. */
	void (*write)(const void *buf, size_t len);
	/* FL_CAPTURE_BINARY or FL_CAPTURE_HEX. */
	uint32_t format;
	/* Known stacks, [limit, top) each (e.g. the RTOS task stacks). The
	 * stack the fault happened on is dumped from the SP before the
	 * exception up to the top of the entry that holds that SP. When none
	 * does, the main stack's top is _estack (if the link defines it) or
	 * the initial SP in the vector table at VTOR. May be NULL. */
	const struct fl_capture_range *stacks;
	uint32_t n_stacks;
	/* Further RAM to dump, e.g. .data and .bss. They must be readable and
	 * must not overlap one another; the part of one that the stack region
	 * covers is left out of it. May be NULL. */
	const struct fl_capture_range *regions;
	uint32_t n_regions;
	/* When the SP before the exception is in no known stack and no
	 * region: dump this many bytes from it upwards (0: none). Only set it
	 * when that memory is always readable. */
	uint32_t stack_window;
	/* Called after the dump, on the capture stack (e.g. to reset the
	 * device). If it is NULL or returns, the handler halts in `b .`. */
	void (*done)(void);
};

/* You define this (in flash: it must survive whatever corrupted RAM). */
extern const struct fl_capture_config fl_capture_config;

/*
 * The fault entry: a naked function that saves r4-r11, EXC_RETURN (LR),
 * MSP, PSP, xPSR and, for an extended frame, S0-S31 into a static context
 * before anything clobbers them, then moves MSP to the capture's own stack
 * and writes the dump. Use it as (or branch to it from the first
 * instruction of) HardFault_Handler, or MemManage/BusFault/UsageFault
 * handlers: LR, SP and r4-r11 must still be the values at exception entry.
 * Never returns.
 */
void fl_capture_fault_entry(void) __attribute__((noreturn));

/* The capture's own stack, in bytes (a static array; 8-byte multiple).
 * faultline_capture.c itself needs at most 208 bytes of it at -O0 and 64
 * at -O2 (gcc -fstack-usage / clang: README.md); the rest is for the write
 * and done functions. */
#ifndef FL_CAPTURE_STACK_BYTES
#define FL_CAPTURE_STACK_BYTES 512
#endif

/* Largest piece of the dump handed to write() at once (a multiple of 4). */
#ifndef FL_CAPTURE_CHUNK_BYTES
#define FL_CAPTURE_CHUNK_BYTES 32
#endif

#ifdef __cplusplus
}
#endif

#endif
