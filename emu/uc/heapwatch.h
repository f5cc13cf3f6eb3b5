// Heap watching in C (heapwatch.c). The block hook sees every call of an
// allocator entry point and its return; the bookkeeping that must happen at
// that moment is done here: the live-block table, the byte map of block
// states (so that the data-access hook can tell a use after free or an
// overflow at once), and a record of the call (operands, result, the
// instruction count and the shadow call stack, interned) appended to an
// event buffer that Go reads in batches (when it fills, before an access
// error is reported, at checkpoints and at the end of the run). Go sees no
// allocator call one by one: a C->Go crossing per call cost more than the
// firmware's own allocator.
#ifndef FAULTLINE_UC_HEAPWATCH_H
#define FAULTLINE_UC_HEAPWATCH_H

#include <stdint.h>

struct fl_tracker;
struct fl_frame;

// Byte states of the heap map (fl_heapwatch.map). 0 is "no opinion":
// memory the watcher knows nothing about, never reported.
enum {
	FL_HW_NONE = 0,
	FL_HW_LIVE = 1,   // inside a live block
	FL_HW_FREED = 2,  // inside a freed block
	FL_HW_HEADER = 3, // allocator bookkeeping just before a block
	FL_HW_PAD = 4,    // past a live block's requested size, before its next header
};

// fl_hw_mark's soft argument: 0 sets every byte, 1 leaves live bytes,
// FL_HW_MARK_FILL sets only bytes in no state (FL_HW_NONE).
#define FL_HW_MARK_FILL 2

// What an entry point does (the values of Go's heap.Op).
enum {
	FL_HW_OP_ALLOC = 0,
	FL_HW_OP_CALLOC = 1,
	FL_HW_OP_REALLOC = 2,
	FL_HW_OP_FREE = 3,
	FL_HW_OP_MEMALIGN = 4,
	// Allocator-internal code that reads and writes the allocator's own
	// memory, free blocks included (mallinfo, malloc_usable_size,
	// vPortGetHeapStats...): no block changes hands, its accesses are not
	// checked while it runs.
	FL_HW_OP_INTERNAL = 5,
	// Not an allocator: a block address watched for Go (fl_hw_watch),
	// reported by goHeapBlock when a block starts there.
	FL_HW_OP_WATCH = 99,
};

// Event kinds.
enum {
	FL_HW_EV_ENTRY = 0,
	FL_HW_EV_RETURN = 1, // the return of the call whose entry was read already
	FL_HW_EV_CALL = 2,   // an entry and its return (result: r0)
};

#define FL_HW_FILTER_BITS 4096
#define FL_HW_HIT 16
// Events are buffered until Go reads them outside the emulation (at a
// checkpoint, every few million instructions, or when the run ends): a
// callback into Go from inside it costs more than the crossing itself (the
// Go scheduler's monitor thread wakes up and polls for a while). The buffer
// grows up to FL_HW_EVENTS_MAX; only then does the block hook call Go.
#define FL_HW_EVENTS 4096
#define FL_HW_EVENTS_MAX (1u << 20)
#define FL_HW_MAX_STACKS 16384   // interned stacks before the table is reset
#define FL_HW_LAST 256
#define FL_HW_MAX_FRAMES (1u << 18) // frames held by the interned stacks

// fl_hw_func describes an entry point: which argument registers (r0-r3,
// -1: none) hold its operands and how many bytes of bookkeeping precede
// its blocks.
typedef struct fl_hw_func {
	uint32_t op;
	int32_t ptr, size, count;
	uint32_t header;
	uint32_t id; // the Go side's number for it
} fl_hw_func;

// fl_hw_event is one allocator entry or return.
typedef struct fl_hw_event {
	uint64_t insn;  // instructions counted when the block started
	uint32_t kind;  // FL_HW_EV_*
	uint32_t func;  // fl_hw_func.id of the call
	uint32_t ptr;   // entry: the pointer operand (0 if none); return: r0
	uint32_t size;  // entry: the size operand (count*size for calloc, saturated)
	uint32_t ret;   // entry: the return address (bit 0 clear)
	uint32_t sp;    // entry: SP
	uint32_t stack; // entry: interned stack id
	uint32_t result; // FL_HW_EV_CALL: r0 at the return (0 for a free)
} fl_hw_event;

// An interned shadow stack: the frames pool[off:off+depth] and the state
// the call stack is computed from.
typedef struct fl_hw_stack {
	uint32_t hash, pc, sp, psp, depth, off;
} fl_hw_stack;

typedef struct fl_hw_live {
	uint32_t addr, size, header; // addr 0: empty slot
} fl_hw_live;

typedef struct fl_heapwatch {
	uintptr_t handle; // the Go side's cgo.Handle
	// Entry points, sorted by address, with a bit filter on (addr >> 1).
	uint32_t *addrs;
	fl_hw_func *funcs;
	uint32_t n, cap;
	uint8_t filter[FL_HW_FILTER_BITS / 8];
	// The entry points found last, by (addr >> 1) % FL_HW_HIT: addr | 1
	// (0: none) and its index; emptied when the entry points change.
	uint32_t hit_addr[FL_HW_HIT], hit_at[FL_HW_HIT];
	// The byte map covers [base, base + len).
	uint32_t base, len;
	uint8_t *map;
	int checks; // check accesses at all

	// The call in progress: inside until the block at ret runs with SP >=
	// ret_sp. Accesses meanwhile are the allocator's own.
	int inside;
	uint32_t ret, ret_sp;
	int ret_go; // FL_HW_OP_WATCH: report the return to Go (else just end it)
	uint32_t p_op, p_func, p_ptr, p_size, p_header;
	int p_old; // realloc: the old block was live (and was released)
	uint32_t p_old_size, p_old_header;
	// The entry's event is still buffered, at ev[p_ev]: its return
	// completes it (FL_HW_EV_CALL) instead of adding an event.
	int p_ev_ok;
	uint32_t p_ev;

	// Live blocks: open addressing on addr, linear probing.
	fl_hw_live *live;
	uint32_t nlive, live_cap; // live_cap a power of two

	fl_hw_event *ev;
	uint32_t nev, evcap;

	fl_hw_stack *stacks;
	uint32_t nstacks;
	uint32_t *stack_index; // id+1, 0 empty; FL_HW_MAX_STACKS*2 slots
	struct fl_frame *pool;
	uint32_t npool, npool_cap;
	uint32_t last[FL_HW_LAST]; // by call site: the id of its last stack
	uint32_t gen; // bumped when the interned stacks are dropped
	uint64_t drains;
} fl_heapwatch;

fl_heapwatch *fl_hw_new(uintptr_t handle, uint32_t base, uint32_t len);
void fl_hw_free(fl_heapwatch *w);
int fl_hw_add_func(fl_heapwatch *w, uint32_t addr, const fl_hw_func *f);
int fl_hw_watch(fl_heapwatch *w, uint32_t addr, int on);
void fl_hw_mark(fl_heapwatch *w, uint32_t addr, uint32_t n, uint8_t state, int soft);
int fl_hw_live_put(fl_heapwatch *w, uint32_t addr, uint32_t size, uint32_t header);
void fl_hw_live_clear(fl_heapwatch *w);
void fl_hw_events_done(fl_heapwatch *w);
void fl_hw_stacks_reset(fl_heapwatch *w);

// fl_hw_wants says whether the block at addr needs fl_hw_block: the return
// of the call in progress, or a possible entry point (the bit filter).
static inline int fl_hw_wants(const fl_heapwatch *w, uint32_t addr) {
	if (w->inside) {
		return addr == w->ret;
	}
	uint32_t b = (addr >> 1) & (FL_HW_FILTER_BITS - 1);
	return (w->filter[b >> 3] >> (b & 7)) & 1;
}

// fl_hw_is_entry says whether addr is the entry point of a hooked allocator
// function (not a watched block address) while no watched call is in
// progress.
int fl_hw_is_entry(const fl_heapwatch *w, uint32_t addr);

// Called by tracker.c and check.c.
void fl_hw_block(struct fl_tracker *t, uint32_t addr);
void fl_hw_access(struct fl_tracker *t, uint32_t addr, int size, int write);
uint32_t fl_hw_stack_key(const struct fl_tracker *t, uint32_t *key, uint32_t n);

#endif
