package exidx

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

func ramRegion(sp uint32, words ...uint32) unwinders.Region {
	ram := make([]byte, stackTop-stackLo)
	for i, w := range words {
		binary.LittleEndian.PutUint32(ram[sp-stackLo+uint32(4*i):], w)
	}
	return unwinders.Region{Name: "ram", Addr: stackLo, Data: ram}
}

func sym(t *testing.T, p *elfProg, name string) uint32 {
	t.Helper()
	a, ok := p.Symbol(name)
	if !ok {
		t.Fatalf("no symbol %s", name)
	}
	return a
}

// A whole walk through testdata/allops.elf: leaf (CANTUNWIND, unwound by
// LR at its first instruction) <- push_vpush_pad <- _start, whose saved LR
// is the reset value.
func TestWalkAllops(t *testing.T) {
	p := loadELF(t, "testdata/allops.elf")
	sp := uint32(0x2000ff00)
	mem := p.image(t, ramRegion(sp,
		0, 0, 0, 0, // sub sp, #16
		0xd8d8, 0xd8d9, 0xd9d8, 0xd9d9, // vpush {d8, d9}
		4, 8, 9, sym(t, p, "_start")+0xa+1, // push {r4, r8, r9, lr}: return after bl push_vpush_pad
		0x40, 0xFFFFFFFF, // _start: push {r4, lr}
	))
	var regs unwinders.Registers
	regs.Set(unwinders.PC, sym(t, p, "leaf"))
	regs.Set(unwinders.SP, sp)
	regs.Set(unwinders.LR, sym(t, p, "push_vpush_pad")+0xe+1)
	regs.Set(unwinders.R4, 0x1234)
	tg := &unwinders.Target{Mem: mem, Prog: p, Profile: unwinders.V7M, Stack: unwinders.Range{Lo: stackLo, Hi: stackTop}}
	res := unwinders.Walk(tg, regs, []unwinders.Unwinder{&Unwinder{}, unwinders.LinkRegister{}}, unwinders.Options{})
	want := []struct {
		pc     uint32
		method string
	}{{sym(t, p, "leaf"), unwinders.MethodRegisters}, {sym(t, p, "push_vpush_pad") + 0xe, unwinders.MethodLR}, {sym(t, p, "_start") + 0xa, Name}}
	if len(res.Frames) != len(want) || res.Stop.Kind != unwinders.StopEndOfStack {
		for _, f := range res.Frames {
			t.Logf("frame 0x%08x sp 0x%08x %s", f.PC, f.SP, f.Method)
		}
		t.Fatalf("%d frames, stop %v", len(res.Frames), res.Stop)
	}
	for i, w := range want {
		if f := res.Frames[i]; f.PC != w.pc || f.Method != w.method {
			t.Errorf("frame %d: 0x%08x by %s, want 0x%08x by %s", i, f.PC, f.Method, w.pc, w.method)
		}
	}
	f2 := res.Frames[2]
	if f2.SP != sp+48 {
		t.Errorf("frame 2 SP 0x%x, want 0x%x", f2.SP, sp+48)
	}
	wantReg(t, &f2, unwinders.R4, 4)
	wantReg(t, &f2, unwinders.R9, 9)
	wantReg(t, &f2, unwinders.S(16), 0xd8d8)
}

// Frames whose PC was interrupted (frame 0, after an exception): the step
// proves from the code that the PC is in the function's body.
func TestProveBody(t *testing.T) {
	p := loadELF(t, "testdata/allops.elf")
	tab, err := NewTable(p)
	if err != nil {
		t.Fatal(err)
	}
	sp := uint32(0x2000f000)
	r7 := uint32(0x2000f800)
	mem := p.image(t, ramRegion(stackLo))
	cases := []struct {
		fn     string
		off    uint32
		proven bool
		why    string
	}{
		{"push_vpush_pad", 0x0, false, "first instruction"},
		{"push_vpush_pad", 0x4, false, "prologue"},    // after stmdb, before vpush
		{"push_vpush_pad", 0x8, false, "prologue"},    // before sub sp
		{"push_vpush_pad", 0xa, true, ""},             // at the bl
		{"push_vpush_pad", 0xe, true, ""},             // at add sp, #16 (not yet run)
		{"push_vpush_pad", 0x10, false, "SP changes"}, // at vpop: add sp ran
		{"push_vpush_pad", 0x14, false, "SP changes"}, // at ldmia
		{"push_r4_r7_lr", 0x2, true, ""},
		{"push_r4_r7_lr", 0x6, true, ""}, // at the pop (not yet run)
		{"big_pad", 0x2, false, "prologue"},
		{"big_pad", 0x6, true, ""},
		{"big_pad", 0xe, false, "SP changes"},
		{"frame_pointer", 0x4, false, "prologue"}, // before add r7, sp
		{"frame_pointer", 0x6, true, ""},
		{"frame_pointer", 0xa, true, ""},            // at mov sp, r7
		{"frame_pointer", 0xc, false, "SP changes"}, // after mov sp, r7: r7 holds, but the slots are free
		{"frame_pointer", 0xe, false, "SP changes"}, // after add sp, #8
		{"frame_pointer_clang", 0x2, false, "prologue"},
		{"frame_pointer_clang", 0x4, true, ""},
		{"frame_pointer_clang", 0xa, true, ""},             // sub.w r4, r7, #12
		{"frame_pointer_clang", 0xe, true, ""},             // at mov sp, r4
		{"frame_pointer_clang", 0x10, false, "SP changes"}, // at the pop, after mov sp, r4
		{"push_r0_r3", 0x2, false, "prologue"},
		{"push_r0_r3", 0x4, true, ""},
		{"push_r0_r3", 0xc, false, "SP changes"},
		{"pr2_func", 0xc, true, ""},
		{"pr2_func", 0x12, false, "SP changes"},
	}
	for _, tc := range cases {
		pc := sym(t, p, tc.fn) + tc.off
		var regs unwinders.Registers
		regs.Set(unwinders.PC, pc)
		regs.Set(unwinders.SP, sp)
		regs.Set(unwinders.R7, r7)
		regs.Set(unwinders.LR, 0xFFFFFFF9)
		f := unwinders.Frame{PC: pc, SP: sp, Regs: regs}
		tg := &unwinders.Target{Mem: mem, Prog: p, Profile: unwinders.V7M}
		c, err := New(tab).Step(tg, []unwinders.Frame{f})
		if tc.proven {
			if err != nil {
				t.Errorf("%s+0x%x: %v", tc.fn, tc.off, err)
			} else if c.Confidence != unwinders.ConfidenceMedium {
				t.Errorf("%s+0x%x: confidence %v, want medium", tc.fn, tc.off, c.Confidence)
			}
			continue
		}
		if !errors.Is(err, unwinders.ErrNotApplicable) {
			t.Errorf("%s+0x%x: %v, want not applicable (%s)", tc.fn, tc.off, err, tc.why)
		} else if !contains(err.Error(), tc.why) {
			t.Errorf("%s+0x%x: %q does not say %q", tc.fn, tc.off, err, tc.why)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// A call to a noreturn function as a function's last instruction: the
// return address is the next function's first byte; the entry is looked up
// at PC-2.
func TestNoreturnAtEnd(t *testing.T) {
	for _, c := range []struct{ elf, caller, next string }{
		{"testdata/gcc-m4f-O2.elf", "ends_in_noreturn", "after_noreturn"},
		{"testdata/allops.elf", "_start", "no_unwind_info"},
	} {
		p := loadELF(t, c.elf)
		tab, err := NewTable(p)
		if err != nil {
			t.Fatal(err)
		}
		ret := sym(t, p, c.next)
		f := unwinders.Frame{PC: ret, SP: 0x2000f000, ReturnAddress: true}
		e, err := tab.Lookup(f.LookupPC())
		if err != nil || e.FuncStart() != sym(t, p, c.caller) {
			t.Errorf("%s: return address 0x%x: entry at 0x%x (%v), want %s", c.elf, ret, e.FuncStart(), err, c.caller)
		}
		mem := p.image(t, ramRegion(0x2000f000, 0x33, 0x4001, 0x44, 0x4001))
		cf, err := New(tab).Step(&unwinders.Target{Mem: mem, Prog: p}, []unwinders.Frame{f})
		if err != nil || cf.PC != 0x4001 {
			t.Errorf("%s: step: 0x%x %v", c.elf, cf.PC, err)
		}
	}
}

// In allops.elf GNU ld put its EXIDX_CANTUNWIND terminator at the end of
// no_unwind_info, so by the index alone _start's entry also covers
// no_unwind_info, which has no unwind information of its own: Lookup marks
// the entry inherited, and Step refuses it because no_unwind_info's
// prologue does not build the frame the entry describes.
func TestUncoveredFunction(t *testing.T) {
	p := loadELF(t, "testdata/allops.elf")
	tab, err := NewTable(p)
	if err != nil {
		t.Fatal(err)
	}
	pc := sym(t, p, "no_unwind_info") + 2
	e, err := tab.Lookup(pc)
	if err != nil || e.InheritedBy != sym(t, p, "no_unwind_info") {
		t.Errorf("Lookup(no_unwind_info+2): inherited by 0x%x, %v; want no_unwind_info", e.InheritedBy, err)
	}
	f := unwinders.Frame{PC: pc + 2, SP: 0x2000f000, ReturnAddress: true}
	mem := p.image(t, ramRegion(0x2000f000, 0x33, 0x4001, 0x44, 0x4001))
	if _, err := New(tab).Step(&unwinders.Target{Mem: mem, Prog: p}, []unwinders.Frame{f}); !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("Step in no_unwind_info: %v, want not applicable", err)
	}
	// Without symbols the table alone decides.
	xa, x, _ := p.Section(".ARM.exidx")
	ta, tb, _ := p.Section(".ARM.extab")
	bare, err := ParseTable(xa, x, ta, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := bare.Lookup(pc); err != nil || e.FuncStart() != sym(t, p, "_start") {
		t.Errorf("bare Lookup: 0x%x %v", e.FuncStart(), err)
	}
	last := bare.At(bare.Len() - 1)
	if last.Bounded {
		t.Errorf("last entry is bounded")
	}
	if e, err := bare.Lookup(0xFFFFFFF0); err != nil || e.Index != last.Index {
		t.Errorf("the last entry has no upper bound: %v %v", e.Index, err)
	}
}

// GNU ld merges consecutive identical entries: in gcc-m3-O2-unwind.elf
// null_store shares sum_words's entry (both leaves: "finish"). A fault in
// null_store must unwind through the inherited entry, because null_store's
// own prologue (none) proves the same frame, with medium confidence.
func TestMergedEntry(t *testing.T) {
	p := loadELF(t, "../../firmware-samples/build/gcc-m3-O2-unwind.elf")
	tab, err := NewTable(p)
	if err != nil {
		t.Fatal(err)
	}
	ns := sym(t, p, "null_store")
	e, err := tab.Lookup(ns + 6)
	if err != nil || e.InheritedBy != ns || e.FuncStart() != sym(t, p, "sum_words") {
		t.Fatalf("Lookup(null_store+6): entry 0x%x inherited by 0x%x, %v", e.FuncStart(), e.InheritedBy, err)
	}
	var regs unwinders.Registers
	regs.Set(unwinders.LR, 0x1dd)
	f := unwinders.Frame{PC: ns + 6, SP: 0x2000f000, Regs: regs}
	mem := p.image(t, ramRegion(0x2000f000, 0))
	cf, err := New(tab).Step(&unwinders.Target{Mem: mem, Prog: p}, []unwinders.Frame{f})
	if err != nil || cf.PC != 0x1dd || cf.SP != 0x2000f000 || cf.Confidence != unwinders.ConfidenceMedium {
		t.Errorf("step: %+v %v", cf, err)
	}
}
