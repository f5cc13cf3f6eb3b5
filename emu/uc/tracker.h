// Hot hooks written in C: per-block instruction counting with a budget, the
// shadow call stack, the exact-PC code hook and the divide-by-zero check.
// Each C->Go callback costs ~50 ns, so nothing here calls into Go.
#ifndef FAULTLINE_UC_TRACKER_H
#define FAULTLINE_UC_TRACKER_H

#include <stdint.h>
#include "ucapi.h" // <unicorn/unicorn.h>, with the uc_* functions loaded at run time

enum {
	FL_FRAME_CALL = 0,      // pushed by a BL/BLX
	FL_FRAME_EXCEPTION = 1, // exception marker pushed by the harness
};

// fl_frame is one shadow stack entry.
typedef struct fl_frame {
	uint32_t ret;       // return address (bit 0 clear), or interrupted PC for a marker
	uint32_t sp;        // SP when the call was made (or the frame address for a marker)
	uint32_t kind;      // FL_FRAME_*
	uint32_t exc;       // exception number for a marker
	uint32_t prev_base; // for a marker: the base of the level below
	uint32_t psp;       // a call made on the process stack (Thread mode, CONTROL.SPSEL);
	                    // for a marker: the interrupted code was on the process stack
	uint32_t target;    // the called address (bit 0 clear)
	uint32_t isp;       // for a marker: the interrupted code's SP (before the frame was pushed)
} fl_frame;

// fl_block caches what the block hook needs to know about a translated block.
typedef struct fl_block {
	uint32_t addr, size;
	uint32_t insns;    // number of Thumb instructions
	uint32_t ends_call; // the last instruction is BL or BLX
} fl_block;

#define FL_BLOCK_CACHE 8192
// Bits of the return-address filter (fl_tracker.retbits).
#define FL_RET_BITS (1u << 16)

typedef struct fl_tracker {
	uc_engine *uc;
	uc_hook block_hook;
	uc_hook exact_hook;
	int exact_on;
	uint64_t exact_begin, exact_end;

	// Events: when event is set, or insns reaches event_at (0: never), the
	// block hook calls goTrackerEvent(handle, addr) before the block runs.
	// Go may write PC there (exception entry), which abandons the block.
	int event;
	uint64_t event_at;
	uintptr_t handle;
	// After an exception return the first block at skip_addr has already
	// had its shadow-stack step (it was settled when the exception was
	// taken): skip it once.
	uint32_t skip_addr;
	int skip_valid;

	uint64_t insns;  // guest instructions run, counted per block as it starts
	uint64_t budget; // never start a block that would take insns past budget (0: no budget)
	int budget_hit;
	uint64_t budget_left; // at a budget stop: budget - insns (instructions of the stopped block that fit)
	uint32_t budget_block; // at a budget stop: the stopped block's instruction count
	// Stop before the first block that enters a hooked allocator (heap
	// watch) while no call is in progress, once: the harness translates
	// the allocator's code then, before installing the data-access hook.
	int entry_stop;
	int entry_hit;

	uint32_t cur_addr, cur_size; // the block being executed
	uint32_t prev_end;           // end address of the previous block
	int prev_call;               // previous block ended with BL/BLX

	uint32_t last_pc;      // exact-PC hook: address of the last instruction
	uint64_t exact_insns;  // exact-PC hook: instructions seen
	// exact-PC hook: the IT state (ITSTATE, A7.3.3) of the instruction at
	// last_pc, and the one the next instruction gets if it follows it
	// (it_next_pc); the core's copy is stale in a hook (docs/unicorn.md).
	uint32_t last_it, it_next, it_next_pc;
	int it_next_valid;

	int div_trap;          // CCR.DIV_0_TRP
	int div_fault;         // a divide by zero was caught
	uint32_t div_pc;
	uc_hook *div_hooks;
	uint32_t ndiv, capdiv;

	int shadow;            // keep the shadow stack
	fl_frame *stack;
	uint32_t depth, cap, base;
	uint64_t dropped;      // pushes lost because the stack was full
	uint64_t sp_reads;

	// Function ranges [fn_start[i], fn_end[i]), sorted and disjoint, from
	// the ELF's function symbols (fl_tracker_set_funcs): fl_prune asks
	// which function an address is in.
	uint32_t *fn_start, *fn_end;
	uint32_t nfn;

	// Access checks the emulated core makes but Unicorn does not (check.c):
	// the MPU for accesses Unicorn allows, CCR.UNALIGN_TRP, and the
	// always-aligned instructions of ARMv7-M. A check that fails records
	// chk_* and stops the emulation.
	uc_hook mem_hook;      // UC_HOOK_MEM_READ|WRITE, only while needed
	int mem_on;
	uc_hook *chk_hooks;    // code hooks: XN ranges and aligned-only instructions
	uint32_t nchk, capchk;
	int align_trap;        // CCR.UNALIGN_TRP: halfword/word accesses must be aligned
	int mpu_check;         // check data accesses against the MPU model
	int v8m;
	uint32_t mpu_ctrl, rbar[16], rlim[16]; // MPU_CTRL, MPU_RBAR, MPU_RASR (v7) / MPU_RLAR (v8)
	int neg_prio;          // an exception with negative priority is active
	int chk_fault;         // FL_CHK_*
	uint32_t chk_addr, chk_size, chk_write, chk_pc;
	// Snapshot when a check failed: the block then running and, while
	// the exact-PC hook is on, its count, last PC and IT state. The
	// emulation stops at the next block boundary only (the rest of the
	// block still runs, and the next block hook may run), so the live
	// values move on.
	uint32_t chk_blk, chk_blk_size, chk_last_pc, chk_it;
	uint64_t chk_exact;
	uint64_t stop_at;      // exact-PC hook: stop before its stop_at-th instruction (0: never)

	// Heap watching (heapwatch.h), NULL when off.
	struct fl_heapwatch *hw;
	// Lazy FP state preservation (lazyfp.h), NULL until used.
	struct fl_lazyfp *lf;

	fl_block cache[FL_BLOCK_CACHE];
	// A bit for every return address ever written into the stack (hashed
	// on addr >> 1, never cleared): a block whose bit is clear is no
	// return, and the block hook skips the search for it.
	uint8_t retbits[FL_RET_BITS / 8];
	// The start of every block that ran while the data-access hook was
	// off (a set, keys addr | 1, 0 empty): installing the hook later drops
	// just those translations (fl_tracker_drop_seen) instead of the whole
	// translation cache. seen_lost: out of memory, a full flush is needed.
	uint32_t *seen;
	uint32_t nseen, capseen;
	int seen_lost;
} fl_tracker;

enum {
	FL_CHK_NONE = 0,
	FL_CHK_UNALIGNED = 1, // data access that must be aligned is not
	FL_CHK_MPU_DATA = 2,  // the MPU denies a data access
	FL_CHK_MPU_FETCH = 3, // the MPU denies executing here (XN or no access)
	FL_CHK_STOPPED = 4,   // the exact-PC hook stopped before instruction stop_at
};

fl_tracker *fl_tracker_new(uc_engine *uc, int shadow, uint32_t cap, uc_err *err);
void fl_tracker_free(fl_tracker *t);
uc_err fl_tracker_exact(fl_tracker *t, int on, uint64_t begin, uint64_t end);
uc_err fl_tracker_watch_div(fl_tracker *t, uint32_t addr);
void fl_tracker_push_exception(fl_tracker *t, uint32_t exc, uint32_t pc, uint32_t sp,
                               uint32_t isp, int psp);
int fl_tracker_set_funcs(fl_tracker *t, const uint32_t *start, const uint32_t *end, uint32_t n);
int64_t fl_func_index(const fl_tracker *t, uint32_t addr);
uint32_t fl_prune(const fl_tracker *t, const fl_frame *s, uint32_t base, uint32_t depth,
                  uint32_t pc, uint32_t sp, uint32_t psp);
int fl_tracker_pop_exception(fl_tracker *t);
void fl_tracker_settle_fetch(fl_tracker *t, uint32_t pc);
void fl_tracker_set_stack(fl_tracker *t, const fl_frame *frames, uint32_t n, uint32_t base);
uc_err fl_tracker_mem_hook(fl_tracker *t, int on);
uc_err fl_tracker_drop_seen(fl_tracker *t, uint32_t *dropped);
uc_err fl_tracker_watch_xn(fl_tracker *t, uint32_t begin, uint32_t end);
uc_err fl_tracker_watch_aligned(fl_tracker *t, uint32_t addr);
uc_err fl_tracker_clear_watches(fl_tracker *t, uint32_t keep);
int fl_mpu_denied(fl_tracker *t, uint32_t addr, int kind, int priv);
int fl_aligned_insn(uint16_t hw1, uint16_t hw2);
uint32_t fl_thumb_count(const uint8_t *code, uint32_t size, int *ends_call);

#endif
