package uc

import (
	"testing"
	"time"
)

// TestBudgetStopState: the block hook stops the run when the budget is
// reached, before the block runs. Code (arm-none-eabi-as 2.40):
//
//	0: 2000  movs r0, #0
//	2: 3001  adds r0, #1   @ loop
//	4: 1c01  adds r1, r0, #0
//	6: e7fc  b.n 2
func TestBudgetStopState(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, "00200130011cfce7")
	tr, err := e.NewTracker(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr.SetBudget(7)
	err = e.Start(1, 0xffff, time.Second, 0)
	pc, _ := e.RegRead(RegPC)
	r0, _ := e.RegRead(RegR0)
	a, _ := tr.Block()
	if err != nil || pc != 2 || r0 != 1 || tr.Insns() != 7 || a != 2 || !tr.BudgetHit() {
		t.Errorf("err %v pc %#x r0 %d insns %d block %#x; want a stop at 0x2 with r0=1 after 7 instructions", err, pc, r0, tr.Insns(), a)
	}
}
