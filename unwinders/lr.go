package unwinders

import "fmt"

// LinkRegister is the minimal strategy every chain ends with: it takes the caller from
// LR, but only where LR is provably still the return address of the frame:
//   - LR holds an EXC_RETURN or FNC_RETURN value (only exception entry writes
//     those), and either the frame is on the process stack or the handler has
//     not yet moved SP (PC at its first instruction);
//   - the PC is at the first instruction of its function (nothing has run
//     that could have saved or reused LR);
//   - the PC is not in any function (a call through a bad pointer just
//     landed there), which is a call only if LR follows one: the walk checks
//     that, and the frame is reported with medium confidence;
//   - the PC is not in any function and LR holds an EXC_RETURN value: the
//     core took an exception whose vector points where nothing can run and
//     faulted fetching the handler's first instruction, so the handler ran
//     nothing and its exception frame is at SP, as at any entry. Taken
//     (high confidence) only when the vector of the frame's exception
//     (IPSR) holds that very PC.
//
// Everywhere else LR may have been saved and reused, and blindly printing it
// as the caller is the mistake CmBacktrace makes (cortex-m.md 6.2).
type LinkRegister struct{}

// Name implements Unwinder.
func (LinkRegister) Name() string { return MethodLR }

// Step implements Unwinder.
func (LinkRegister) Step(t *Target, frames []Frame) (Frame, error) {
	cur := &frames[len(frames)-1]
	lr, ok := cur.Regs.Get(LR)
	if !ok {
		return Frame{}, fmt.Errorf("%w: LR of this frame is not known", ErrNotApplicable)
	}
	if cur.Kind == KindException {
		return Frame{}, ErrNotApplicable
	}
	caller := func(conf Confidence) Frame {
		r := cur.Regs
		r.ForgetCallerSaved()
		r.Forget(LR)
		return Frame{PC: lr, SP: cur.SP, Regs: r, Method: MethodLR, Confidence: conf, Kind: KindNormal}
	}
	var fn Function
	inFunc := false
	if t.Prog != nil {
		fn, inFunc = t.Prog.FuncAt(cur.PC)
	}
	atEntry := inFunc && fn.Start == cur.PC && !cur.ReturnAddress
	excValue := LooksLikeExcReturn(lr) || lr == FNCReturn0 || lr == FNCReturn1
	switch {
	case excValue && lr != FNCReturn0 && lr != FNCReturn1 && ExcReturn(lr).UsesPSP():
		// The frame is at PSP, which handler code never moves.
		return caller(ConfidenceHigh), nil
	case excValue && atEntry:
		return caller(ConfidenceHigh), nil
	case excValue && lr != FNCReturn0 && lr != FNCReturn1 && !cur.ReturnAddress && (t.Prog != nil && !inFunc || !t.IsCode(cur.PC)):
		return handlerRanNothing(t, cur, caller)
	case excValue:
		return Frame{}, fmt.Errorf("%w: LR holds 0x%08x but the handler has run past its entry, so where its exception frame sits needs a stack unwinding strategy", ErrNotApplicable, lr)
	case atEntry:
		return caller(ConfidenceHigh), nil
	case !cur.ReturnAddress && (t.Prog != nil && !inFunc || !t.IsCode(cur.PC)):
		return caller(ConfidenceMedium), nil
	}
	return Frame{}, fmt.Errorf("%w: the function may have saved and reused LR at 0x%08x", ErrNotApplicable, cur.PC)
}

// handlerRanNothing is the caller of a frame whose PC is in no function
// while LR holds EXC_RETURN: the exception frame at the frame's own SP,
// when the vector of the frame's exception (IPSR) holds that very PC.
// Without that evidence it declines.
func handlerRanNothing(t *Target, cur *Frame, caller func(Confidence) Frame) (Frame, error) {
	ipsr, ok := cur.Regs.IPSR()
	if !ok || ipsr == 0 {
		return Frame{}, fmt.Errorf("%w: 0x%08x is in no function and LR holds EXC_RETURN, but the exception number is not known", ErrNotApplicable, cur.PC)
	}
	v, base, ok := t.Vector(ipsr)
	if !ok || v&^1 != cur.PC {
		return Frame{}, fmt.Errorf("%w: 0x%08x is in no function and LR holds EXC_RETURN, but the vector of exception %d does not point there", ErrNotApplicable, cur.PC, ipsr)
	}
	f := caller(ConfidenceHigh)
	f.Note = fmt.Sprintf("vector %d (at 0x%08x) holds 0x%08x, where no code is: the core faulted fetching the handler's first instruction, so the handler ran nothing and its exception frame is at SP 0x%08x", ipsr, base+4*ipsr, v, cur.SP)
	return f, nil
}
