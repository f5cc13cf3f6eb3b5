package cfi

import (
	"errors"
	"fmt"
	"sync"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
)

// Errors of this package; a step's error wraps one of them (or one of
// package frame's) and, when the next strategy should try,
// unwinders.ErrNotApplicable.
var (
	// ErrNoCFI: the program has neither .debug_frame nor .eh_frame FDEs.
	ErrNoCFI = errors.New("cfi: the program has no call frame information")
	// ErrNoFDE: no FDE covers the address.
	ErrNoFDE = errors.New("cfi: no FDE covers the address")
	// ErrRegisterUnknown: a rule needs a register this frame does not know.
	ErrRegisterUnknown = errors.New("cfi: a register the rules need is unknown")
	// ErrOutermost: the rules mark the return address undefined: by DWARF
	// 6.4.4 the frame has no caller.
	ErrOutermost = errors.New("cfi: the return address is undefined (outermost frame)")
)

// Table is the call frame information of one program: the decoded
// .debug_frame and .eh_frame sections and an FDE index of each. Lookup
// prefers .debug_frame, which GCC and clang fill for every function
// compiled with -g, and falls back to .eh_frame. A Table is immutable
// (but for a cache of the rows it computed) and safe for concurrent use.
type Table struct {
	sections []*frame.Section
	indexes  []*frame.Index
	problems []error

	rows rowCache
}

// rowCacheMax bounds the addresses a Table remembers the row of: the walks
// of many dumps of one firmware step through the same call sites again and
// again, and running an FDE's instructions up to the address each time
// costs more than the rest of the step. About a kilobyte per row.
const rowCacheMax = 4096

// rowCache remembers RowAt per address. When full it starts over.
type rowCache struct {
	mu sync.Mutex
	m  map[uint32]rowEntry
}

type rowEntry struct {
	fde *frame.FDE // nil: no FDE covers the address
	row *frame.Row // never modified once stored
	err error
}

// rowAt returns the FDE that covers pc (nil when none does) and the row
// that holds at pc, or RowAt's error.
func (t *Table) rowAt(pc uint32) (*frame.FDE, *frame.Row, error) {
	t.rows.mu.Lock()
	e, ok := t.rows.m[pc]
	t.rows.mu.Unlock()
	if ok {
		return e.fde, e.row, e.err
	}
	if fde, found := t.Lookup(pc); found {
		e.fde = fde
		row, err := fde.RowAt(uint64(pc))
		if err != nil {
			e.err = err
		} else {
			e.row = &row
		}
	}
	t.rows.mu.Lock()
	if t.rows.m == nil || len(t.rows.m) >= rowCacheMax {
		t.rows.m = make(map[uint32]rowEntry)
	}
	t.rows.m[pc] = e
	t.rows.mu.Unlock()
	return e.fde, e.row, e.err
}

// Load decodes the call frame sections of p and indexes them. Entries that
// cannot be decoded are left out and reported by Problems; Load fails
// (with ErrNoCFI) only when no FDE at all is left.
//
// FDEs that start at address 0 are kept only when p has a function that
// starts at 0 (Program.FuncAt(0)); those of an ld.lld tombstone never.
// Cost: linear in the size of the sections plus O(n log n) in the FDEs.
func Load(p unwinders.Program) (*Table, error) {
	var opt frame.IndexOptions
	if fn, ok := p.FuncAt(0); ok && fn.Start == 0 {
		opt.CodeAtZero = true
		opt.ZeroEnd = uint64(fn.End)
	}
	var secs []*frame.Section
	var problems []error
	for _, s := range []struct {
		name string
		kind frame.Kind
	}{{".debug_frame", frame.DebugFrame}, {".eh_frame", frame.EHFrame}} {
		addr, data, ok := p.Section(s.name)
		if !ok || len(data) == 0 {
			continue
		}
		sec, err := frame.Parse(s.kind, uint64(addr), data)
		if err != nil {
			problems = append(problems, sec.Errs...)
		}
		secs = append(secs, sec)
	}
	t := NewTable(opt, secs...)
	t.problems = append(problems, t.problems...)
	if t.Len() == 0 {
		if len(problems) > 0 {
			return t, fmt.Errorf("%w (%d entries could not be decoded; the first: %v)", ErrNoCFI, len(problems), problems[0])
		}
		return t, ErrNoCFI
	}
	return t, nil
}

// NewTable indexes already decoded sections, in order of preference.
func NewTable(opt frame.IndexOptions, secs ...*frame.Section) *Table {
	t := &Table{sections: secs}
	for _, s := range secs {
		t.indexes = append(t.indexes, frame.NewIndex(s.FDEs, opt))
	}
	return t
}

// Lookup returns the FDE that covers pc. Cost: a binary search per section.
func (t *Table) Lookup(pc uint32) (*frame.FDE, bool) {
	for _, ix := range t.indexes {
		if f, ok := ix.Lookup(uint64(pc)); ok {
			return f, true
		}
	}
	return nil, false
}

// Len returns the number of indexed FDEs over all sections.
func (t *Table) Len() int {
	n := 0
	for _, ix := range t.indexes {
		n += ix.Len()
	}
	return n
}

// Sections returns the decoded sections, in order of preference.
func (t *Table) Sections() []*frame.Section { return t.sections }

// Indexes returns the FDE index of each section, in the order of Sections.
func (t *Table) Indexes() []*frame.Index { return t.indexes }

// Problems returns the entries that could not be decoded (each a
// *frame.DecodeError).
func (t *Table) Problems() []error { return t.problems }
