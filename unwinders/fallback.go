package unwinders

import "fmt"

// MethodExceptionFallback names frames found by ExceptionFallback.
const MethodExceptionFallback = "exception-fallback"

// ExceptionFallback finds the exception frame when a handler clobbered LR
// before the dump was taken (trampolines and some runtimes do: cortex-m-rt
// 0.7.2 did), so LR no longer holds EXC_RETURN. It applies only while the
// walk has not crossed an exception frame yet, the first frame was taken
// in Handler mode (IPSR != 0), and LR at that frame is not an EXC_RETURN
// value. Candidates are the process stack pointer and, when the current
// frame is at its function's first instruction (nothing pushed yet), the
// current SP. A candidate must hold a plausible basic frame: stacked xPSR
// with the Thumb bit set and an exception number below the handler's, a
// halfword-aligned return address in code. It returns an EXC_RETURN value
// synthesized from what it found, with medium confidence: the hardware's
// own record of which stack it used is gone.
type ExceptionFallback struct{}

// Name implements Unwinder.
func (ExceptionFallback) Name() string { return MethodExceptionFallback }

// Step implements Unwinder.
func (ExceptionFallback) Step(t *Target, frames []Frame) (Frame, error) {
	for _, f := range frames {
		if f.Kind == KindException {
			return Frame{}, ErrNotApplicable // silent: nothing to fall back from
		}
	}
	f0 := &frames[0]
	cur := &frames[len(frames)-1]
	ipsr, ok := f0.Regs.IPSR()
	if !ok || ipsr == 0 {
		return Frame{}, ErrNotApplicable
	}
	if lr, ok := f0.Regs.Get(LR); ok && (LooksLikeExcReturn(lr) || lr == FNCReturn0 || lr == FNCReturn1) {
		return Frame{}, ErrNotApplicable
	}
	type cand struct {
		addr uint32
		psp  bool
	}
	var cands []cand
	if t.Prog != nil && !cur.ReturnAddress {
		if fn, ok := t.Prog.FuncAt(cur.PC); ok && fn.Start == cur.PC {
			cands = append(cands, cand{cur.SP, false})
		}
	}
	if psp, ok := f0.Regs.Get(PSP); ok && psp != 0 {
		cands = append(cands, cand{psp, true})
	}
	for _, c := range cands {
		var w [8]uint32
		if err := readWords(t.Mem, c.addr, w[:]); err != nil {
			continue
		}
		xpsr, ret := w[7], w[6]
		if xpsr&(1<<24) == 0 || ret&1 != 0 || !t.IsCode(ret) {
			continue
		}
		stackedIPSR := xpsr & 0x1ff
		if stackedIPSR != 0 && stackedIPSR >= ipsr {
			continue
		}
		exc := uint32(0xFFFFFFF1) // to Handler mode, MSP
		switch {
		case c.psp:
			exc = 0xFFFFFFFD
		case stackedIPSR == 0:
			exc = 0xFFFFFFF9
		}
		if t.Profile == V8M {
			exc = exc&^0x7F | 0x20 | exc&0x1C // v8-M without the Security Extension: DCRS=1, S=0, ES=0
		}
		// An extended frame leaves lazy-stacking state pointing at it.
		if fpccr, err := ReadU32(t.Mem, AddrFPCCR); err == nil && fpccr&fpccrLSPACT != 0 {
			if fpcar, err := ReadU32(t.Mem, AddrFPCAR); err == nil && fpcar&^7 == (c.addr+0x20)&^7 {
				exc &^= excFType
			}
		}
		r := cur.Regs
		if c.psp {
			r.Set(PSP, c.addr)
		}
		sp := cur.SP
		if !c.psp {
			sp = c.addr
		}
		return Frame{PC: exc, SP: sp, Regs: r, Method: MethodExceptionFallback, Confidence: ConfidenceMedium}, nil
	}
	return Frame{}, fmt.Errorf("%w: LR is not an EXC_RETURN value and no plausible exception frame was found at PSP or at the handler's entry SP", ErrNotApplicable)
}
