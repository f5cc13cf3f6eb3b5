package unwinders

import (
	"errors"
	"fmt"
	"strings"
)

// ExcReturn is an EXC_RETURN value: what the core writes to LR on exception
// entry and what, branched to in Handler mode, performs the exception return.
// ARMv7-M ARM B1.5.8 (table B1-8), ARMv6-M ARM B1.5.8, ARMv8-M ARM D1.2.95.
type ExcReturn uint32

// Bits of an EXC_RETURN value. ES, DCRS and S exist on ARMv8-M only.
const (
	excES     = 1 << 0 // v8-M: the exception was taken to the Secure state
	excSPSEL  = 1 << 2 // the frame is on the process stack
	excMode   = 1 << 3 // return to Thread mode
	excFType  = 1 << 4 // 0: extended (FP) frame
	excDCRS   = 1 << 5 // v8-M: default callee register stacking (1 = not stacked)
	excSecure = 1 << 6 // v8-M: the frame is on a Secure stack
)

// FNC_RETURN values a Secure function call to Non-secure code leaves in LR
// (ARMv8-M ARM B3.20).
const (
	FNCReturn0 = 0xFEFFFFFE
	FNCReturn1 = 0xFEFFFFFF
)

// Valid reports whether e is a legal EXC_RETURN for the profile. With an
// unknown profile every value legal on some profile is accepted.
func (e ExcReturn) Valid(p Profile) bool {
	v := uint32(e)
	switch p {
	case V6M:
		return v == 0xFFFFFFF1 || v == 0xFFFFFFF9 || v == 0xFFFFFFFD
	case V7M:
		switch v {
		case 0xFFFFFFE1, 0xFFFFFFE9, 0xFFFFFFED, 0xFFFFFFF1, 0xFFFFFFF9, 0xFFFFFFFD:
			return true
		}
		return false
	case V8M:
		// EXC_RETURN[31:24] = 0xFF, [23:7] RES1, bit 1 reserved 0.
		return v>>7 == 0x1FFFFFF && v&2 == 0
	}
	return ExcReturn(v).Valid(V7M) || ExcReturn(v).Valid(V8M)
}

// LooksLikeExcReturn reports whether v is in the EXC_RETURN space
// (0xFFxxxxxx, excluding the 0xFFFFFFFF reset value of LR), valid or not.
func LooksLikeExcReturn(v uint32) bool { return v>>24 == 0xFF && v != 0xFFFFFFFF }

// UsesPSP reports whether the frame was pushed on the process stack.
func (e ExcReturn) UsesPSP() bool { return e&excSPSEL != 0 }

// ToThread reports whether the exception returns to Thread mode.
func (e ExcReturn) ToThread() bool { return e&excMode != 0 }

// Extended reports whether the frame includes the FP context.
func (e ExcReturn) Extended() bool { return e&excFType == 0 }

// SecureStack reports whether, on ARMv8-M, the frame is on a Secure stack.
func (e ExcReturn) SecureStack(p Profile) bool { return p == V8M && e&excSecure != 0 }

// HasStateContext reports whether an ARMv8-M additional state context
// (integrity signature, reserved word, r4-r11: 0x28 bytes) lies below the
// basic frame: a Secure stack with DCRS=0 or ES=0 (cortex-m.md 1).
func (e ExcReturn) HasStateContext(p Profile) bool {
	return e.SecureStack(p) && (e&excDCRS == 0 || e&excES == 0)
}

func (e ExcReturn) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "EXC_RETURN 0x%08X (", uint32(e))
	if e.ToThread() {
		b.WriteString("Thread")
	} else {
		b.WriteString("Handler")
	}
	if e.UsesPSP() {
		b.WriteString(", PSP")
	} else {
		b.WriteString(", MSP")
	}
	if e.Extended() {
		b.WriteString(", FP frame")
	}
	b.WriteString(")")
	return b.String()
}

// IsLockup reports whether a PC value means the core locked up
// (a fault in HardFault or NMI): 0xEFFFFFFE, 0xFFFFFFFE or 0xFFFFFFFF.
func IsLockup(pc uint32) bool {
	return pc == 0xEFFFFFFE || pc == 0xFFFFFFFE || pc == 0xFFFFFFFF
}

// ResetLR is the value LR holds out of reset: the bottom of every call chain.
const ResetLR = 0xFFFFFFFF

// Addresses of the FP context control registers (ARMv7-M ARM B3.2.20-21).
const (
	AddrFPCCR = 0xE000EF34
	AddrFPCAR = 0xE000EF38
)

// FPCCR bits used for lazy stacking.
const (
	fpccrLSPACT = 1 << 0
	fpccrTS     = 1 << 26 // v8-M: Secure FP state treated as Secure (S16-S31 stacked)
	fpccrLSPEN  = 1 << 30
	fpccrASPEN  = 1 << 31
)

// ExceptionFrame describes a hardware-stacked exception frame.
type ExceptionFrame struct {
	ExcReturn ExcReturn
	FNCReturn bool   // a Secure-to-Non-secure function call frame, not an exception
	Stack     string // "MSP" or "PSP"
	// Addr is the lowest address of what the core pushed (the additional
	// state context when present, else the r0 slot); Base the r0 slot.
	Addr, Base uint32
	Size       uint32 // bytes from Base: 0x20, 0x68 or 0xA8
	Padded     bool   // stacked xPSR bit 9: a 4-byte alignment pad sits above the frame
	Extended   bool
	LazyFP     bool // FP slots not known to be written (lazy stacking pending, or no FPCCR to tell)
	// LazyPending: FPCCR and FPCAR prove lazy stacking is pending for this
	// frame, so no FP instruction ran since its entry and the live S0-S15
	// and FPSCR are still the interrupted code's.
	LazyPending bool
	StateCtx    bool // v8-M additional state context present
	// CallerSP is the stack pointer of the interrupted code.
	CallerSP uint32
}

// ErrBadExceptionFrame is wrapped by errors about an exception frame that
// cannot be read or makes no sense.
var ErrBadExceptionFrame = errors.New("bad exception frame")

// Unstack reads the exception frame that EXC_RETURN value exc describes and
// returns the pseudo-frame and the interrupted frame.
//
// handler is the frame in which exc was found as a return address (the
// exception handler's outermost activation); handlerSP is the value of SP
// when the handler would execute the exception return, i.e. the main stack
// pointer right after the handler's own frame is popped. For a frame on the
// process stack the frame's address is the PSP, which handler code does not
// touch; it must be known in handler.Regs.
func Unstack(t *Target, handler *Frame, exc ExcReturn, handlerSP uint32) (pseudo, interrupted Frame, err error) {
	ef := &ExceptionFrame{ExcReturn: exc, Extended: exc.Extended() && t.Profile != V6M}
	var bank Reg // with the Security Extension: the stack that holds the frame
	if withSecurityExt(t.Profile, exc) {
		// The handler ran on the MSP of the state that took the
		// exception (ES); the frame is on the stack S and SPSEL name.
		bank = bankedSP(exc&excSecure != 0, exc.UsesPSP())
		ef.Stack = bankName(bank)
		if bank == bankedSP(exc&excES != 0, false) {
			ef.Addr = handlerSP
		} else if v, ok := handler.Regs.Get(bank); ok {
			ef.Addr = v
		} else if v, ok := handler.Regs.Get(PSP); ok && exc.UsesPSP() && exc&excSecure != 0 == (exc&excES != 0) {
			// The dump's PSP is that of the state the handler runs in.
			ef.Addr = v
		} else {
			return pseudo, interrupted, fmt.Errorf("%w: %v says the frame is on %s, which the dump does not hold", ErrBadExceptionFrame, exc, ef.Stack)
		}
	} else if exc.UsesPSP() {
		ef.Stack = "PSP"
		psp, ok := handler.Regs.Get(PSP)
		if !ok {
			return pseudo, interrupted, fmt.Errorf("%w: %v says the frame is on the process stack, but PSP is not known", ErrBadExceptionFrame, exc)
		}
		ef.Addr = psp
	} else {
		ef.Stack = "MSP"
		ef.Addr = handlerSP
	}
	ef.Base = ef.Addr
	note := ""
	var ctx [10]uint32
	if exc.HasStateContext(t.Profile) {
		ef.StateCtx = true
		if err := readWords(t.Mem, ef.Addr, ctx[:]); err != nil {
			return pseudo, interrupted, fmt.Errorf("%w: additional state context at 0x%08x: %w", ErrBadExceptionFrame, ef.Addr, err)
		}
		if ctx[0] != IntegritySignature && ctx[0] != IntegritySignatureFP {
			// Positive evidence that what EXC_RETURN describes is not
			// there: r4-r11 and the frame above would be garbage.
			return pseudo, interrupted, fmt.Errorf("%w: %v says a Secure stack holds the additional state context at 0x%08x, but its first word is 0x%08x, not the integrity signature 0x%08X", ErrBadExceptionFrame, exc, ef.Addr, ctx[0], uint32(IntegritySignature))
		}
		ef.Base = ef.Addr + 0x28
	}
	var w [8]uint32
	if err := readWords(t.Mem, ef.Base, w[:]); err != nil {
		return pseudo, interrupted, fmt.Errorf("%w: %s frame at 0x%08x: %w", ErrBadExceptionFrame, ef.Stack, ef.Base, err)
	}
	ef.Size = 0x20
	if ef.Extended {
		ef.Size = 0x68
		fpccr, errC := ReadU32(t.Mem, AddrFPCCR)
		if errC == nil && t.Profile == V8M && fpccr&fpccrTS != 0 && exc.SecureStack(t.Profile) {
			ef.Size = 0xA8
		}
		switch {
		case errC != nil:
			// Without FPCCR nothing says whether lazy stacking
			// (on by default after reset) left the slots unwritten:
			// what they hold is not known to be S0-S15.
			ef.LazyFP = true
			note = "S0-S15 and FPSCR of the FP frame are unknown: the dump lacks FPCCR, so lazy FP stacking may have left their slots unwritten"
		case fpccr&(fpccrASPEN|fpccrLSPEN|fpccrLSPACT) == fpccrASPEN|fpccrLSPEN|fpccrLSPACT:
			if fpcar, errA := ReadU32(t.Mem, AddrFPCAR); errA == nil && fpcar&^7 == (ef.Base+0x20)&^7 {
				ef.LazyFP = true
				ef.LazyPending = true
				note = "S0-S15 and FPSCR were reserved but not written (lazy FP stacking is pending)"
			}
		}
	}
	xpsr := w[7]
	ef.Padded = xpsr&(1<<9) != 0
	top := uint64(ef.Base) + uint64(ef.Size)
	if ef.Padded {
		top += 4
	}
	if top > 0xFFFFFFFF {
		return pseudo, interrupted, fmt.Errorf("%w: frame at 0x%08x runs past the end of memory", ErrBadExceptionFrame, ef.Base)
	}
	ef.CallerSP = uint32(top)

	pseudo = Frame{
		PC: uint32(exc), SP: ef.Addr, Kind: KindException, Method: MethodException,
		Confidence: ConfidenceHigh, Exception: ef, Regs: handler.Regs,
	}

	var r Registers
	// Callee-saved registers are untouched by exception entry: whatever the
	// handler frame knows of them holds for the interrupted code.
	for _, reg := range []Reg{R4, R5, R6, R7, R8, R9, R10, R11} {
		if v, ok := handler.Regs.Get(reg); ok {
			r.Set(reg, v)
		}
	}
	for i := 16; i < 32; i++ {
		if v, ok := handler.Regs.Get(S(i)); ok {
			r.Set(S(i), v)
		}
	}
	if ef.StateCtx {
		for i := 0; i < 8; i++ {
			r.Set(R4+Reg(i), ctx[2+i])
		}
	}
	for i, reg := range []Reg{R0, R1, R2, R3, R12, LR, PC, XPSR} {
		r.Set(reg, w[i])
	}
	if ef.LazyPending {
		for i := 0; i < 16; i++ {
			if v, ok := handler.Regs.Get(S(i)); ok {
				r.Set(S(i), v)
			}
		}
		if v, ok := handler.Regs.Get(FPSCR); ok {
			r.Set(FPSCR, v)
		}
	}
	if ef.Extended && !ef.LazyFP {
		var fp [17]uint32
		if err := readWords(t.Mem, ef.Base+0x20, fp[:]); err == nil {
			for i := 0; i < 16; i++ {
				r.Set(S(i), fp[i])
			}
			r.Set(FPSCR, fp[16])
		} else {
			var ue *UnmappedError
			if errors.As(err, &ue) {
				note = joinNote(note, fmt.Sprintf("S0-S15 and FPSCR of the FP frame are unknown: memory at 0x%08x is not in the dump", ue.Missing))
			}
		}
		if ef.Size == 0xA8 {
			var hi [16]uint32
			if err := readWords(t.Mem, ef.Base+0x68, hi[:]); err == nil {
				for i := 0; i < 16; i++ {
					r.Set(S(16+i), hi[i])
				}
			}
		}
	}
	r.Set(SP, ef.CallerSP)
	carryBanked(&handler.Regs, &r)
	if bank != 0 {
		// The handler leaves its state's MSP where it found it; the
		// interrupted code's stack is the one the frame was on.
		r.Set(bankedSP(exc&excES != 0, false), handlerSP)
		r.Set(bank, ef.CallerSP)
	}
	if exc.UsesPSP() {
		r.Set(PSP, ef.CallerSP)
		// The main stack the handler leaves behind.
		r.Set(MSP, handlerSP)
	} else {
		r.Set(MSP, ef.CallerSP)
		if v, ok := handler.Regs.Get(PSP); ok {
			r.Set(PSP, v)
		}
	}
	interrupted = Frame{
		PC: w[6] &^ 1, SP: ef.CallerSP, Regs: r, Kind: KindNormal, Method: MethodException,
		Confidence: ConfidenceHigh, Note: note,
	}
	if ipsr, ok := handler.Regs.IPSR(); ok && ipsr == excSVCall && w[6] >= 2 {
		if h, err := ReadU16(t.Mem, w[6]&^1-2); err == nil && h&0xFF00 == 0xDF00 {
			interrupted.AfterSVC = true
			interrupted.Note = joinNote(interrupted.Note, fmt.Sprintf("interrupted by its own svc #%d at 0x%08x: looked up there", h&0xFF, w[6]&^1-2))
		}
	}
	if w[6]&1 != 0 {
		interrupted.Note = joinNote(interrupted.Note, fmt.Sprintf("stacked return address 0x%08x has bit 0 set, which the core never stacks", w[6]))
		interrupted.Confidence = ConfidenceMedium
	}
	if xpsr&(1<<24) == 0 {
		interrupted.Note = joinNote(interrupted.Note, "stacked xPSR has the Thumb bit clear (the interrupted code branched to an even address)")
	}
	return pseudo, interrupted, nil
}

// UnstackFNC reads the two-word frame of a Secure-to-Non-secure function
// call (FNC_RETURN in LR): the return address at [SP], a partial xPSR at
// [SP+4] (ARMv8-M ARM B3.20.2).
func UnstackFNC(t *Target, handler *Frame, value uint32, sp uint32) (pseudo, caller Frame, err error) {
	var w [2]uint32
	if err := readWords(t.Mem, sp, w[:]); err != nil {
		return pseudo, caller, fmt.Errorf("%w: FNC_RETURN frame at 0x%08x: %w", ErrBadExceptionFrame, sp, err)
	}
	ef := &ExceptionFrame{ExcReturn: ExcReturn(value), FNCReturn: true, Stack: "secure", Addr: sp, Base: sp, Size: 8, CallerSP: sp + 8}
	pseudo = Frame{PC: value, SP: sp, Kind: KindException, Method: MethodException, Confidence: ConfidenceHigh, Exception: ef}
	var r Registers
	for _, reg := range []Reg{R4, R5, R6, R7, R8, R9, R10, R11} {
		if v, ok := handler.Regs.Get(reg); ok {
			r.Set(reg, v)
		}
	}
	r.Set(PC, w[0]&^1)
	r.Set(SP, sp+8)
	caller = Frame{PC: w[0] &^ 1, SP: sp + 8, Regs: r, Kind: KindNormal, Method: MethodException, Confidence: ConfidenceHigh, ReturnAddress: true}
	return pseudo, caller, nil
}

func readWords(m Memory, addr uint32, w []uint32) error {
	for i := range w {
		v, err := ReadU32(m, addr+uint32(4*i))
		if err != nil {
			return err
		}
		w[i] = v
	}
	return nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// excSVCall is the exception number of SVCall (ARMv7-M ARM B1.5.2).
const excSVCall = 11
