package framepointer_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/framepointer"
)

const (
	stackLo  = 0x20000000
	stackHi  = 0x20004000
	entrySP  = 0x20003F00 // SP at entry of the function under test
	callerR7 = 0x20003F40 // the caller's r7 saved in the records
)

// env is the hand-written image testdata/layouts.elf with a zeroed stack.
type env struct {
	tb    testing.TB
	elf   *elfsym.File
	stack []byte
	t     *unwinders.Target
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	f, err := elfsym.Open("testdata/layouts.elf")
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{tb: tb, elf: f, stack: make([]byte, stackHi-stackLo)}
	im := &unwinders.Image{}
	if err := im.AddLayer(f.Segments()...); err != nil {
		tb.Fatal(err)
	}
	if err := im.AddLayer(unwinders.Region{Name: "stack", Addr: stackLo, Data: e.stack}); err != nil {
		tb.Fatal(err)
	}
	e.t = &unwinders.Target{Mem: im, Prog: f, Profile: unwinders.V7M, Stack: unwinders.Range{Lo: stackLo, Hi: stackHi}}
	return e
}

func (e *env) put(addr, v uint32) {
	binary.LittleEndian.PutUint32(e.stack[addr-stackLo:], v)
}

func (e *env) sym(name string) uint32 {
	a, ok := e.elf.Symbol(name)
	if !ok {
		e.tb.Fatalf("no symbol %s in layouts.elf", name)
	}
	return a &^ 1
}

// frame builds a frame at pc with the given SP and registers.
func frame(pc, sp uint32, ret bool, regs map[unwinders.Reg]uint32) unwinders.Frame {
	var r unwinders.Registers
	for k, v := range regs {
		r.Set(k, v)
	}
	r.Set(unwinders.SP, sp)
	r.Set(unwinders.PC, pc)
	return unwinders.Frame{PC: pc, SP: sp, Regs: r, Kind: unwinders.KindNormal, ReturnAddress: ret, Confidence: unwinders.ConfidenceHigh}
}

type want struct {
	pc, sp, r7 uint32
	fpReg      unwinders.Reg // default R7
	regs       map[unwinders.Reg]uint32
	conf       unwinders.Confidence
	kind       framepointer.LayoutKind
	err        error
}

func check(t *testing.T, e *env, f unwinders.Frame, w want) {
	t.Helper()
	u := framepointer.New()
	got, err := u.Step(e.t, []unwinders.Frame{f})
	if w.err != nil {
		if !errors.Is(err, w.err) {
			t.Fatalf("Step: err = %v, want %v", err, w.err)
		}
		na := errors.Is(w.err, framepointer.ErrNoFramePointer) || errors.Is(w.err, framepointer.ErrNotSetUp) ||
			errors.Is(w.err, framepointer.ErrRegisterUnknown) || errors.Is(w.err, framepointer.ErrNotDecodable)
		if errors.Is(err, unwinders.ErrNotApplicable) != na {
			t.Errorf("Step: err = %v: wraps ErrNotApplicable = %v, want %v", err, !na, na)
		}
		return
	}
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	fpReg := w.fpReg
	if fpReg == 0 {
		fpReg = unwinders.R7
	}
	fp, _ := got.Regs.Get(fpReg)
	if got.PC != w.pc || got.SP != w.sp || fp != w.r7 {
		t.Errorf("caller PC 0x%08x SP 0x%08x %v 0x%08x, want 0x%08x 0x%08x 0x%08x", got.PC, got.SP, fpReg, fp, w.pc, w.sp, w.r7)
	}
	for r, v := range w.regs {
		if g, ok := got.Regs.Get(r); !ok || g != v {
			t.Errorf("caller %v = 0x%08x (known %v), want 0x%08x", r, g, ok, v)
		}
	}
	for _, r := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR} {
		if got.Regs.Known(r) {
			t.Errorf("caller %v is known; a call clobbers it", r)
		}
	}
	if got.Confidence != w.conf || got.Method != framepointer.Name {
		t.Errorf("confidence %v method %q, want %v %q", got.Confidence, got.Method, w.conf, framepointer.Name)
	}
	if w.kind != framepointer.LayoutNone {
		l, err := u.LayoutAt(e.t, &f)
		if err != nil || l.Kind != w.kind {
			t.Errorf("LayoutAt: %+v, %v; want kind %v", l, err, w.kind)
		}
	}
}

const retAddr = 0x1021 // clang_simple_ret|1: a return address after a BL

// TestClangLayout: push {r4-r7, lr}; add r7, sp, #12; push.w {r8-r11};
// sub sp, #8. r7 = entry-8 points at {saved r7, lr}.
func TestClangLayout(t *testing.T) {
	e := newEnv(t)
	r7 := uint32(entrySP - 8)
	for i, v := range []uint32{0x44, 0x55, 0x66, callerR7, retAddr} { // r4 r5 r6 r7 lr from entry-20
		e.put(entrySP-20+4*uint32(i), v)
	}
	for i, v := range []uint32{0x88, 0x99, 0xAA, 0xBB} { // r8-r11 below
		e.put(entrySP-36+4*uint32(i), v)
	}
	f := frame(e.sym("clang_frame_ret"), entrySP-44, true, map[unwinders.Reg]uint32{unwinders.R7: r7, unwinders.R4: 1, unwinders.R0: 7})
	check(t, e, f, want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutClang,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55, unwinders.R6: 0x66, unwinders.R8: 0x88, unwinders.R9: 0x99, unwinders.R10: 0xAA, unwinders.R11: 0xBB}})

	// push {r7, lr}; mov r7, sp: the record at r7 == SP.
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, retAddr)
	f = frame(e.sym("clang_simple_ret"), entrySP-8, true, map[unwinders.Reg]uint32{unwinders.R7: entrySP - 8})
	check(t, e, f, want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutClang})
}

// TestGCCLayout: GCC 12's r7 at the bottom of the locals, the record at
// r7+N for every SUB SP encoding, and GCC -O0's epilogue.
func TestGCCLayout(t *testing.T) {
	e := newEnv(t)
	// push {r4, r7, lr}; sub sp, #20; add r7, sp, #0.
	e.put(entrySP-12, 0x44)
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, retAddr)
	r7 := uint32(entrySP - 32)
	regs := map[unwinders.Reg]uint32{unwinders.R7: r7, unwinders.LR: 0x999}
	ok := want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutGCC,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44}}
	check(t, e, frame(e.sym("gcc_frame_ret"), r7, true, regs), ok)
	// Interrupted in the epilogue: adds r7, #20 moved r7 to the record;
	// then mov sp, r7. The record is still above SP: unwindable.
	ok.kind = framepointer.LayoutClang // r7 now points at the record
	check(t, e, frame(e.sym("gcc_frame_adjusted"), r7, false, map[unwinders.Reg]uint32{unwinders.R7: entrySP - 12}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh})
	check(t, e, frame(e.sym("gcc_frame_sp_restored"), entrySP-12, false, map[unwinders.Reg]uint32{unwinders.R7: entrySP - 12}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh})
	// Mid-prologue: at entry LR and r7 are untouched, so the caller is in
	// LR (a leaf step); after the push and after the sub the frame is
	// half built: declined.
	start := e.sym("gcc_frame")
	check(t, e, frame(start, entrySP, false, regs), want{pc: 0x999, sp: entrySP, r7: r7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutLeaf})
	for _, pc := range []uint32{start + 2, start + 4} {
		check(t, e, frame(pc, entrySP-12, false, regs), want{err: framepointer.ErrNotSetUp})
	}

	// push {r7, lr}; subw sp, sp, #2056; add r7, sp, #0.
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, retAddr)
	r7 = entrySP - 8 - 2056
	check(t, e, frame(e.sym("gcc_subw_ret"), r7, true, map[unwinders.Reg]uint32{unwinders.R7: r7}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutGCC})
	// push {r7, lr}; sub.w sp, sp, #2080; add r7, sp, #8.
	r7 = entrySP - 8 - 2080 + 8
	check(t, e, frame(e.sym("gcc_subw2_ret"), r7-8, true, map[unwinders.Reg]uint32{unwinders.R7: r7}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutGCC})
	// sub.w r7, r7, #8 moved r7 down by 8: still followed.
	check(t, e, frame(e.sym("gcc_subw2_ret")+4, r7-8, false, map[unwinders.Reg]uint32{unwinders.R7: r7 - 8}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh})
	// push {r7, lr}; movw r3, #5000; sub sp, sp, r3; add r7, sp, #0.
	r7 = entrySP - 8 - 5000
	check(t, e, frame(e.sym("gcc_regsub_ret"), r7, true, map[unwinders.Reg]uint32{unwinders.R7: r7}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutGCC})
}

// TestLeafWithoutSavedLR: push {r7}; sub sp, #12; add r7, sp, #0: the
// return address is still in LR.
func TestLeafWithoutSavedLR(t *testing.T) {
	e := newEnv(t)
	e.put(entrySP-4, callerR7)
	r7 := uint32(entrySP - 16)
	body := e.sym("gcc_leaf_body")
	check(t, e, frame(body, r7, false, map[unwinders.Reg]uint32{unwinders.R7: r7, unwinders.LR: retAddr}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutGCC})
	check(t, e, frame(body, r7, false, map[unwinders.Reg]uint32{unwinders.R7: r7}), want{err: framepointer.ErrRegisterUnknown})
	// After pop {r7}: torn down, r7 and SP are the caller's again and LR
	// still holds the return address: a leaf step.
	check(t, e, frame(e.sym("gcc_leaf_after_pop"), entrySP, false, map[unwinders.Reg]uint32{unwinders.R7: callerR7, unwinders.LR: retAddr}), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutLeaf})
	// The same without LR known: nothing to step with.
	check(t, e, frame(e.sym("gcc_leaf_after_pop"), entrySP, false, map[unwinders.Reg]uint32{unwinders.R7: callerR7}), want{err: framepointer.ErrRegisterUnknown})
}

// TestControlFlow: the analysis follows branches, tables and loops.
func TestControlFlow(t *testing.T) {
	e := newEnv(t)
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, retAddr)
	rec := uint32(entrySP - 8)
	r7 := map[unwinders.Reg]uint32{unwinders.R7: rec, unwinders.LR: retAddr}
	ok := want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh}

	// Shrink-wrapped: framed after the set-up, not on the fast path.
	check(t, e, frame(e.sym("shrink_ret"), rec, true, r7), ok)
	// On the fast path r7 and LR are untouched: a leaf step.
	check(t, e, frame(e.sym("shrink_fast"), entrySP, false, r7), want{pc: retAddr, sp: entrySP, r7: rec, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutLeaf})
	// Body code after "pop {r7, pc}", reached by beq.
	check(t, e, frame(e.sym("midret_ret2"), rec, true, r7), ok)
	// A TBB case block.
	e.put(entrySP-16, 0x44)
	e.put(entrySP-12, 0x66)
	check(t, e, frame(e.sym("switcher_case1_ret"), entrySP-16, true, map[unwinders.Reg]uint32{unwinders.R7: rec}),
		want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceHigh, regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R6: 0x66}})
	// r7 advanced in a loop: its offset is not known after the loop.
	check(t, e, frame(e.sym("r7loop_ret"), rec, true, r7), want{err: framepointer.ErrNotSetUp})
	// No frame pointer, and r7 pushed but used for data.
	check(t, e, frame(e.sym("no_fp_ret"), entrySP-8, true, r7), want{err: framepointer.ErrNoFramePointer})
	check(t, e, frame(e.sym("r7data_ret"), entrySP-20, true, r7), want{err: framepointer.ErrNoFramePointer})
}

// TestAPCS: ARM-state mov ip, sp; push {r4, r5, fp, ip, lr, pc}; sub fp,
// ip, #4: fp = entry-4 points at the saved pc.
func TestAPCS(t *testing.T) {
	e := newEnv(t)
	fp := uint32(entrySP - 4)
	const callerFP = 0x20003F80
	const armRet = 0x2000                                                       // an ARM return address: bit 0 clear
	for i, v := range []uint32{0x44, 0x55, callerFP, entrySP, armRet, 0xdead} { // r4 r5 fp ip lr pc from entry-24
		e.put(entrySP-24+4*uint32(i), v)
	}
	regs := map[unwinders.Reg]uint32{unwinders.R11: fp}
	ok := want{pc: armRet, sp: entrySP, r7: callerFP, fpReg: unwinders.R11, conf: unwinders.ConfidenceHigh, kind: framepointer.LayoutAPCS,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55}}
	check(t, e, frame(e.sym("apcs_frame_ret"), entrySP-40, true, regs), ok)
	check(t, e, frame(e.sym("apcs_frame_ret2"), entrySP-40, true, regs), ok) // past a conditional return
	check(t, e, frame(e.sym("apcs_frame_body"), entrySP-24, false, regs), ok)
	start := e.sym("apcs_frame")
	for _, pc := range []uint32{start, start + 4, start + 8} {
		check(t, e, frame(pc, entrySP, false, regs), want{err: framepointer.ErrNotSetUp})
	}
	check(t, e, frame(e.sym("apcs_none_ret"), entrySP-8, true, regs), want{err: framepointer.ErrNoFramePointer})
	// The saved sp must be fp+4.
	e.put(entrySP-12, entrySP+8)
	check(t, e, frame(e.sym("apcs_frame_ret"), entrySP-40, true, regs), want{err: framepointer.ErrBadChain})
}

// TestUndecodable: without symbols the clang layout is assumed for a
// return address (medium confidence), refused for an interrupted PC, and
// refused altogether with Options.Strict.
func TestUndecodable(t *testing.T) {
	e := newEnv(t)
	e.t.Prog = nil
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, retAddr)
	regs := map[unwinders.Reg]uint32{unwinders.R7: entrySP - 8}
	check(t, e, frame(e.sym("clang_simple_ret"), entrySP-8, true, regs), want{pc: retAddr, sp: entrySP, r7: callerR7, conf: unwinders.ConfidenceMedium})
	check(t, e, frame(e.sym("clang_simple_ret"), entrySP-8, false, regs), want{err: framepointer.ErrNotDecodable})
	strict := framepointer.NewWithOptions(framepointer.Options{Strict: true})
	if _, err := strict.Step(e.t, []unwinders.Frame{frame(e.sym("clang_simple_ret"), entrySP-8, true, regs)}); !errors.Is(err, framepointer.ErrNotDecodable) || !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("Strict: err = %v, want ErrNotDecodable, not applicable", err)
	}
	// The assumed layout demands a chain going up and a Thumb LR.
	e.put(entrySP-8, entrySP-64)
	check(t, e, frame(e.sym("clang_simple_ret"), entrySP-8, true, regs), want{err: framepointer.ErrBadChain})
	e.put(entrySP-8, callerR7)
	e.put(entrySP-4, 0x1020)
	check(t, e, frame(e.sym("clang_simple_ret"), entrySP-8, true, regs), want{err: framepointer.ErrBadChain})
}

// TestAnalyze calls the uncached entry point directly.
func TestAnalyze(t *testing.T) {
	e := newEnv(t)
	fn, _ := e.elf.FuncAt(e.sym("gcc_frame"))
	l, err := framepointer.Analyze(e.t.Mem, fn, e.sym("gcc_frame_ret"), true)
	if err != nil {
		t.Fatal(err)
	}
	want := framepointer.Layout{Kind: framepointer.LayoutGCC, FP: unwinders.R7, CFA: 32, SavedFP: 24, LRSaved: true, SavedLR: 28, Proven: true}
	want.Saved[unwinders.R4], want.SavedMask = 20, 1<<unwinders.R4
	if l != want {
		t.Errorf("Analyze = %+v\nwant %+v", l, want)
	}
	if got := l.Kind.String(); got != "r7 + N -> {r7, lr}" {
		t.Errorf("Kind.String() = %q", got)
	}
}
