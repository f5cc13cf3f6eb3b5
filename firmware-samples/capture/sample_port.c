/*
 * The capture handler's port for faultline's sample firmware (QEMU
 * mps2-an385/an386, `faultline emulate`): the dump goes out through ARM
 * semihosting SYS_WRITE on the host's stdout, then SYS_EXIT ends the run.
 * The console handle comes from SYS_OPEN(":tt") as the semihosting
 * specification says (QEMU's ARM semihosting has no preset handles); when
 * the host refuses it (faultline emulate serves only the write and exit
 * calls, with handles 1 = stdout and 2 = stderr) FL_SAMPLE_HANDLE is used.
 *
 * Compile-time options (Makefile variants):
 *   FL_SAMPLE_BINARY   binary dump (default: the hex transcript)
 *   FL_SAMPLE_HANDLE   1: stdout (":tt" opened "w", the default),
 *                      2: stderr (":tt" opened "a")
 * Run-time option: set fl_sample_halt_after_dump to 1 (a debugger, or
 * `faultline emulate --set fl_sample_halt_after_dump=1`) to halt in the
 * handler's `b .` instead of exiting.
 */
#include "faultline_capture.h"

#ifndef FL_SAMPLE_HANDLE
#define FL_SAMPLE_HANDLE 1
#endif

#define SYS_OPEN 0x01u
#define SYS_WRITE 0x05u
#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

volatile uint32_t fl_sample_halt_after_dump;

static uint32_t semihost(uint32_t op, uint32_t arg)
{
	register uint32_t r0 __asm("r0") = op;
	register uint32_t r1 __asm("r1") = arg;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

static uint32_t sample_handle;
static uint32_t sample_opened;

static void sample_write(const void *buf, size_t len)
{
	/* SYS_OPEN and SYS_WRITE take {a, b, c}: 12 bytes of the capture stack. */
	volatile uint32_t blk[3];
	if (!sample_opened) {
		static const char tt[] = ":tt";
		blk[0] = (uint32_t)(uintptr_t)tt;
		blk[1] = FL_SAMPLE_HANDLE == 2 ? 8u : 4u; /* "a": stderr, "w": stdout */
		blk[2] = sizeof tt - 1;
		uint32_t h = semihost(SYS_OPEN, (uint32_t)(uintptr_t)blk);
		sample_handle = h == 0xFFFFFFFFu ? FL_SAMPLE_HANDLE : h;
		sample_opened = 1;
	}
	blk[0] = sample_handle;
	blk[1] = (uint32_t)(uintptr_t)buf;
	blk[2] = (uint32_t)len;
	(void)semihost(SYS_WRITE, (uint32_t)(uintptr_t)blk);
}

static void sample_done(void)
{
	if (fl_sample_halt_after_dump == 0)
		(void)semihost(SYS_EXIT, ADP_STOPPED_APPLICATION_EXIT);
}

/* The linker script's symbols (ld/mps2.ld). */
extern uint32_t _sdata[], _ebss[];

/* .data and .bss in one region: the globals and, in the psp_thread
 * scenario, the thread's stack (a .bss array). The main stack (from the SP
 * before the exception up to _estack) is found by the handler itself. */
static const struct fl_capture_range sample_regions[] = {
	{(uint32_t)(uintptr_t)_sdata, (uint32_t)(uintptr_t)_ebss},
};

const struct fl_capture_config fl_capture_config = {
	.write = sample_write,
#if defined(FL_SAMPLE_BINARY)
	.format = FL_CAPTURE_BINARY,
#else
	.format = FL_CAPTURE_HEX,
#endif
	.stacks = 0,
	.n_stacks = 0,
	.regions = sample_regions,
	.n_regions = sizeof sample_regions / sizeof sample_regions[0],
	.stack_window = 0,
	.done = sample_done,
};
