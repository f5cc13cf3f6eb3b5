package uc

import (
	"testing"
	"time"
)

// TestDropSeen: a block that ran while the data-access hook was off
// (translated without it) reaches the hook once it is installed and
// DropSeen has dropped the old translations: an aligned load that passed
// before fails the MPU check when the same code runs again with a
// no-access region over its address. (Aligned: Unicorn sends an unaligned
// access through its helper, where hooks are looked up at run time,
// whatever the translation.)
func TestDropSeen(t *testing.T) {
	for _, drop := range []bool{true, false} {
		e := openOrSkip(t, CortexM4)
		tr, err := e.NewTracker(true, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.MemMap(0, 0x10000, PermAll); err != nil {
			t.Fatal(err)
		}
		// 0: 6808 ldr r0, [r1]; 2: e7fe b .
		if err := e.MemWrite(0, []byte{0x08, 0x68, 0xfe, 0xe7}); err != nil {
			t.Fatal(err)
		}
		run := func() {
			t.Helper()
			if err := e.RegWrite(RegR0+1, 0x1000); err != nil {
				t.Fatal(err)
			}
			if err := e.Start(1, 2, 10*time.Second, 0); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if _, ok := tr.CheckFault(); ok {
			t.Fatal("a check failed with no checks on")
		}
		var rbar, rlim [16]uint32
		rbar[0], rlim[0] = 0x1000, 4<<1|1                   // 32 bytes at 0x1000, AP=000 (no access), enabled
		tr.SetChecks(false, true, false, 1|4, &rbar, &rlim) // MPU_CTRL ENABLE|PRIVDEFENA
		if err := tr.SetMemHook(true); err != nil {
			t.Fatal(err)
		}
		if drop {
			n, err := tr.DropSeen()
			if err != nil || n == 0 {
				t.Fatalf("DropSeen: %d blocks, %v", n, err)
			}
		}
		run()
		cf, ok := tr.CheckFault()
		switch {
		case drop && (!ok || cf.Kind != CheckMPUData || cf.Addr != 0x1000):
			t.Errorf("after DropSeen: check fault %+v %v, want the MPU to deny the load of 0x1000", cf, ok)
		case !drop && ok:
			// Unicorn applied the hook to the old translation by
			// itself: DropSeen would not be needed.
			t.Logf("without DropSeen the hook reached the old block too: %+v", cf)
		}
	}
}
