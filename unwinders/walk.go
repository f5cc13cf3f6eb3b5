package unwinders

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotApplicable is returned by an Unwinder's Step when it has no
// evidence for the frame (no table entry, no frame pointer, a refused EHABI
// entry): the walk then lets the next strategy try. Wrap it to say why.
var ErrNotApplicable = errors.New("not applicable")

// Unwinder is one unwinding strategy. Step computes the caller of frame f.
// The returned frame's PC is the raw return address as found (for example
// LR or a word from the stack, Thumb bit and all); the walk recognises
// EXC_RETURN and FNC_RETURN values in it and steps through the exception
// frame with shared code, so strategies never unstack exception frames
// themselves. The returned frame's SP is the caller's stack pointer; Regs the
// registers the strategy could recover (caller-saved registers unknown).
//
// frames holds the frames found so far, innermost first, ending with f; a
// whole-stack strategy (stack scanning) may use them.
type Unwinder interface {
	Name() string
	Step(t *Target, frames []Frame) (Frame, error)
}

// StopKind classifies why a walk ended.
type StopKind uint8

const (
	StopNone         StopKind = iota
	StopReset                 // reached the reset handler: the whole chain was found
	StopEndOfStack            // a return address of 0xFFFFFFFF (LR's reset value)
	StopLockup                // a lockup PC
	StopNoUnwinder            // no strategy could unwind the frame
	StopPCNotCode             // the caller's PC is not in code
	StopNotACall              // the return address does not follow a call instruction
	StopSPDecreasing          // the caller's SP is below the callee's
	StopSPOutOfStack          // the caller's SP is outside the stack
	StopNoProgress            // the caller equals the callee
	StopDepth                 // the frame limit was reached
	StopBadException          // an exception frame could not be read or is invalid
	StopUnknownPC             // the PC of the first frame is not known
	StopMemory                // memory needed to unwind is not in the dump
	StopLoop                  // the same return address repeats without a call that explains it
	StopGaps                  // too many return addresses whose calls lead elsewhere
	// StopEndUnverified: a return address of 0xFFFFFFFF found where
	// nothing confirms it is the end of the stack (stack scanning on a
	// stack whose top is unknown): it may be a local holding -1.
	StopEndUnverified
)

func (k StopKind) String() string {
	switch k {
	case StopReset:
		return "reached the reset handler"
	case StopEndOfStack:
		return "reached the end of the stack"
	case StopLockup:
		return "the core locked up"
	case StopNoUnwinder:
		return "no strategy could unwind further"
	case StopPCNotCode:
		return "return address is not in code"
	case StopNotACall:
		return "return address does not follow a call"
	case StopSPDecreasing:
		return "stack pointer went down"
	case StopSPOutOfStack:
		return "stack pointer left the stack"
	case StopNoProgress:
		return "no progress"
	case StopDepth:
		return "frame limit reached"
	case StopBadException:
		return "bad exception frame"
	case StopUnknownPC:
		return "PC unknown"
	case StopMemory:
		return "memory not in the dump"
	case StopLoop:
		return "the same return address repeats"
	case StopGaps:
		return "too many gaps"
	case StopEndUnverified:
		return "0xFFFFFFFF on the stack, unverified as its end"
	}
	return "stopped"
}

// Stop says why a walk ended.
type Stop struct {
	Kind   StopKind
	Detail string // the specifics: addresses, the strategy that failed and why
}

func (s Stop) String() string {
	if s.Detail == "" {
		return s.Kind.String()
	}
	return s.Kind.String() + ": " + s.Detail
}

// Complete reports whether the walk found the whole chain (it ended at the
// reset handler or at the reset value of LR).
func (s Stop) Complete() bool { return s.Kind == StopReset || s.Kind == StopEndOfStack }

// Options tune a walk.
type Options struct {
	MaxFrames int // default 64
	// Frames, when it has capacity, is where the walk puts its frames
	// (from index 0; beyond its capacity the walk allocates as usual):
	// a caller walking many threads can hand each walk the unused end of
	// one allocation. Result.Frames then shares its memory.
	Frames []Frame
}

// Result is what a walk found: always the frames so far plus the reason it
// stopped, never nothing.
type Result struct {
	Frames []Frame
	Stop   Stop
}

// StartFrame builds frame 0 from a register file.
func StartFrame(regs Registers) (Frame, error) {
	pc, ok := regs.Get(PC)
	if !ok {
		return Frame{}, errors.New("the dump does not hold the PC")
	}
	sp, _ := regs.Get(SP)
	return Frame{PC: pc &^ 1, SP: sp, Regs: regs, Kind: KindNormal, Method: MethodRegisters, Confidence: ConfidenceHigh}, nil
}

// maxGaps bounds the gap frames of one walk: past it the stack evidently
// does not hold a call chain any more.
const maxGaps = 3

// Walk unwinds from regs using the strategies of chain in order, frame by
// frame: for each frame the first strategy whose step is applicable and
// passes validation wins, preferring an answer whose return address's call
// leads to the callee (CheckCall) over one whose call leads elsewhere.
// Exception frames are stepped by shared code. The walk applies the stop
// rules of cortex-m.md section 6 and always returns the frames found plus
// the reason it stopped.
//
// Where the call before a return address does not lead to the callee's
// function (no tail-call chain either), a frame of KindGap stands before
// the caller, and no frame after a gap is more than medium confidence.
// The same return address found again right above itself with such a call
// (a stack full of one word) ends the walk with StopLoop.
func Walk(t *Target, regs Registers, chain []Unwinder, opt Options) Result {
	res := walk(t, regs, chain, opt)
	gap := false
	for i := range res.Frames {
		f := &res.Frames[i]
		if f.Kind == KindGap {
			gap = true
			continue
		}
		if gap && f.Confidence > ConfidenceMedium {
			f.Confidence = ConfidenceMedium
		}
	}
	return res
}

func walk(t *Target, regs Registers, chain []Unwinder, opt Options) Result {
	max := opt.MaxFrames
	if max <= 0 {
		max = 64
	}
	f0, err := StartFrame(regs)
	if err != nil {
		return Result{Stop: Stop{Kind: StopUnknownPC, Detail: err.Error()}}
	}
	if t.Profile == ProfileUnknown {
		t.Profile = V7M
	}
	// Most walks end within a handful of frames: room for them up front
	// spares growing (and copying) the slice frame by frame.
	buf := opt.Frames[:0]
	if cap(buf) == 0 {
		buf = make([]Frame, 0, min(max+1, 6))
	}
	res := Result{Frames: append(buf, f0)}
	gaps := 0
	// With the Security Extension: the banked stack pointer the
	// Non-secure (nsBank) and the Secure (sBank) frames of the walk run on,
	// once a transition has said (0: not known).
	var nsBank, sBank Reg
	if IsLockup(regs.Value(PC)) {
		return Result{Frames: res.Frames, Stop: Stop{Kind: StopLockup, Detail: fmt.Sprintf("PC is 0x%08x", regs.Value(PC))}}
	}
	if t.atReset(f0.PC) {
		res.Stop = Stop{Kind: StopReset}
		return res
	}
	for {
		if len(res.Frames) >= max {
			res.Stop = Stop{Kind: StopDepth, Detail: fmt.Sprintf("%d frames", max)}
			return res
		}
		cur := res.Frames[len(res.Frames)-1]
		caller, detail, stop := step(t, res.Frames, chain)
		if stop != nil {
			res.Stop = *stop
			return res
		}
		raw := caller.PC
		switch {
		case raw == ResetLR && caller.Kind == KindGuessed:
			res.Stop = Stop{Kind: StopEndUnverified, Detail: fmt.Sprintf("found by %s: %s", caller.Method, caller.Note)}
			return res
		case raw == ResetLR:
			res.Stop = Stop{Kind: StopEndOfStack, Detail: resetLRDetail(caller.Method)}
			return res
		case raw == FNCReturn0 || raw == FNCReturn1:
			if t.Profile != V8M {
				res.Stop = Stop{Kind: StopBadException, Detail: fmt.Sprintf("FNC_RETURN 0x%08x on %v", raw, t.Profile)}
				return res
			}
			// The return address is on a Secure stack (trustzone.go),
			// not on the Non-secure code's own.
			regs := cur.Regs
			carryBanked(&caller.Regs, &regs)
			ipsr, known := handlerIPSR(res.Frames)
			sp, bank, why := t.fncStack(&regs, known && ipsr != 0)
			if why != "" {
				res.Stop = Stop{Kind: StopBadException, Detail: why}
				return res
			}
			pseudo, next, err := UnstackFNC(t, &cur, raw, sp)
			if err != nil {
				res.Stop = Stop{Kind: StopBadException, Detail: strings.TrimPrefix(err.Error(), ErrBadExceptionFrame.Error()+": ")}
				return res
			}
			pseudo.Exception.Stack = bankName(bank)
			carryBanked(&regs, &next.Regs)
			next.Regs.Set(bank, next.SP)
			sBank = bank
			if nsBank != 0 {
				// Where the Non-secure code's stack was when it returned.
				next.Regs.Set(nsBank, caller.SP)
			}
			res.Frames = append(res.Frames, pseudo)
			if s := t.checkCaller(&pseudo, &next); s != nil {
				res.Stop = *s
				return res
			}
			res.Frames = append(res.Frames, next)
		case LooksLikeExcReturn(raw):
			exc := ExcReturn(raw)
			if !exc.Valid(t.Profile) {
				res.Stop = Stop{Kind: StopBadException, Detail: fmt.Sprintf("0x%08x is not a valid EXC_RETURN on %v", raw, t.Profile)}
				return res
			}
			if !exc.ToThread() && exc.UsesPSP() {
				// Handler mode always runs on the main stack: exception
				// entry from it never stacks on a process stack.
				res.Stop = Stop{Kind: StopBadException, Detail: fmt.Sprintf("0x%08x says Handler mode on the process stack, but Handler mode always runs on MSP: the value is corrupt, and where the frame is is unknown", raw)}
				return res
			}
			// The registers at the handler's exception return are those the
			// step recovered for the "caller" (the callee-saved registers the
			// handler restores before returning), not the handler's own.
			// The banked stack pointers carry over when the step did not
			// track them: handler code does not move PSP.
			h := cur
			h.Regs = caller.Regs
			for _, reg := range []Reg{PSP, MSP, XPSR} { // IPSR: the handler's exception
				if v, ok := cur.Regs.Get(reg); ok && !h.Regs.Known(reg) {
					h.Regs.Set(reg, v)
				}
			}
			carryBanked(&cur.Regs, &h.Regs)
			// A call cannot change IPSR: when the handler's frame lost the
			// xPSR to a call step, its exception number is that of the
			// nearest frame of the same activation that knows it (frame 0,
			// or the frame an earlier exception frame restored). Only the
			// exception number is carried; the flags stay unknown.
			carried := false
			if !h.Regs.Known(XPSR) {
				if ipsr, ok := handlerIPSR(res.Frames); ok {
					h.Regs.Set(XPSR, ipsr)
					carried = true
				}
			}
			// The live S0-S15 and FPSCR (frame 0's): Unstack takes them
			// for the interrupted code only where FPCCR and FPCAR prove
			// lazy FP stacking still pending for this frame (no FP
			// instruction ran since its entry).
			var liveFP uint32 // bit i+1: S(i) carried; bit 0: FPSCR
			if len(res.Frames) > 0 {
				for i := -1; i < 16; i++ {
					reg := FPSCR
					if i >= 0 {
						reg = S(i)
					}
					if v, ok := res.Frames[0].Regs.Get(reg); ok && !h.Regs.Known(reg) {
						h.Regs.Set(reg, v)
						liveFP |= 1 << (i + 1)
					}
				}
			}
			pseudo, next, err := Unstack(t, &h, exc, caller.SP)
			if carried {
				pseudo.Regs.Forget(XPSR)
			}
			for i := -1; liveFP != 0 && i < 16; i++ {
				if liveFP&(1<<(i+1)) != 0 {
					reg := FPSCR
					if i >= 0 {
						reg = S(i)
					}
					pseudo.Regs.Forget(reg)
				}
			}
			if err != nil {
				kind := StopBadException
				if errors.Is(err, ErrUnmapped) {
					kind = StopMemory
				}
				res.Stop = Stop{Kind: kind, Detail: strings.TrimPrefix(err.Error(), ErrBadExceptionFrame.Error()+": ")}
				return res
			}
			pseudo.Confidence = min(pseudo.Confidence, caller.Confidence)
			if caller.Method == MethodLR && caller.Note != "" {
				// Why LR locates the exception frame (a handler that ran
				// nothing): said on the handler's frame.
				last := &res.Frames[len(res.Frames)-1]
				last.Note = joinNote(last.Note, caller.Note)
			}
			next.Confidence = min(next.Confidence, caller.Confidence)
			if t.StackingFailed && len(res.Frames) <= 2 {
				next.Confidence = ConfidenceLow
				next.Note = joinNote(next.Note, "exception stacking failed (STKERR/MSTKERR): this frame may be incomplete")
			}
			res.Frames = append(res.Frames, pseudo, next)
			if withSecurityExt(t.Profile, exc) {
				if exc&excSecure == 0 {
					nsBank = bankedSP(false, exc.UsesPSP())
				} else {
					sBank = bankedSP(true, exc.UsesPSP())
				}
			}
			if !t.InStack(next.SP) {
				res.Stop = Stop{Kind: StopSPOutOfStack, Detail: fmt.Sprintf("SP 0x%08x after the exception frame is outside the stack", next.SP)}
				return res
			}
		case IsLockup(raw):
			res.Stop = Stop{Kind: StopLockup, Detail: fmt.Sprintf("return address 0x%08x", raw)}
			return res
		default:
			carryBanked(&cur.Regs, &caller.Regs)
			if t.secureEntryReturn(&cur, raw) {
				// A CMSE entry function returns to its Non-secure
				// caller, whose SP is the Non-secure stack's.
				ipsr, known := handlerIPSR(res.Frames)
				bank, why := nsCallerStack(&caller.Regs, known && ipsr != 0)
				v, ok := caller.Regs.Get(bank)
				if why == "" && !ok {
					why = bankName(bank) + " is not in the dump"
				}
				if why != "" {
					res.Stop = Stop{Kind: StopBadException, Detail: fmt.Sprintf("return to Non-secure code at 0x%08x: %s", raw, why)}
					return res
				}
				if sBank != 0 {
					caller.Regs.Set(sBank, caller.SP)
				}
				caller.SP = v
				nsBank = bank
				caller.Note = joinNote(caller.Note, fmt.Sprintf("returned from the Secure entry function to Non-secure code: SP from %s", bankName(bank)))
			}
			caller.PC = raw &^ 1
			caller.ReturnAddress = true
			caller.Regs.Set(PC, caller.PC)
			caller.Regs.Set(SP, caller.SP)
			if caller.Note != "" {
				// A strategy's note explains the step from the frame below
				// (its addresses may lie in that function): say so.
				caller.Note = fmt.Sprintf("unwound from %s: %s", t.frameLabel(&cur), caller.Note)
			}
			if caller.Call == CallMismatch {
				if cur.ReturnAddress && caller.PC == cur.PC {
					res.Stop = Stop{Kind: StopLoop, Detail: fmt.Sprintf("return address 0x%08x found again at SP 0x%08x above SP 0x%08x by %s; %s: the stack holds the same word over and over, not a call chain",
						caller.PC, caller.SP, cur.SP, caller.Method, detail)}
					return res
				}
				gaps++
				if gaps > maxGaps {
					res.Stop = Stop{Kind: StopGaps, Detail: fmt.Sprintf("%d return addresses in a row of this walk follow calls to other functions (the last: %s): the stack no longer holds a call chain", gaps, detail)}
					return res
				}
				res.Frames = append(res.Frames, Frame{
					SP: caller.SP, Kind: KindGap, Method: MethodCallCheck, Confidence: ConfidenceLow,
					Note: detail + ": frames are missing between them",
				})
				caller.Confidence = min(caller.Confidence, ConfidenceMedium)
			}
			res.Frames = append(res.Frames, caller)
		}
		if len(res.Frames) > max {
			res.Frames = res.Frames[:max]
			res.Stop = Stop{Kind: StopDepth, Detail: fmt.Sprintf("%d frames", max)}
			return res
		}
		last := &res.Frames[len(res.Frames)-1]
		if t.atReset(last.LookupPC()) {
			res.Stop = Stop{Kind: StopReset}
			return res
		}
	}
}

// handlerIPSR returns the exception number of the activation that frames
// ends in: the IPSR of its innermost frame that knows the xPSR, searching
// back over call frames (and gaps) to the previous exception frame.
func handlerIPSR(frames []Frame) (uint32, bool) {
	for i := len(frames) - 1; i >= 0; i-- {
		f := &frames[i]
		if f.Kind == KindException {
			return 0, false
		}
		if f.Kind == KindGap {
			continue
		}
		if ipsr, ok := f.Regs.IPSR(); ok {
			return ipsr, true
		}
	}
	return 0, false
}

// resetLRDetail is the stop detail of a walk that found the reset value of
// LR: every RTOS task's walk ends so, and the strategies are few, so the
// usual texts are constants rather than a string built per walk.
func resetLRDetail(method string) string {
	const prefix = "return address 0xFFFFFFFF (reset value of LR) found by "
	switch method {
	case "cfi":
		return prefix + "cfi"
	case "exidx":
		return prefix + "exidx"
	case "prologue":
		return prefix + "prologue"
	case "framepointer":
		return prefix + "framepointer"
	case "stackscan":
		return prefix + "stackscan"
	}
	return prefix + method
}

// step asks each strategy in turn for the caller of the last frame and
// validates the answer. It returns the accepted caller or the reason to
// stop. An answer whose return address follows a call to another function
// (CallMismatch) is kept only when no later strategy gives a valid answer
// without one; detail then says what the call targets.
func step(t *Target, frames []Frame, chain []Unwinder) (Frame, string, *Stop) {
	frames = withoutGaps(frames)
	cur := &frames[len(frames)-1]
	var first *Stop
	var reasons []string
	var fallback Frame // valid when haveFallback (a value: no frame escapes per step)
	var haveFallback bool
	var fallbackDetail string
	// uncaptured: the first strategy that needed memory the dump lacks,
	// said on the caller another strategy finds (a partial dump).
	var uncaptured string
	for _, u := range chain {
		caller, err := u.Step(t, frames)
		if err == ErrNotApplicable {
			continue // nothing to say: the strategy does not apply here at all
		}
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), u.Name()+": ")
			msg = strings.TrimPrefix(msg, ErrNotApplicable.Error()+": ")
			reasons = append(reasons, fmt.Sprintf("%s: %s", u.Name(), msg))
			if errors.Is(err, ErrUnmapped) && first == nil {
				first = &Stop{Kind: StopMemory, Detail: fmt.Sprintf("%s: %v", u.Name(), err)}
			}
			var ue *UnmappedError
			if uncaptured == "" && errors.As(err, &ue) {
				uncaptured = fmt.Sprintf("memory at 0x%08x not captured: %s could not unwind here", ue.Missing, u.Name())
			}
			continue
		}
		if uncaptured != "" {
			caller.Note = joinNote(uncaptured, caller.Note)
		}
		if caller.Method == "" {
			caller.Method = u.Name()
		}
		if caller.Confidence == 0 {
			caller.Confidence = ConfidenceMedium
		}
		if s := t.validate(cur, &caller); s != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %s", u.Name(), s))
			if first == nil || first.Kind == StopMemory {
				first = s
			}
			continue
		}
		if plainReturn(caller.PC) {
			var detail string
			caller.Call, detail = t.CheckCall(cur, caller.PC)
			if caller.Call == CallMismatch {
				if !haveFallback {
					fallback, fallbackDetail, haveFallback = caller, detail, true
				}
				continue
			}
		}
		return caller, "", nil
	}
	if haveFallback {
		return fallback, fallbackDetail, nil
	}
	if first != nil {
		if len(reasons) > 1 {
			first.Detail = joinReasons(reasons)
		}
		return Frame{}, "", first
	}
	detail := fmt.Sprintf("at 0x%08x", cur.PC)
	if len(reasons) > 0 {
		detail += ": " + joinReasons(reasons)
	}
	return Frame{}, "", &Stop{Kind: StopNoUnwinder, Detail: detail}
}

// withoutGaps returns frames without its gap frames (a strategy sees only
// frames with registers); frames itself when it has none.
func withoutGaps(frames []Frame) []Frame {
	n := 0
	for i := range frames {
		if frames[i].Kind == KindGap {
			n++
		}
	}
	if n == 0 {
		return frames
	}
	out := make([]Frame, 0, len(frames)-n)
	for _, f := range frames {
		if f.Kind != KindGap {
			out = append(out, f)
		}
	}
	return out
}

// plainReturn reports whether a raw caller PC is an ordinary return address
// (not EXC_RETURN, FNC_RETURN, a lockup or the reset value of LR).
func plainReturn(raw uint32) bool {
	return raw != ResetLR && !IsLockup(raw) && !LooksLikeExcReturn(raw) && raw != FNCReturn0 && raw != FNCReturn1
}

func joinReasons(r []string) string {
	s := ""
	for i, x := range r {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}

// validate applies the per-step checks of cortex-m.md 6.5 to a proposed
// caller whose PC is still raw.
func (t *Target) validate(cur, caller *Frame) *Stop {
	raw := caller.PC
	if raw == ResetLR || IsLockup(raw) || LooksLikeExcReturn(raw) || raw == FNCReturn0 || raw == FNCReturn1 {
		// Exception returns keep the handler's SP (the frame sits there);
		// a frame on the process stack is at PSP, which is not ordered
		// with the main stack.
		psp := LooksLikeExcReturn(raw) && ExcReturn(raw).UsesPSP()
		if caller.SP < cur.SP && cur.Kind != KindException && !psp {
			return &Stop{Kind: StopSPDecreasing, Detail: fmt.Sprintf("0x%08x -> 0x%08x", cur.SP, caller.SP)}
		}
		return nil
	}
	pc := raw &^ 1
	if caller.SP < cur.SP {
		return &Stop{Kind: StopSPDecreasing, Detail: fmt.Sprintf("0x%08x -> 0x%08x", cur.SP, caller.SP)}
	}
	if !t.InStack(caller.SP) {
		return &Stop{Kind: StopSPOutOfStack, Detail: fmt.Sprintf("SP 0x%08x", caller.SP)}
	}
	if pc == cur.PC && caller.SP == cur.SP {
		return &Stop{Kind: StopNoProgress, Detail: fmt.Sprintf("PC 0x%08x SP 0x%08x", pc, caller.SP)}
	}
	if pc < 2 || !t.IsCode(pc-2) {
		return &Stop{Kind: StopPCNotCode, Detail: fmt.Sprintf("0x%08x", raw)}
	}
	if raw&1 == 0 && !t.secureEntryReturn(cur, raw) {
		return &Stop{Kind: StopNotACall, Detail: fmt.Sprintf("return address 0x%08x has the Thumb bit clear", raw)}
	}
	if _, ok := CallBefore(t.Mem, pc); !ok {
		if _, err := ReadU16(t.Mem, pc-2); err != nil {
			// Code not in the image: cannot verify, do not claim certainty.
			caller.Confidence = min(caller.Confidence, ConfidenceMedium)
			return nil
		}
		return &Stop{Kind: StopNotACall, Detail: fmt.Sprintf("no BL/BLX before 0x%08x", pc)}
	}
	return nil
}

// checkCaller applies the SP and code checks to the frame after an
// FNC_RETURN frame.
func (t *Target) checkCaller(cur, next *Frame) *Stop {
	if !t.InStack(next.SP) {
		return &Stop{Kind: StopSPOutOfStack, Detail: fmt.Sprintf("SP 0x%08x", next.SP)}
	}
	if !t.IsCode(next.PC) {
		return &Stop{Kind: StopPCNotCode, Detail: fmt.Sprintf("0x%08x", next.PC)}
	}
	return nil
}

// atReset reports whether pc lies in the reset handler.
func (t *Target) atReset(pc uint32) bool {
	if t.ResetHandler == 0 {
		return false
	}
	if t.Prog != nil {
		if fn, ok := t.Prog.FuncAt(pc); ok {
			return fn.Start == t.ResetHandler&^1
		}
	}
	return pc == t.ResetHandler&^1
}

// frameLabel names a frame's function and PC for notes: "f (0x000001b2)".
func (t *Target) frameLabel(f *Frame) string {
	if t.Prog != nil {
		if fn, ok := t.Prog.FuncAt(f.LookupPC()); ok && fn.Name != "" {
			return fmt.Sprintf("%s at 0x%08x", fn.Name, f.PC)
		}
	}
	return fmt.Sprintf("0x%08x", f.PC)
}
