package cfi_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
)

const ramBase = 0x20000000

// synth is a test program from testdata with a RAM image whose words the
// test sets.
type synth struct {
	elf *elfsym.File
	ram []byte
	t   *unwinders.Target
}

func newSynth(tb testing.TB, path string) *synth {
	tb.Helper()
	f, err := elfsym.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	s := &synth{elf: f, ram: make([]byte, 0x1000)}
	var im unwinders.Image
	if err := im.AddLayer(f.Segments()...); err != nil {
		tb.Fatal(err)
	}
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: ramBase, Data: s.ram}); err != nil {
		tb.Fatal(err)
	}
	s.t = &unwinders.Target{Mem: &im, Prog: f, Profile: unwinders.V7M}
	return s
}

func (s *synth) put(addr uint32, words ...uint32) {
	for i, w := range words {
		binary.LittleEndian.PutUint32(s.ram[addr-ramBase+uint32(4*i):], w)
	}
}

func (s *synth) sym(tb testing.TB, name string) uint32 {
	a, ok := s.elf.Symbol(name)
	if !ok {
		tb.Fatalf("no symbol %s", name)
	}
	return a
}

// frame0 builds an interrupted frame at pc with the given registers.
func frame0(pc, sp uint32, regs map[unwinders.Reg]uint32) unwinders.Frame {
	var r unwinders.Registers
	for k, v := range regs {
		r.Set(k, v)
	}
	r.Set(unwinders.PC, pc)
	r.Set(unwinders.SP, sp)
	return unwinders.Frame{PC: pc, SP: sp, Regs: r, Kind: unwinders.KindNormal, Confidence: unwinders.ConfidenceHigh}
}

// Every kind of rule, applied by Step to the hand-written functions of
// allcfi-debug.elf (src/allcfi.S) with a synthetic stack.
func TestStep(t *testing.T) {
	s := newSynth(t, "testdata/allcfi-debug.elf")
	u := cfi.New()
	const sp = ramBase + 0x100
	step := func(f unwinders.Frame) (unwinders.Frame, error) {
		return u.Step(s.t, []unwinders.Frame{f})
	}
	want := func(name string, got unwinders.Frame, err error, pc, csp uint32, known map[unwinders.Reg]uint32, unknown ...unwinders.Reg) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if got.PC != pc || got.SP != csp || got.Method != cfi.Name {
			t.Errorf("%s: caller pc 0x%08x sp 0x%08x method %s, want 0x%08x 0x%08x cfi", name, got.PC, got.SP, got.Method, pc, csp)
		}
		for r, v := range known {
			if g, ok := got.Regs.Get(r); !ok || g != v {
				t.Errorf("%s: %v = 0x%x (known %v), want 0x%x", name, r, g, ok, v)
			}
		}
		for _, r := range unknown {
			if got.Regs.Known(r) {
				t.Errorf("%s: %v is known, want unknown", name, r)
			}
		}
	}
	all := map[unwinders.Reg]uint32{unwinders.R0: 1, unwinders.R4: 4, unwinders.R5: 5, unwinders.R6: 6, unwinders.R7: 7, unwinders.R8: 8, unwinders.R9: 9, unwinders.R12: 0x12, unwinders.LR: 0x1235}

	// push_frame after "add r7, sp, #8": CFA r7+8, r4/r5/r7/lr saved.
	pf := s.sym(t, "push_frame")
	s.put(sp, 0x44, 0x55, 0x77, 0x2001)
	regs := map[unwinders.Reg]uint32{unwinders.R7: sp + 8, unwinders.LR: 0x999, unwinders.R0: 1}
	got, err := step(frame0(pf+4, sp, regs))
	want("push_frame", got, err, 0x2001, sp+16, map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55, unwinders.R7: 0x77}, unwinders.R0, unwinders.LR)
	if got.Confidence != unwinders.ConfidenceHigh {
		t.Errorf("push_frame: confidence %v", got.Confidence)
	}
	// The same frame with r7 unknown: the CFA cannot be computed.
	_, err = step(frame0(pf+4, sp, map[unwinders.Reg]uint32{unwinders.LR: 0x999}))
	if !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, cfi.ErrRegisterUnknown) {
		t.Errorf("push_frame without r7: %v", err)
	}

	// leaf: only the CIE's row: the return address is LR, callee-saved
	// registers keep their values, caller-saved ones are lost.
	got, err = step(frame0(s.sym(t, "leaf"), sp, all))
	want("leaf", got, err, 0x1235, sp, map[unwinders.Reg]uint32{unwinders.R4: 4, unwinders.R8: 8}, unwinders.R0, unwinders.R12, unwinders.LR)

	// regmoves after "mov r12, lr" and the rules: lr in r12, r4 same
	// value, r5 undefined.
	rm := s.sym(t, "regmoves")
	regs = map[unwinders.Reg]uint32{unwinders.R4: 4, unwinders.R5: 5, unwinders.R12: 0x3001, unwinders.LR: 0x1}
	got, err = step(frame0(rm+2, sp, regs))
	want("regmoves", got, err, 0x3001, sp, map[unwinders.Reg]uint32{unwinders.R4: 4}, unwinders.R5, unwinders.R12)

	// vfp after the vpush: d8 (DWARF 264) = s16/s17, s18 and s19 (DWARF
	// 82, 83) from the stack; s0 lost.
	vf := s.sym(t, "vfp")
	s.put(sp, 0x16, 0x17, 0x18, 0x19, 0x4, 0x4001)
	regs = map[unwinders.Reg]uint32{unwinders.S(0): 1, unwinders.S(16): 0xbad, unwinders.LR: 0x1}
	got, err = step(frame0(vf+6, sp, regs))
	want("vfp", got, err, 0x4001, sp+24, map[unwinders.Reg]uint32{unwinders.S(16): 0x16, unwinders.S(17): 0x17, unwinders.S(18): 0x18, unwinders.S(19): 0x19, unwinders.R4: 4}, unwinders.S(0))

	// valoff after "mov r6, sp": CFA r6+16; r8 = CFA-16 (val_offset),
	// r9 = CFA+12 (val_offset_sf), lr at CFA-4 (offset_extended_sf).
	vo := s.sym(t, "valoff")
	s.put(sp, 0x40, 0x50, 0x60, 0x5001)
	got, err = step(frame0(vo+4, sp, map[unwinders.Reg]uint32{unwinders.R6: sp}))
	want("valoff", got, err, 0x5001, sp+16, map[unwinders.Reg]uint32{unwinders.R4: 0x40, unwinders.R5: 0x50, unwinders.R6: 0x60, unwinders.R8: sp, unwinders.R9: sp + 28})

	// exprs: a register rule and then the CFA given by DWARF expressions
	// are refused, clearly, so that the next strategy can try.
	ex := s.sym(t, "exprs")
	for _, pc := range []uint32{ex + 2, ex + 4, ex + 6} {
		_, err = step(frame0(pc, sp, all))
		if !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, frame.ErrUnsupported) {
			t.Errorf("exprs+%d: %v, want a declined step wrapping frame.ErrUnsupported", pc-ex, err)
		}
	}

	// retcol: the return address column is r12; after "mov r12, lr" its
	// rule is "in r14".
	rc := s.sym(t, "retcol")
	got, err = step(frame0(rc+2, sp, map[unwinders.Reg]uint32{unwinders.LR: 0x6001, unwinders.R12: 0x6001}))
	want("retcol", got, err, 0x6001, sp, nil, unwinders.R12)

	// reset marks LR undefined: the outermost frame.
	_, err = step(frame0(s.sym(t, "reset"), sp, all))
	if !errors.Is(err, cfi.ErrOutermost) || errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("reset: %v", err)
	}

	// The saved registers are not in the dump.
	_, err = step(frame0(pf+4, 0x30000000, map[unwinders.Reg]uint32{unwinders.R7: 0x30000008}))
	if !errors.Is(err, unwinders.ErrUnmapped) || errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("unmapped stack: %v", err)
	}

	// No FDE: an address outside every function.
	_, err = step(frame0(0x9000, sp, all))
	if !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, cfi.ErrNoFDE) {
		t.Errorf("no FDE: %v", err)
	}

	// Exception pseudo-frames are the walk's.
	_, err = u.Step(s.t, []unwinders.Frame{{Kind: unwinders.KindException}})
	if !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("exception frame: %v", err)
	}
}

// A return address is looked up inside the call: after a BL to a
// noreturn function at the very end of a function, the return address is
// already the next function's first instruction.
func TestStepReturnAddress(t *testing.T) {
	s := newSynth(t, "testdata/allcfi-debug.elf")
	// Frame 1 in push_frame, returning right after its "bl leaf".
	pf := s.sym(t, "push_frame")
	const sp = ramBase + 0x200
	// At the call site (0x1c..0x1f) the row is CFA r7+8.
	s.put(sp+8, 0x44, 0x55, 0x77, 0x7001)
	f := frame0(pf+0x18, sp, map[unwinders.Reg]uint32{unwinders.R7: sp + 16})
	f.ReturnAddress = true
	got, err := cfi.New().Step(s.t, []unwinders.Frame{f})
	if err != nil || got.PC != 0x7001 || got.SP != sp+24 || got.Confidence != unwinders.ConfidenceHigh {
		t.Errorf("return address: %+v %v", got, err)
	}
}

// An interrupted PC in an epilogue the producer did not describe gets
// medium confidence and a note: "add sp, #8" ran, the row still says
// CFA = sp+16.
func TestStaleRow(t *testing.T) {
	cie := []byte{0x0c, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 2, 0x7c, 14, 0x0c, 13, 0}
	fde := []byte{0x14, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 6, 0, 0, 0,
		0x0e, 16, 0x84, 2, 0x8e, 1, 0, 0} // def_cfa_offset 16; r4 at c-8, lr at c-4
	sec, err := frame.Parse(frame.DebugFrame, 0, append(cie, fde...))
	if err != nil {
		t.Fatal(err)
	}
	code := []byte{0x02, 0xb0, 0x10, 0xbd, 0, 0} // add sp, #8; pop {r4, pc}
	ram := make([]byte, 0x100)
	binary.LittleEndian.PutUint32(ram[0x18:], 0x44)
	binary.LittleEndian.PutUint32(ram[0x1c:], 0x8001)
	var im unwinders.Image
	_ = im.AddLayer(unwinders.Region{Name: "code", Addr: 0x1000, Data: code}, unwinders.Region{Name: "ram", Addr: ramBase, Data: ram})
	tgt := &unwinders.Target{Mem: &im, Profile: unwinders.V7M}
	u := cfi.NewWithTable(cfi.NewTable(frame.IndexOptions{}, sec))
	for _, tc := range []struct {
		pc   uint32
		conf unwinders.Confidence
	}{{0x1000, unwinders.ConfidenceHigh}, {0x1002, unwinders.ConfidenceMedium}} {
		got, err := u.Step(tgt, []unwinders.Frame{frame0(tc.pc, ramBase+0x10, nil)})
		if err != nil || got.Confidence != tc.conf {
			t.Errorf("pc 0x%x: confidence %v (note %q), err %v; want %v", tc.pc, got.Confidence, got.Note, err, tc.conf)
		}
	}
}

// The answer about a stale row is remembered per firmware, but only for
// the code it read: a dump whose own copy of the code (a layer over the
// firmware's) differs gets its own answer, and the firmware's comes back
// after it.
func TestStaleRowPerCode(t *testing.T) {
	cie := []byte{0x0c, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 2, 0x7c, 14, 0x0c, 13, 0}
	fde := []byte{0x14, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 6, 0, 0, 0,
		0x0e, 16, 0x84, 2, 0x8e, 1, 0, 0} // def_cfa_offset 16; r4 at c-8, lr at c-4
	sec, err := frame.Parse(frame.DebugFrame, 0, append(cie, fde...))
	if err != nil {
		t.Fatal(err)
	}
	ram := make([]byte, 0x100)
	binary.LittleEndian.PutUint32(ram[0x18:], 0x44)
	binary.LittleEndian.PutUint32(ram[0x1c:], 0x8001)
	target := func(overlay []byte) *unwinders.Target {
		var im unwinders.Image
		code := []byte{0x02, 0xb0, 0x10, 0xbd, 0, 0} // add sp, #8; pop {r4, pc}
		_ = im.AddLayer(unwinders.Region{Name: "code", Addr: 0x1000, Data: code})
		dump := []unwinders.Region{{Name: "ram", Addr: ramBase, Data: ram}}
		if overlay != nil {
			dump = append(dump, unwinders.Region{Name: "flash copy", Addr: 0x1000, Data: overlay})
		}
		_ = im.AddLayer(dump...)
		return &unwinders.Target{Mem: &im, Profile: unwinders.V7M}
	}
	firmware := target(nil)
	nop := target([]byte{0x00, 0xbf, 0x10, 0xbd, 0, 0}) // nop; pop {r4, pc}
	u := cfi.NewWithTable(cfi.NewTable(frame.IndexOptions{}, sec))
	for i, tc := range []struct {
		tgt  *unwinders.Target
		conf unwinders.Confidence
	}{{firmware, unwinders.ConfidenceMedium}, {nop, unwinders.ConfidenceHigh}, {firmware, unwinders.ConfidenceMedium}, {nop, unwinders.ConfidenceHigh}} {
		got, err := u.Step(tc.tgt, []unwinders.Frame{frame0(0x1002, ramBase+0x10, nil)})
		if err != nil || got.Confidence != tc.conf {
			t.Errorf("step %d: confidence %v (note %q), err %v; want %v", i, got.Confidence, got.Note, err, tc.conf)
		}
	}
}

// A function really at address 0 keeps its FDE (shrinkwrap-clang-m4f-O2
// has no vector table: "early" starts at 0); the sample firmware's FDEs at
// 0 are those of functions --gc-sections removed, and are left out.
func TestCodeAtZero(t *testing.T) {
	s := newSynth(t, "testdata/shrinkwrap-clang-m4f-O2.elf")
	tab, err := cfi.Load(s.elf)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := tab.Lookup(0x10); !ok || f.Start != 0 {
		t.Errorf("early at 0: %v %v", f, ok)
	}
	for _, fx := range []string{"gcc-m3-O2", "clang-m4f-O2"} {
		tab, err := cfi.Load(sampleELF(t, fx))
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := tab.Lookup(0x10); ok {
			t.Errorf("%s: FDE %v covers 0x10, inside the vector table", fx, f)
		}
		zero := 0
		for _, d := range tab.Indexes()[0].Dropped() {
			if d.FDE.Start == 0 {
				zero++
			}
		}
		if zero == 0 {
			t.Errorf("%s: no FDE at 0 was dropped", fx)
		}
	}
}

// A program without call frame information.
func TestNoCFI(t *testing.T) {
	s := newSynth(t, "../exidx/testdata/gcc-m4f-O2.elf") // linked with --strip-debug
	if _, err := cfi.Load(s.elf); !errors.Is(err, cfi.ErrNoCFI) {
		t.Fatalf("Load: %v", err)
	}
	_, err := cfi.New().Step(s.t, []unwinders.Frame{frame0(0x100, ramBase, nil)})
	if !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, cfi.ErrNoCFI) {
		t.Errorf("Step: %v", err)
	}
}
