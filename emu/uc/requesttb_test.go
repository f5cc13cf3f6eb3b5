package uc

import (
	"testing"
	"time"
)

// TestRequestTBKeepsFastPath holds the Unicorn behaviour emu's heap runs
// rely on (emu/pretranslate.go): a block translated ahead with RequestTB
// while no data-access hook exists keeps the inline fast path for its loads
// after the hook is installed (the MPU check does not see them), a block
// translated after it does not, and RemoveTBs over the first block's code
// makes its next run translate it again with the hook.
func TestRequestTBKeepsFastPath(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	tr, err := e.NewTracker(true, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MemMap(0, 0x10000, PermAll); err != nil {
		t.Fatal(err)
	}
	// Three copies of "ldr r0, [r1]; b +0x7e" at 0x100, 0x200 and 0x400 (the runs
	// stop at the branch target: Unicorn retranslates a block that holds
	// the address a run stops at), "nop; b ." at 0x300.
	code := []byte{0x08, 0x68, 0x3d, 0xe0}
	for _, a := range []uint64{0x100, 0x200, 0x400} {
		if err := e.MemWrite(a, code); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.MemWrite(0x300, []byte{0x00, 0xbf, 0xfe, 0xe7}); err != nil {
		t.Fatal(err)
	}
	// The harness asks for translations between runs, never before the
	// first.
	if err := e.Start(0x301, 0x302, 10*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	size, insns, err := e.RequestTB(0x100)
	if err != nil {
		t.Skipf("UC_CTL_TB_REQUEST_CACHE: %v", err)
	}
	if size != 4 || insns != 2 {
		t.Errorf("RequestTB(0x100) = %d bytes, %d instructions; want 4, 2", size, insns)
	}
	run := func(at uint64) (CheckFault, bool) {
		t.Helper()
		tr.ClearCheckFault()
		if err := e.RegWrite(RegR0+1, 0x1000); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(at|1, at+0x80, 10*time.Second, 0); err != nil {
			t.Fatal(err)
		}
		return tr.CheckFault()
	}
	// A load that misses Unicorn's TLB takes the helper, where the hooks
	// are looked up at run time whatever the translation: run a third
	// copy first so that 0x1000 is in the TLB.
	if _, ok := run(0x400); ok {
		t.Fatal("a check failed with no checks on")
	}
	var rbar, rlim [16]uint32
	rbar[0], rlim[0] = 0x1000, 4<<1|1                   // 32 bytes at 0x1000, AP=000 (no access), enabled
	tr.SetChecks(false, true, false, 1|4, &rbar, &rlim) // MPU_CTRL ENABLE|PRIVDEFENA
	if err := tr.SetMemHook(true); err != nil {
		t.Fatal(err)
	}
	if cf, ok := run(0x100); ok {
		t.Errorf("the block translated ahead without the hook reached it: %+v", cf)
	}
	if cf, ok := run(0x200); !ok || cf.Kind != CheckMPUData || cf.Addr != 0x1000 {
		t.Errorf("block translated with the hook: check fault %+v %v, want the MPU to deny the load of 0x1000", cf, ok)
	}
	if err := e.RemoveTBs(0x100, 0x104); err != nil {
		t.Fatal(err)
	}
	if cf, ok := run(0x100); !ok || cf.Kind != CheckMPUData || cf.Addr != 0x1000 {
		t.Errorf("after RemoveTBs: check fault %+v %v, want the MPU to deny the load of 0x1000", cf, ok)
	}
}
