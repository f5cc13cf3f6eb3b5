//go:build cgo

package uc

/*
#include <stdlib.h>
#include "tracker.h"
#include "heapwatch.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// Heap map states (HeapWatch.Mark).
const (
	HeapNone   = C.FL_HW_NONE
	HeapLive   = C.FL_HW_LIVE
	HeapFreed  = C.FL_HW_FREED
	HeapHeader = C.FL_HW_HEADER
	HeapPad    = C.FL_HW_PAD
)

// What an allocator entry point does (HeapFunc.Op).
const (
	HeapOpAlloc    = C.FL_HW_OP_ALLOC
	HeapOpCalloc   = C.FL_HW_OP_CALLOC
	HeapOpRealloc  = C.FL_HW_OP_REALLOC
	HeapOpFree     = C.FL_HW_OP_FREE
	HeapOpMemalign = C.FL_HW_OP_MEMALIGN
	HeapOpInternal = C.FL_HW_OP_INTERNAL
)

// HeapWatch is the C half of heap tracking (heapwatch.c), attached to a
// Tracker. The block hook handles each call of a watched allocator entry
// point and its return in C: it keeps the live blocks and the byte map of
// block states over [base, base+size), and buffers an event per entry and
// return (HeapEvent) that the drain callback reads in batches (Events).
// The data-access hook calls access for an access into a freed block, or
// a write into bookkeeping or padding. Accesses are only checked while the
// data-access hook is installed (Tracker.SetMemHook) and Checks(true).
type HeapWatch struct {
	t      *Tracker
	p      *C.fl_heapwatch
	handle cgo.Handle
}

// HeapFunc describes an allocator entry point: what it does (HeapOp*),
// the argument registers (0-3, -1: none) of its pointer, size and count
// operands, the bytes of bookkeeping before its blocks, and the number
// its events carry.
type HeapFunc struct {
	Op               int
	Ptr, Size, Count int
	Header           uint32
	ID               uint32
}

// HeapEvent is an allocator entry (Kind HeapEntry), the return of the
// call in progress (HeapReturn), or both (HeapCall: the return came while
// the entry was still buffered, the usual case). Its layout is C's
// fl_hw_event, so that Events hands out the C buffer itself.
type HeapEvent struct {
	Insn uint64 // guest instructions counted when the block started
	Kind uint32
	Func uint32 // HeapFunc.ID
	// Entry: the pointer operand (0 if none) and size (count*size for
	// calloc, saturated at 2^32-1). Return: Ptr is r0 (0 for a free).
	Ptr, Size uint32
	Ret, SP   uint32 // entry: return address (bit 0 clear) and SP
	Stack     uint32 // entry: the interned call stack (StackOf)
	// HeapCall: r0 at the return (0 for a free). (HeapReturn has it in
	// Ptr.)
	Result uint32
}

// Entry says whether e is an entry (HeapEntry or HeapCall).
func (e *HeapEvent) Entry() bool { return e.Kind != HeapReturn }

// Returned says whether e is a return (HeapReturn or HeapCall).
func (e *HeapEvent) Returned() bool { return e.Kind != HeapEntry }

// Event kinds (HeapEvent.Kind).
const (
	HeapEntry  = C.FL_HW_EV_ENTRY
	HeapReturn = C.FL_HW_EV_RETURN
	HeapCall   = C.FL_HW_EV_CALL
)

// HeapEvent and fl_hw_event have the same size and field offsets (a
// negative or nonzero difference does not compile).
var (
	_ [unsafe.Sizeof(HeapEvent{}) - C.sizeof_fl_hw_event]struct{}
	_ [C.sizeof_fl_hw_event - unsafe.Sizeof(HeapEvent{})]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Kind) - unsafe.Offsetof(C.fl_hw_event{}.kind)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.kind) - unsafe.Offsetof(HeapEvent{}.Kind)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Func) - unsafe.Offsetof(C.fl_hw_event{}._func)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}._func) - unsafe.Offsetof(HeapEvent{}.Func)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Ptr) - unsafe.Offsetof(C.fl_hw_event{}.ptr)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.ptr) - unsafe.Offsetof(HeapEvent{}.Ptr)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Size) - unsafe.Offsetof(C.fl_hw_event{}.size)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.size) - unsafe.Offsetof(HeapEvent{}.Size)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Ret) - unsafe.Offsetof(C.fl_hw_event{}.ret)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.ret) - unsafe.Offsetof(HeapEvent{}.Ret)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.SP) - unsafe.Offsetof(C.fl_hw_event{}.sp)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.sp) - unsafe.Offsetof(HeapEvent{}.SP)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Stack) - unsafe.Offsetof(C.fl_hw_event{}.stack)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.stack) - unsafe.Offsetof(HeapEvent{}.Stack)]struct{}
	_ [unsafe.Offsetof(HeapEvent{}.Result) - unsafe.Offsetof(C.fl_hw_event{}.result)]struct{}
	_ [unsafe.Offsetof(C.fl_hw_event{}.result) - unsafe.Offsetof(HeapEvent{}.Result)]struct{}
)

// HeapPending is the allocator call in progress, as the C side keeps it.
type HeapPending struct {
	Func            uint32
	Op              int
	Ret, SP, Ptr    uint32
	Size, Header    uint32
	Old             bool // realloc: the old block was live and released
	OldSize, OldHdr uint32
}

// HeapRegs are the registers at a watched block's start: r0-r3, SP, LR.
type HeapRegs [6]uint32

type heapCallbacks struct {
	block  func(addr uint32, regs *HeapRegs)
	drain  func()
	access func(addr uint32, size int, write bool, state int, block uint32)
}

// NewHeapWatch attaches a heap watcher with a byte map of size bytes at
// base (size 0: no map). drain and access run inside the emulation, on
// the goroutine that called Start; they must not call Start or FlushTBs.
// drain must read the events (Events) and call EventsDone. access gets the
// first offending byte's address and state, the access size, and the start
// of the translated block that made it.
//
// block is called when a block starts at an address watched with Watch
// (with the registers then), and at the return of a call started with
// Expect(..., true).
func (t *Tracker) NewHeapWatch(base, size uint32, block func(addr uint32, regs *HeapRegs), drain func(), access func(addr uint32, size int, write bool, state int, block uint32)) (*HeapWatch, error) {
	if t.p.hw != nil {
		return nil, &OpError{Op: "heap watch", Err: ErrHookExist}
	}
	cb := &callback{e: t.e, heap: &heapCallbacks{block: block, drain: drain, access: access}}
	h := newHandle(cb)
	p := C.fl_hw_new(C.uintptr_t(h), C.uint32_t(base), C.uint32_t(size))
	if p == nil {
		deleteHandle(h)
		return nil, &OpError{Op: "heap watch", Err: ErrNoMem}
	}
	t.p.hw = p
	w := &HeapWatch{t: t, p: p, handle: h}
	t.heap = w
	return w, nil
}

func (w *HeapWatch) free() {
	if w.handle != 0 {
		deleteHandle(w.handle)
		w.handle = 0
	}
	// The C side is freed with the tracker.
}

// AddFunc watches the allocator entry point at addr.
func (w *HeapWatch) AddFunc(addr uint32, f HeapFunc) error {
	cf := C.fl_hw_func{op: C.uint32_t(f.Op), ptr: C.int32_t(f.Ptr), size: C.int32_t(f.Size),
		count: C.int32_t(f.Count), header: C.uint32_t(f.Header), id: C.uint32_t(f.ID)}
	if C.fl_hw_add_func(w.p, C.uint32_t(addr), &cf) == 0 {
		return &OpError{Op: "heap watch", Err: ErrNoMem}
	}
	return nil
}

// Watch adds (on) or removes a block address watched for the block
// callback (not an allocator entry point).
func (w *HeapWatch) Watch(addr uint32, on bool) error {
	if C.fl_hw_watch(w.p, C.uint32_t(addr), C.int(b2u(on))) == 0 {
		return &OpError{Op: "heap watch", Err: ErrNoMem}
	}
	return nil
}

// Expect starts a watched call (not an allocator's): inside until the
// block at ret runs with SP >= sp; then, with goReturn, the block callback
// reports it (and must call Inside(false)), else the call simply ends.
func (w *HeapWatch) Expect(ret, sp uint32, goReturn bool) {
	w.p.p_op = C.FL_HW_OP_WATCH
	w.p.p_ev_ok = 0
	w.p.ret, w.p.ret_sp, w.p.ret_go = C.uint32_t(ret&^1), C.uint32_t(sp), C.int(b2u(goReturn))
	w.p.inside = 1
}

// Inside sets whether a call is in progress (accesses meanwhile are not
// checked).
func (w *HeapWatch) Inside(on bool) { w.p.inside = C.int(b2u(on)) }

// Events returns the buffered events, oldest first: the C buffer itself,
// valid until EventsDone or the emulation runs again (do not keep it).
func (w *HeapWatch) Events() []HeapEvent {
	n := int(w.p.nev)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*HeapEvent)(unsafe.Pointer(w.p.ev)), n)
}

// EventsDone empties the event buffer.
func (w *HeapWatch) EventsDone() { C.fl_hw_events_done(w.p) }

// Drains counts the times the C side filled its buffer and called drain.
func (w *HeapWatch) Drains() uint64 { return uint64(w.p.drains) }

// StackGen changes whenever the interned stacks are dropped (their ids are
// then reused): a cache of StackOf results must be emptied.
func (w *HeapWatch) StackGen() uint32 { return uint32(w.p.gen) }

// StackOf returns the interned stack id: the PC, SP and stack (process
// stack: psp) of the code at the call, and the shadow stack then.
func (w *HeapWatch) StackOf(id uint32) (pc, sp uint32, psp bool, frames []ShadowFrame) {
	if id >= uint32(w.p.nstacks) {
		return 0, 0, false, nil
	}
	k := unsafe.Slice(w.p.stacks, int(w.p.nstacks))[id]
	if k.depth > 0 {
		pool := unsafe.Slice(w.p.pool, int(w.p.npool))
		frames = framesOf(pool[k.off : k.off+k.depth])
	}
	return uint32(k.pc), uint32(k.sp), k.psp != 0, frames
}

// ResetStacks drops the interned stacks.
func (w *HeapWatch) ResetStacks() { C.fl_hw_stacks_reset(w.p) }

// ClearLive forgets every live block (the map is left alone).
func (w *HeapWatch) ClearLive() { C.fl_hw_live_clear(w.p) }

// PutLive records a live block.
func (w *HeapWatch) PutLive(addr, size, header uint32) error {
	if C.fl_hw_live_put(w.p, C.uint32_t(addr), C.uint32_t(size), C.uint32_t(header)) == 0 {
		return &OpError{Op: "heap watch", Err: ErrNoMem}
	}
	return nil
}

// LiveBlocks is the number of live blocks the C side holds.
func (w *HeapWatch) LiveBlocks() int { return int(w.p.nlive) }

// SetPending makes p the call in progress (nil: none).
func (w *HeapWatch) SetPending(p *HeapPending) {
	w.p.p_ev_ok = 0
	if p == nil {
		w.p.inside = 0
		return
	}
	w.p.p_func, w.p.p_op = C.uint32_t(p.Func), C.uint32_t(p.Op)
	w.p.ret, w.p.ret_sp = C.uint32_t(p.Ret&^1), C.uint32_t(p.SP)
	w.p.p_ptr, w.p.p_size, w.p.p_header = C.uint32_t(p.Ptr), C.uint32_t(p.Size), C.uint32_t(p.Header)
	w.p.p_old, w.p.p_old_size, w.p.p_old_header = C.int(b2u(p.Old)), C.uint32_t(p.OldSize), C.uint32_t(p.OldHdr)
	w.p.inside = 1
}

// Mark sets the map state of [addr, addr+n) (clipped to the map). With
// soft, bytes marked HeapLive keep their state.
func (w *HeapWatch) Mark(addr, n uint32, state int, soft bool) {
	C.fl_hw_mark(w.p, C.uint32_t(addr), C.uint32_t(n), C.uint8_t(state), C.int(b2u(soft)))
}

// Fill sets the map state of the bytes of [addr, addr+n) that have none
// (HeapNone), clipped to the map.
func (w *HeapWatch) Fill(addr, n uint32, state int) {
	C.fl_hw_mark(w.p, C.uint32_t(addr), C.uint32_t(n), C.uint8_t(state), C.FL_HW_MARK_FILL)
}

// ClearMap sets the whole map to HeapNone.
func (w *HeapWatch) ClearMap() {
	C.fl_hw_mark(w.p, w.p.base, w.p.len, C.FL_HW_NONE, 0)
}

// InsideNow reports whether an allocator call is in progress.
func (w *HeapWatch) InsideNow() bool { return w.p.inside != 0 }

// Checks turns the access checks on or off.
func (w *HeapWatch) Checks(on bool) { w.p.checks = C.int(b2u(on)) }

//export goHeapBlock
func goHeapBlock(h C.uintptr_t, addr C.uint32_t, regs *C.uint32_t) {
	cb := lookup(h)
	defer cb.recover("heap block hook")
	var r HeapRegs
	for i, v := range unsafe.Slice(regs, len(r)) {
		r[i] = uint32(v)
	}
	cb.heap.block(uint32(addr), &r)
}

//export goHeapDrain
func goHeapDrain(h C.uintptr_t) {
	cb := lookup(h)
	defer cb.recover("heap drain")
	cb.heap.drain()
}

// StackKey appends to key[:0] what identifies the shadow stack's newest
// max entries (4 words each) and returns it with the stack's depth: equal
// keys and depths, equal stacks.
func (w *HeapWatch) StackKey(key []uint32, max int) ([]uint32, int) {
	if cap(key) < 4*max {
		key = make([]uint32, 4*max)
	}
	key = key[:4*max]
	d := int(C.fl_hw_stack_key(w.t.p, (*C.uint32_t)(unsafe.Pointer(&key[0])), C.uint32_t(max)))
	n := min(d, max)
	return key[:4*n], d
}

//export goHeapAccess
func goHeapAccess(h C.uintptr_t, addr C.uint32_t, size C.uint32_t, write C.int, state C.uint8_t, block C.uint32_t) {
	cb := lookup(h)
	defer cb.recover("heap access hook")
	cb.heap.access(uint32(addr), int(size), write != 0, int(state), uint32(block))
}
