package framepointer

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/unwinders"
)

// Name is the strategy's name and the Method of the frames it produces.
const Name = "framepointer"

// Errors wrapped by Step and Analyze. The first four also wrap
// unwinders.ErrNotApplicable in a StepError: the walk lets the next
// strategy try.
var (
	// ErrNoFramePointer: the function never sets up a frame pointer.
	ErrNoFramePointer = errors.New("framepointer: no frame pointer")
	// ErrNotSetUp: the function has a frame pointer, but not at this PC
	// (prologue, epilogue, or r7 reused).
	ErrNotSetUp = errors.New("framepointer: frame pointer not set up at this PC")
	// ErrNotDecodable: the function's code could not be analysed.
	ErrNotDecodable = errors.New("framepointer: code not decodable")
	// ErrRegisterUnknown: the frame does not know a register it needs.
	ErrRegisterUnknown = errors.New("framepointer: register unknown")
	// ErrBadChain: the frame record is not where a valid frame record can
	// be (outside the stack, misaligned, below SP, a cycle).
	ErrBadChain = errors.New("framepointer: bad frame-pointer chain")
	// ErrChainEnd: the frame pointer is 0, the usual end of a chain.
	ErrChainEnd = errors.New("framepointer: end of the frame-pointer chain")
)

// LayoutKind names the frame layouts of cortex-m.md section 4.
type LayoutKind uint8

const (
	LayoutNone  LayoutKind = iota
	LayoutClang            // r7 points at the {saved r7, lr} record
	LayoutGCC              // the record is above r7 (GCC bug 92172: r7 = bottom of the locals)
	LayoutAPCS             // ARM-state APCS: fp points at the saved pc
	// LayoutLeaf: an interrupted function that has not touched r7 or LR
	// (a leaf, or a function before its prologue): LR is the return
	// address and the caller's SP is SP minus what the function pushed.
	LayoutLeaf
)

func (k LayoutKind) String() string {
	switch k {
	case LayoutClang:
		return "r7 -> {r7, lr}"
	case LayoutGCC:
		return "r7 + N -> {r7, lr}"
	case LayoutAPCS:
		return "APCS fp -> {fp, sp, lr, pc}"
	case LayoutLeaf:
		return "leaf: return address in LR"
	}
	return "none"
}

// Layout says where a frame's record lies relative to its frame pointer
// at one PC. All offsets are in bytes from the frame pointer's value.
type Layout struct {
	Kind LayoutKind
	FP   unwinders.Reg // R7 (Thumb) or R11 (ARM APCS)
	// CFA is the SP at function entry (the caller's SP) minus FP.
	CFA int32
	// SavedFP is where the caller's frame pointer is saved.
	SavedFP int32
	// LRSaved says the return address is saved at SavedLR; when false the
	// function (a leaf) never saved LR, which still holds it.
	LRSaved bool
	SavedLR int32
	// Saved holds the slots of the other callee-saved registers the
	// prologue pushed (r4-r6, r8-r11), for the registers in SavedMask.
	Saved     [16]int32
	SavedMask uint16
	// Proven says the layout was decoded from the function's code along
	// every path to the PC; false for the assumed clang layout of a
	// function whose code could not be analysed, and where the analysis
	// had to assume that unreached code is body code.
	Proven bool
}

// clangLayout is assumed for functions whose prologue cannot be decoded.
var clangLayout = Layout{Kind: LayoutClang, FP: unwinders.R7, CFA: 8, SavedFP: 0, LRSaved: true, SavedLR: 4}

// StepError is the error Step returns: Reason says why in words; it
// unwraps to the package error that caused it and, for a declined step,
// to unwinders.ErrNotApplicable.
type StepError struct {
	Reason        string
	NotApplicable bool
	Err           error
}

func (e *StepError) Error() string { return "framepointer: " + e.Reason }

// Unwrap returns the cause and, for a declined step,
// unwinders.ErrNotApplicable.
func (e *StepError) Unwrap() []error {
	if e.NotApplicable {
		return []error{unwinders.ErrNotApplicable, e.Err}
	}
	return []error{e.Err}
}

// stepError wraps err (whose text starts with a package sentinel's) into
// a StepError; errors that mean "no evidence here" are not applicable.
func stepError(err error) error {
	na := errorsIsAny(err, ErrNoFramePointer, ErrNotSetUp, ErrNotDecodable, ErrRegisterUnknown)
	return &StepError{Reason: trimPrefix(err), NotApplicable: na, Err: err}
}

func trimPrefix(err error) string {
	s := err.Error()
	for strings.HasPrefix(s, "framepointer: ") {
		s = strings.TrimPrefix(s, "framepointer: ")
	}
	return s
}

// Options tune the strategy.
type Options struct {
	// Strict refuses functions whose code cannot be analysed instead of
	// assuming clang's r7 -> {r7, lr} layout for them.
	Strict bool
}

// Unwinder is the frame-pointer strategy. Build it with New; it caches the
// analysis of every function it meets (per Program, Memory and function
// start) and is safe for concurrent use.
type Unwinder struct {
	opt Options

	mu    sync.Mutex
	cache map[cacheKey]*analysis
}

type cacheKey struct {
	prog  unwinders.Program
	mem   unwinders.Memory
	start uint32
}

// maxCached bounds the cache; it is emptied when full.
const maxCached = 4096

// New returns the strategy with the default options.
func New() *Unwinder { return NewWithOptions(Options{}) }

// NewWithOptions returns the strategy with opt.
func NewWithOptions(opt Options) *Unwinder {
	return &Unwinder{opt: opt, cache: map[cacheKey]*analysis{}}
}

// Name implements unwinders.Unwinder.
func (u *Unwinder) Name() string { return Name }

// Step implements unwinders.Unwinder: it finds the caller of the last
// frame through the frame pointer.
//
// The function containing the frame's LookupPC is analysed (see Analyze);
// at the frame's PC r7 must be a frame pointer (in ARM code, fp set up by
// the APCS prologue), else Step declines. The record it points to gives
// the caller's r7 (r11), the raw return address (from LR for a leaf that
// never saved it) and the other callee-saved registers the prologue
// pushed; the caller's SP is the SP at the function's entry. Caller-saved
// registers are unknown in the caller. Confidence is high when the layout
// was proven from the code, medium otherwise (a function whose code could
// not be analysed, unwound with clang's layout unless Options.Strict).
//
// Checks: every slot read lies in the stack (Target.InStack), 4-aligned,
// at or above the frame's SP (a clang frame without locals has r7 == SP,
// so the record may start exactly at SP); the caller's SP lies strictly
// above the frame's SP; the frame pointer was not used by an earlier
// frame of this walk (a cyclic chain). For an assumed layout the saved r7
// must be 0 or above the record and the return address a Thumb address.
//
// Errors: a *StepError that wraps unwinders.ErrNotApplicable and one of
// ErrNoFramePointer, ErrNotSetUp, ErrNotDecodable or ErrRegisterUnknown
// when there is no evidence; ErrChainEnd, ErrBadChain or an error wrapping
// unwinders.ErrUnmapped when the chain is broken.
func (u *Unwinder) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	if len(frames) == 0 {
		return unwinders.Frame{}, stepError(fmt.Errorf("%w: no frame to unwind", ErrRegisterUnknown))
	}
	cur := &frames[len(frames)-1]
	if cur.Kind == unwinders.KindException {
		return unwinders.Frame{}, stepError(fmt.Errorf("%w: exception pseudo-frames are stepped by the walk", ErrNoFramePointer))
	}
	l, err := u.layoutAt(t, cur)
	if err != nil {
		// Only a return address proves the function is past its prologue
		// (it made a call): an interrupted PC in code that cannot be
		// analysed (or in no function at all, after a call through a bad
		// pointer) may be anywhere.
		if u.opt.Strict || !errors.Is(err, ErrNotDecodable) || !cur.ReturnAddress {
			return unwinders.Frame{}, stepError(err)
		}
		l = clangLayout
	}
	caller, err := unwindWith(t, frames, &l)
	if err != nil {
		return unwinders.Frame{}, stepError(err)
	}
	// A frame is no surer than the registers it was computed from.
	caller.Confidence = min(caller.Confidence, cur.Confidence)
	return caller, nil
}

// LayoutAt returns the layout of frame f's function at f's PC, from the
// cache when it was analysed before. Errors as for Analyze.
func (u *Unwinder) LayoutAt(t *unwinders.Target, f *unwinders.Frame) (Layout, error) {
	return u.layoutAt(t, f)
}

func (u *Unwinder) layoutAt(t *unwinders.Target, f *unwinders.Frame) (Layout, error) {
	if t.Prog == nil {
		return Layout{}, fmt.Errorf("%w: without symbols the function start of 0x%08x is not known", ErrNotDecodable, f.PC)
	}
	fn, ok := t.Prog.FuncAt(f.LookupPC())
	if !ok {
		return Layout{}, fmt.Errorf("%w: 0x%08x is in no known function", ErrNotDecodable, f.PC)
	}
	if !fn.Thumb {
		return analyzeARM(t.Mem, fn, f.PC, f.ReturnAddress)
	}
	a, err := u.analysis(t, fn, f.PC)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %v", ErrNotDecodable, err)
	}
	s, err := a.stateAt(f.PC, f.ReturnAddress)
	if err != nil {
		return Layout{}, err
	}
	return a.layout(s, f.PC)
}

// analysis returns the cached analysis of fn, analysing it when it is not
// cached or was analysed only up to before pc.
func (u *Unwinder) analysis(t *unwinders.Target, fn unwinders.Function, pc uint32) (*analysis, error) {
	limit := funcLimit(fn, pc)
	cacheable := comparable(t.Prog) && comparable(t.Mem)
	key := cacheKey{start: fn.Start}
	if cacheable {
		key.prog, key.mem = t.Prog, t.Mem
		u.mu.Lock()
		a, ok := u.cache[key]
		u.mu.Unlock()
		if ok && a.fn == fn && a.limit >= limit {
			return a, nil
		}
	}
	a, err := analyzeThumb(t.Mem, fn, limit)
	if err != nil {
		return nil, err
	}
	if cacheable {
		u.mu.Lock()
		if len(u.cache) >= maxCached {
			clear(u.cache)
		}
		u.cache[key] = a
		u.mu.Unlock()
	}
	return a, nil
}

func comparable(x any) bool { return x != nil && reflect.TypeOf(x).Comparable() }

// unwindWith reads the record that layout l describes for the last frame
// and returns the caller.
func unwindWith(t *unwinders.Target, frames []unwinders.Frame, l *Layout) (unwinders.Frame, error) {
	cur := &frames[len(frames)-1]
	if l.Kind == LayoutLeaf {
		return unwindLeaf(t, cur, l)
	}
	fpName := l.FP.String()
	fp, ok := cur.Regs.Get(l.FP)
	if !ok {
		return unwinders.Frame{}, fmt.Errorf("%w: %s of this frame is not known", ErrRegisterUnknown, fpName)
	}
	if fp == 0 {
		return unwinders.Frame{}, fmt.Errorf("%w: %s is 0", ErrChainEnd, fpName)
	}
	if fp&3 != 0 {
		return unwinders.Frame{}, fmt.Errorf("%w: %s 0x%08x is not 4-aligned", ErrBadChain, fpName, fp)
	}
	for i := 0; i+1 < len(frames); i++ {
		if frames[i+1].Method != Name {
			continue
		}
		if strings.Contains(frames[i+1].Note, leafNote) { // the walk prefixes where a step note comes from
			// A leaf step (LayoutLeaf): frame i's r7 was its caller's
			// frame pointer, not its own.
			continue
		}
		if v, ok := frames[i].Regs.Get(l.FP); ok && v == fp {
			return unwinders.Frame{}, fmt.Errorf("%w: %s 0x%08x was already the frame pointer of frame %d: the chain is cyclic", ErrBadChain, fpName, fp, i)
		}
	}
	slot := func(off int32, what string) (uint32, error) {
		a := int64(fp) + int64(off)
		switch {
		case a < 0 || a+4 > 1<<32:
			return 0, fmt.Errorf("%w: %s at %s%+d is outside the address space", ErrBadChain, what, fpName, off)
		case a < int64(cur.SP):
			return 0, fmt.Errorf("%w: %s at 0x%08x (%s 0x%08x%+d) is below SP 0x%08x", ErrBadChain, what, a, fpName, fp, off, cur.SP)
		case !t.InStack(uint32(a)) || !t.InStack(uint32(a+4)):
			return 0, fmt.Errorf("%w: %s at 0x%08x (%s 0x%08x%+d) is outside the stack", ErrBadChain, what, a, fpName, fp, off)
		}
		v, err := unwinders.ReadU32(t.Mem, uint32(a))
		if err != nil {
			return 0, fmt.Errorf("reading %s at 0x%08x: %w", what, a, err)
		}
		return v, nil
	}
	savedFP, err := slot(l.SavedFP, "the saved "+fpName)
	if err != nil {
		return unwinders.Frame{}, err
	}
	var ret uint32
	if l.LRSaved {
		if ret, err = slot(l.SavedLR, "the saved LR"); err != nil {
			return unwinders.Frame{}, err
		}
	} else if ret, ok = cur.Regs.Get(unwinders.LR); !ok {
		return unwinders.Frame{}, fmt.Errorf("%w: the function never saved LR and this frame does not know it", ErrRegisterUnknown)
	}
	cfa := int64(fp) + int64(l.CFA)
	switch {
	case cfa <= int64(cur.SP):
		return unwinders.Frame{}, fmt.Errorf("%w: the caller's SP (%s 0x%08x%+d) is not above SP 0x%08x", ErrBadChain, fpName, fp, l.CFA, cur.SP)
	case cfa >= 1<<32 || !t.InStack(uint32(cfa)):
		return unwinders.Frame{}, fmt.Errorf("%w: the caller's SP (%s 0x%08x%+d) is outside the stack", ErrBadChain, fpName, fp, l.CFA)
	}
	callerSP := uint32(cfa)
	if l.Kind == LayoutAPCS {
		sp, err := slot(-8, "the saved sp")
		if err != nil {
			return unwinders.Frame{}, err
		}
		if sp != callerSP {
			return unwinders.Frame{}, fmt.Errorf("%w: the saved sp 0x%08x at fp-8 is not fp+4 (0x%08x)", ErrBadChain, sp, callerSP)
		}
	}
	if !l.Proven {
		// An assumed layout: demand what a real chain would show.
		if savedFP != 0 && int64(savedFP) <= cfa-4 {
			return unwinders.Frame{}, fmt.Errorf("%w: the saved %s 0x%08x does not lie above the record at 0x%08x (assumed layout)", ErrBadChain, fpName, savedFP, fp)
		}
		if ret&1 == 0 {
			return unwinders.Frame{}, fmt.Errorf("%w: the saved LR 0x%08x is not a Thumb return address (assumed layout)", ErrBadChain, ret)
		}
	}
	regs := cur.Regs
	regs.ForgetCallerSaved()
	for _, r := range []unwinders.Reg{unwinders.LR, unwinders.PC, unwinders.XPSR} {
		regs.Forget(r)
	}
	for m := l.SavedMask; m != 0; m &= m - 1 {
		r := unwinders.Reg(bits.TrailingZeros16(m))
		v, err := slot(l.Saved[r], "the saved "+r.String())
		if err != nil {
			return unwinders.Frame{}, err
		}
		regs.Set(r, v)
	}
	regs.Set(l.FP, savedFP)
	// The banked stack pointer that was active moves with SP.
	for _, b := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := cur.Regs.Get(b); ok && v == cur.SP {
			regs.Set(b, callerSP)
		}
	}
	regs.Set(unwinders.SP, callerSP)
	conf, note := unwinders.ConfidenceHigh, ""
	switch {
	case *l == clangLayout:
		conf, note = unwinders.ConfidenceMedium, "frame layout assumed ("+l.Kind.String()+"): the function's code could not be analysed"
	case !l.Proven:
		conf, note = unwinders.ConfidenceMedium, "frame layout assumed for code reached through a jump the analysis does not follow"
	}
	return unwinders.Frame{
		PC: ret, SP: callerSP, Regs: regs, Kind: unwinders.KindNormal, Method: Name,
		Confidence: conf, Note: note,
	}, nil
}

// leafNote starts the Note of a frame stepped out of a leaf (LayoutLeaf).
const leafNote = "a leaf: the return address is still in LR"

// unwindLeaf steps out of a frame whose function has not touched r7 or LR
// up to its PC (LayoutLeaf): the caller's PC is LR, its SP is SP plus what
// the function pushed (l.CFA, from the analysis), r7 and the other
// callee-saved registers are the caller's except those the function saved
// (l.Saved, SP-relative). This is the frame-0 rule of every frame-pointer
// unwinder: a leaf has no record of its own, and the chain of r7 records
// starts at its caller.
func unwindLeaf(t *unwinders.Target, cur *unwinders.Frame, l *Layout) (unwinders.Frame, error) {
	ret, ok := cur.Regs.Get(unwinders.LR)
	if !ok {
		return unwinders.Frame{}, fmt.Errorf("%w: the function never saved LR and this frame does not know it", ErrRegisterUnknown)
	}
	cfa := int64(cur.SP) + int64(l.CFA)
	if cfa >= 1<<32 || !t.InStack(uint32(cfa)) {
		return unwinders.Frame{}, fmt.Errorf("%w: the caller's SP (SP 0x%08x%+d) is outside the stack", ErrBadChain, cur.SP, l.CFA)
	}
	callerSP := uint32(cfa)
	regs := cur.Regs
	regs.ForgetCallerSaved()
	for _, r := range []unwinders.Reg{unwinders.LR, unwinders.PC, unwinders.XPSR} {
		regs.Forget(r)
	}
	for m := l.SavedMask; m != 0; m &= m - 1 {
		r := unwinders.Reg(bits.TrailingZeros16(m))
		a := int64(cur.SP) + int64(l.Saved[r])
		if a < int64(cur.SP) || a+4 > cfa {
			return unwinders.Frame{}, fmt.Errorf("%w: the saved %s at SP%+d is not in the frame", ErrBadChain, r, l.Saved[r])
		}
		v, err := unwinders.ReadU32(t.Mem, uint32(a))
		if err != nil {
			return unwinders.Frame{}, fmt.Errorf("reading the saved %s at 0x%08x: %w", r, a, err)
		}
		regs.Set(r, v)
	}
	for _, b := range []unwinders.Reg{unwinders.MSP, unwinders.PSP} {
		if v, ok := cur.Regs.Get(b); ok && v == cur.SP {
			regs.Set(b, callerSP)
		}
	}
	regs.Set(unwinders.SP, callerSP)
	conf, note := unwinders.ConfidenceHigh, leafNote
	if !l.Proven {
		conf = unwinders.ConfidenceMedium
		note += " (assumed for code reached through a jump the analysis does not follow)"
	}
	return unwinders.Frame{
		PC: ret, SP: callerSP, Regs: regs, Kind: unwinders.KindNormal, Method: Name,
		Confidence: conf, Note: note,
	}, nil
}
