//go:build cgo

package uc

/*
#include <stdlib.h>
#include "tracker.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// Tracker is the set of hot hooks written in C (tracker.c): a block hook that
// counts guest instructions, stops at an instruction budget and keeps the
// shadow call stack; an optional exact-PC code hook; and divide-by-zero
// checks on individual SDIV/UDIV instructions. Create it with
// Engine.NewTracker.
type Tracker struct {
	e      *Engine
	p      *C.fl_tracker
	handle cgo.Handle
	heap   *HeapWatch // NewHeapWatch
}

// NewTracker installs the C block hook that counts guest instructions,
// enforces an instruction budget and, when shadow is true, keeps a shadow
// call stack of up to capacity entries. An Engine has at most one Tracker;
// it is freed with the Engine. Add it before running code, or call FlushTBs
// afterwards (docs/unicorn.md: hooks do not reach translated blocks).
func (e *Engine) NewTracker(shadow bool, capacity int) (*Tracker, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.tracker != nil {
		return nil, &OpError{Op: "tracker", Err: ErrHookExist}
	}
	if capacity < 0 {
		capacity = 0
	}
	var uerr C.uc_err
	sh := C.int(0)
	if shadow {
		sh = 1
	}
	p := C.fl_tracker_new(e.h, sh, C.uint32_t(capacity), &uerr)
	if p == nil {
		return nil, &OpError{Op: "tracker", Err: Error(uerr)}
	}
	live.trackers.Add(1)
	t := &Tracker{e: e, p: p}
	e.tracker = t
	return t, nil
}

func (t *Tracker) free() {
	if t.heap != nil {
		t.heap.free()
		t.heap = nil
	}
	if t.handle != 0 {
		deleteHandle(t.handle)
		t.handle = 0
	}
	if t.p != nil {
		C.fl_tracker_free(t.p)
		t.p = nil
		live.trackers.Add(-1)
	}
	if t.e != nil {
		t.e.tracker = nil
	}
}

// Insns returns the number of guest instructions counted so far. The count
// is taken per block when the block starts, so a block cut short by a fault
// or a stop counts in full.
func (t *Tracker) Insns() uint64 { return uint64(t.p.insns) }

// SetInsns sets the instruction counter (for restoring a checkpoint).
func (t *Tracker) SetInsns(n uint64) { t.p.insns = C.uint64_t(n) }

// SetBudget makes the block hook stop the emulation before a block that
// would take Insns past n (0 = no budget), and clears BudgetHit. The block
// is neither run nor counted; BudgetLeft says how many of its instructions
// fit, for the harness to run exactly (SetExactPC, SetExactStop).
func (t *Tracker) SetBudget(n uint64) {
	t.p.budget = C.uint64_t(n)
	t.p.budget_hit = 0
	t.p.budget_left = 0
	t.p.budget_block = 0
}

// BudgetHit reports whether the last stop came from the budget.
func (t *Tracker) BudgetHit() bool { return t.p.budget_hit != 0 }

// BudgetLeft is, after a budget stop, how many instructions of the block
// the run stopped before still fit in the budget (0 when none do).
func (t *Tracker) BudgetLeft() uint64 { return uint64(t.p.budget_left) }

// BudgetBlock is, after a budget stop, the instruction count of the block
// the run stopped before.
func (t *Tracker) BudgetBlock() uint64 { return uint64(t.p.budget_block) }

// SetEntryStop makes the block hook stop the emulation, once, before the
// first block that enters a hooked allocator function (HeapWatch.AddFunc)
// while no watched call is in progress. The block is neither run nor
// counted (like a budget stop); EntryHit reports the stop and Block names
// the block.
func (t *Tracker) SetEntryStop(on bool) {
	t.p.entry_stop = C.int(b2u(on))
	t.p.entry_hit = 0
}

// EntryHit reports whether the last stop was the allocator entry stop
// (SetEntryStop); ClearEntryHit forgets it.
func (t *Tracker) EntryHit() bool { return t.p.entry_hit != 0 }

// ClearEntryHit forgets an entry stop once the harness has handled it.
func (t *Tracker) ClearEntryHit() { t.p.entry_hit = 0 }

// Block returns the start address and size of the block that was executing
// when the emulation stopped. After a data abort Unicorn's PC is stale and
// equals this address (docs/unicorn.md, trap 2).
func (t *Tracker) Block() (addr, size uint32) {
	return uint32(t.p.cur_addr), uint32(t.p.cur_size)
}

// SetExactPC installs (on) or removes the C code hook that records the
// address of every instruction in [begin, end] before it runs; with it
// installed PC is exact after a fault there (docs/unicorn.md, trap 2). Only
// code in the range slows down; the translated blocks of the range are
// dropped so that the hook reaches them (no FlushTBs needed).
func (t *Tracker) SetExactPC(on bool, begin, end uint32) error {
	o := C.int(0)
	if on {
		o = 1
	}
	if err := C.fl_tracker_exact(t.p, o, C.uint64_t(begin), C.uint64_t(end)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker exact-pc hook", Err: Error(err)}
	}
	return nil
}

// LastPC returns the address of the last instruction the exact-PC hook saw.
func (t *Tracker) LastPC() uint32 { return uint32(t.p.last_pc) }

// LastIT returns the IT state (ITSTATE, ARMv7-M ARM A7.3.3) of the
// instruction at LastPC: non-zero inside an IT block. Unicorn's own copy
// (the IT bits of XPSR) is only updated at block boundaries, so an
// exception taken at an instruction inside an IT block must stack this one.
func (t *Tracker) LastIT() uint8 { return uint8(t.p.last_it) }

// WatchDivide installs the C divide-by-zero check on the SDIV/UDIV at addr.
// The check fires only while SetDivideTrap(true).
func (t *Tracker) WatchDivide(addr uint32) error {
	if err := C.fl_tracker_watch_div(t.p, C.uint32_t(addr)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker divide hook", Addr: uint64(addr), HasAddr: true, Err: Error(err)}
	}
	return nil
}

// SetDivideTrap mirrors CCR.DIV_0_TRP.
func (t *Tracker) SetDivideTrap(on bool) {
	if on {
		t.p.div_trap = 1
	} else {
		t.p.div_trap = 0
	}
}

// DivideFault reports a caught divide by zero and the address of the
// divide; the emulation stopped before executing it. It clears the report.
func (t *Tracker) DivideFault() (pc uint32, ok bool) {
	if t.p.div_fault == 0 {
		return 0, false
	}
	t.p.div_fault = 0
	return uint32(t.p.div_pc), true
}

// Frames returns the shadow call stack, oldest entry first.
func (t *Tracker) Frames() []ShadowFrame {
	n := int(t.p.depth)
	if n == 0 {
		return nil
	}
	return framesOf(unsafe.Slice(t.p.stack, n))
}

// framesOf converts C shadow-stack entries.
func framesOf(src []C.fl_frame) []ShadowFrame {
	out := make([]ShadowFrame, len(src))
	for i, f := range src {
		out[i] = ShadowFrame{Return: uint32(f.ret), SP: uint32(f.sp), prevBase: uint32(f.prev_base), PSP: f.psp != 0, Target: uint32(f.target)}
		if f.kind == C.FL_FRAME_EXCEPTION {
			out[i].Exception = int(f.exc)
			out[i].InterruptedSP = uint32(f.isp)
		}
	}
	return out
}

// Dropped returns how many calls were not recorded because the shadow stack
// was full.
func (t *Tracker) Dropped() uint64 { return uint64(t.p.dropped) }

// PushException records exception entry: a marker for exception exc that
// interrupted pc with its frame at sp; the interrupted code's SP was isp
// (before the frame was pushed), on the process stack if psp. Calls made by
// the handler stack above it and returns never pop past it.
func (t *Tracker) PushException(exc int, pc, sp, isp uint32, psp bool) {
	C.fl_tracker_push_exception(t.p, C.uint32_t(exc), C.uint32_t(pc), C.uint32_t(sp), C.uint32_t(isp), C.int(b2u(psp)))
}

// SettleFetch records a call made by the last block whose target pc could
// not be fetched (an unmapped or execute-never address): the block hook
// never ran at the target, so the call would be missing from the shadow
// stack. Call it before taking the fetch fault; it does nothing unless the
// last block ended with a call to somewhere other than pc's fall-through.
func (t *Tracker) SettleFetch(pc uint32) {
	C.fl_tracker_settle_fetch(t.p, C.uint32_t(pc))
}

// SetFunctions gives the tracker the function ranges [starts[i], ends[i])
// of the image, sorted by start and disjoint: the shadow stack uses them to
// drop calls abandoned without a return (see Prune).
func (t *Tracker) SetFunctions(starts, ends []uint32) error {
	n := len(starts)
	if len(ends) != n {
		return &OpError{Op: "tracker functions", Err: ErrArg}
	}
	for i := 0; i < n; i++ {
		if ends[i] < starts[i] || i > 0 && starts[i] < ends[i-1] {
			return &OpError{Op: "tracker functions", Addr: uint64(starts[i]), HasAddr: true, Err: ErrArg}
		}
	}
	var s, e *C.uint32_t
	if n > 0 {
		s, e = (*C.uint32_t)(unsafe.Pointer(&starts[0])), (*C.uint32_t)(unsafe.Pointer(&ends[0]))
	}
	if C.fl_tracker_set_funcs(t.p, s, e, C.uint32_t(n)) == 0 {
		return &OpError{Op: "tracker functions", Err: ErrNoMem}
	}
	return nil
}

// Prune applies the shadow stack's rule for abandoned calls (tracker.c,
// fl_prune) to calls, the calls of one exception level oldest first, as
// seen by code at pc running with stack pointer sp (on the process stack
// if psp): it returns how many of the oldest calls are live. The block hook
// applies the same rule at every call (with the caller's SP and the call's
// address); the truth applies it at the end of a run.
func (t *Tracker) Prune(calls []ShadowFrame, pc, sp uint32, psp bool) int {
	n := len(calls)
	if n == 0 {
		return 0
	}
	buf := make([]C.fl_frame, n)
	for i, f := range calls {
		buf[i] = cFrame(f)
	}
	return int(C.fl_prune(t.p, &buf[0], 0, C.uint32_t(n), C.uint32_t(pc), C.uint32_t(sp), C.uint32_t(b2u(psp))))
}

func cFrame(f ShadowFrame) C.fl_frame {
	kind := C.uint32_t(C.FL_FRAME_CALL)
	if f.Exception != 0 {
		kind = C.FL_FRAME_EXCEPTION
	}
	return C.fl_frame{ret: C.uint32_t(f.Return), sp: C.uint32_t(f.SP), kind: kind,
		exc: C.uint32_t(f.Exception), prev_base: C.uint32_t(f.prevBase), psp: C.uint32_t(b2u(f.PSP)),
		target: C.uint32_t(f.Target), isp: C.uint32_t(f.InterruptedSP)}
}

// PopException records an exception return: the newest exception level is
// dropped. It reports false when there was none.
func (t *Tracker) PopException() bool {
	return C.fl_tracker_pop_exception(t.p) != 0
}

// Save copies the tracker's run state into s.
func (t *Tracker) Save(s *TrackerState) {
	s.Insns = uint64(t.p.insns)
	s.Frames = append(s.Frames[:0], t.Frames()...)
	s.base = uint32(t.p.base)
	s.prevEnd = uint32(t.p.prev_end)
	s.prevCall = int32(t.p.prev_call)
	s.curAddr = uint32(t.p.cur_addr)
	s.curSize = uint32(t.p.cur_size)
}

// Restore makes s the tracker's run state.
func (t *Tracker) Restore(s *TrackerState) {
	t.p.insns = C.uint64_t(s.Insns)
	n := len(s.Frames)
	var buf *C.fl_frame
	if n > 0 {
		buf = (*C.fl_frame)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.fl_frame{}))))
		dst := unsafe.Slice(buf, n)
		for i, f := range s.Frames {
			dst[i] = cFrame(f)
		}
	}
	C.fl_tracker_set_stack(t.p, buf, C.uint32_t(n), C.uint32_t(s.base))
	C.free(unsafe.Pointer(buf))
	t.p.prev_end = C.uint32_t(s.prevEnd)
	t.p.prev_call = C.int(s.prevCall)
	t.p.cur_addr = C.uint32_t(s.curAddr)
	t.p.cur_size = C.uint32_t(s.curSize)
}

// CountThumb returns the number of Thumb instructions in code and whether
// the last one is BL or BLX (the decoder the block hook uses).
func CountThumb(code []byte) (n int, endsCall bool) {
	if len(code) == 0 {
		return 0, false
	}
	var call C.int
	cn := C.fl_thumb_count((*C.uint8_t)(unsafe.Pointer(&code[0])), C.uint32_t(len(code)), &call)
	return int(cn), call != 0
}

// SetEventHandler installs fn as the event handler: before a block runs,
// when an event is flagged (SetEvent) or the instruction count has reached
// SetEventAt's mark, the block hook calls fn with the block's address. fn
// may write PC (exception entry), which abandons the block; it then returns
// true. It runs inside the emulation: it must not call Start or FlushTBs.
func (t *Tracker) SetEventHandler(fn func(addr uint32) bool) {
	if t.handle != 0 {
		deleteHandle(t.handle)
		t.handle = 0
		t.p.handle = 0
	}
	if fn == nil {
		return
	}
	t.handle = newHandle(&callback{e: t.e, event: fn})
	t.p.handle = C.uintptr_t(t.handle)
}

// SetEvent flags (or clears) an event for the next block.
func (t *Tracker) SetEvent(on bool) {
	if on {
		t.p.event = 1
	} else {
		t.p.event = 0
	}
}

// SetEventAt makes the block hook call the event handler once Insns
// reaches n (0: never).
func (t *Tracker) SetEventAt(n uint64) { t.p.event_at = C.uint64_t(n) }

//export goTrackerEvent
func goTrackerEvent(h C.uintptr_t, addr C.uint32_t) (redirect C.int) {
	cb := lookup(h)
	defer cb.recover("event handler")
	if cb.event(uint32(addr)) {
		return 1
	}
	return 0
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Check kinds reported by CheckFault (check.c).
const (
	CheckUnaligned = C.FL_CHK_UNALIGNED
	CheckMPUData   = C.FL_CHK_MPU_DATA
	CheckMPUFetch  = C.FL_CHK_MPU_FETCH
	CheckStopped   = C.FL_CHK_STOPPED
)

// SetMemHook installs (on) or removes the C data-access hook that makes the
// MPU and CCR.UNALIGN_TRP checks of SetChecks. While it exists every load
// and store of blocks translated meanwhile goes through Unicorn's helper
// (slower); blocks translated before it was installed do not call it, so
// the caller must FlushTBs after installing it outside the emulation.
func (t *Tracker) SetMemHook(on bool) error {
	if err := C.fl_tracker_mem_hook(t.p, C.int(b2u(on))); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker memory hook", Err: Error(err)}
	}
	return nil
}

// DropSeen drops the translations of every block that ran while the
// data-access hook was off, so that it reaches them too: call it after
// SetMemHook(true), outside the emulation, instead of FlushTBs (which in
// Unicorn 2.0.1 costs 0.2 s and more, touching the whole code buffer). It
// returns how many block starts it dropped.
func (t *Tracker) DropSeen() (int, error) {
	var n C.uint32_t
	if err := C.fl_tracker_drop_seen(t.p, &n); err != C.UC_ERR_OK {
		return 0, &OpError{Op: "tracker drop translations", Err: Error(err)}
	}
	return int(n), nil
}

// MemHook reports whether the data-access hook is installed.
func (t *Tracker) MemHook() bool { return t.p.mem_on != 0 }

// SetChecks gives the C checks the state they need: CCR.UNALIGN_TRP, whether
// data accesses are checked against the MPU, and the MPU registers (MPU_CTRL,
// MPU_RBAR, and MPU_RASR on ARMv7-M or MPU_RLAR on ARMv8-M).
func (t *Tracker) SetChecks(alignTrap, mpuData, v8m bool, ctrl uint32, rbar, rlim *[16]uint32) {
	t.p.align_trap = C.int(b2u(alignTrap))
	t.p.mpu_check = C.int(b2u(mpuData))
	t.p.v8m = C.int(b2u(v8m))
	t.p.mpu_ctrl = C.uint32_t(ctrl)
	for i := range rbar {
		t.p.rbar[i] = C.uint32_t(rbar[i])
		t.p.rlim[i] = C.uint32_t(rlim[i])
	}
}

// SetNegativePriority says whether an exception with negative priority
// (HardFault, NMI) is active: the MPU is then off unless HFNMIENA.
func (t *Tracker) SetNegativePriority(on bool) { t.p.neg_prio = C.int(b2u(on)) }

// WatchXN checks every instruction in [begin, end] against the MPU before it
// runs (a C code hook bounded to the range).
func (t *Tracker) WatchXN(begin, end uint32) error {
	if err := C.fl_tracker_watch_xn(t.p, C.uint32_t(begin), C.uint32_t(end)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker XN hook", Addr: uint64(begin), HasAddr: true, Err: Error(err)}
	}
	return nil
}

// WatchAligned checks the base register of the LDM/STM/LDRD/STRD/LDREX/
// STREX/VLDR/VSTR/VLDM/VSTM at addr before it runs (ARMv7-M A3.2.1).
func (t *Tracker) WatchAligned(addr uint32) error {
	if err := C.fl_tracker_watch_aligned(t.p, C.uint32_t(addr)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker alignment hook", Addr: uint64(addr), HasAddr: true, Err: Error(err)}
	}
	return nil
}

// Watches returns how many WatchXN and WatchAligned hooks are installed.
func (t *Tracker) Watches() int { return int(t.p.nchk) }

// ClearWatches removes the WatchXN and WatchAligned hooks but the first keep.
func (t *Tracker) ClearWatches(keep int) error {
	if err := C.fl_tracker_clear_watches(t.p, C.uint32_t(keep)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker clear watches", Err: Error(err)}
	}
	return nil
}

// CheckFault is a failed check recorded by the C hooks.
type CheckFault struct {
	Kind  int    // CheckUnaligned, CheckMPUData, CheckMPUFetch, CheckStopped
	Addr  uint32 // the data address (or the fetch address)
	Size  int
	Write bool
	// PC is the instruction's address when a code hook found it (0 when
	// the data hook did: the harness replays to find it).
	PC uint32
	// Block and BlockSize are the block that was running when the check
	// failed; Exact, ExactPC and IT the exact-PC hook's count, last
	// instruction and its IT state then (while that hook is on).
	Block, BlockSize uint32
	Exact            uint64
	ExactPC          uint32
	IT               uint8
}

// CheckFault returns the failed check of the last run, if any.
func (t *Tracker) CheckFault() (CheckFault, bool) {
	if t.p.chk_fault == 0 {
		return CheckFault{}, false
	}
	return CheckFault{Kind: int(t.p.chk_fault), Addr: uint32(t.p.chk_addr), Size: int(t.p.chk_size),
		Write: t.p.chk_write != 0, PC: uint32(t.p.chk_pc),
		Block: uint32(t.p.chk_blk), BlockSize: uint32(t.p.chk_blk_size),
		Exact: uint64(t.p.chk_exact), ExactPC: uint32(t.p.chk_last_pc), IT: uint8(t.p.chk_it)}, true
}

// ClearCheckFault forgets the failed check.
func (t *Tracker) ClearCheckFault() { t.p.chk_fault = 0 }

// SetExactStop makes the exact-PC hook stop the emulation before the n-th
// instruction it sees (0: never); CheckFault then reports CheckStopped.
func (t *Tracker) SetExactStop(n uint64) { t.p.stop_at = C.uint64_t(n) }

// ExactCount returns how many instructions the exact-PC hook has seen since
// it was installed.
func (t *Tracker) ExactCount() uint64 { return uint64(t.p.exact_insns) }

// SkipStep makes the block hook skip the shadow-stack step of the next
// block if it starts at addr (its step was already made).
func (t *Tracker) SkipStep(addr uint32) {
	t.p.skip_addr = C.uint32_t(addr &^ 1)
	t.p.skip_valid = 1
}

// MPUDenied is the C MPU decision for an access at addr (0 read, 1 write,
// 2 fetch) with the given privilege, for tests.
func (t *Tracker) MPUDenied(addr uint32, kind int, priv bool) bool {
	return C.fl_mpu_denied(t.p, C.uint32_t(addr), C.int(kind), C.int(b2u(priv))) != 0
}

// SwitchStack replaces the thread-level shadow stack (no exception level may
// be open) with frames, for a context switch between threads.
func (t *Tracker) SwitchStack(frames []ShadowFrame) {
	var s TrackerState
	t.Save(&s)
	s.Frames = frames
	s.base = 0
	s.prevCall = 0
	t.Restore(&s)
}

// AlignedInsn reports whether the Thumb instruction hw1:hw2 must have an
// aligned base register on ARMv7-M whatever CCR.UNALIGN_TRP says (LDM/STM,
// LDRD/STRD, LDREX/STREX, VLDR/VSTR/VLDM/VSTM; not SP- or PC-based forms).
func AlignedInsn(hw1, hw2 uint16) bool {
	return C.fl_aligned_insn(C.uint16_t(hw1), C.uint16_t(hw2)) != 0
}
