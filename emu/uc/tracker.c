//go:build cgo

#include <stdlib.h>
#include <string.h>
#include "tracker.h"
#include "heapwatch.h"
#include "lazyfp.h"
#include "_cgo_export.h"

// fl_thumb_count counts the Thumb instructions in code[0:size] and reports
// whether the last one is a call: BL (T1, 32-bit: 11110 S imm10 / 11 J1 1 J2
// imm11) or BLX Rm (T1, 16-bit: 0100 0111 1 Rm 000). ARMv7-M ARM A5.1: a
// halfword whose top five bits are 0b11101, 0b11110 or 0b11111 starts a
// 32-bit instruction.
uint32_t fl_thumb_count(const uint8_t *code, uint32_t size, int *ends_call) {
	uint32_t n = 0, off = 0;
	int call = 0;
	while (off + 2 <= size) {
		uint16_t hw = (uint16_t)(code[off] | code[off + 1] << 8);
		n++;
		if ((hw >> 11) >= 0x1d && off + 4 <= size) {
			uint16_t hw2 = (uint16_t)(code[off + 2] | code[off + 3] << 8);
			call = (hw & 0xf800) == 0xf000 && (hw2 & 0xd000) == 0xd000;
			off += 4;
		} else {
			call = (hw & 0xff87) == 0x4780;
			off += 2;
		}
	}
	*ends_call = call;
	return n;
}

// seen_add records a block start while the data-access hook is off.
static void seen_add(fl_tracker *t, uint32_t addr) {
	if (t->mem_on || t->seen_lost) {
		return;
	}
	uint32_t key = addr | 1;
	if (2 * (t->nseen + 1) > t->capseen) {
		uint32_t nc = t->capseen ? t->capseen * 2 : 1024;
		uint32_t *ns = calloc(nc, sizeof *ns);
		if (ns == NULL) {
			t->seen_lost = 1;
			return;
		}
		for (uint32_t i = 0; i < t->capseen; i++) {
			uint32_t k = t->seen[i];
			if (k == 0) {
				continue;
			}
			uint32_t j = (k * 0x9E3779B1u) & (nc - 1);
			while (ns[j] != 0) {
				j = (j + 1) & (nc - 1);
			}
			ns[j] = k;
		}
		free(t->seen);
		t->seen = ns;
		t->capseen = nc;
	}
	uint32_t mask = t->capseen - 1;
	for (uint32_t j = (key * 0x9E3779B1u) & mask;; j = (j + 1) & mask) {
		if (t->seen[j] == key) {
			return;
		}
		if (t->seen[j] == 0) {
			t->seen[j] = key;
			t->nseen++;
			return;
		}
	}
}

// fl_tracker_drop_seen drops the translations of the blocks that ran while
// the data-access hook was off (call it after installing the hook, outside
// the emulation): each UC_CTL_TB_REMOVE_CACHE of [start, start+1)
// invalidates the translated blocks that hold that address. A block is
// translated to run, and the block hook is the first thing it runs, so
// every translation that lacks the data hook is found. dropped says how
// many block starts were asked for (all of the cache when seen_lost).
uc_err fl_tracker_drop_seen(fl_tracker *t, uint32_t *dropped) {
	uc_err err = UC_ERR_OK;
	*dropped = t->nseen;
	if (t->seen_lost) {
		err = uc_ctl(t->uc, UC_CTL_WRITE(UC_CTL_TB_FLUSH, 0));
	} else {
		for (uint32_t i = 0; i < t->capseen && err == UC_ERR_OK; i++) {
			uint64_t a = t->seen[i] & ~1u;
			if (t->seen[i] != 0) {
				err = uc_ctl(t->uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), a, a + 1);
			}
		}
	}
	if (err == UC_ERR_OK) {
		free(t->seen);
		t->seen = NULL;
		t->nseen = t->capseen = 0;
		t->seen_lost = 0;
	}
	return err;
}

static fl_block *lookup_block(fl_tracker *t, uint32_t addr, uint32_t size) {
	fl_block *b = &t->cache[(addr >> 1) & (FL_BLOCK_CACHE - 1)];
	if (b->addr == addr && b->size == size && b->insns != 0) {
		return b;
	}
	// Not in the cache: maybe a new translation.
	seen_add(t, addr);
	uint8_t buf[4096];
	uint32_t n = size > sizeof buf ? sizeof buf : size;
	int call = 0;
	b->addr = addr;
	b->size = size;
	if (n == 0 || uc_mem_read(t->uc, addr, buf, n) != UC_ERR_OK) {
		b->insns = 1;
		b->ends_call = 0;
		return b;
	}
	b->insns = fl_thumb_count(buf, n, &call);
	if (b->insns == 0) {
		b->insns = 1;
	}
	b->ends_call = call;
	return b;
}

static uint32_t read_sp(fl_tracker *t) {
	uint32_t sp = 0;
	t->sp_reads++;
	uc_reg_read(t->uc, UC_ARM_REG_SP, &sp);
	return sp;
}

static void note_ret(fl_tracker *t, uint32_t ret) {
	uint32_t b = (ret >> 1) & (FL_RET_BITS - 1);
	t->retbits[b >> 3] |= (uint8_t)(1u << (b & 7));
}

static int maybe_ret(const fl_tracker *t, uint32_t addr) {
	uint32_t b = (addr >> 1) & (FL_RET_BITS - 1);
	return (t->retbits[b >> 3] >> (b & 7)) & 1;
}

static void push(fl_tracker *t, uint32_t ret, uint32_t sp, uint32_t target, uint32_t psp) {
	if (t->depth >= t->cap) {
		t->dropped++;
		return;
	}
	note_ret(t, ret);
	fl_frame *f = &t->stack[t->depth++];
	f->ret = ret;
	f->sp = sp;
	f->kind = FL_FRAME_CALL;
	f->exc = 0;
	f->prev_base = 0;
	f->target = target;
	f->psp = psp;
	f->isp = 0;
}

// fl_func_index returns the index of the function range holding addr, or -1.
int64_t fl_func_index(const fl_tracker *t, uint32_t addr) {
	uint32_t lo = 0, hi = t->nfn; // the answer is the last start <= addr
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->fn_start[mid] <= addr) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (lo == 0 || addr >= t->fn_end[lo - 1]) {
		return -1;
	}
	return (int64_t)lo - 1;
}

// fl_prune drops the calls that the code at pc, running with stack pointer
// sp (on the process stack if psp), has abandoned: it returns the new depth
// of s[0:depth], whose entries from base up are calls of the code's own
// exception level. Calls are abandoned without a return by a C++ throw
// (the unwinder reaches the landing pad by restoring registers), longjmp,
// and helpers that "return" elsewhere (GCC's __gnu_thumb1_case_* switch
// helpers on ARMv6-M add an offset to LR). Two rules, applied to the calls
// made on the same stack as the code's (the newest entries down to the
// first one on the other stack):
//
//  1. A call recorded with an SP below sp is dead. A live caller made its
//     call at or above the SP of everything it called (the stack grows
//     down and AAPCS callees leave the caller's stack alone), so the code
//     now running at sp is not inside it.
//  2. Then a call recorded with SP == sp is dead when its return address
//     (the call instruction: ret - 1) is in the function pc is in and its
//     target is not: that function made the call and is running again at
//     the SP it called at, so the callee is gone. A live call at the same
//     SP is one whose callee pushed nothing (a noreturn chain): pc is then
//     in the callee, not in the function that made the call. A call whose
//     target is pc's function (a function calling itself before pushing
//     anything) is kept.
uint32_t fl_prune(const fl_tracker *t, const fl_frame *s, uint32_t base, uint32_t depth,
                  uint32_t pc, uint32_t sp, uint32_t psp) {
	while (depth > base && s[depth - 1].kind == FL_FRAME_CALL && s[depth - 1].psp == psp &&
	       s[depth - 1].sp < sp) {
		depth--;
	}
	if (depth == base || s[depth - 1].kind != FL_FRAME_CALL || s[depth - 1].psp != psp ||
	    s[depth - 1].sp != sp) {
		return depth;
	}
	int64_t cur = fl_func_index(t, pc);
	if (cur < 0) {
		return depth;
	}
	while (depth > base && s[depth - 1].kind == FL_FRAME_CALL && s[depth - 1].psp == psp &&
	       s[depth - 1].sp == sp && fl_func_index(t, s[depth - 1].ret - 1) == cur &&
	       fl_func_index(t, s[depth - 1].target) != cur) {
		depth--;
	}
	return depth;
}

// bl_to_next reports whether the instruction ending at end is BL with
// offset 0 (T1: f000 f800), a call to the very next instruction: a
// compiler places a function right after a noreturn call to another, and
// a call from the first to the second then "falls through". Only looked
// at when a block ending in a call is followed by its fall-through (rare),
// which is otherwise a BLX skipped by its IT condition.
static int bl_to_next(fl_tracker *t, uint32_t end) {
	uint8_t b[4];
	return end >= 4 && uc_mem_read(t->uc, end - 4, b, 4) == UC_ERR_OK &&
	       b[0] == 0x00 && b[1] == 0xf0 && b[2] == 0x00 && b[3] == 0xf8;
}

// shadow_step is the shadow-stack step for a block starting at addr.
static void shadow_step(fl_tracker *t, uint32_t addr) {
	if (t->skip_valid) {
		t->skip_valid = 0;
		if (addr == t->skip_addr) {
			return;
		}
	}
	if (t->prev_call && (addr != t->prev_end || bl_to_next(t, addr))) {
		uint32_t sp = read_sp(t);
		uint32_t psp = 0;
		if (t->base == 0) {
			// Thread mode (no exception level open): which stack is in
			// use (CONTROL.SPSEL), so that the truth can end a thread's
			// stack where an RTOS-style switch to the process stack
			// began it, and pruning stays on one stack.
			uint32_t control = 0;
			uc_reg_read(t->uc, UC_ARM_REG_CONTROL, &control);
			psp = (control >> 1) & 1;
		}
		// Calls abandoned without a return (fl_prune). Normally the
		// newest entry is the caller's own call, made at a higher SP:
		// one compare.
		if (t->depth > t->base && t->stack[t->depth - 1].sp <= sp) {
			t->depth = fl_prune(t, t->stack, t->base, t->depth, t->prev_end - 1, sp, psp);
		}
		push(t, t->prev_end, sp, addr, psp);
	} else if (t->depth > t->base && maybe_ret(t, addr)) {
		// Look for the return address among the newest entries of this
		// level; normally it is the top one. (A block whose address was
		// never a return address skips this: most blocks.)
		uint32_t lo = t->depth - t->base > 16 ? t->depth - 16 : t->base;
		for (uint32_t i = t->depth; i > lo; i--) {
			if (t->stack[i - 1].ret == addr) {
				if (read_sp(t) >= t->stack[i - 1].sp) {
					t->depth = i - 1;
				}
				break;
			}
		}
	}
}

// block_hook runs at the start of every translated block. The shadow stack
// (docs/unicorn.md, "Ground truth"): a block entered from a block whose last
// instruction is BL/BLX, other than by falling through (a BLX skipped by an
// IT condition), is a call: drop the calls the caller has abandoned
// (fl_prune, with the caller's SP and the call's address), then push the
// return address (the end of the calling block) with the current SP. A
// block that starts at a return address on the current exception level
// with SP back at or above the SP of that call is a return: pop to it. The
// SP test tells a real return from a branch to the same address in a deeper
// activation of a recursive function.
// stop_before stops the emulation before the block at addr runs, without
// counting it (a budget or allocator-entry stop); a shadow-stack step
// already settled for an event is not made again on re-entry.
static void stop_before(fl_tracker *t, uint32_t addr, uint32_t size, int settled) {
	t->cur_addr = addr;
	t->cur_size = size;
	if (settled) {
		t->skip_addr = addr;
		t->skip_valid = 1;
	}
	uc_emu_stop(t->uc);
}

static void block_hook(uc_engine *uc, uint64_t addr64, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	uint32_t addr = (uint32_t)addr64;
	int settled = 0;
	if (t->event || (t->event_at != 0 && t->insns >= t->event_at)) {
		// An event is due before this block runs: settle the block's
		// shadow-stack step first (an exception taken here interrupts
		// the block after its call or return happened), then let Go act.
		// If Go wrote PC (exception entry) the block is abandoned and the
		// next block hook runs at the new PC.
		if (t->shadow) {
			shadow_step(t, addr);
		}
		seen_add(t, addr); // the block may be abandoned before lookup_block
		settled = 1;
		int prev_call = t->prev_call;
		uint32_t prev_end = t->prev_end;
		t->prev_call = 0;
		t->prev_end = addr;
		if (t->handle != 0 && goTrackerEvent(t->handle, addr) != 0) {
			return;
		}
		t->prev_call = prev_call;
		t->prev_end = prev_end;
	}
	fl_block *b = lookup_block(t, addr, size);
	if (t->budget != 0 && t->insns + b->insns > t->budget) {
		// Running this block would cross the budget: stop before it
		// runs (a stop from a block hook prevents the block), without
		// counting it, so Insns stays the number of instructions that
		// ran. budget_left says how many of its instructions still fit;
		// the harness runs exactly those with the exact-PC hook. A step
		// already settled for an event is not made again on re-entry.
		t->budget_hit = 1;
		t->budget_left = t->budget > t->insns ? t->budget - t->insns : 0;
		t->budget_block = b->insns;
		stop_before(t, addr, size, settled);
		return;
	}
	if (t->entry_stop && t->hw != NULL && fl_hw_is_entry(t->hw, addr)) {
		// The first allocator entry: stop before it like a budget stop.
		t->entry_stop = 0;
		t->entry_hit = 1;
		stop_before(t, addr, size, settled);
		return;
	}
	t->insns += b->insns;
	if (t->shadow && !settled) {
		shadow_step(t, addr);
	}
	t->prev_call = b->ends_call;
	t->prev_end = addr + size;
	t->cur_addr = addr;
	t->cur_size = size;
	if (t->hw != NULL && fl_hw_wants(t->hw, addr)) {
		fl_hw_block(t, addr);
	}
}

// it_state returns the ITSTATE of the instruction at pc (ARMv7-M ARM A7.3.3,
// ITAdvance): at the start of the hooked range it is the core's (synced at
// block boundaries: XPSR IT[1:0] in bits 26:25, IT[7:2] in bits 15:10);
// after an instruction the hook saw, the IT instruction's firstcond:mask or
// the previous state advanced. It also computes the state of the
// instruction after pc.
static uint32_t it_state(fl_tracker *t, uint32_t pc) {
	uint32_t it = 0;
	if (t->it_next_valid && pc == t->it_next_pc) {
		it = t->it_next;
	} else {
		uint32_t xpsr = 0;
		uc_reg_read(t->uc, UC_ARM_REG_XPSR, &xpsr);
		it = ((xpsr >> 8) & 0xfc) | ((xpsr >> 25) & 3);
	}
	uint8_t insn[2];
	uint32_t len = 2, next = 0;
	if (uc_mem_read(t->uc, pc, insn, 2) == UC_ERR_OK) {
		uint16_t hw = (uint16_t)(insn[0] | insn[1] << 8);
		if ((hw >> 11) >= 0x1d) {
			len = 4;
		}
		if ((hw & 0xff00) == 0xbf00 && (hw & 0xf) != 0 && it == 0) {
			next = hw & 0xff; // IT: firstcond, mask
		} else if ((it & 7) != 0) {
			next = (it & 0xe0) | ((it << 1) & 0x1f);
		}
	}
	t->it_next = next;
	t->it_next_pc = pc + len;
	t->it_next_valid = 1;
	return it;
}

static void exact_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	t->last_pc = (uint32_t)addr;
	t->last_it = it_state(t, (uint32_t)addr);
	t->exact_insns++;
	if (t->stop_at != 0 && t->exact_insns == t->stop_at) {
		// A code hook that stops the emulation runs before its
		// instruction, which then does not execute (as for div_hook).
		t->chk_fault = FL_CHK_STOPPED;
		t->chk_pc = (uint32_t)addr;
		uc_emu_stop(uc);
	}
}

// div_hook runs before an SDIV or UDIV (T1: 1111 1011 1001/1011 Rn, 1111 Rd
// 1111 Rm; ARMv7-M ARM A7.7.127, A7.7.195). With CCR.DIV_0_TRP set a zero
// divisor is a UsageFault DIVBYZERO (B3.2.8); Unicorn returns 0 instead, so
// the harness is told and the emulation stops before the instruction.
static void div_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	if (!t->div_trap) {
		return;
	}
	uint8_t insn[4];
	if (uc_mem_read(uc, addr, insn, 4) != UC_ERR_OK) {
		return;
	}
	uint16_t hw1 = (uint16_t)(insn[0] | insn[1] << 8);
	uint16_t hw2 = (uint16_t)(insn[2] | insn[3] << 8);
	if ((hw1 & 0xffd0) != 0xfb90 || (hw2 & 0xf0f0) != 0xf0f0) {
		return;
	}
	int rm = hw2 & 0xf;
	int reg;
	if (rm <= 12) {
		reg = UC_ARM_REG_R0 + rm;
	} else if (rm == 13) {
		reg = UC_ARM_REG_SP;
	} else if (rm == 14) {
		reg = UC_ARM_REG_LR;
	} else {
		return; // PC as divisor is UNPREDICTABLE
	}
	uint32_t v = 1;
	uc_reg_read(uc, reg, &v);
	if (v == 0) {
		t->div_fault = 1;
		t->div_pc = (uint32_t)addr;
		uc_emu_stop(uc);
	}
}

fl_tracker *fl_tracker_new(uc_engine *uc, int shadow, uint32_t cap, uc_err *err) {
	fl_tracker *t = calloc(1, sizeof *t);
	if (t == NULL) {
		*err = UC_ERR_NOMEM;
		return NULL;
	}
	t->uc = uc;
	t->shadow = shadow;
	t->cap = cap;
	if (cap > 0) {
		t->stack = calloc(cap, sizeof *t->stack);
		if (t->stack == NULL) {
			free(t);
			*err = UC_ERR_NOMEM;
			return NULL;
		}
	}
	*err = uc_hook_add(uc, &t->block_hook, UC_HOOK_BLOCK, (void *)block_hook, t,
	                   (uint64_t)1, (uint64_t)0);
	if (*err != UC_ERR_OK) {
		free(t->stack);
		free(t);
		return NULL;
	}
	return t;
}

// fl_tracker_free removes the tracker's hooks and frees it.
void fl_tracker_free(fl_tracker *t) {
	if (t == NULL) {
		return;
	}
	uc_hook_del(t->uc, t->block_hook);
	if (t->exact_on) {
		uc_hook_del(t->uc, t->exact_hook);
	}
	for (uint32_t i = 0; i < t->ndiv; i++) {
		uc_hook_del(t->uc, t->div_hooks[i]);
	}
	fl_tracker_clear_watches(t, 0);
	free(t->chk_hooks);
	if (t->mem_on) {
		uc_hook_del(t->uc, t->mem_hook);
	}
	free(t->div_hooks);
	free(t->seen);
	fl_hw_free(t->hw);
	fl_lazyfp_free(t);
	free(t->fn_start);
	free(t->fn_end);
	free(t->stack);
	free(t);
}

// fl_tracker_set_funcs copies the function ranges [start[i], end[i]) that
// fl_prune looks addresses up in; they must be sorted by start and
// disjoint. It returns 0 when out of memory (the old table stays).
int fl_tracker_set_funcs(fl_tracker *t, const uint32_t *start, const uint32_t *end, uint32_t n) {
	uint32_t *s = NULL, *e = NULL;
	if (n > 0) {
		s = malloc(n * sizeof *s);
		e = malloc(n * sizeof *e);
		if (s == NULL || e == NULL) {
			free(s);
			free(e);
			return 0;
		}
		memcpy(s, start, n * sizeof *s);
		memcpy(e, end, n * sizeof *e);
	}
	free(t->fn_start);
	free(t->fn_end);
	t->fn_start = s;
	t->fn_end = e;
	t->nfn = n;
	return 1;
}

// fl_tracker_exact installs (on) or removes the exact-PC code hook on the
// addresses [begin, end] and drops the translated blocks there, so that the
// hook reaches them (UC_CTL_TB_REMOVE_CACHE; a full UC_CTL_TB_FLUSH costs
// 0.2-1 s in Unicorn 2.0.1). Code outside the range keeps its speed.
uc_err fl_tracker_exact(fl_tracker *t, int on, uint64_t begin, uint64_t end) {
	uc_err err = UC_ERR_OK;
	if (t->exact_on) {
		err = uc_hook_del(t->uc, t->exact_hook);
		t->exact_on = 0;
		uc_ctl(t->uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), t->exact_begin, t->exact_end + 1);
	}
	if (on && err == UC_ERR_OK) {
		err = uc_hook_add(t->uc, &t->exact_hook, UC_HOOK_CODE, (void *)exact_hook, t, begin, end);
		if (err == UC_ERR_OK) {
			t->exact_on = 1;
			t->exact_insns = 0;
			t->it_next_valid = 0;
			t->last_it = 0;
			t->exact_begin = begin;
			t->exact_end = end;
			err = uc_ctl(t->uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), begin, end + 1);
		}
	}
	return err;
}

uc_err fl_tracker_watch_div(fl_tracker *t, uint32_t addr) {
	if (t->ndiv == t->capdiv) {
		uint32_t nc = t->capdiv ? t->capdiv * 2 : 16;
		uc_hook *nh = realloc(t->div_hooks, nc * sizeof *nh);
		if (nh == NULL) {
			return UC_ERR_NOMEM;
		}
		t->div_hooks = nh;
		t->capdiv = nc;
	}
	uc_err err = uc_hook_add(t->uc, &t->div_hooks[t->ndiv], UC_HOOK_CODE, (void *)div_hook,
	                         t, (uint64_t)addr, (uint64_t)addr);
	if (err == UC_ERR_OK) {
		t->ndiv++;
	}
	return err;
}

// fl_tracker_push_exception starts a new exception level: calls made by the
// handler are pushed above the marker and returns never pop past it.
// sp is the address of the exception frame; isp and psp are the interrupted
// code's SP before the frame was pushed and whether it ran on the process
// stack (the truth prunes the interrupted level with them).
void fl_tracker_push_exception(fl_tracker *t, uint32_t exc, uint32_t pc, uint32_t sp,
                               uint32_t isp, int psp) {
	t->prev_call = 0;
	if (t->depth >= t->cap) {
		t->dropped++;
		return;
	}
	note_ret(t, pc & ~1u);
	fl_frame *f = &t->stack[t->depth++];
	f->ret = pc & ~1u;
	f->sp = sp;
	f->kind = FL_FRAME_EXCEPTION;
	f->exc = exc;
	f->prev_base = t->base;
	f->psp = psp ? 1 : 0;
	f->target = 0;
	f->isp = isp;
	t->skip_valid = 0;
	t->base = t->depth;
}

// fl_tracker_settle_fetch records the call whose target could not be
// fetched. A BL/BLX to an unmapped or execute-never address faults before
// any block starts at the target, so the block hook never saw the call
// happen; on silicon the call is complete (LR holds the return address) and
// the exception frame's PC is the target. If the last block ended with a
// call and the fault is at an address other than its fall-through (and no
// block has started there), the call is recorded as the block hook would
// have at the target.
void fl_tracker_settle_fetch(fl_tracker *t, uint32_t pc) {
	pc &= ~1u;
	if (!t->shadow || !t->prev_call || pc == t->prev_end || pc == t->cur_addr) {
		return;
	}
	shadow_step(t, pc);
	t->prev_call = 0;
	t->prev_end = pc;
}

// fl_tracker_pop_exception drops the newest exception level (its calls and
// its marker). It returns 0 when there is no exception level.
int fl_tracker_pop_exception(fl_tracker *t) {
	t->prev_call = 0;
	for (uint32_t i = t->depth; i > 0; i--) {
		if (t->stack[i - 1].kind == FL_FRAME_EXCEPTION) {
			t->depth = i - 1;
			t->base = t->stack[i - 1].prev_base;
			// The first block back at the interrupted PC had its shadow
			// step before the exception was taken.
			t->skip_addr = t->stack[i - 1].ret;
			t->skip_valid = 1;
			return 1;
		}
	}
	return 0;
}

void fl_tracker_set_stack(fl_tracker *t, const fl_frame *frames, uint32_t n, uint32_t base) {
	if (n > t->cap) {
		n = t->cap;
	}
	if (n > 0) {
		memcpy(t->stack, frames, n * sizeof *frames);
		for (uint32_t i = 0; i < n; i++) {
			note_ret(t, frames[i].ret);
		}
	}
	t->depth = n;
	t->base = base > n ? n : base;
}
