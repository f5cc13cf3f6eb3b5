//go:build cgo

package uc

/*
#include "tracker.h"
#include "lazyfp.h"
*/
import "C"

// WatchFP installs the lazy FP state preservation hook on the FP
// instruction at addr (lazyfp.h): while SetLazyFP armed it, the first of
// these to execute writes s0-s15 and FPSCR at FPCAR and disarms it.
func (t *Tracker) WatchFP(addr uint32) error {
	if err := C.fl_lazyfp_watch(t.p, C.uint32_t(addr)); err != C.UC_ERR_OK {
		return &OpError{Op: "tracker FP hook", Addr: uint64(addr), HasAddr: true, Err: Error(err)}
	}
	return nil
}

// SetLazyFP mirrors FPCCR.LSPACT and FPCAR into the hooks.
func (t *Tracker) SetLazyFP(active bool, fpcar uint32) {
	a := C.int(0)
	if active {
		a = 1
	}
	C.fl_lazyfp_set(t.p, a, C.uint32_t(fpcar))
}

// LazyFP reports whether lazy preservation is still pending (LSPACT): no
// watched FP instruction has run since SetLazyFP(true, ...).
func (t *Tracker) LazyFP() bool {
	return t.p.lf != nil && t.p.lf.active != 0
}

// LazyFPSaves returns how many lazy preservations the hooks made, and how
// many of them could not write the registers (FPCAR unmapped).
func (t *Tracker) LazyFPSaves() (saves, failed uint64) {
	if t.p.lf == nil {
		return 0, 0
	}
	return uint64(t.p.lf.saves), uint64(t.p.lf.failed)
}
