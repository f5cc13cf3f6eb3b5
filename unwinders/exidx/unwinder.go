package exidx

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/unwinders"
)

// Name is the strategy's name and the Method of the frames it produces.
const Name = "exidx"

// Unwinder is the EHABI strategy. The zero value is ready to use: it
// decodes the tables of the Target's Program on first use and keeps them
// for later steps with the same Program. New fixes the table instead.
// An Unwinder is safe for concurrent use.
type Unwinder struct {
	table *Table // fixed by New; nil: built from Target.Prog

	mu     sync.Mutex
	caches []progTable // one per Program (image) met, in the order met
}

// New returns an Unwinder that uses tab for every step.
func New(tab *Table) *Unwinder { return &Unwinder{table: tab} }

// Name implements unwinders.Unwinder.
func (u *Unwinder) Name() string { return Name }

// tableFor returns the table for the code at pc: the fixed one, or the one
// decoded from the Program that holds pc (t.ProgramFor), cached per
// Program.
func (u *Unwinder) tableFor(t *unwinders.Target, pc uint32) (*Table, error) {
	if u.table != nil {
		return u.table, nil
	}
	prog := t.ProgramFor(pc)
	if prog == nil {
		return nil, ErrNoTable
	}
	if !reflect.TypeOf(prog).Comparable() {
		return NewTable(prog)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.caches {
		if c := &u.caches[i]; c.prog == prog {
			return c.tab, c.err
		}
	}
	if len(u.caches) >= maxCachedPrograms {
		// Another set of images: start over rather than grow.
		u.caches = u.caches[:0]
	}
	tab, err := NewTable(prog)
	u.caches = append(u.caches, progTable{prog: prog, tab: tab, err: err})
	return tab, err
}

// progTable is the table decoded from one Program (one image of a
// MultiProgram), or the error that decoding met.
type progTable struct {
	prog unwinders.Program
	tab  *Table
	err  error
}

// maxCachedPrograms bounds the tables an Unwinder keeps: a few images per
// device (bootloader, application, Secure, Non-secure, ROM).
const maxCachedPrograms = 8

// StepError is the error Step returns when the strategy declines or fails:
// Reason says why in words ("EXIDX_CANTUNWIND for foo"); it unwraps to
// unwinders.ErrNotApplicable (when the next strategy should try) and to the
// package error that caused it.
type StepError struct {
	Reason        string
	NotApplicable bool
	Err           error
}

func (e *StepError) Error() string { return "exidx: " + e.Reason }

// Unwrap returns the cause and, for a declined step,
// unwinders.ErrNotApplicable.
func (e *StepError) Unwrap() []error {
	if e.NotApplicable {
		return []error{unwinders.ErrNotApplicable, e.Err}
	}
	return []error{e.Err}
}

func declined(err error, format string, args ...any) error {
	return &StepError{Reason: fmt.Sprintf(format, args...), NotApplicable: true, Err: err}
}

// Step implements unwinders.Unwinder: it computes the caller of the last
// frame from its EHABI entry.
//
// The entry is looked up at the frame's LookupPC (PC-2 for a return
// address, so a call to a noreturn function at the very end of a function
// does not pick the next function's entry). The instructions run with
// vsp = the frame's SP and the frame's known registers; the caller's PC is
// the popped PC or else LR, raw (Thumb bit and all: the walk recognises
// EXC_RETURN values in it), its SP the final vsp, its registers the frame's
// callee-saved registers updated by the pops (r0-r3, r12, S0-S15 and FPSCR
// unknown unless popped).
//
// The tables describe a function's body, between prologue and epilogue.
// At a return address the PC is a call site, which is always in the body:
// confidence high. For an interrupted PC (frame 0, the frame after an
// exception frame) Step first proves from the instructions that the
// prologue is complete and no epilogue has begun (see proveBody); if it
// cannot, it declines. Such frames get confidence medium.
//
// Errors: a *StepError wrapping unwinders.ErrNotApplicable and one of
// ErrNoTable, ErrNoEntry, ErrCantUnwind, ErrRefused, ErrBadOpcode,
// ErrBadEntry, ErrUnknownPersonality when the strategy has no usable
// evidence; ErrRegisterUnknown when a needed register is unknown; an error
// wrapping unwinders.ErrUnmapped when the stack is not in the dump.
func (u *Unwinder) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	if len(frames) == 0 {
		return unwinders.Frame{}, declined(ErrNoEntry, "no frame to unwind")
	}
	cur := &frames[len(frames)-1]
	if cur.Kind == unwinders.KindException {
		return unwinders.Frame{}, declined(ErrNoEntry, "exception pseudo-frames are stepped by the walk")
	}
	tab, err := u.tableFor(t, cur.LookupPC())
	if err != nil {
		return unwinders.Frame{}, declined(err, "%s", msg(err))
	}
	pc := cur.LookupPC()
	e, err := tab.Lookup(pc)
	if err != nil {
		return unwinders.Frame{}, declined(err, "%s", msg(err))
	}
	name := funcLabel(t, e.FuncStart())
	switch {
	case e.Err != nil:
		return unwinders.Frame{}, declined(errors.Join(ErrBadEntry, e.Err), "entry %d for %s: %s", e.Index, name, msg(e.Err))
	case e.Kind == CantUnwind:
		return unwinders.Frame{}, declined(ErrCantUnwind, "EXIDX_CANTUNWIND for %s", name)
	case e.Kind == Generic && e.stream == nil:
		pn := e.PersonalityName
		if pn == "" {
			pn = fmt.Sprintf("0x%08x", e.PersonalityAddr)
		}
		return unwinders.Frame{}, declined(ErrUnknownPersonality, "%s uses personality routine %s, whose data layout is not known", name, pn)
	}
	conf := unwinders.ConfidenceHigh
	if e.InheritedBy != 0 {
		// The entry belongs to an earlier function: trust it only if this
		// function's prologue builds the frame it describes.
		if why := proveBody(t, &e, cur.PC); why != "" {
			return unwinders.Frame{}, declined(ErrNoEntry, "0x%08x in %s is covered only by the entry of %s (merged by the linker, or a missing terminator), and %s", cur.PC, funcLabel(t, e.InheritedBy), name, why)
		}
		conf = unwinders.ConfidenceMedium
	} else if !cur.ReturnAddress {
		if why := proveBody(t, &e, cur.PC); why != "" {
			return unwinders.Frame{}, declined(ErrNoEntry, "0x%08x in %s was interrupted, not calling, and %s", cur.PC, name, why)
		}
		conf = unwinders.ConfidenceMedium
	}
	caller, err := Unwind(t.Mem, &e, cur)
	if err != nil {
		var na bool
		for _, s := range []error{ErrRefused, ErrBadOpcode} {
			na = na || errors.Is(err, s)
		}
		if na {
			return unwinders.Frame{}, declined(err, "%s: %s", name, msg(err))
		}
		return unwinders.Frame{}, &StepError{Reason: fmt.Sprintf("%s: %s", name, msg(err)), Err: err}
	}
	caller.Confidence = conf
	return caller, nil
}

// Unwind runs e's instructions for frame f and returns the caller frame
// (PC raw, SP = final vsp, registers as documented on Step, Method
// "exidx"). It does not check whether f's PC is a call site.
func Unwind(m unwinders.Memory, e *Entry, f *unwinders.Frame) (unwinders.Frame, error) {
	st := State{VSP: f.SP, Regs: f.Regs}
	st.Regs.Set(unwinders.SP, f.SP)
	if err := Execute(e.stream, m, &st); err != nil {
		return unwinders.Frame{}, err
	}
	var ret uint32
	if v, ok := st.Popped.Get(unwinders.PC); ok {
		ret = v
	} else if v, ok := st.Regs.Get(unwinders.LR); ok {
		ret = v
	} else {
		return unwinders.Frame{}, fmt.Errorf("%w: finish needs LR, which this frame does not know and the entry does not pop", ErrRegisterUnknown)
	}
	regs := f.Regs
	regs.ForgetCallerSaved()
	for _, r := range []unwinders.Reg{unwinders.LR, unwinders.PC, unwinders.XPSR} {
		regs.Forget(r)
	}
	st.Popped.Each(func(r unwinders.Reg, v uint32) {
		if r != unwinders.PC && r != unwinders.LR {
			regs.Set(r, v)
		}
	})
	// The banked stack pointer that was active moves with SP.
	for _, b := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := f.Regs.Get(b); ok && v == f.SP {
			regs.Set(b, st.VSP)
		}
	}
	regs.Set(unwinders.SP, st.VSP)
	return unwinders.Frame{
		PC: ret, SP: st.VSP, Regs: regs, Kind: unwinders.KindNormal, Method: Name,
		Confidence: unwinders.ConfidenceHigh,
	}, nil
}

// funcLabel names the function at addr for messages.
func funcLabel(t *unwinders.Target, addr uint32) string {
	if t.Prog != nil {
		if fn, ok := t.Prog.FuncAt(addr); ok && fn.Name != "" {
			return fn.Name
		}
	}
	return fmt.Sprintf("0x%08x", addr)
}

// msg is an error's text without the package prefix, for use inside a
// StepError (which adds it once).
func msg(err error) string { return strings.TrimPrefix(err.Error(), "exidx: ") }
