package cfi

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// Name is the strategy's name and the Method of the frames it produces.
const Name = "cfi"

// Unwinder is the DWARF CFI strategy. The zero value is ready to use: it
// loads the Table of the Target's Program on first use and keeps it for
// later steps with the same Program. NewWithTable fixes the table instead.
// An Unwinder is safe for concurrent use.
type Unwinder struct {
	table *Table // fixed by NewWithTable; nil: loaded from Target.Prog

	mu     sync.Mutex
	caches []progTable // one per Program (image) met, in the order met
}

// New returns an Unwinder that loads the table of each Target's Program.
func New() *Unwinder { return &Unwinder{} }

// NewWithTable returns an Unwinder that uses tab for every step.
func NewWithTable(tab *Table) *Unwinder { return &Unwinder{table: tab} }

// Name implements unwinders.Unwinder.
func (u *Unwinder) Name() string { return Name }

// tableFor returns the table for the code at pc: the fixed one, or the one
// loaded from the Program that holds pc (t.ProgramFor), cached per Program.
func (u *Unwinder) tableFor(t *unwinders.Target, pc uint32) (*Table, error) {
	if u.table != nil {
		return u.table, nil
	}
	prog := t.ProgramFor(pc)
	if prog == nil {
		return nil, ErrNoCFI
	}
	if !reflect.TypeOf(prog).Comparable() {
		return Load(prog)
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
	tab, err := Load(prog)
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
// Reason says why in words; it unwraps to unwinders.ErrNotApplicable (when
// the next strategy should try) and to the error that caused it.
type StepError struct {
	Reason        string
	NotApplicable bool
	Err           error
}

func (e *StepError) Error() string { return "cfi: " + e.Reason }

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
// frame from the CFI row that holds at the frame's code address.
//
// The row is looked up at Frame.LookupPC: the exact PC for frame 0 and for
// the frame right after an exception frame (an interrupted PC: the
// instruction there has not run, and the row at PC describes the state
// before it), and PC-2 for every other frame, whose PC is a return
// address. The DWARF convention (and the issue that asked for this
// strategy) is PC-1: any address inside the call instruction selects the
// row of the call site, whereas the return address itself may already
// belong to the next row (after a call to a noreturn function at the very
// end of a function it even belongs to the next function's FDE). With
// Thumb code a call is BL (4 bytes) or BLX register (2 bytes) and the
// return address is halfword aligned, so PC-2 lies inside the call just as
// PC-1 does, and it is the address faultline symbolizes (cortex-m.md 6.3).
//
// The caller's PC is the value of the CIE's return address column, raw
// (Thumb bit and all: the walk recognises EXC_RETURN values), its SP the
// CFA, its registers those the rules restore (see Unwind).
//
// Confidence is high at a return address (a call site, which every
// producer describes). For an interrupted PC it is high unless an
// instruction between the start of the row and PC changes the register
// the CFA is based on (see staleAt): clang describes only prologues, so
// in the middle of one of its epilogues the row may be stale; the frame
// then gets medium confidence and a note.
//
// Errors: a *StepError wrapping unwinders.ErrNotApplicable and ErrNoCFI,
// ErrNoFDE, ErrRegisterUnknown or a frame error (frame.ErrUnsupported for a
// DWARF expression) when the strategy has no usable evidence; ErrOutermost
// when the rules say there is no caller; an error wrapping
// unwinders.ErrUnmapped when the stack is not in the dump.
func (u *Unwinder) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	if len(frames) == 0 {
		return unwinders.Frame{}, declined(ErrNoFDE, "no frame to unwind")
	}
	cur := &frames[len(frames)-1]
	if cur.Kind == unwinders.KindException {
		return unwinders.Frame{}, declined(ErrNoFDE, "exception pseudo-frames are stepped by the walk")
	}
	tab, err := u.tableFor(t, cur.LookupPC())
	if err != nil {
		return unwinders.Frame{}, declined(err, "%s", msg(err))
	}
	pc := cur.LookupPC()
	fde, row, err := tab.rowAt(pc)
	if fde == nil {
		return unwinders.Frame{}, declined(ErrNoFDE, "no FDE covers 0x%08x", pc)
	}
	if err != nil {
		return unwinders.Frame{}, declined(err, "%v: %s", fde, msg(err))
	}
	caller, err := Unwind(t.Mem, row, fde.CIE.RAColumn, cur)
	if err != nil {
		if errors.Is(err, unwinders.ErrUnmapped) || errors.Is(err, ErrOutermost) {
			return unwinders.Frame{}, &StepError{Reason: fmt.Sprintf("0x%08x: %s", pc, msg(err)), Err: err}
		}
		return unwinders.Frame{}, declined(err, "0x%08x: %s", pc, msg(err))
	}
	if !cur.ReturnAddress {
		if why := tab.staleAt(t.Mem, row, pc); why != "" {
			caller.Confidence = unwinders.ConfidenceMedium
			caller.Note = why
		}
	}
	return caller, nil
}

// maxSweep bounds the instructions staleAt decodes.
const maxSweep = 4096

// staleAt reports why the row that starts at row.Loc may not describe an
// interrupted pc: an instruction in [row.Loc, pc) writes the register the
// CFA is based on without a new row (a producer that describes only
// prologues, as clang does, leaves the epilogue's "add sp" or "mov sp, r7"
// undescribed). The row starts at an instruction boundary, so a linear
// sweep from there is sound; a literal pool in between can only cause a
// false alarm. "" means the row holds.
func staleAt(m unwinders.Memory, row *frame.Row, pc uint32) string {
	if row.CFA.IsExpression() || row.CFA.Reg >= 16 {
		return "the CFA rule cannot be checked"
	}
	d := thumb.NewDecoder(m, uint32(row.Loc), pc)
	var in thumb.Inst
	for n := 0; ; n++ {
		if n == maxSweep {
			return fmt.Sprintf("more than %d instructions since the last CFI row at 0x%08x", maxSweep, row.Loc)
		}
		err := d.Next(&in)
		if err == io.EOF {
			return ""
		}
		if err != nil {
			return fmt.Sprintf("the code since the last CFI row at 0x%08x cannot be read", row.Loc)
		}
		if in.Writes&(1<<row.CFA.Reg) != 0 {
			return fmt.Sprintf("the instruction at 0x%08x changes %s, on which the CFA is based, without a CFI row (an undescribed epilogue?)", in.Addr, regName(row.CFA.Reg))
		}
	}
}

// Unwind applies row to frame f and returns the caller frame: PC the raw
// value of return address column ra, SP the CFA, Method "cfi", confidence
// high. It does not check whether f's PC is a call site.
//
// The caller's registers are f's, changed by the rules: a register saved
// at CFA+N (offset) is read from memory, val_offset gives CFA+N, register
// gives the other register's value in f, same value keeps f's value and
// undefined makes it unknown. A register without a rule keeps f's value if
// the AAPCS makes it callee-saved (r4-r11, s16-s31) and is unknown
// otherwise (r0-r3, r12, s0-s15, FPSCR); LR, PC and xPSR are unknown in
// the caller (its PC is the return address; a call clobbers LR). The
// return address column without a rule means "same value": LR of f, for a
// leaf function that never saved it. VFP double registers d0-d15 are
// s0-s31 in pairs; d16-d31 do not exist on Cortex-M and their rules are
// ignored.
//
// Errors: ErrRegisterUnknown when the CFA or the return address needs a
// register f does not know, frame.ErrUnsupported for a DWARF expression or
// a CFA based on a non-core register, ErrOutermost for an undefined return
// address, an error wrapping unwinders.ErrUnmapped when a saved register
// is not in memory.
func Unwind(m unwinders.Memory, row *frame.Row, ra uint64, f *unwinders.Frame) (unwinders.Frame, error) {
	get := func(dw uint16) (uint32, bool) {
		switch {
		case dw == 13:
			return f.SP, true
		case dw < 16:
			return f.Regs.Get(unwinders.Reg(dw))
		case dw >= 64 && dw < 96:
			return f.Regs.Get(unwinders.S(int(dw - 64)))
		}
		return 0, false
	}
	if row.CFA.IsExpression() {
		return unwinders.Frame{}, fmt.Errorf("the CFA is a DWARF expression: %w", frame.ErrUnsupported)
	}
	if row.CFA.Reg >= 16 {
		return unwinders.Frame{}, fmt.Errorf("the CFA is based on %s, not a core register: %w", frame.RegName(uint64(row.CFA.Reg)), frame.ErrUnsupported)
	}
	base, ok := get(row.CFA.Reg)
	if !ok {
		return unwinders.Frame{}, fmt.Errorf("%w: the CFA is %v and %s is not known", ErrRegisterUnknown, row.CFA, regName(row.CFA.Reg))
	}
	cfa64 := int64(base) + row.CFA.Offset
	if cfa64 < 0 || cfa64 > 0xffffffff {
		return unwinders.Frame{}, fmt.Errorf("%w: the CFA %v = 0x%x is outside the address space", frame.ErrFormat, row.CFA, cfa64)
	}
	cfa := uint32(cfa64)

	regs := f.Regs
	regs.ForgetCallerSaved()
	for _, r := range []unwinders.Reg{unwinders.LR, unwinders.PC, unwinders.XPSR} {
		regs.Forget(r)
	}
	// value computes the caller's value of a 32-bit register from rule:
	// ok=false leaves it unknown. calleeSaved tells what no rule means.
	value := func(dw uint16, rule frame.Rule, calleeSaved bool) (uint32, bool, error) {
		switch rule.Kind {
		case frame.Unspecified:
			if calleeSaved {
				v, ok := get(dw)
				return v, ok, nil
			}
			return 0, false, nil
		case frame.Undefined:
			return 0, false, nil
		case frame.SameValue:
			v, ok := get(dw)
			return v, ok, nil
		case frame.Offset:
			v, err := unwinders.ReadU32(m, cfa+uint32(rule.Offset))
			if err != nil {
				return 0, false, fmt.Errorf("%s saved at CFA%+d = 0x%08x: %w", regName(dw), rule.Offset, cfa+uint32(rule.Offset), err)
			}
			return v, true, nil
		case frame.ValOffset:
			return cfa + uint32(rule.Offset), true, nil
		case frame.Register:
			v, ok := get(rule.Reg)
			return v, ok, nil
		}
		return 0, false, fmt.Errorf("the rule for %s is a DWARF %s: %w", regName(dw), rule.Kind, frame.ErrUnsupported)
	}
	set := func(r unwinders.Reg, v uint32, ok bool) {
		if ok {
			regs.Set(r, v)
		} else {
			regs.Forget(r)
		}
	}
	for col := range frame.NumColumns {
		rule := row.Regs[col]
		if rule.Kind == frame.Unspecified {
			continue // every case below leaves such a column as it is
		}
		dw := frame.ColumnReg(col)
		if uint64(dw) == ra || dw == 13 || dw == 15 || dw == 14 {
			if rule.Kind == frame.Expression || rule.Kind == frame.ValExpression {
				if _, _, err := value(dw, rule, false); err != nil {
					return unwinders.Frame{}, err
				}
			}
			continue // SP is the CFA; PC, LR and the return address are handled below
		}
		switch {
		case dw < 16:
			callee := dw >= 4 && dw <= 11
			if rule.Kind == frame.Unspecified {
				continue // regs already holds the AAPCS default
			}
			v, ok, err := value(dw, rule, callee)
			if err != nil {
				return unwinders.Frame{}, err
			}
			set(unwinders.Reg(dw), v, ok)
		case dw >= 64 && dw < 96:
			if rule.Kind == frame.Unspecified {
				continue
			}
			v, ok, err := value(dw, rule, dw >= 64+16)
			if err != nil {
				return unwinders.Frame{}, err
			}
			set(unwinders.S(int(dw-64)), v, ok)
		case dw >= 256 && dw < 256+16:
			if rule.Kind == frame.Unspecified {
				continue
			}
			n := int(dw-256) * 2
			lo, hi := unwinders.S(n), unwinders.S(n+1)
			switch rule.Kind {
			case frame.Offset:
				a := cfa + uint32(rule.Offset)
				vlo, err1 := unwinders.ReadU32(m, a)
				vhi, err2 := unwinders.ReadU32(m, a+4)
				if err := errors.Join(err1, err2); err != nil {
					return unwinders.Frame{}, fmt.Errorf("%s saved at CFA%+d = 0x%08x: %w", regName(dw), rule.Offset, a, err)
				}
				regs.Set(lo, vlo)
				regs.Set(hi, vhi)
			case frame.SameValue:
				vlo, ok1 := f.Regs.Get(lo)
				vhi, ok2 := f.Regs.Get(hi)
				set(lo, vlo, ok1)
				set(hi, vhi, ok2)
			case frame.Register:
				// A D register copied into another register: only a D
				// register could hold it; not something compilers emit.
				if rule.Reg >= 256 && rule.Reg < 256+16 {
					k := int(rule.Reg-256) * 2
					vlo, ok1 := f.Regs.Get(unwinders.S(k))
					vhi, ok2 := f.Regs.Get(unwinders.S(k + 1))
					set(lo, vlo, ok1)
					set(hi, vhi, ok2)
				} else {
					regs.Forget(lo)
					regs.Forget(hi)
				}
			case frame.Expression, frame.ValExpression:
				_, _, err := value(dw, rule, false)
				return unwinders.Frame{}, err
			default: // undefined; val_offset makes no sense for a D register
				regs.Forget(lo)
				regs.Forget(hi)
			}
		}
	}

	// The return address.
	raRule := row.Rule(ra)
	if raRule.Kind == frame.Undefined {
		return unwinders.Frame{}, ErrOutermost
	}
	if ra >= 16 && !(ra >= 64 && ra < 96) {
		return unwinders.Frame{}, fmt.Errorf("return address column %s is not a core or single-precision register: %w", frame.RegName(ra), frame.ErrUnsupported)
	}
	ret, ok, err := value(uint16(ra), raRule, true)
	if err != nil {
		return unwinders.Frame{}, err
	}
	if !ok {
		return unwinders.Frame{}, fmt.Errorf("%w: the return address (%s, rule %s) is not known in this frame", ErrRegisterUnknown, regName(uint16(ra)), ruleText(raRule))
	}
	if ra < 16 && ra != 14 && ra != 13 && ra != 15 {
		regs.Forget(unwinders.Reg(ra)) // the caller's value of that register is not its PC
	}
	// The banked stack pointer that was active moves with SP.
	for _, b := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := f.Regs.Get(b); ok && v == f.SP {
			regs.Set(b, cfa)
		}
	}
	regs.Set(unwinders.SP, cfa)
	return unwinders.Frame{
		PC: ret, SP: cfa, Regs: regs, Kind: unwinders.KindNormal, Method: Name,
		Confidence: unwinders.ConfidenceHigh,
	}, nil
}

func regName(dw uint16) string {
	switch dw {
	case 13:
		return "sp"
	case 14:
		return "lr"
	case 15:
		return "pc"
	}
	return frame.RegName(uint64(dw))
}

func ruleText(r frame.Rule) string {
	if r.Kind == frame.Unspecified {
		return "unspecified"
	}
	return r.String()
}

// msg is an error's text without the package prefix, for use inside a
// StepError (which adds it once).
func msg(err error) string { return strings.TrimPrefix(err.Error(), "cfi: ") }
