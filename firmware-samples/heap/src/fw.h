/*
 * Shared definitions of the faultline heap-tracking firmware: scenario
 * numbers (selected with `faultline heap --set heap_scenario=N`) and the
 * semihosting exit the runs end with.
 */
#ifndef FAULTLINE_HEAP_FW_H
#define FAULTLINE_HEAP_FW_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Scenarios: one planted bug each, so that a run reports exactly it. */
enum {
	HEAP_CLEAN = 0,        /* allocates and frees everything: no leak, no error */
	HEAP_LEAKS = 1,        /* two leak sites: 3 x 48 bytes and 1 x 20 bytes */
	HEAP_DOUBLE_FREE = 2,
	HEAP_INVALID_FREE = 3, /* a pointer into the middle of a block */
	HEAP_USE_AFTER_FREE = 4,
	HEAP_OVERFLOW = 5,     /* writes 4 bytes past a 20-byte block */
	HEAP_CRASH = 6,        /* leaks, then a NULL write: the dump-side walk */
	HEAP_BUSY = 7,         /* an allocation-heavy loop (benchmarks) */
	HEAP_BUSY_CRASH = 8,   /* the loop, then HEAP_CRASH: a fault after millions of instructions */
	HEAP_ALLOC_STATS = 9,  /* the allocator's statistics (mallinfo & co., vPortGetHeapStats) while it
	                          has free blocks: its own reads of free memory, no error (heap-c, heap-rtos) */
	HEAP_SLACK_OVERFLOW = 10, /* an off-by-one fill writes 4 bytes past a 24-byte block, the last one:
	                             into newlib's rounding slack, past heap_4's block (heap-c, heap-rtos) */
	HEAP_LOST = 11,        /* two blocks whose last pointer is gone (one overwritten, one left in a
	                          returned function's stack frame), one still reachable, then a NULL
	                          write (heap-c) */
};

extern volatile uint32_t heap_scenario;
extern volatile uint32_t heap_iterations;
extern volatile uint32_t fw_sink;

int main(void);
void fw_exit(int status) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
