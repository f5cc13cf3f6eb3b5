package unwinders

import "fmt"

// Kind classifies a frame.
type Kind uint8

const (
	KindNormal    Kind = iota // a function activation recovered with evidence
	KindException             // a pseudo-frame for the hardware-stacked exception frame
	KindInlined               // an inlined call, expanded from DWARF by the symbolizer
	KindGuessed               // a candidate whose evidence is weak (e.g. an unverified stack-scan hit)
	KindGap                   // frames are missing here: the next frame's call does not lead to the previous frame's function
)

func (k Kind) String() string {
	switch k {
	case KindNormal:
		return "normal"
	case KindException:
		return "exception"
	case KindInlined:
		return "inlined"
	case KindGuessed:
		return "guessed"
	case KindGap:
		return "gap"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Confidence says how sure the walk is of a frame.
type Confidence uint8

const (
	ConfidenceLow    Confidence = iota + 1 // plausible, unverified: treat as a hint
	ConfidenceMedium                       // found by a heuristic and checked, but not proven
	ConfidenceHigh                         // read from registers, the hardware's exception frame, or exact unwind data
)

func (c Confidence) String() string {
	switch c {
	case ConfidenceLow:
		return "low"
	case ConfidenceMedium:
		return "medium"
	case ConfidenceHigh:
		return "high"
	}
	return "none"
}

// Methods that the core itself uses. Strategies name themselves.
const (
	MethodCallCheck = "call-check" // a gap frame: the call-target check found frames missing
	MethodRegisters = "registers"  // frame 0, straight from the dump's registers
	MethodException = "exception"  // the exception pseudo-frame and the frame it interrupted
	MethodLR        = "lr"         // caller taken from LR where LR is provably the return address
)

// Frame is one entry of a backtrace, innermost first.
//
// PC is the frame's program counter with the Thumb bit clear. For every frame
// but the first and those right after an exception frame it is a return
// address: the instruction after the call. ReturnAddress says which, and
// LookupPC gives the address to symbolize (inside the call instruction, so a
// call to a noreturn function at the very end of its caller still resolves to
// the caller).
//
// Regs holds what is known of the registers at this frame: callee-saved
// registers restored by the unwinder, the stacked registers after an
// exception. SP is the value of the stack pointer in this frame (for an
// exception pseudo-frame, the address of the stacked frame).
type Frame struct {
	PC            uint32
	SP            uint32
	Regs          Registers
	Kind          Kind
	Method        string
	Confidence    Confidence
	ReturnAddress bool
	// Exception describes the stacked frame of an exception pseudo-frame.
	Exception *ExceptionFrame
	// AfterSVC is set on the frame an SVCall exception interrupted right
	// after its svc instruction: SVC is synchronous and complete, so the
	// stacked PC is the next instruction and the frame is looked up at the
	// svc (PC-2), like a return address. Interrupts stay at PC.
	AfterSVC bool
	// Call is the verdict of the call-target check on this frame's return
	// address against the frame before it (CallUnchecked for frames that
	// are not return addresses).
	Call CallCheck
	// Note explains anything a reader should know about this frame
	// ("S0-S15 were never stacked (lazy FP stacking)").
	Note string
}

// LookupPC returns the address at which the frame's code should be looked
// up: PC itself, or PC-2 for a return address (cortex-m.md 6.3).
func (f *Frame) LookupPC() uint32 {
	if (f.ReturnAddress || f.AfterSVC) && f.PC >= 2 {
		return f.PC - 2
	}
	return f.PC
}
