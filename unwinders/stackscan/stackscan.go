package stackscan

import (
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/unwinders"
)

// Name is the strategy's name and the Method of the frames it produces.
const Name = "stackscan"

// Defaults for Options.
const (
	// DefaultMaxBytes bounds one step's scan: 64 KiB above the frame's SP,
	// more than the whole RAM of most Cortex-M parts.
	DefaultMaxBytes = 64 << 10
	// DefaultLookahead is how far past the first unverified candidate a
	// step keeps looking for a verified one (see Unwinder.Step).
	DefaultLookahead = 4 << 10
)

// Errors Step wraps (with unwinders.ErrNotApplicable, so that the next
// strategy of the chain tries).
var (
	// ErrNoCandidate: no word between SP and the top of the stack is a
	// return address.
	ErrNoCandidate = errors.New("no return address on the stack")
	// ErrEmptyStack: SP is at (or above) the top of the stack.
	ErrEmptyStack = errors.New("nothing above SP to scan")
	// ErrInLR: the frame's return address is provably still in LR (its PC
	// is at a function's entry, or in no function at all); the stack holds
	// only older return addresses, and unwinders.LinkRegister takes the
	// frame with high confidence.
	ErrInLR = errors.New("the return address is still in LR")
	// ErrNoFrame: there is no frame to unwind, or it is an exception
	// pseudo-frame (the walk steps those).
	ErrNoFrame = errors.New("no frame to unwind")
)

// StepError is the error Step returns: Reason says why in words; it
// unwraps to unwinders.ErrNotApplicable, to one of the package's errors and,
// when the stack could not be read at SP, to the read error (which wraps
// unwinders.ErrUnmapped).
type StepError struct {
	Reason string
	Err    error
	Read   error
}

func (e *StepError) Error() string { return "stackscan: " + e.Reason }

// Unwrap returns unwinders.ErrNotApplicable, the package error and the read
// error.
func (e *StepError) Unwrap() []error {
	errs := []error{unwinders.ErrNotApplicable, e.Err}
	if e.Read != nil {
		errs = append(errs, e.Read)
	}
	return errs
}

func declined(err error, format string, args ...any) *StepError {
	return &StepError{Reason: fmt.Sprintf(format, args...), Err: err}
}

// Options bound and tune the scan. The zero value gives the defaults.
type Options struct {
	// MaxBytes bounds how far above a frame's SP one step reads: 0 means
	// DefaultMaxBytes. The stack's top bounds it further.
	MaxBytes uint32
	// Lookahead is how many bytes past the first unverified candidate a
	// step keeps looking for a verified one: 0 means DefaultLookahead, a
	// negative value takes the first candidate whatever it is.
	Lookahead int
}

// Unwinder is the stack-scanning strategy. It keeps no state between
// steps and is safe for concurrent use.
type Unwinder struct {
	maxBytes  uint64
	lookahead uint64
}

// New returns an Unwinder with the given options.
func New(opt Options) *Unwinder {
	u := &Unwinder{maxBytes: DefaultMaxBytes, lookahead: DefaultLookahead}
	if opt.MaxBytes > 0 {
		u.maxBytes = uint64(opt.MaxBytes)
	}
	switch {
	case opt.Lookahead < 0:
		u.lookahead = 0
	case opt.Lookahead > 0:
		u.lookahead = uint64(opt.Lookahead)
	}
	return u
}

// Name implements unwinders.Unwinder.
func (u *Unwinder) Name() string { return Name }

// stackSymbols are the linker symbols that commonly mark the top of the
// main stack (GNU ld scripts of ST, NXP, Nordic, CMSIS, Arm Compiler).
var stackSymbols = [...]string{"_estack", "__StackTop", "__stack", "_stack_top", "__initial_sp", "__stack_end__", "_stack_end"}

// StackTop returns the address one past the highest stack word a scan from
// sp may read, and what it was taken from: the range of t.ProcessStack or
// t.Stack that holds sp, else the lowest of the stackSymbols above sp, else
// the end of the address space (the scan then ends at the first unmapped
// word). The result is not yet bounded by Options.MaxBytes.
func StackTop(t *unwinders.Target, sp uint32) (uint64, string) {
	for _, r := range []struct {
		name string
		r    unwinders.Range
	}{{"the process stack", t.ProcessStack}, {"the main stack", t.Stack}} {
		if r.r.Valid() && sp >= r.r.Lo && sp <= r.r.Hi {
			return uint64(r.r.Hi), fmt.Sprintf("top of %s 0x%08x", r.name, r.r.Hi)
		}
	}
	if t.Prog != nil {
		best, name := uint64(1<<32), ""
		for _, s := range stackSymbols {
			if v, ok := t.Prog.Symbol(s); ok && v > sp && uint64(v) < best {
				best, name = uint64(v), s
			}
		}
		if name != "" {
			return best, fmt.Sprintf("%s = 0x%08x", name, best)
		}
	}
	return 1 << 32, "end of mapped memory"
}

// Step implements unwinders.Unwinder: it returns the caller of the last
// frame from a return address found on the stack.
//
// Which frames it takes. A frame whose PC was interrupted rather than
// calling (frame 0, the frame after an exception frame) still has its
// return address in LR while its function has not saved and reused LR.
// Where that is provable (PC at a function's entry, or in no function at
// all while LR follows a call) Step declines with ErrInLR and leaves the frame to
// unwinders.LinkRegister, which must follow it in the chain. Where LR holds
// an EXC_RETURN value (the frame is an exception handler), only the saved
// copy of that same value on the stack is accepted: any other word between
// SP and it belongs to the handler or to its exception frame. Where LR holds
// a return address verified as below (a call of exactly this function), LR
// is the return address: its saved copy, when it is the first candidate on
// the stack, gives the caller's SP; otherwise the function is a leaf that
// never saved LR and the caller's SP is the frame's own (a lower bound).
//
// Choosing among candidates. Scanning up from SP, the first candidate is
// usually the frame's saved return address, but the classic false frame is
// a stale return address below it: uninitialised locals, padding and
// callee-saved slots of the callee's frame still hold what earlier, deeper
// calls left there. Such a stale word returns from a call of some other
// function, so it is not verified; the real return address of a direct
// call is. Step therefore takes the first verified candidate when one lies
// within Options.Lookahead bytes of the first unverified one, and the first
// unverified candidate otherwise. The lookahead is bounded because a frame
// called through a pointer (BLX) or reached by a tail call has an
// unverified return address of its own: looking further would skip it (and
// its callers) to reach a verified word of an outer frame, which exists
// only if the same function is also called directly further out (or a
// stale word of such a call survives there). An EXC_RETURN or 0xFFFFFFFF
// candidate also ends the lookahead (what lies beyond belongs to other
// code); it is taken when no unverified return address came before it.
// An unverified return address that repeats an earlier frame's is a cycle
// and is skipped (verified recursion is kept).
//
// Measured on the QEMU+GDB oracle fixtures (see fixtures_test.go): their
// stacks are clean, and every policy finds all 149 chains exactly. With a
// stale return address planted below every saved one, taking the first
// candidate finds 8 of 149 chains; preferring a verified one finds 120
// with a 64-byte lookahead, 128 with 1 or 2 KiB (one scenario keeps more
// than 2 KiB of locals below its saved LR) and all 149 from 4 KiB, the
// default.
//
// The frame returned. PC is the raw word (Thumb bit set, or an EXC_RETURN
// value, which the walk unstacks; or 0xFFFFFFFF, which ends the walk). SP
// is the slot's address + 4: the caller's SP once the word is popped. That
// is exact for a function that pushes LR last (PUSH {..., lr}, the common
// prologue) and an approximation otherwise: a callee that saved more
// registers above LR or reserved space above it leaves the caller's SP a
// few words higher; the next scan starts from this lower SP, which is
// harmless for scanning but means SP must not be used to read the caller's
// locals. For an EXC_RETURN value the slot + 4 is where the hardware frame
// starts: the handler's PUSH {..., lr} put the saved LR in the highest
// word of its save area, immediately below the frame the core stacked on
// entry (checked on the irq_crash fixtures, where the IRQ handler's saved
// 0xFFFFFFF9 sits right below the frame the walk then unstacks). Regs knows
// only PC and SP, plus the banked stack pointers: the one equal to the
// callee's SP moves with it, the other (PSP while a handler runs) is
// carried over unchanged, which the walk needs to unstack a frame on the
// process stack. Kind is KindNormal with ConfidenceMedium for a verified
// candidate, KindGuessed with ConfidenceLow otherwise; Note says where the
// word was and what was checked.
//
// Errors: a *StepError wrapping unwinders.ErrNotApplicable and ErrNoFrame,
// ErrInLR, ErrEmptyStack or ErrNoCandidate; when the stack at SP is not in
// the dump it also wraps the read error (unwinders.ErrUnmapped).
//
// Cost: at most Options.MaxBytes/4 words per step, each a few map or
// binary-search lookups in the Program and one or two reads of code.
func (u *Unwinder) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	if len(frames) == 0 {
		return unwinders.Frame{}, declined(ErrNoFrame, "no frame to unwind")
	}
	cur := &frames[len(frames)-1]
	if cur.Kind == unwinders.KindException {
		return unwinders.Frame{}, declined(ErrNoFrame, "exception pseudo-frames are stepped by the walk")
	}
	c := newClassifier(t, frames)

	// The frame's own LR, when the frame was interrupted.
	var lrCand *Candidate
	onlyExc, hasOnlyExc := uint32(0), false
	if lr, ok := cur.Regs.Get(unwinders.LR); ok && !cur.ReturnAddress {
		switch {
		case c.hasFn && c.callee.Start == cur.PC:
			return unwinders.Frame{}, declined(ErrInLR, "0x%08x is the entry of %s: %v", cur.PC, c.calleeName(), ErrInLR)
		case (t.Prog != nil && !c.hasFn || !t.IsCode(cur.PC)) && lrIsCall(t, lr):
			return unwinders.Frame{}, declined(ErrInLR, "0x%08x is in no function (a call through a bad pointer): %v", cur.PC, ErrInLR)
		case unwinders.LooksLikeExcReturn(lr):
			onlyExc, hasOnlyExc = lr, true
		default:
			if cand, ok := c.returnAddress(0, lr); ok && cand.Verified {
				lrCand = &cand
			}
		}
	}

	top, topWhy, err := u.bounds(t, cur.SP)
	if err != nil {
		return unwinders.Frame{}, err
	}
	var first *Candidate // the first unverified candidate
	var chosen *Candidate
	chosenSP := uint32(0)
	end := top
	w, scanned := u.scan(t, c, cur.SP, &end, func(cand Candidate) bool {
		if hasOnlyExc && cand.Value != onlyExc {
			return true
		}
		if lrCand != nil {
			// LR is the return address; the first candidate on the stack
			// tells whether the function saved it.
			if cand.Value == lrCand.Value {
				cand.Verified, cand.Why = true, lrCand.Why+"; LR's saved copy"
				chosen = &cand
			}
			return false
		}
		if cand.Kind == EndOfStack && !hasOnlyExc {
			if !cand.Verified {
				// Maybe the end of the stack, maybe a local holding -1:
				// weighed like an unverified return address.
				if first == nil {
					first = &cand
					end = min(end, uint64(cand.Slot)+4+u.lookahead)
				}
				return true
			}
			// The end of the stack: taken unless an unverified return
			// address came first; nothing beyond belongs to this thread.
			if first == nil {
				chosen = &cand
			}
			return false
		}
		if cand.Verified || hasOnlyExc {
			chosen = &cand
			return false
		}
		if cand.Kind != ReturnAddress {
			// An exception boundary or the end of the stack: what lies
			// beyond belongs to other code, never look past it.
			if first == nil {
				chosen = &cand
			}
			return false
		}
		if first == nil {
			first = &cand
			// Look for a verified candidate up to the lookahead.
			end = min(end, uint64(cand.Slot)+4+u.lookahead)
		}
		return true
	})
	switch {
	case chosen != nil:
		chosenSP = chosen.Slot + 4
	case lrCand != nil:
		chosen, chosenSP = lrCand, cur.SP
		chosen.Why += "; taken from LR, never saved (a leaf function)"
	case first != nil:
		chosen, chosenSP = first, first.Slot+4
	}
	if chosen == nil {
		if w.err != nil && scanned == 0 {
			e := declined(ErrNoCandidate, "stack at SP 0x%08x is not in the dump: %v", cur.SP, w.err)
			e.Read = w.err
			return unwinders.Frame{}, e
		}
		end := topWhy
		if w.err != nil {
			end = fmt.Sprintf("the first unmapped word 0x%08x", uint32(w.hi))
		}
		what := "return address"
		if hasOnlyExc {
			what = fmt.Sprintf("saved copy of LR's 0x%08x", onlyExc)
		}
		return unwinders.Frame{}, declined(ErrNoCandidate, "no %s in %d words from SP 0x%08x to %s", what, scanned, cur.SP, end)
	}
	return u.frame(cur, chosen, chosenSP, chosen == lrCand), nil
}

// lrIsCall reports whether lr is a return address that follows a call
// (or an exception-return value): then a PC in no function was reached by
// that call. Otherwise the PC came from elsewhere (a corrupted return) and
// the stack is the better witness.
func lrIsCall(t *unwinders.Target, lr uint32) bool {
	if unwinders.LooksLikeExcReturn(lr) {
		return true
	}
	if lr&1 == 0 {
		return false
	}
	_, ok := unwinders.CallBefore(t.Mem, lr&^1)
	return ok
}

// newClassifier prepares the checks of one step from the last of frames.
func newClassifier(t *unwinders.Target, frames []unwinders.Frame) *classifier {
	cur := &frames[len(frames)-1]
	c := &classifier{t: t}
	if t.Prog != nil {
		c.callee, c.hasFn = t.Prog.FuncAt(cur.LookupPC())
	}
	c.psp, c.hasPSP = cur.Regs.Get(unwinders.PSP)
	for i := range frames {
		if frames[i].ReturnAddress {
			c.seen = append(c.seen, frames[i].PC&^1)
		}
	}
	return c
}

// bounds returns the end of the scan from sp (StackTop bounded by
// MaxBytes) and where it comes from, or ErrEmptyStack.
func (u *Unwinder) bounds(t *unwinders.Target, sp uint32) (uint64, string, error) {
	top, why := StackTop(t, sp)
	if lim := uint64(sp) + u.maxBytes; lim < top {
		top, why = lim, fmt.Sprintf("the scan limit of %d bytes", u.maxBytes)
	}
	if uint64(sp)+4 > top {
		return 0, "", declined(ErrEmptyStack, "SP 0x%08x is at %s: %v", sp, why, ErrEmptyStack)
	}
	return top, why, nil
}

// Candidates lists every candidate word from the last frame's SP up to the
// top of its stack (bounded by Options.MaxBytes), lowest first, classified
// against that frame exactly as Step classifies them, without choosing
// among them. It is meant for diagnostics ("faultline compare") and tests.
// Errors: ErrNoFrame, ErrEmptyStack, or the read error when the stack at
// SP is not in the dump (each in a *StepError).
func (u *Unwinder) Candidates(t *unwinders.Target, frames []unwinders.Frame) ([]Candidate, error) {
	if len(frames) == 0 {
		return nil, declined(ErrNoFrame, "no frame to unwind")
	}
	cur := &frames[len(frames)-1]
	top, _, err := u.bounds(t, cur.SP)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	w, scanned := u.scan(t, newClassifier(t, frames), cur.SP, &top, func(c Candidate) bool {
		out = append(out, c)
		return true
	})
	if scanned == 0 && w.err != nil {
		e := declined(ErrNoCandidate, "stack at SP 0x%08x is not in the dump: %v", cur.SP, w.err)
		e.Read = w.err
		return nil, e
	}
	return out, nil
}

// scan calls yield for every candidate from sp up to *end, lowest first,
// until yield returns false; yield may lower *end. It returns the window it
// read (whose err says whether an unmapped word ended the scan) and how many
// words it read.
func (u *Unwinder) scan(t *unwinders.Target, c *classifier, sp uint32, end *uint64, yield func(Candidate) bool) (*window, int) {
	w := newWindow(t.Mem, sp, *end)
	scanned := 0
	// The last word of the address space is never a candidate: the
	// caller's SP would wrap to 0.
	for a := w.lo; a+4 <= w.hi && a+4 <= *end && a+4 < 1<<32; a += 4 {
		v, ok := w.word(uint32(a))
		if !ok {
			break
		}
		scanned++
		cand, ok := c.classify(uint32(a), v, w.word)
		if !ok || !t.InStack(uint32(a)+4) {
			continue
		}
		if !yield(cand) {
			break
		}
	}
	return w, scanned
}

// frame builds the caller frame for a chosen candidate.
func (u *Unwinder) frame(cur *unwinders.Frame, c *Candidate, sp uint32, fromLR bool) unwinders.Frame {
	var regs unwinders.Registers
	regs.Set(unwinders.SP, sp)
	regs.Set(unwinders.PC, c.Value)
	for _, b := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := cur.Regs.Get(b); ok {
			if v == cur.SP {
				v = sp
			}
			regs.Set(b, v)
		}
	}
	f := unwinders.Frame{PC: c.Value, SP: sp, Regs: regs, Method: Name, Kind: unwinders.KindNormal, Confidence: unwinders.ConfidenceMedium}
	if !c.Verified {
		f.Kind, f.Confidence = unwinders.KindGuessed, unwinders.ConfidenceLow
	}
	if fromLR {
		f.Note = c.Why
	} else {
		f.Note = fmt.Sprintf("stack word 0x%08x: %s", c.Slot, c.Why)
	}
	return f
}
