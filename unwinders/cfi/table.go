package cfi

import (
	"bytes"
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

	rows  rowCache
	stale staleCache
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

// staleCache remembers staleAt's answers for the interrupted PCs of many
// dumps of one firmware (every RTOS task switched out at the same place),
// each with the code bytes it decoded: an answer is reused only when the
// memory holds those very bytes again, so a dump with its own (different)
// copy of the code gets its own answer. Bounded in entries and bytes; when
// full it starts over.
type staleCache struct {
	mu    sync.Mutex
	m     map[staleKey]staleEntry
	bytes int
}

type staleKey struct {
	loc, pc uint32
	reg     uint16 // the register the CFA is based on
}

type staleEntry struct {
	code []byte // a copy of [loc, pc+2): every halfword staleAt may read
	why  string
}

const (
	staleCacheMax     = 4096
	staleCacheBytes   = 1 << 20
	staleCacheMaxCode = 1024 // longer sweeps are not cached
)

// codeBytes is what staleCachedAt needs of the memory: the bytes of a
// range in place (unwinders.Image).
type codeBytes interface {
	Bytes(addr uint32, n int) ([]byte, bool)
}

// staleAt is staleAt (unwinder.go) with the answers cached.
func (t *Table) staleAt(m unwinders.Memory, row *frame.Row, pc uint32) string {
	loc := uint32(row.Loc)
	cb, ok := m.(codeBytes)
	if !ok || row.CFA.IsExpression() || row.CFA.Reg >= 16 || uint64(row.Loc) != uint64(loc) || pc < loc || pc-loc > staleCacheMaxCode {
		return staleAt(m, row, pc)
	}
	code, ok := cb.Bytes(loc, int(pc-loc)+2)
	if !ok {
		return staleAt(m, row, pc)
	}
	key := staleKey{loc: loc, pc: pc, reg: row.CFA.Reg}
	t.stale.mu.Lock()
	e, hit := t.stale.m[key]
	t.stale.mu.Unlock()
	if hit && bytes.Equal(e.code, code) {
		return e.why
	}
	why := staleAt(m, row, pc)
	t.stale.mu.Lock()
	if t.stale.m == nil || len(t.stale.m) >= staleCacheMax || t.stale.bytes+len(code) > staleCacheBytes {
		t.stale.m = make(map[staleKey]staleEntry)
		t.stale.bytes = 0
	}
	if old, ok := t.stale.m[key]; ok {
		t.stale.bytes -= len(old.code)
	}
	t.stale.m[key] = staleEntry{code: bytes.Clone(code), why: why}
	t.stale.bytes += len(code)
	t.stale.mu.Unlock()
	return why
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
