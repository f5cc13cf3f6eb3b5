package uc

import (
	"testing"
	"time"
)

// TestBudgetStopState: the block hook stops the run before a block that
// would take the count past the budget; that block neither runs nor is
// counted, and BudgetLeft says how many of its instructions fit. Code
// (arm-none-eabi-as 2.40):
//
//	0: 2000  movs r0, #0
//	2: 3001  adds r0, #1   @ loop
//	4: 1c01  adds r1, r0, #0
//	6: e7fc  b.n 2
//
// The first block (0-6) has 4 instructions, the loop block (2-6) 3.
func TestBudgetStopState(t *testing.T) {
	for _, c := range []struct {
		budget, insns, left uint64
		r0                  uint64
	}{
		{budget: 7, insns: 7, left: 0, r0: 2}, // 4 + 3 fit exactly
		{budget: 8, insns: 7, left: 1, r0: 2}, // the next loop block would cross
		{budget: 3, insns: 0, left: 3, r0: 0}, // not even the first block fits
	} {
		e := openOrSkip(t, CortexM4)
		load(t, e, "00200130011cfce7")
		tr, err := e.NewTracker(false, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr.SetBudget(c.budget)
		err = e.Start(1, 0xffff, time.Second, 0)
		pc, _ := e.RegRead(RegPC)
		r0, _ := e.RegRead(RegR0)
		a, _ := tr.Block()
		wantPC := uint64(2)
		if c.insns == 0 {
			wantPC = 0
		}
		if err != nil || pc != wantPC || r0 != c.r0 || tr.Insns() != c.insns || a != uint32(wantPC) || !tr.BudgetHit() || tr.BudgetLeft() != c.left {
			t.Errorf("budget %d: err %v pc %#x r0 %d insns %d block %#x left %d; want a stop at %#x with r0=%d after %d instructions, %d left",
				c.budget, err, pc, r0, tr.Insns(), a, tr.BudgetLeft(), wantPC, c.r0, c.insns, c.left)
		}
	}
}
