package uc

import (
	"encoding/hex"
	"testing"
	"time"
)

// smcPatch stores a new instruction over a function it has already run,
// then runs it again (arm-none-eabi-as 2.40, -mcpu=cortex-m4):
//
//	 0: 2300       movs r3, #0
//	 2: f000 f809  bl 18 <target>       @ loop
//	 6: 2b00       cmp r3, #0
//	 8: d105       bne.n 16 <done>
//	 a: 3301       adds r3, #1
//	 c: a102       adr r1, target
//	 e: f242 0207  movw r2, #0x2007     @ movs r0, #7
//	12: 800a       strh r2, [r1]
//	14: e7f5       b.n 2 <loop>
//	16: e7fe       b.n .                @ done
//	18: 2001       movs r0, #1          @ target
//	1a: 4770       bx lr
const smcPatch = "002300f009f8002b05d1013302a142f207020a80f5e7fee701207047"

// TestStoreFastPath: the executable's page_collection_lock_arm is the one
// libunicorn calls (the interposition works for the dlopen'ed library), and
// the check for self-modifying code still drops the stale translation: the
// patched function returns 7, not the 1 of its first translation.
func TestStoreFastPath(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	code, err := hex.DecodeString(smcPatch)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MemMap(0, 0x10000, PermAll); err != nil {
		t.Fatal(err)
	}
	if err := e.MemWrite(0, code); err != nil {
		t.Fatal(err)
	}
	if err := e.RegWrite(RegSP, 0x8000); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(1, 0x16, 10*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	r0, err := e.RegRead(RegR0)
	if err != nil {
		t.Fatal(err)
	}
	if r0 != 7 {
		t.Errorf("r0 = %d after the patched function ran, want 7 (stale translation)", r0)
	}
	s := Stores()
	if !s.Interposed {
		t.Errorf("libunicorn never called faultline's page_collection_lock_arm: the executable does not export it (%+v)", s)
	}
	major, minor := Version()
	if want := major == 2 && minor == 0; s.Skipping != want {
		t.Errorf("Skipping = %v for Unicorn %d.%d, want %v", s.Skipping, major, minor, want)
	}
}
