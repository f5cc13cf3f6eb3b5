/*
 * The contract between the bootloader and the application of the faultline
 * bootloader + application sample (QEMU mps2-an385, Cortex-M3): the
 * bootloader's service table at a fixed flash address, and the header the
 * application places after its vector table.
 */
#ifndef FAULTLINE_BOOT_API_H
#define FAULTLINE_BOOT_API_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define SCB_VTOR REG32(0xE000ED08u)

/* Crash scenarios (scenarios.txt). */
enum {
	SCENARIO_APP_FAULT = 1,     /* the application faults in its own code */
	SCENARIO_BOOT_SERVICE = 2,  /* a bootloader service the app calls faults */
};

/* Unmapped in QEMU's MPS2 map: an access raises a precise BusFault. */
#define UNMAPPED_ADDR 0x30000010u

/* The bootloader's service table, at BOOT_API_ADDR in its flash. */
struct boot_api {
	uint32_t magic;
	uint32_t (*crc32)(const uint8_t *p, uint32_t n);
	uint32_t (*version)(void);
};
#define BOOT_API_MAGIC 0xB007A915u
/* The application's linker script defines boot_api_at = 0x00000400. */
extern const struct boot_api boot_api_at;
#define BOOT_API (&boot_api_at)

/* The application image: vectors at APP_BASE, then this header. */
struct app_header {
	uint32_t magic;
	void (*entry)(void);
};
#define APP_BASE 0x00010000u
#define APP_HEADER_MAGIC 0xA5917A9Bu
#define APP_HEADER ((const struct app_header *)(APP_BASE + 0x40u))

#endif
