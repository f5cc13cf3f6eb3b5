package emu_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu"
)

// TestIRQSweepConditionalStore guards issue 23, item 14 (a fault in a
// std::sort comparator lambda of gcc -Os C++ captured with a PC that is
// not the handler's first instruction and the truth's frame 0 lost): an
// exception entered and returned around the comparator's conditional
// store (`it eq; streq` in an IT block on gcc) must not change what is
// captured. An external interrupt (IRQ 5, whose handler returns) is raised
// at every instruction count of the last stretch before the fault of
// sort_lambda; each run must fault at the same store, with the same fault
// registers, stop at HardFault's first instruction and have the same true
// call stack as the run without the interrupt.
func TestIRQSweepConditionalStore(t *testing.T) {
	oracleSkip(t)
	const window = 240 // instructions before the fault: several comparator calls
	for _, build := range []string{"gcc-m3-Os", "gcc-m4f-Og", "clang-m4f-Os"} {
		t.Run(build, func(t *testing.T) {
			elf := filepath.Join("..", "firmware-samples", "cxx", "build", build+".elf")
			run := func(irqs []emu.IRQ) *emu.Result {
				t.Helper()
				res, err := emu.Run(context.Background(), emu.Config{ELF: elf,
					Sets: map[string]uint64{"crash_scenario": 7}, IRQs: irqs, MaxInsns: 10_000_000, Timeout: time.Minute})
				if err != nil {
					t.Fatalf("IRQ %v: %v", irqs, err)
				}
				return res
			}
			want := run(nil)
			handler := want.Registers.PC
			truth := func(r *emu.Result) string {
				// From the faulting frame on (the handler's own frame and
				// the exception pseudo-frame are the same in every run).
				for i, f := range r.Truth {
					if f.Kind == emu.FrameException {
						return fmt.Sprint(r.Truth[i+1:])
					}
				}
				return fmt.Sprint(r.Truth)
			}
			wantTruth := truth(want)
			bad, taken := 0, 0
			for at := want.Insns - min(window, want.Insns-1); at < want.Insns; at++ {
				got := run([]emu.IRQ{{Exception: 21, At: at}})
				if got.Insns > want.Insns {
					taken++ // (one raised in the faulting block is taken after it)
				}
				if got.Exception != want.Exception || got.Registers.PC != handler || got.Cause.PC != want.Cause.PC ||
					got.Fault.CFSR != want.Fault.CFSR || got.Fault.MMFAR != want.Fault.MMFAR || truth(got) != wantTruth {
					bad++
					if bad <= 3 {
						t.Errorf("IRQ 5 at instruction %d: exception %d, pc %#x, fault at %#x (CFSR %#x MMFAR %#x), truth %s; without it: exception %d, pc %#x, fault at %#x (CFSR %#x MMFAR %#x), truth %s",
							at, got.Exception, got.Registers.PC, got.Cause.PC, got.Fault.CFSR, got.Fault.MMFAR, truth(got),
							want.Exception, handler, want.Cause.PC, want.Fault.CFSR, want.Fault.MMFAR, wantTruth)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d interrupt points changed what was captured", bad, window)
			}
			if taken < window/2 {
				t.Errorf("the interrupt was taken before the fault at only %d of %d points", taken, window)
			}
		})
	}
}
