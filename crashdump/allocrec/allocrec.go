// Package allocrec reads the table of faultline's device-side allocation
// recorder (firmware-samples/capture/faultline_allocrec.h) from the memory
// of a crash dump: the live heap blocks, each with its size and the return
// addresses of the code that allocated it.
//
// The table, version 1, little-endian:
//
//	offset  field
//	0       magic "FLAR" (0x52414c46)
//	4       version (u16) = 1
//	6       header_size (u16): bytes before the first entry
//	8       entry_size (u16) = 8 + 4 * depth
//	10      depth (u16): return addresses per entry, 1..16
//	12      capacity: entries in the table
//	16      count: live entries, entries[0..count)
//	20      dropped: allocations the full table could not record
//	24      unknown_frees: frees of a pointer the table did not hold
//	28      flags: bit 0 = the stack scan was on
//	32      entries[capacity] of {addr, size, ret[depth]}
//
// ret[0] is the exact return address into the allocator's caller (LR at
// the wrapper); ret[1..] were found by a bounded scan of the caller's stack
// and may be stale. A 0 ends the list.
//
// Everything read is checked: a table that does not hold together is an
// error that says what is wrong, entries whose block lies outside RAM are
// skipped with a problem each, and every loop is bounded by the capacity,
// itself bounded by MaxCapacity.
package allocrec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/unwinders"
)

// Symbol is the table's symbol name in the firmware.
const Symbol = "fl_allocrec"

// Version 1 constants.
const (
	Magic      = 0x52414c46 // "FLAR" in memory order
	Version    = 1
	HeaderSize = 32
	MaxDepth   = 16
	// MaxCapacity bounds the entries read (and so the memory used).
	MaxCapacity = 1 << 16
	// maxProblems bounds the problems listed one by one.
	maxProblems = 8
)

// Layout says where the fields of the table are. The header fields are at
// their version 1 offsets; the entries' place and shape may come from the
// firmware's DWARF types (Source "DWARF"), which the header must then
// agree with, or from the header alone (Source "header").
type Layout struct {
	Source    string // "DWARF" or "header"
	Entries   uint32 // offset of entries[0] in the table
	EntrySize uint32
	AddrOff   uint32 // offsets within an entry
	SizeOff   uint32
	RetOff    uint32
	Depth     int // return addresses per entry
	Capacity  int // entries
}

// Entry is one recorded live block.
type Entry struct {
	Addr uint32
	Size uint32
	// Returns are the return addresses (Thumb bit as stored), ret[0]
	// first; the zeros that end the list are dropped.
	Returns []uint32
}

// Table is the recorder's table as the dump holds it.
type Table struct {
	Addr         uint32
	Version      int
	Layout       Layout
	Capacity     int
	Count        int
	Dropped      uint32
	UnknownFrees uint32
	// Scan says the stack scan was on (ret[1..] may be filled).
	Scan bool
	// Entries are the valid live entries, in table order.
	Entries []Entry
	// Problems are entries that were skipped and other inconsistencies
	// that leave the rest of the table usable.
	Problems []string
}

// ErrCorrupt is wrapped by the errors of a table that cannot be used.
var ErrCorrupt = errors.New("the allocation recorder's table is corrupt")

// Input is what Read needs besides the memory.
type Input struct {
	// Addr is the table's address (the symbol's value).
	Addr uint32
	// SymbolSize is the symbol's size in bytes, 0 when unknown: the
	// capacity must fit in it.
	SymbolSize uint32
	// DWARF is the layout read from the firmware's debug types, nil when
	// it has none (the header's own fields are used).
	DWARF *Layout
	// InRAM says whether [addr, addr+size) is RAM where the allocator can
	// have put a block; nil accepts any address the dump maps.
	InRAM func(addr, size uint32) bool
}

func corrupt(at uint32, format string, args ...any) error {
	return fmt.Errorf("%s at 0x%08x: %s: %w", Symbol, at, fmt.Sprintf(format, args...), ErrCorrupt)
}

// Read reads and checks the table at in.Addr. The error says why the table
// is unusable (unreadable, bad magic, unknown version, a layout that
// contradicts itself or the DWARF types, a count beyond the capacity);
// entries that point outside RAM are skipped and listed in Problems.
func Read(mem unwinders.Memory, in Input) (*Table, error) {
	var h [HeaderSize]byte
	if err := mem.Read(in.Addr, h[:]); err != nil {
		return nil, fmt.Errorf("%s at 0x%08x: the dump does not hold the table's %d-byte header (%v)", Symbol, in.Addr, HeaderSize, err)
	}
	le := binary.LittleEndian
	if m := le.Uint32(h[0:]); m != Magic {
		return nil, corrupt(in.Addr, "magic is 0x%08x, want 0x%08x (\"FLAR\"): not the recorder's table, or it was overwritten", m, uint32(Magic))
	}
	t := &Table{Addr: in.Addr, Version: int(le.Uint16(h[4:]))}
	if t.Version != Version {
		return nil, corrupt(in.Addr, "version %d, this faultline reads version %d", t.Version, Version)
	}
	hsize, esize, depth := uint32(le.Uint16(h[6:])), uint32(le.Uint16(h[8:])), int(le.Uint16(h[10:]))
	capacity, count := le.Uint32(h[12:]), le.Uint32(h[16:])
	t.Dropped, t.UnknownFrees = le.Uint32(h[20:]), le.Uint32(h[24:])
	t.Scan = le.Uint32(h[28:])&1 != 0
	switch {
	case hsize < HeaderSize:
		return nil, corrupt(in.Addr, "header_size is %d, less than the %d bytes of a version 1 header", hsize, HeaderSize)
	case depth < 1 || depth > MaxDepth:
		return nil, corrupt(in.Addr, "depth is %d return addresses per entry, want 1 to %d", depth, MaxDepth)
	case esize != 8+4*uint32(depth):
		return nil, corrupt(in.Addr, "entry_size is %d bytes, but an entry of depth %d has %d", esize, depth, 8+4*depth)
	case capacity > MaxCapacity:
		return nil, corrupt(in.Addr, "capacity is %d entries, more than the %d this reader accepts", capacity, MaxCapacity)
	case count > capacity:
		return nil, corrupt(in.Addr, "count is %d live entries, beyond the capacity of %d", count, capacity)
	}
	total := uint64(hsize) + uint64(capacity)*uint64(esize)
	if in.SymbolSize != 0 && total > uint64(in.SymbolSize) {
		return nil, corrupt(in.Addr, "a header of %d bytes and %d entries of %d bytes make %d bytes, but the symbol has %d", hsize, capacity, esize, total, in.SymbolSize)
	}
	if uint64(in.Addr)+total > 1<<32 {
		return nil, corrupt(in.Addr, "%d bytes of table run past the end of the address space", total)
	}
	l := Layout{Source: "header", Entries: hsize, EntrySize: esize, AddrOff: 0, SizeOff: 4, RetOff: 8, Depth: depth, Capacity: int(capacity)}
	if d := in.DWARF; d != nil {
		if d.Entries != hsize || d.EntrySize != esize || d.Depth != depth || d.Capacity != int(capacity) {
			return nil, corrupt(in.Addr, "the header (entries at %d, %d bytes each, depth %d, capacity %d) contradicts the firmware's debug types (entries at %d, %d bytes each, depth %d, capacity %d)",
				hsize, esize, depth, capacity, d.Entries, d.EntrySize, d.Depth, d.Capacity)
		}
		if uint64(d.AddrOff)+4 > uint64(esize) || uint64(d.SizeOff)+4 > uint64(esize) || uint64(d.RetOff)+4*uint64(depth) > uint64(esize) {
			return nil, corrupt(in.Addr, "the debug types put an entry's fields outside its %d bytes", esize)
		}
		l = *d
		l.Source = "DWARF"
	}
	t.Layout, t.Capacity, t.Count = l, int(capacity), int(count)
	if count == 0 {
		return t, nil
	}
	buf := make([]byte, uint64(count)*uint64(esize))
	if err := mem.Read(in.Addr+hsize, buf); err != nil {
		return nil, fmt.Errorf("%s at 0x%08x: the dump does not hold its %d live entries (%d bytes from 0x%08x): %v", Symbol, in.Addr, count, len(buf), in.Addr+hsize, err)
	}
	seen := make(map[uint32]int, count)
	skipped := 0
	problem := func(format string, args ...any) {
		if skipped++; skipped <= maxProblems {
			t.Problems = append(t.Problems, fmt.Sprintf(format, args...))
		}
	}
	// One backing array for every entry's return addresses, and room for
	// every entry: no growth while reading.
	rets := make([]uint32, 0, int(count)*depth)
	t.Entries = make([]Entry, 0, count)
	for i := 0; i < int(count); i++ {
		e := buf[i*int(esize) : (i+1)*int(esize)]
		ent := Entry{Addr: le.Uint32(e[l.AddrOff:]), Size: le.Uint32(e[l.SizeOff:])}
		first := len(rets)
		for k := 0; k < depth; k++ {
			r := le.Uint32(e[int(l.RetOff)+4*k:])
			if r == 0 {
				break
			}
			rets = append(rets, r)
		}
		ent.Returns = rets[first:len(rets):len(rets)]
		at := in.Addr + hsize + uint32(i)*esize
		switch {
		case ent.Addr == 0:
			problem("entry %d (at 0x%08x) has address 0 below the count: skipped", i, at)
			continue
		case uint64(ent.Addr)+uint64(ent.Size) > 1<<32:
			problem("entry %d (at 0x%08x): a block of %d bytes at 0x%08x runs past 4 GiB: skipped", i, at, ent.Size, ent.Addr)
			continue
		case in.InRAM != nil && !in.InRAM(ent.Addr, max(ent.Size, 1)):
			problem("entry %d (at 0x%08x): the block 0x%08x (%d bytes) is not in RAM: skipped", i, at, ent.Addr, ent.Size)
			continue
		case len(ent.Returns) == 0:
			problem("entry %d (at 0x%08x): block 0x%08x has no return address", i, at, ent.Addr)
		}
		if j, dup := seen[ent.Addr]; dup {
			problem("entries %d and %d both hold block 0x%08x (a crash in the middle of an update, or damage): the second is skipped", j, i, ent.Addr)
			continue
		}
		seen[ent.Addr] = i
		t.Entries = append(t.Entries, ent)
	}
	if skipped > maxProblems {
		t.Problems = append(t.Problems, fmt.Sprintf("and %d more problems", skipped-maxProblems))
	}
	return t, nil
}
