package prologue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Name is the strategy's name and the Method of the frames it produces.
const Name = "prologue"

// DefaultMaxInsns bounds the instructions one analysis decodes when
// Unwinder.MaxInsns is 0.
const DefaultMaxInsns = 1024

// Why the strategy declines. Every error Step and Analyze return wraps
// unwinders.ErrNotApplicable and one of these (and unwinders.ErrUnmapped
// when code or stack memory is missing from the dump).
var (
	// ErrNoFunction: the PC lies in no known function, the function is not
	// Thumb code, or the Target has no Program.
	ErrNoFunction = errors.New("no function")
	// ErrTooFar: the PC is further from the function start than the scan
	// bound.
	ErrTooFar = errors.New("PC beyond the scan bound")
	// ErrOutOfStep: the linear decode did not land on the PC (or, for a
	// return address, the instruction before it is not a call): data was
	// decoded as code.
	ErrOutOfStep = errors.New("decoder out of step")
	// ErrFrameSize: SP moved by an amount the code does not reveal and no
	// frame register pins the CFA, or the result is unbalanced.
	ErrFrameSize = errors.New("frame size unknown")
	// ErrNoReturnAddress: LR was overwritten without being saved, or LR is
	// not known in a leaf frame.
	ErrNoReturnAddress = errors.New("return address not found")
	// ErrMemory: code or a stack slot could not be read.
	ErrMemory = errors.New("memory")
)

// Unwinder is the prologue-analysis strategy. The zero value is ready to
// use; it keeps no state between steps and is safe for concurrent use.
type Unwinder struct {
	// MaxInsns bounds the instructions decoded per step (0: DefaultMaxInsns).
	MaxInsns int
}

// New returns an Unwinder with the default bounds.
func New() *Unwinder { return &Unwinder{} }

// Name implements unwinders.Unwinder.
func (u *Unwinder) Name() string { return Name }

// Mode says how an Analysis found the return address.
type Mode uint8

// The modes.
const (
	ModeFrame    Mode = iota + 1 // read from LR's save slot found by the forward scan
	ModeLeaf                     // LR itself: the function has not saved or written it
	ModeEpilogue                 // simulated the return sequence that follows the PC
)

func (m Mode) String() string {
	switch m {
	case ModeFrame:
		return "frame"
	case ModeLeaf:
		return "leaf"
	case ModeEpilogue:
		return "epilogue"
	}
	return "mode?"
}

// Saved is a register whose caller value was read from the stack.
type Saved struct {
	Reg   unwinders.Reg
	Addr  uint32 // the slot
	Value uint32
}

// Analysis is what the strategy learned about one frame.
type Analysis struct {
	Func unwinders.Function
	Mode Mode
	// CFA is the caller's SP: the frame's SP at function entry (for
	// ModeEpilogue, the SP after the return).
	CFA uint32
	// Size is CFA minus the frame's SP: the bytes of stack the function
	// holds at the PC.
	Size uint32
	// ReturnAddress is the raw caller PC (Thumb bit and all, or an
	// EXC_RETURN value); ReturnSlot its stack address, 0 for LR.
	ReturnAddress uint32
	ReturnSlot    uint32
	// Saved lists the registers restored from stack slots, in register
	// order.
	Saved []Saved
	// Clobbered lists callee-saved registers the function wrote without
	// saving them: unknown in the caller.
	Clobbered []unwinders.Reg
	// Straight is true when the path from the function start to the PC had
	// no branch, no unknown SP change and no assumption.
	Straight bool
	// FrameReg is the register through which the CFA was found when SP
	// tracking could not (alloca), or NoFrameReg.
	FrameReg unwinders.Reg
	// Insns counts the instructions decoded.
	Insns int
	// Notes says what a reader should know (assumptions, conflicts).
	Notes []string
}

// NoFrameReg is Analysis.FrameReg when SP tracking sufficed.
const NoFrameReg unwinders.Reg = 0xff

// Confidence returns the confidence of the caller frame the analysis yields.
func (a *Analysis) Confidence() unwinders.Confidence {
	if a.Straight || a.Mode == ModeEpilogue {
		return unwinders.ConfidenceHigh
	}
	return unwinders.ConfidenceMedium
}

// declined wraps a package sentinel (and ErrNotApplicable) with detail.
func declined(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", unwinders.ErrNotApplicable, sentinel, fmt.Sprintf(format, args...))
}

// memError wraps a failed read so that errors.Is finds ErrMemory,
// ErrNotApplicable and the read error's own sentinel (ErrUnmapped).
func memError(what string, addr uint32, err error) error {
	return fmt.Errorf("%w: %w: %s at 0x%08x: %w", unwinders.ErrNotApplicable, ErrMemory, what, addr, err)
}

// Step implements unwinders.Unwinder: the caller of the last frame.
func (u *Unwinder) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	if len(frames) == 0 {
		return unwinders.Frame{}, fmt.Errorf("prologue: %w: no frame", unwinders.ErrNotApplicable)
	}
	cur := &frames[len(frames)-1]
	a, err := u.Analyze(t, cur)
	if err != nil {
		return unwinders.Frame{}, fmt.Errorf("prologue: %w", err)
	}
	return a.Caller(cur), nil
}

// Caller builds the caller frame the analysis of cur describes: PC the raw
// return address, SP the CFA, callee-saved registers restored.
func (a *Analysis) Caller(cur *unwinders.Frame) unwinders.Frame {
	regs := cur.Regs
	regs.ForgetCallerSaved()
	regs.Forget(unwinders.LR)
	regs.Forget(unwinders.PC)
	for _, r := range a.Clobbered {
		regs.Forget(r)
	}
	for _, s := range a.Saved {
		regs.Set(s.Reg, s.Value)
	}
	// The stack pointer bank that was active moves with SP.
	for _, bank := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := cur.Regs.Get(bank); ok && v == cur.SP {
			regs.Set(bank, a.CFA)
		}
	}
	regs.Set(unwinders.SP, a.CFA)
	return unwinders.Frame{
		PC: a.ReturnAddress, SP: a.CFA, Regs: regs, Kind: unwinders.KindNormal,
		Method: Name, Confidence: a.Confidence(), Note: strings.Join(a.Notes, "; "),
	}
}

// Analyze analyses the function containing frame f and returns where its
// caller's registers are. Cost: linear in the distance from the function
// start to the PC, at most MaxInsns instructions.
func (u *Unwinder) Analyze(t *unwinders.Target, f *unwinders.Frame) (*Analysis, error) {
	if f.Kind == unwinders.KindException {
		return nil, declined(ErrNoFunction, "an exception pseudo-frame is stepped by the walk")
	}
	if t == nil || t.Mem == nil || t.Prog == nil {
		return nil, declined(ErrNoFunction, "no program to find function starts in")
	}
	look := f.LookupPC()
	fn, ok := t.Prog.FuncAt(look)
	if !ok {
		return nil, declined(ErrNoFunction, "0x%08x is in no function", look)
	}
	if !fn.Thumb {
		return nil, declined(ErrNoFunction, "%s at 0x%08x is not Thumb code", fnName(fn), fn.Start)
	}
	if fn.Start&1 != 0 || f.PC < fn.Start || f.PC&1 != 0 {
		return nil, declined(ErrNoFunction, "PC 0x%08x does not lie in %s at 0x%08x", f.PC, fnName(fn), fn.Start)
	}
	max := u.MaxInsns
	if max <= 0 {
		max = DefaultMaxInsns
	}
	if !f.ReturnAddress {
		a, err := epilogue(t, f, fn)
		if err != nil {
			return nil, err
		}
		if a != nil {
			return a, nil
		}
	}
	return forward(t, f, fn, max)
}

func fnName(fn unwinders.Function) string {
	if fn.Name == "" {
		return "function"
	}
	return fn.Name
}
