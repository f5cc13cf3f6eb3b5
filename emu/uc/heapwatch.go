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

// HeapWatch is the C half of heap tracking (heapwatch.c), attached to a
// Tracker: the block hook calls Block when a block starts at a watched
// address, and the data-access hook calls Access for an access into a
// freed block, or a write into bookkeeping or padding, of the byte map over
// [base, base+size). Accesses are only checked while the data-access hook
// is installed (Tracker.SetMemHook) and Checks(true).
type HeapWatch struct {
	t      *Tracker
	p      *C.fl_heapwatch
	handle cgo.Handle
}

// HeapRegs are the registers at a watched block's start: r0-r3, SP, LR.
type HeapRegs [6]uint32

type heapCallbacks struct {
	block  func(addr uint32, regs *HeapRegs)
	access func(addr uint32, size int, write bool, state int, block uint32)
}

// NewHeapWatch attaches a heap watcher with a byte map of size bytes at
// base (size 0: no map). block and access run inside the emulation, on
// the goroutine that called Start; they must not call Start or FlushTBs.
// access gets the first offending byte's address and state, the access
// size, and the start of the translated block that made it.
func (t *Tracker) NewHeapWatch(base, size uint32, block func(addr uint32, regs *HeapRegs), access func(addr uint32, size int, write bool, state int, block uint32)) (*HeapWatch, error) {
	if t.p.hw != nil {
		return nil, &OpError{Op: "heap watch", Err: ErrHookExist}
	}
	cb := &callback{e: t.e, heap: &heapCallbacks{block: block, access: access}}
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

// Watch adds (on) or removes a block address.
func (w *HeapWatch) Watch(addr uint32, on bool) error {
	if C.fl_hw_watch(w.p, C.uint32_t(addr), C.int(b2u(on))) == 0 {
		return &OpError{Op: "heap watch", Err: ErrNoMem}
	}
	return nil
}

// Mark sets the map state of [addr, addr+n) (clipped to the map). With
// soft, bytes marked HeapLive keep their state.
func (w *HeapWatch) Mark(addr, n uint32, state int, soft bool) {
	C.fl_hw_mark(w.p, C.uint32_t(addr), C.uint32_t(n), C.uint8_t(state), C.int(b2u(soft)))
}

// ClearMap sets the whole map to HeapNone.
func (w *HeapWatch) ClearMap() {
	C.fl_hw_mark(w.p, w.p.base, w.p.len, C.FL_HW_NONE, 0)
}

// Inside says whether an allocator call is in progress: its own accesses
// to bookkeeping and freed blocks are not checked.
func (w *HeapWatch) Inside(on bool) { w.p.inside = C.int(b2u(on)) }

// Expect starts an allocator call: inside until the block at ret runs
// with SP >= sp; then, with goReturn, the block callback reports it (and
// must call Inside(false)), else the call simply ends.
func (w *HeapWatch) Expect(ret, sp uint32, goReturn bool) {
	w.p.ret, w.p.ret_sp, w.p.ret_go = C.uint32_t(ret&^1), C.uint32_t(sp), C.int(b2u(goReturn))
	w.p.inside = 1
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
