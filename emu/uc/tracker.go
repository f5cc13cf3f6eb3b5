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
	t := &Tracker{e: e, p: p}
	e.tracker = t
	return t, nil
}

func (t *Tracker) free() {
	if t.handle != 0 {
		t.handle.Delete()
		t.handle = 0
	}
	if t.p != nil {
		C.fl_tracker_free(t.p)
		t.p = nil
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

// SetBudget makes the block hook stop the emulation once Insns reaches n
// (0 = no budget) and clears BudgetHit.
func (t *Tracker) SetBudget(n uint64) {
	t.p.budget = C.uint64_t(n)
	t.p.budget_hit = 0
}

// BudgetHit reports whether the last stop came from the budget.
func (t *Tracker) BudgetHit() bool { return t.p.budget_hit != 0 }

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
	src := unsafe.Slice(t.p.stack, n)
	out := make([]ShadowFrame, n)
	for i, f := range src {
		out[i] = ShadowFrame{Return: uint32(f.ret), SP: uint32(f.sp), prevBase: uint32(f.prev_base), PSP: f.psp != 0, Target: uint32(f.target)}
		if f.kind == C.FL_FRAME_EXCEPTION {
			out[i].Exception = int(f.exc)
		}
	}
	return out
}

// Dropped returns how many calls were not recorded because the shadow stack
// was full.
func (t *Tracker) Dropped() uint64 { return uint64(t.p.dropped) }

// PushException records exception entry: a marker for exception exc that
// interrupted pc with its frame at sp. Calls made by the handler stack above
// it and returns never pop past it.
func (t *Tracker) PushException(exc int, pc, sp uint32) {
	C.fl_tracker_push_exception(t.p, C.uint32_t(exc), C.uint32_t(pc), C.uint32_t(sp))
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
			kind := C.uint32_t(C.FL_FRAME_CALL)
			if f.Exception != 0 {
				kind = C.FL_FRAME_EXCEPTION
			}
			dst[i] = C.fl_frame{ret: C.uint32_t(f.Return), sp: C.uint32_t(f.SP), kind: kind,
				exc: C.uint32_t(f.Exception), prev_base: C.uint32_t(f.prevBase), psp: C.uint32_t(b2u(f.PSP)), target: C.uint32_t(f.Target)}
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
		t.handle.Delete()
		t.handle = 0
		t.p.handle = 0
	}
	if fn == nil {
		return
	}
	t.handle = cgo.NewHandle(&callback{e: t.e, event: fn})
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
