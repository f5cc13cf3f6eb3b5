package stackscan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/stackscan"
)

const sp0 = stackTop - 0x100 // frame 0's SP in most tests

func step(t *testing.T, s *synth, opt stackscan.Options, frames ...unwinders.Frame) (unwinders.Frame, error) {
	t.Helper()
	return stackscan.New(opt).Step(s.target(), frames)
}

func mustStep(t *testing.T, s *synth, opt stackscan.Options, frames ...unwinders.Frame) unwinders.Frame {
	t.Helper()
	f, err := step(t, s, opt, frames...)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return f
}

func checkFrame(t *testing.T, f unwinders.Frame, pc, sp uint32, conf unwinders.Confidence) {
	t.Helper()
	if f.PC != pc || f.SP != sp || f.Confidence != conf || f.Method != stackscan.Name {
		t.Fatalf("got PC 0x%08x SP 0x%08x %v %s (%s), want PC 0x%08x SP 0x%08x %v stackscan", f.PC, f.SP, f.Confidence, f.Method, f.Note, pc, sp, conf)
	}
	wantKind := unwinders.KindNormal
	if conf == unwinders.ConfidenceLow {
		wantKind = unwinders.KindGuessed
	}
	if f.Kind != wantKind {
		t.Fatalf("kind %v, want %v", f.Kind, wantKind)
	}
	if v, ok := f.Regs.Get(unwinders.SP); !ok || v != sp {
		t.Fatalf("Regs SP %#x %v", v, ok)
	}
	for _, r := range []unwinders.Reg{unwinders.R4, unwinders.R7, unwinders.LR, unwinders.R0} {
		if f.Regs.Known(r) {
			t.Fatalf("%v should be unknown", r)
		}
	}
}

func TestVerifiedReturnAddress(t *testing.T) {
	s := newSynth()
	s.stack(sp0, 0x12345678, 0x20000010, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, sp0+12, unwinders.ConfidenceMedium)
	if !strings.Contains(f.Note, "0x20000f08") || !strings.Contains(f.Note, "BL g") {
		t.Errorf("note %q", f.Note)
	}
}

// A stale return address below the real one: preferred away when a
// verified candidate follows within the lookahead, taken with Lookahead < 0.
func TestPreferVerified(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retMainBLXr3|1, retMainBLf|1, 0, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, sp0+16, unwinders.ConfidenceMedium)

	f = mustStep(t, s, stackscan.Options{Lookahead: -1}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retMainBLXr3|1, sp0+4, unwinders.ConfidenceLow)
	if !strings.Contains(f.Note, "BLX r3") {
		t.Errorf("note %q", f.Note)
	}
}

// The lookahead is bounded: a function called through a pointer has an
// unverified return address, and a verified word of an outer frame far
// above must not win.
func TestLookaheadBound(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retMainBLXr3|1)
	s.stack(sp0+64, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{Lookahead: 32}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retMainBLXr3|1, sp0+4, unwinders.ConfidenceLow)
	f = mustStep(t, s, stackscan.Options{Lookahead: 128}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, sp0+68, unwinders.ConfidenceMedium)
}

// A BL to another function is unverified (a tail call or a stale word).
func TestMismatchedBL(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retMainBLf|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retMainBLf|1, sp0+4, unwinders.ConfidenceLow)
	if !strings.Contains(f.Note, "not the callee g") {
		t.Errorf("note %q", f.Note)
	}
}

func TestBXIsNotACall(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retMainBXr3|1, retMainBLf|1)
	u := stackscan.New(stackscan.Options{})
	cands, err := u.Candidates(s.target(), []unwinders.Frame{frame0(fnF+6, sp0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Value != retMainBLf|1 || !cands[0].Verified {
		t.Fatalf("candidates %+v", cands)
	}
	f := mustStep(t, s, stackscan.Options{}, frame0(fnF+6, sp0, 0))
	checkFrame(t, f, retMainBLf|1, sp0+8, unwinders.ConfidenceMedium)
}

// Even words, words into data, a return address with the Thumb bit clear,
// and the address right after a non-call are not candidates.
func TestNotCandidates(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retFBLg, 0x0800, 0x1001, fnG+5, 0x20000001, 0xFFFFFFF8, retFBLg|1)
	cands, err := stackscan.New(stackscan.Options{}).Candidates(s.target(), []unwinders.Frame{frame0(fnG+6, sp0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Slot != sp0+24 {
		t.Fatalf("candidates %+v", cands)
	}
}

func TestVeneer(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retKBLveneer|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retKBLveneer|1, sp0+4, unwinders.ConfidenceMedium)
	if !strings.Contains(f.Note, "veneer") {
		t.Errorf("note %q", f.Note)
	}
}

// BL T1 over 10 MiB: J1/J2 are not both 1 (the mistake cortex-m.md 3
// warns about).
func TestFarBL(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retKBLfar|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnFar+6, sp0, 0))
	checkFrame(t, f, retKBLfar|1, sp0+4, unwinders.ConfidenceMedium)
}

// A call to a noreturn function as the last instruction: the return
// address is the next function's start; the call site is looked up.
func TestNoreturnCallAtFunctionEnd(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retKNoreturn|1)
	cands, err := stackscan.New(stackscan.Options{}).Candidates(s.target(), []unwinders.Frame{frame0(fnG+6, sp0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Func.Name != "k" || !cands[0].Verified {
		t.Fatalf("candidates %+v", cands)
	}
}

// An interrupted frame at its function's entry, or in no function, still
// has its return address in LR: left to unwinders.LinkRegister.
func TestDeclinesWhenLRHoldsIt(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retMainBLf|1)
	for _, pc := range []uint32{fnG, 0x0800} {
		_, err := step(t, s, stackscan.Options{}, frame0(pc, sp0, retFBLg|1))
		if !errors.Is(err, stackscan.ErrInLR) || !errors.Is(err, unwinders.ErrNotApplicable) {
			t.Errorf("PC 0x%x: %v", pc, err)
		}
	}
	// A PC in no function with an LR that follows no call came from a
	// corrupted return, not a call: the stack decides.
	f := mustStep(t, s, stackscan.Options{}, frame0(0x0800, sp0, retMainBXr3|1))
	checkFrame(t, f, retMainBLf|1, sp0+4, unwinders.ConfidenceLow)
}

// A verified LR: a leaf that never saved it (caller SP = the frame's SP),
// or a function that saved it (its copy on the stack gives the SP).
func TestVerifiedLR(t *testing.T) {
	s := newSynth()
	s.stack(sp0, 0, retMainBLf|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, retFBLg|1))
	checkFrame(t, f, retFBLg|1, sp0, unwinders.ConfidenceMedium)
	if !strings.Contains(f.Note, "leaf") {
		t.Errorf("note %q", f.Note)
	}
	s.stack(sp0, 0, retFBLg|1, retMainBLf|1)
	f = mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, retFBLg|1))
	checkFrame(t, f, retFBLg|1, sp0+8, unwinders.ConfidenceMedium)

	// An unverified LR (it returns from a call of another function: the
	// function called something since) is ignored: the stack decides.
	s.stack(sp0, 0, retMainBLf|1)
	f = mustStep(t, s, stackscan.Options{}, frame0(fnF+6, sp0, retFBLg|1))
	checkFrame(t, f, retMainBLf|1, sp0+8, unwinders.ConfidenceMedium)
}

// vectorFrame writes a basic exception frame at addr returning to pc in
// Thread mode (IPSR 0).
func (s *synth) vectorFrame(addr, pc, lr uint32) {
	s.stack(addr, 1, 2, 3, 4, 12, lr, pc, 0x01000000)
}

// An EXC_RETURN saved by a handler: the walk unstacks the frame at the
// slot + 4, right above the handler's saved registers.
func TestExcReturnOnStack(t *testing.T) {
	s := newSynth()
	// g (leaf, LR = return into h) <- h, which saved {r4, lr=EXC_RETURN}
	// <- exception frame interrupting main at 0x1044.
	s.stack(sp0, 0xAAAA, 0xFFFFFFF9)
	s.vectorFrame(sp0+8, fnMain+4, retResetBLmain|1)
	s.stack(sp0+8+32, 0xBBBB, retResetBLmain|1)
	tg := s.target()
	var r unwinders.Registers
	r.Set(unwinders.PC, fnG+6)
	r.Set(unwinders.SP, sp0)
	r.Set(unwinders.MSP, sp0)
	r.Set(unwinders.LR, retHBLg|1)
	r.Set(unwinders.PSP, 0x20000800)
	res := unwinders.Walk(tg, r, []unwinders.Unwinder{stackscan.New(stackscan.Options{}), unwinders.LinkRegister{}}, unwinders.Options{})
	if res.Stop.Kind != unwinders.StopReset {
		t.Fatalf("stop %v", res.Stop)
	}
	want := []struct {
		pc   uint32
		sp   uint32
		kind unwinders.Kind
		conf unwinders.Confidence
	}{
		{fnG + 6, sp0, unwinders.KindNormal, unwinders.ConfidenceHigh},
		{retHBLg, sp0, unwinders.KindNormal, unwinders.ConfidenceMedium}, // leaf g never saved LR
		{0xFFFFFFF9, sp0 + 8, unwinders.KindException, unwinders.ConfidenceMedium},
		{fnMain + 4, sp0 + 8 + 32, unwinders.KindNormal, unwinders.ConfidenceMedium},
		{retResetBLmain, sp0 + 8 + 32 + 8, unwinders.KindNormal, unwinders.ConfidenceMedium},
	}
	if len(res.Frames) != len(want) {
		for _, f := range res.Frames {
			t.Logf("%#x %#x %v %v %s", f.PC, f.SP, f.Kind, f.Confidence, f.Note)
		}
		t.Fatalf("%d frames, want %d", len(res.Frames), len(want))
	}
	for i, w := range want {
		f := res.Frames[i]
		if f.PC != w.pc || f.SP != w.sp || f.Kind != w.kind || f.Confidence != w.conf {
			t.Errorf("frame %d: %#x %#x %v %v, want %#x %#x %v %v", i, f.PC, f.SP, f.Kind, f.Confidence, w.pc, w.sp, w.kind, w.conf)
		}
	}
	if ex := res.Frames[2].Exception; ex == nil || ex.Base != sp0+8 {
		t.Errorf("exception frame %+v", ex)
	}
	// The PSP the handler frame carried reached the interrupted frame.
	if v, _ := res.Frames[3].Regs.Get(unwinders.PSP); v != 0x20000800 {
		t.Errorf("PSP 0x%x", v)
	}
}

// A handler frame whose LR still holds EXC_RETURN accepts only the saved
// copy of that value: the stacked LR and PC of its own exception frame, and
// anything else in between, are not its caller.
func TestHandlerLRExcReturn(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retFBLg|1, 0xFFFFFFF9)
	s.vectorFrame(sp0+8, fnMain+4, retMainBLf|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnH+8, sp0, 0xFFFFFFF9))
	checkFrame(t, f, 0xFFFFFFF9, sp0+8, unwinders.ConfidenceMedium)
	// Not saved at all: decline, do not guess.
	s.stack(sp0, retFBLg|1, 0)
	if _, err := step(t, s, stackscan.Options{}, frame0(fnH+8, sp0, 0xFFFFFFF9)); !errors.Is(err, stackscan.ErrNoCandidate) {
		t.Fatalf("got %v", err)
	}
}

// An EXC_RETURN word with no plausible frame above it is data.
func TestExcReturnNeedsAFrame(t *testing.T) {
	s := newSynth()
	s.stack(sp0, 0xFFFFFFF9)
	s.stack(sp0+4, 1, 2, 3, 4, 12, 0, fnMain+4, 0x01000003) // IPSR 3 but EXC_RETURN says Thread mode
	s.stack(sp0+36, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, sp0+40, unwinders.ConfidenceMedium)
	// Saved by a function that is not a vector handler: low.
	s.vectorFrame(sp0+4, fnMain+4, 0)
	f = mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, 0xFFFFFFF9, sp0+4, unwinders.ConfidenceLow)
}

// 0xFFFFFFFF ends the walk only on positive evidence: in the outermost
// frame below a known top of its stack. Where the top is unknown it is an
// unverified candidate: a verified return address above it wins, and
// alone it stops the walk as unverified, never as the end of the stack.
func TestEndOfStack(t *testing.T) {
	s := newSynth()
	s.stack(sp0, 7, 0xFFFFFFFF)
	chain := []unwinders.Unwinder{stackscan.New(stackscan.Options{})}
	tg := s.target()
	res := unwinders.Walk(tg, frame0(fnG+6, sp0, 0).Regs, chain, unwinders.Options{})
	if res.Stop.Kind != unwinders.StopEndUnverified || res.Stop.Complete() || len(res.Frames) != 1 {
		t.Fatalf("top unknown: stop %v, %d frames", res.Stop, len(res.Frames))
	}
	// The initial SP just above it: the main stack's outermost frame.
	tg.MainStackTop = sp0 + 16
	res = unwinders.Walk(tg, frame0(fnG+6, sp0, 0).Regs, chain, unwinders.Options{})
	if res.Stop.Kind != unwinders.StopEndOfStack || len(res.Frames) != 1 {
		t.Fatalf("near the main stack's top: stop %v, %d frames", res.Stop, len(res.Frames))
	}
	// Far below the initial SP it is a local holding -1: not a candidate.
	tg.MainStackTop = sp0 + 0x400
	s.stack(sp0, 7, 0xFFFFFFFF, 8, retFBLg|1)
	cands, err := stackscan.New(stackscan.Options{}).Candidates(tg, []unwinders.Frame{frame0(fnG+6, sp0, 0)})
	if err != nil || len(cands) == 0 || cands[0].Value != retFBLg|1 {
		t.Fatalf("deep below the initial SP: %v %+v", err, cands)
	}
	// A task's stack with a known top: the same rule.
	tg.MainStackTop = 0
	tg.ProcessStack = unwinders.Range{Lo: sp0 - 0x100, Hi: sp0 + 0x400}
	tg.ProcessStackTop = sp0 + 12
	res = unwinders.Walk(tg, frame0(fnG+6, sp0, 0).Regs, chain, unwinders.Options{})
	if res.Stop.Kind != unwinders.StopEndOfStack || len(res.Frames) != 1 {
		t.Fatalf("near the task stack's top: stop %v, %d frames", res.Stop, len(res.Frames))
	}
	// Deep in a stack whose top is unknown, with the real return address
	// above it: the verified return address wins (a large frame's local).
	tg.ProcessStackTop = 0
	res = unwinders.Walk(tg, frame0(fnG+6, sp0, 0).Regs, chain, unwinders.Options{MaxFrames: 2})
	if len(res.Frames) != 2 || res.Frames[1].PC != retFBLg || res.Stop.Kind == unwinders.StopEndOfStack {
		t.Fatalf("large frame: stop %v, frames %+v", res.Stop, res.Frames)
	}
	// A run of 0xFFFFFFFF is erased or painted memory, not a saved LR.
	s.stack(sp0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, sp0+16, unwinders.ConfidenceMedium)
}

func TestStackTop(t *testing.T) {
	s := newSynth()
	tg := s.target()
	if top, why := stackscan.StackTop(tg, sp0); top != stackTop || !strings.Contains(why, "main stack") {
		t.Errorf("main stack: 0x%x %q", top, why)
	}
	tg.ProcessStack = unwinders.Range{Lo: ramBase + 0x100, Hi: ramBase + 0x200}
	if top, why := stackscan.StackTop(tg, ramBase+0x180); top != ramBase+0x200 || !strings.Contains(why, "process stack") {
		t.Errorf("process stack: 0x%x %q", top, why)
	}
	tg.Stack, tg.ProcessStack = unwinders.Range{}, unwinders.Range{}
	s.prog.syms["__StackTop"] = stackTop - 0x40
	s.prog.syms["_estack"] = 0x10 // below SP: ignored
	if top, why := stackscan.StackTop(tg, sp0); top != stackTop-0x40 || !strings.Contains(why, "__StackTop") {
		t.Errorf("symbol: 0x%x %q", top, why)
	}
	delete(s.prog.syms, "__StackTop")
	if top, _ := stackscan.StackTop(tg, sp0); top != 1<<32 {
		t.Errorf("unbounded: 0x%x", top)
	}
	// With no bound, the end of RAM ends the scan.
	s.stack(stackTop-4, retFBLg|1)
	f := mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0, 0))
	checkFrame(t, f, retFBLg|1, stackTop, unwinders.ConfidenceMedium)
}

// The top of the stack bounds the scan: a word above it is never read.
func TestScanBounds(t *testing.T) {
	s := newSynth()
	s.stack(sp0+0x80, retFBLg|1)
	tg := s.target()
	tg.Stack.Hi = sp0 + 0x80
	_, err := stackscan.New(stackscan.Options{}).Step(tg, []unwinders.Frame{frame0(fnG+6, sp0, 0)})
	if !errors.Is(err, stackscan.ErrNoCandidate) || !strings.Contains(err.Error(), "32 words") {
		t.Fatalf("got %v", err)
	}
	_, err = step(t, s, stackscan.Options{MaxBytes: 0x40}, frame0(fnG+6, sp0, 0))
	if !errors.Is(err, stackscan.ErrNoCandidate) || !strings.Contains(err.Error(), "scan limit of 64 bytes") {
		t.Fatalf("got %v", err)
	}
}

func TestBankedStackPointers(t *testing.T) {
	s := newSynth()
	s.stack(sp0, retFBLg|1)
	cur := frame0(fnG+6, sp0, 0)
	cur.Regs.Set(unwinders.PSP, 0x20000400)
	f := mustStep(t, s, stackscan.Options{}, cur)
	if v, _ := f.Regs.Get(unwinders.MSP); v != sp0+4 {
		t.Errorf("MSP 0x%x, want the new SP", v)
	}
	if v, _ := f.Regs.Get(unwinders.PSP); v != 0x20000400 {
		t.Errorf("PSP 0x%x, want it carried over", v)
	}
}

func TestNoFrame(t *testing.T) {
	s := newSynth()
	if _, err := step(t, s, stackscan.Options{}); !errors.Is(err, stackscan.ErrNoFrame) {
		t.Errorf("no frames: %v", err)
	}
	ex := frame0(0xFFFFFFF9, sp0, 0)
	ex.Kind = unwinders.KindException
	if _, err := step(t, s, stackscan.Options{}, ex); !errors.Is(err, stackscan.ErrNoFrame) {
		t.Errorf("exception frame: %v", err)
	}
}
