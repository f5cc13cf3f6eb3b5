// Heap watching in C (heapwatch.c): the block hook reports the start of a
// block at a watched address (an allocator's entry, or the return address of
// an allocator call in progress) to Go, and the data-access hook checks
// every access inside the heap against a byte map of block states, calling
// Go only for an access that breaks a rule. Everything else stays in C.
#ifndef FAULTLINE_UC_HEAPWATCH_H
#define FAULTLINE_UC_HEAPWATCH_H

#include <stdint.h>

struct fl_tracker;

// Byte states of the heap map (fl_heapwatch.map). 0 is "no opinion":
// memory the watcher knows nothing about, never reported.
enum {
	FL_HW_NONE = 0,
	FL_HW_LIVE = 1,   // inside a live block
	FL_HW_FREED = 2,  // inside a freed block
	FL_HW_HEADER = 3, // allocator bookkeeping just before a block
	FL_HW_PAD = 4,    // past a live block's requested size, before its next header
};

#define FL_HW_FILTER_BITS 4096
#define FL_HW_NREGS 6 // r0-r3, sp, lr passed to goHeapBlock

typedef struct fl_heapwatch {
	uintptr_t handle; // the Go side's cgo.Handle
	// Watched block addresses, sorted, with a bit filter on (addr >> 1).
	uint32_t *addrs;
	uint32_t n, cap;
	uint8_t filter[FL_HW_FILTER_BITS / 8];
	// The byte map covers [base, base + len).
	uint32_t base, len;
	uint8_t *map;
	int inside; // an allocator call is in progress: accesses are its own
	// While inside, the block hook reports only the call's return (a
	// block at ret with SP >= ret_sp), and only when ret_go: the return
	// of a free needs no Go and just ends the call here.
	uint32_t ret, ret_sp;
	int ret_go;
	int checks; // check accesses at all
} fl_heapwatch;

fl_heapwatch *fl_hw_new(uintptr_t handle, uint32_t base, uint32_t len);
void fl_hw_free(fl_heapwatch *w);
int fl_hw_watch(fl_heapwatch *w, uint32_t addr, int on);
void fl_hw_mark(fl_heapwatch *w, uint32_t addr, uint32_t n, uint8_t state, int soft);

// Called by tracker.c and check.c.
void fl_hw_block(struct fl_tracker *t, uint32_t addr);
void fl_hw_access(struct fl_tracker *t, uint32_t addr, int size, int write);
uint32_t fl_hw_stack_key(const struct fl_tracker *t, uint32_t *key, uint32_t n);

#endif
