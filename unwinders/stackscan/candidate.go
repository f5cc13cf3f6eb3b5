package stackscan

import (
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/unwinders"
)

// CandidateKind says what a candidate word is.
type CandidateKind uint8

const (
	// ReturnAddress is a Thumb return address that follows a BL or BLX Rm.
	ReturnAddress CandidateKind = iota + 1
	// ExceptionReturn is an EXC_RETURN value that a handler saved with its
	// LR; the walk unstacks the hardware frame above it.
	ExceptionReturn
	// EndOfStack is 0xFFFFFFFF, the reset value of LR saved by the
	// outermost function of a thread.
	EndOfStack
)

func (k CandidateKind) String() string {
	switch k {
	case ReturnAddress:
		return "return address"
	case ExceptionReturn:
		return "EXC_RETURN"
	case EndOfStack:
		return "end of stack"
	}
	return fmt.Sprintf("candidate(%d)", uint8(k))
}

// Candidate is one stack word that could be the callee's saved return
// address.
type Candidate struct {
	Slot  uint32 // address of the stack word
	Value uint32 // the word, Thumb bit and all
	Kind  CandidateKind
	// Call is the call instruction before a ReturnAddress.
	Call unwinders.CallSite
	// Func is the function the return address points into (ReturnAddress
	// only; zero without a Program).
	Func unwinders.Function
	// Verified is set when the candidate provably returns from a call of
	// the callee: a BL (or a veneer reached by BL) whose target is the
	// callee's start, or an EXC_RETURN saved by a vector-table handler.
	Verified bool
	// Why says in words what was checked ("BL to div0_average, the
	// callee", "BLX r3: the callee cannot be checked").
	Why string
}

// classifier decides which stack words are candidates for one step. It
// holds what every word of the step is checked against.
type classifier struct {
	t      *unwinders.Target
	callee unwinders.Function // the function holding the callee's PC
	hasFn  bool
	psp    uint32 // the callee frame's PSP, for EXC_RETURN frames on the process stack
	hasPSP bool
	vec    *vectorSet // lazily read vector table
	// seen holds the return addresses of the frames found so far: an
	// unverified candidate that repeats one of them is a cycle, not a
	// caller (verified recursion is kept).
	seen []uint32
}

// classify returns the candidate that the word w at slot makes, if any.
// read gives the stack words around slot (for the run check of
// 0xFFFFFFFF and for the exception frame above an EXC_RETURN); it may fail
// for words outside the scanned range.
func (c *classifier) classify(slot, w uint32, read func(uint32) (uint32, bool)) (Candidate, bool) {
	switch {
	case w == unwinders.ResetLR:
		return c.endOfStack(slot, read)
	case unwinders.LooksLikeExcReturn(w):
		return c.excReturn(slot, w)
	case w&1 == 1:
		return c.returnAddress(slot, w)
	}
	return Candidate{}, false
}

// returnAddress checks an odd word.
func (c *classifier) returnAddress(slot, w uint32) (Candidate, bool) {
	ret := w &^ 1
	if ret < 4 || unwinders.IsLockup(w) {
		return Candidate{}, false
	}
	// Look up the call site, not the return address: after a call to a
	// noreturn function the return address is the next function's start.
	at := ret - 2
	var fn unwinders.Function
	if c.t.Prog != nil {
		var ok bool
		fn, ok = c.t.Prog.FuncAt(at)
		if !ok || !fn.Thumb {
			return Candidate{}, false
		}
	}
	if !c.t.IsCode(at) {
		return Candidate{}, false
	}
	call, ok := unwinders.CallBefore(c.t.Mem, ret)
	if !ok || (call.Kind != unwinders.CallBL && call.Kind != unwinders.CallBLXr) {
		return Candidate{}, false
	}
	if c.t.Prog != nil && call.Addr < fn.Start {
		// The "call" straddles the function's start: data, not code.
		return Candidate{}, false
	}
	cand := Candidate{Slot: slot, Value: w, Kind: ReturnAddress, Call: call, Func: fn}
	switch {
	case call.Kind == unwinders.CallBLXr:
		cand.Why = fmt.Sprintf("BLX %v at 0x%08x: a call through a register, the callee cannot be checked", call.Rm, call.Addr)
	case !c.hasFn:
		cand.Why = fmt.Sprintf("BL 0x%08x at 0x%08x: the callee's PC is in no known function", call.Target, call.Addr)
	case call.Target == c.callee.Start:
		cand.Verified = true
		cand.Why = fmt.Sprintf("BL %s at 0x%08x: the callee", c.calleeName(), call.Addr)
	default:
		if dst, ok := veneerTarget(c.t.Mem, call.Target); ok && dst == c.callee.Start {
			cand.Verified = true
			cand.Why = fmt.Sprintf("BL 0x%08x at 0x%08x: a veneer to %s, the callee", call.Target, call.Addr, c.calleeName())
		} else {
			cand.Why = fmt.Sprintf("BL 0x%08x at 0x%08x, not the callee %s at 0x%08x (a tail call, or a stale return address)",
				call.Target, call.Addr, c.calleeName(), c.callee.Start)
		}
	}
	if !cand.Verified && slices.Contains(c.seen, ret) {
		return Candidate{}, false
	}
	return cand, true
}

func (c *classifier) calleeName() string {
	if c.callee.Name != "" {
		return c.callee.Name
	}
	return fmt.Sprintf("0x%08x", c.callee.Start)
}

// outermostFrameBytes bounds how far below the top of a stack the
// outermost function (the reset handler, entered with LR = 0xFFFFFFFF, or
// a thread's entry) saves LR: it pushes LR first, so the word sits in the
// highest few slots.
const outermostFrameBytes = 64

// endOfStack classifies 0xFFFFFFFF. A neighbour holding it too rules it
// out (a saved reset LR sits next to other saved registers; erased or
// painted memory is a run of the same word). It is the end of the stack
// only on positive evidence: within outermostFrameBytes of a known top of
// the stack that holds it (the main stack's initial SP from the vector
// table, Target.MainStackTop; a task's stack end, Target.ProcessStackTop):
// then it is verified. Deeper in the main stack below a known top it is a
// data word (a local holding -1) and no candidate. Where the stack's top
// is not known it may be either: an unverified candidate, which Step
// weighs like an unverified return address and the walk reports as such
// (unwinders.StopEndUnverified), never as the end of the stack.
func (c *classifier) endOfStack(slot uint32, read func(uint32) (uint32, bool)) (Candidate, bool) {
	for _, a := range []uint32{slot - 4, slot + 4} {
		if v, ok := read(a); ok && v == unwinders.ResetLR {
			return Candidate{}, false
		}
	}
	cand := Candidate{Slot: slot, Value: unwinders.ResetLR, Kind: EndOfStack}
	near := func(top uint32) bool { return slot < top && top-slot <= outermostFrameBytes }
	switch {
	case c.t.ProcessStackTop != 0 && c.t.ProcessStack.Contains(slot):
		if !near(c.t.ProcessStackTop) {
			cand.Why = fmt.Sprintf("0xFFFFFFFF %d bytes below the top of the task's stack 0x%08x: too deep for its outermost frame, so maybe a local holding -1", c.t.ProcessStackTop-slot, c.t.ProcessStackTop)
			return cand, true
		}
		cand.Verified = true
		cand.Why = fmt.Sprintf("0xFFFFFFFF, the reset value of LR, in the outermost frame of the task's stack (top 0x%08x)", c.t.ProcessStackTop)
	case c.t.MainStackTop != 0 && slot >= c.t.Stack.Lo && slot < c.t.MainStackTop && !c.t.ProcessStack.Contains(slot):
		if !near(c.t.MainStackTop) {
			return Candidate{}, false
		}
		cand.Verified = true
		cand.Why = fmt.Sprintf("0xFFFFFFFF, the reset value of LR, in the outermost frame of the main stack (initial SP 0x%08x)", c.t.MainStackTop)
	default:
		cand.Why = "0xFFFFFFFF, the reset value of LR, but the top of this stack is not known: a thread's outermost frame or a local holding -1"
	}
	return cand, true
}

// excReturn checks an EXC_RETURN-shaped word: valid for the profile, and
// above it (or at PSP) a frame whose stacked xPSR is consistent with it.
func (c *classifier) excReturn(slot, w uint32) (Candidate, bool) {
	prof := c.t.Profile
	if prof == unwinders.ProfileUnknown {
		prof = unwinders.V7M
	}
	exc := unwinders.ExcReturn(w)
	if !exc.Valid(prof) {
		return Candidate{}, false
	}
	frame := slot + 4
	if exc.UsesPSP() {
		if !c.hasPSP {
			return Candidate{}, false
		}
		frame = c.psp
	}
	if exc.HasStateContext(prof) {
		frame += 0x28
	}
	if why := plausibleFrame(c.t, exc, frame); why != "" {
		return Candidate{}, false
	}
	cand := Candidate{Slot: slot, Value: w, Kind: ExceptionReturn}
	switch {
	case !c.hasFn:
		cand.Why = fmt.Sprintf("%v: the callee's PC is in no known function", exc)
	case c.isHandler(c.callee.Start):
		cand.Verified = true
		cand.Why = fmt.Sprintf("%v saved by %s, a vector-table handler", exc, c.calleeName())
	default:
		cand.Why = fmt.Sprintf("%v, but %s is not in the vector table", exc, c.calleeName())
	}
	return cand, true
}

// plausibleFrame returns "" when the basic frame at addr looks like what
// exception entry stacks for exc, else what is wrong. Checked: the frame
// is readable, the stacked xPSR's reserved bits 23:20 are zero (bit 20 is
// RETPSR.SFPA on ARMv8-M, set when the Secure code had FP context), its
// exception number agrees with the mode EXC_RETURN returns to (ARMv7-M ARM
// B1.4.2, B1.5.8), and the stacked return address is halfword aligned.
func plausibleFrame(t *unwinders.Target, exc unwinders.ExcReturn, addr uint32) string {
	var b [32]byte
	if err := t.Mem.Read(addr, b[:]); err != nil {
		return "frame not readable"
	}
	word := func(i int) uint32 {
		return uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	pc, xpsr := word(6), word(7)
	reserved := uint32(0x00F00000)
	if t.Profile == unwinders.V8M {
		reserved &^= 1 << 20 // RETPSR.SFPA: CONTROL_S.SFPA at the exception
	}
	if xpsr&reserved != 0 {
		return "stacked xPSR has reserved bits set"
	}
	ipsr := xpsr & 0x1FF
	if exc.ToThread() != (ipsr == 0) {
		return "stacked exception number disagrees with EXC_RETURN's mode"
	}
	if pc&1 != 0 {
		return "stacked return address is odd"
	}
	return ""
}

// isHandler reports whether start is the target of a vector-table entry.
func (c *classifier) isHandler(start uint32) bool {
	if c.vec == nil {
		c.vec = readVectors(c.t)
	}
	return c.vec.has(start)
}
