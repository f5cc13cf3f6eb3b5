/*
 * The interface between the Secure and the Non-secure image of the
 * faultline TrustZone sample (QEMU mps2-an505, Cortex-M33). The Secure
 * image implements these as CMSE entry functions (cmse_nonsecure_entry);
 * the Non-secure image calls them through the veneers of the import
 * library the Secure link writes (--cmse-implib --out-implib).
 */
#ifndef FAULTLINE_TZ_API_H
#define FAULTLINE_TZ_API_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif

/* Crash scenarios (scenarios.txt). */
enum {
	SCENARIO_NS_CALLBACK = 1, /* NS code called back from Secure code faults */
	SCENARIO_SECURE_SERVICE = 2, /* Secure code called from NS faults */
	SCENARIO_NS_IRQ = 3, /* an NS interrupt preempts Secure code; its handler faults */
};

/* The external interrupt scenario 3 targets to the Non-secure state. */
#define NS_IRQ 7u

/* An address QEMU's AN505 map leaves unmapped: an access raises a precise
 * BusFault, which escalates to the Secure HardFault. */
#define UNMAPPED_ADDR 0x0ff00000u

typedef uint32_t ns_callback_t(uint32_t);

/* Entry functions of the Secure image. */
uint32_t s_scenario(void);
uint32_t s_run_callback(ns_callback_t *cb, uint32_t arg);
uint32_t s_checksum(const uint32_t *p, uint32_t n);
uint32_t s_poll_with_irq(uint32_t rounds);

#endif
