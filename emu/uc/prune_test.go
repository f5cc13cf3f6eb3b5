package uc

import "testing"

// TestPrune checks the rule for abandoned calls (tracker.c, fl_prune) on
// made-up shadow stacks; abandon_test.go in package emu checks it on
// firmware. Functions: F [0x100, 0x200), G [0x200, 0x280), H [0x280, 0x300),
// helper [0x300, 0x310); nothing at 0x400.
func TestPrune(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	tr, err := e.NewTracker(true, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetFunctions([]uint32{0x100, 0x200, 0x280, 0x300}, []uint32{0x200, 0x280, 0x300, 0x310}); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetFunctions([]uint32{0x100, 0x180}, []uint32{0x200, 0x280}); err == nil {
		t.Error("overlapping ranges accepted")
	}
	call := func(ret, sp, target uint32) ShadowFrame { return ShadowFrame{Return: ret, SP: sp, Target: target} }
	pspCall := func(ret, sp, target uint32) ShadowFrame {
		f := call(ret, sp, target)
		f.PSP = true
		return f
	}
	outer := call(0x50, 0x1000, 0x100) // something called F
	for _, c := range []struct {
		name   string
		calls  []ShadowFrame
		pc, sp uint32
		psp    bool
		want   int
	}{
		{"live chain", []ShadowFrame{outer, call(0x124, 0xff0, 0x200), call(0x244, 0xfe0, 0x280)}, 0x290, 0xfd0, false, 3},
		// F called G (at 0xff0), G called H, H longjmp'd back into F.
		{"longjmp back into F", []ShadowFrame{outer, call(0x124, 0xff0, 0x200), call(0x244, 0xfe0, 0x280)}, 0x130, 0xff0, false, 1},
		// Only the calls below sp: F is still at a deeper SP than its call.
		{"below sp only", []ShadowFrame{outer, call(0x124, 0xff0, 0x200), call(0x244, 0xfe0, 0x280)}, 0x130, 0xfe8, false, 2},
		// F called the switch helper, which jumped into F's case code.
		{"helper returned elsewhere", []ShadowFrame{outer, call(0x124, 0xff0, 0x300)}, 0x140, 0xff0, false, 1},
		// F called G, which pushed nothing and now runs (noreturn chain).
		{"callee at the same SP", []ShadowFrame{outer, call(0x124, 0xff0, 0x200)}, 0x210, 0xff0, false, 2},
		// The call instruction ends F: its return address is past F's end.
		{"return address past the end", []ShadowFrame{outer, call(0x200, 0xff0, 0x200)}, 0x210, 0xff0, false, 2},
		{"return address past the end, F again", []ShadowFrame{outer, call(0x200, 0xff0, 0x280)}, 0x1f0, 0xff0, false, 1},
		// F calling F before pushing anything: both activations live.
		{"self call", []ShadowFrame{outer, call(0x124, 0xff0, 0x100)}, 0x130, 0xff0, false, 2},
		{"pc in no function", []ShadowFrame{outer, call(0x124, 0xff0, 0x300)}, 0x400, 0xff0, false, 2},
		// Calls on the main stack under a thread's calls on the process
		// stack are never compared with the process stack's SP.
		{"other stack", []ShadowFrame{call(0x124, 0x2000, 0x200), pspCall(0x244, 0x800, 0x280)}, 0x290, 0x900, true, 1},
		{"other stack stops", []ShadowFrame{pspCall(0x124, 0x100, 0x200), call(0x244, 0x2000, 0x280), pspCall(0x2a0, 0x800, 0x300)}, 0x290, 0x900, true, 2},
		{"empty", nil, 0x130, 0xff0, false, 0},
	} {
		if got := tr.Prune(c.calls, c.pc, c.sp, c.psp); got != c.want {
			t.Errorf("%s: %d live, want %d", c.name, got, c.want)
		}
	}
}
