/*
 * The capture handler's port for the recorder sample: the dump goes out as
 * the hex transcript through semihosting SYS_WRITE (stdout), then SYS_EXIT
 * ends the run (QEMU, `faultline emulate --run-handler`). The dumped RAM
 * is .data, .bss and the whole heap area (_sdata up to the main stack):
 * the recorder's table is in .data, and the heap lets faultline walk the
 * allocator's chunks and check the table against them. The main stack is
 * dumped by the handler itself.
 */
#include "faultline_capture.h"

#define SYS_OPEN 0x01u
#define SYS_WRITE 0x05u
#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static uint32_t semihost(uint32_t op, uint32_t arg)
{
	register uint32_t r0 __asm("r0") = op;
	register uint32_t r1 __asm("r1") = arg;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

static uint32_t port_handle;
static uint32_t port_opened;

static void port_write(const void *buf, size_t len)
{
	volatile uint32_t blk[3];
	if (!port_opened) {
		static const char tt[] = ":tt";
		blk[0] = (uint32_t)(uintptr_t)tt;
		blk[1] = 4u; /* "w": stdout */
		blk[2] = sizeof tt - 1;
		uint32_t h = semihost(SYS_OPEN, (uint32_t)(uintptr_t)blk);
		port_handle = h == 0xFFFFFFFFu ? 1u : h;
		port_opened = 1;
	}
	blk[0] = port_handle;
	blk[1] = (uint32_t)(uintptr_t)buf;
	blk[2] = (uint32_t)len;
	(void)semihost(SYS_WRITE, (uint32_t)(uintptr_t)blk);
}

static void port_done(void)
{
	(void)semihost(SYS_EXIT, ADP_STOPPED_APPLICATION_EXIT);
}

extern uint32_t _sdata[], _heap_limit[];

static const struct fl_capture_range port_regions[] = {
	{(uint32_t)(uintptr_t)_sdata, (uint32_t)(uintptr_t)_heap_limit},
};

const struct fl_capture_config fl_capture_config = {
	.write = port_write,
	.format = FL_CAPTURE_HEX,
	.regions = port_regions,
	.n_regions = sizeof port_regions / sizeof port_regions[0],
	.done = port_done,
};
