package elfsym

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
)

// Location is one level of the source position of an address. Symbolize
// returns an inline chain innermost first: every entry but the last is a
// function inlined into the next one, and the last is the out-of-line
// function that owns the code.
type Location struct {
	// Function is the readable name: demangled, the inlined function for
	// an inlined level. "" when unknown (printers show "??").
	Function string `json:"function,omitempty"`
	// LinkageName is the name exactly as addr2line -f prints it: the
	// mangled linkage name for C++, else the same as Function.
	LinkageName string `json:"linkage_name,omitempty"`
	// Symbol is the raw ELF function symbol containing the address ("" if
	// none), the same for every level of a chain.
	Symbol string `json:"symbol,omitempty"`
	// Offset is the address minus the start of Symbol.
	Offset uint32 `json:"offset"`
	// File is the source file as addr2line prints it: DW_AT_comp_dir,
	// the line table's directory and the file name joined without
	// cleaning. For an inlined level's caller it is DW_AT_call_file.
	File string `json:"file,omitempty"`
	// Line is the line number, 0 if unknown.
	Line int `json:"line,omitempty"`
	// Column is the column of a call site (DW_AT_call_column), 0 if unknown.
	Column int `json:"column,omitempty"`
	// Discriminator is the line table's discriminator of the innermost
	// level (DWARF 5 section 6.2.2), 0 if none.
	Discriminator int `json:"discriminator,omitempty"`
	// Inlined is true for every level that was inlined into the next one.
	Inlined bool `json:"inlined,omitempty"`
}

// Symbolize returns the source locations of addr, innermost inlined
// function first, following addr2line -f -i (binutils 2.40):
//
//   - the line comes from the line table row that covers addr, in the
//     compilation unit whose covering sequence is the shortest;
//   - the innermost function is the deepest DW_TAG_subprogram or
//     DW_TAG_inlined_subroutine whose ranges hold addr; each enclosing
//     inlined level adds an entry located at the DW_AT_call_file and
//     DW_AT_call_line of the level inside it;
//   - without DWARF (or without a line for addr) the function is the
//     nearest function symbol below addr in addr's section, unless addr
//     lies past that symbol's size (addr2line names it anyway).
//
// It returns no locations (and no error) when nothing is known about addr:
// addr lies in no allocated section, or nothing describes it. Debugging
// information of functions removed by --gc-sections is never used (see the
// package documentation). The error reports undecodable DWARF of the
// compilation unit holding addr; the locations are still the best known.
// Cost: O(log n) after the first lookup in a compilation unit, which
// decodes that unit.
func (f *File) Symbolize(addr uint32) ([]Location, error) {
	return f.appendSymbolize(nil, addr, nil)
}

// AppendSymbolize is Symbolize appending the locations to dst, so that a
// caller symbolizing many addresses can reuse one slice (pass dst[:0]) and
// allocate nothing per address once the units are decoded. It returns dst
// unchanged when nothing is known about addr.
func (f *File) AppendSymbolize(dst []Location, addr uint32) ([]Location, error) {
	return f.appendSymbolize(dst, addr, nil)
}

// symbolize is Symbolize; skip, when not nil, hides function nodes from the
// innermost-function search (tests use it to model addr2line quirks).
func (f *File) symbolize(addr uint32, skip func(*fnode) bool) ([]Location, error) {
	return f.appendSymbolize(nil, addr, skip)
}

func (f *File) appendSymbolize(dst []Location, addr uint32, skip func(*fnode) bool) ([]Location, error) {
	if skip != nil {
		return f.appendSymbolizeOpt(dst, addr, skip, true)
	}
	if e, ok := f.symCache.get(addr); ok {
		return append(dst, e.locs...), e.err
	}
	base := len(dst)
	dst, err := f.appendSymbolizeOpt(dst, addr, nil, true)
	f.symCache.put(addr, symEntry{locs: slices.Clone(dst[base:]), err: err})
	return dst, err
}

// symCacheMax bounds the addresses a File remembers the symbolization of:
// a firmware's dumps keep returning to the same few hundred call sites,
// and at most this many chains (a few hundred bytes each) stay in memory.
const symCacheMax = 1 << 14

// symCache remembers Symbolize's answer per address. Safe for concurrent
// use; when full it starts over.
type symCache struct {
	mu sync.Mutex
	m  map[uint32]symEntry
}

type symEntry struct {
	locs []Location // never modified once stored
	err  error
}

func (c *symCache) get(addr uint32) (symEntry, bool) {
	c.mu.Lock()
	e, ok := c.m[addr]
	c.mu.Unlock()
	return e, ok
}

func (c *symCache) put(addr uint32, e symEntry) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= symCacheMax {
		c.m = make(map[uint32]symEntry)
	}
	c.m[addr] = e
	c.mu.Unlock()
}

// AppendAddr2LineText appends what `addr2line -f -i` (with demangle, -C)
// prints for addr: AppendSymbolize and AppendAddr2LineAt in one step,
// except that names are demangled only when the text shows them (each
// distinct name once per File). It allocates only to grow dst (and for
// the first demangling of a name). The error is Symbolize's.
func (f *File) AppendAddr2LineText(dst []byte, addr uint32, demangle bool) ([]byte, error) {
	var buf [16]Location
	locs, err := f.appendSymbolizeOpt(buf[:0], addr, nil, demangle)
	return f.AppendAddr2LineAt(dst, addr, locs, demangle), err
}

// appendSymbolizeOpt is appendSymbolize; without readable, the Function
// of a level with a linkage name is left empty (the text form without -C
// prints the linkage names only).
func (f *File) appendSymbolizeOpt(dst []Location, addr uint32, skip func(*fnode) bool, readable bool) ([]Location, error) {

	sec := f.allocSectionAt(addr)
	if sec == nil {
		return dst, nil
	}
	var raw string
	var off uint32
	if s, ok := f.syms.funcs.innermost(addr); ok {
		raw, off = s.name, addr-s.start
	}

	var (
		found   bool
		row     lineRow
		lt      *lineTable
		u       *unit
		fn      int32 = -1
		bestLen       = ^uint64(0)
		err     error
	)
	if f.dw != nil {
		f.dw.unitRangesAt(addr, func(c *cuRange) bool {
			cu := f.dw.units[c.unit]
			cu.load(f.dw)
			if cu.err != nil && err == nil {
				err = fmt.Errorf("%s: DWARF: %v", f.name, cu.err)
			}
			if cu.lines == nil {
				return true
			}
			rw, seqLen, ok := cu.lines.findWithLen(addr)
			if !ok || seqLen > bestLen {
				return true
			}
			found, row, lt, u, bestLen = true, rw, cu.lines, cu, seqLen
			fn = cu.innermost(addr, skip)
			return true
		})
	}

	var loc Location
	loc.Symbol, loc.Offset = raw, off
	a2l, haveSym := f.addr2lineSymbol(addr, sec)
	// addr2line would name a sized symbol for an address past its end (in
	// the padding before the next function); elfsym does not blame it.
	inGap := haveSym && a2l.size > 0 && uint64(addr) >= uint64(a2l.start)+uint64(a2l.size)
	if found {
		loc.File = lt.fileName(uint64(row.file()))
		loc.Line = int(row.line)
		loc.Discriminator = int(row.disc)
	}
	switch {
	case fn >= 0 && u.nodes[fn].linkage:
		loc.LinkageName = u.nodes[fn].name
	case fn >= 0:
		loc.LinkageName = f.a2lName(&u.nodes[fn], addr, a2l, haveSym, true)
	case haveSym && !inGap:
		loc.LinkageName = a2l.name
		if !found {
			loc.File = a2l.file
		}
	}
	if !found && (!haveSym || inGap) {
		return dst, err
	}
	if readable {
		loc.Function = f.demangled(loc.LinkageName)
	}
	base := len(dst)
	locs := append(dst, loc)
	for fn >= 0 && u.nodes[fn].inlined && u.nodes[fn].parent >= 0 && len(locs)-base <= len(u.nodes) {
		n := &u.nodes[fn]
		locs[len(locs)-1].Inlined = true
		p := &u.nodes[n.parent]
		pname := f.a2lName(p, addr, a2l, haveSym, false)
		locs = append(locs, Location{
			Function:    readableName(f, pname, readable),
			LinkageName: pname,
			Symbol:      raw,
			Offset:      off,
			File:        lt.fileName(n.callFile),
			Line:        int(n.callLine),
			Column:      int(n.callCol),
		})
		fn = n.parent
	}
	return locs, err
}

// a2lName returns the name addr2line prints for function node n at addr
// (innermost: n is the innermost level there). A linkage name (and any
// name in a C unit) is printed as is. For a C++ function known only by
// its DW_AT_name (lambdas, static functions, inlined wrappers), binutils
// 2.40 asks the symbol table instead, prints the name of the symbol that
// contains the address the first time the function is the innermost
// level of a lookup, and from then on prints the function's cached name:
// that symbol's name if the symbol starts where the function's first
// range does, else the DW_AT_name; a function that was never innermost
// keeps its DW_AT_name. The answer thus depends on the order of queries;
// this models the queries of ascending addresses (objdump's order, the
// oracle's), in which a function is first innermost at its ownLow.
func (f *File) a2lName(n *fnode, addr uint32, sym sym, haveSym, innermost bool) string {
	if n.linkage {
		return n.name
	}
	lookedUp := n.hasOwn && n.ownLow < addr // innermost at a lower address
	if innermost && !lookedUp {
		if haveSym {
			return sym.name // the first lookup
		}
		return n.name
	}
	if !lookedUp {
		return n.name
	}
	sec := f.allocSectionAt(n.ownLow)
	if sec == nil {
		return n.name
	}
	if first, ok := f.addr2lineSymbol(n.ownLow, sec); ok && first.start == n.firstLow {
		return first.name
	}
	return n.name
}

// readableName is f.demangled(name) when readable, else "".
func readableName(f *File, name string, readable bool) string {
	if !readable {
		return ""
	}
	return f.demangled(name)
}

// findWithLen is find that also returns the length of the sequence used,
// which addr2line minimises across compilation units.
func (t *lineTable) findWithLen(addr uint32) (lineRow, uint64, bool) {
	best := t.bestSeq(addr)
	if best == nil {
		return lineRow{}, 0, false
	}
	r, ok := best.rowAt(addr)
	return r, best.hi - uint64(best.lo), ok
}

// WriteAddr2Line writes locs the way `arm-none-eabi-addr2line -f -i`
// (binutils 2.40) prints an address: for each level a function line
// ("??" when unknown) and a "file:line" line ("??" for an unknown file, "?"
// for an unknown line, " (discriminator N)" after a non-zero discriminator
// of the innermost level). No locations print "??" and "??:0", as addr2line
// does for an address it knows nothing about. With demangle, names are
// demangled as with addr2line -C. It makes one Write call.
func WriteAddr2Line(w io.Writer, locs []Location, demangle bool) error {
	var buf [256]byte
	_, err := w.Write(AppendAddr2Line(buf[:0], locs, demangle))
	return err
}

// AppendAddr2Line appends to dst what WriteAddr2Line writes and returns
// the extended buffer. It allocates only to grow dst.
func AppendAddr2Line(dst []byte, locs []Location, demangle bool) []byte {
	if len(locs) == 0 {
		return append(dst, "??\n??:0\n"...)
	}
	// addr2line (binutils 2.40) prints the innermost row's discriminator
	// after every line of the chain, the inlined callers' call lines
	// included (it never resets it while walking the inliners); the call
	// sites have no discriminator of their own in the DWARF. The text form
	// mirrors that; Location keeps the truth.
	disc := locs[0].Discriminator
	for _, l := range locs {
		name := l.LinkageName
		if demangle || name == "" {
			name = l.Function
		}
		if name == "" {
			name = "??"
		}
		file := l.File
		if file == "" {
			file = "??"
		}
		dst = append(dst, name...)
		dst = append(dst, '\n')
		dst = append(dst, file...)
		dst = append(dst, ':')
		if l.Line == 0 {
			dst = append(dst, "?\n"...)
			continue
		}
		dst = strconv.AppendInt(dst, int64(l.Line), 10)
		if disc != 0 {
			dst = append(dst, " (discriminator "...)
			dst = strconv.AppendInt(dst, int64(disc), 10)
			dst = append(dst, ')')
		}
		dst = append(dst, '\n')
	}
	return dst
}

// AppendAddr2LineAt appends what `addr2line -f -i` prints for addr, given
// the locations Symbolize found for it: AppendAddr2Line, except for an
// address in the padding past a sized function symbol. When the line table
// covers the padding, Symbolize gives its line and no function; addr2line
// names the symbol before it, and so does this. When nothing else is known: Symbolize returns nothing there (elfsym does not blame a
// function for bytes outside it; SymbolFor says InGap), but addr2line
// names the symbol with an unknown line ("f\nfile.c:?"), and this text form
// mirrors addr2line so that tools built on its output keep working. The
// JSON form (Describe) keeps the distinction.
func (f *File) AppendAddr2LineAt(dst []byte, addr uint32, locs []Location, demangle bool) []byte {
	if len(locs) == 1 && locs[0].LinkageName == "" && locs[0].Function == "" {
		// The line table covers padding past a sized function that no
		// DWARF function covers: addr2line names the symbol before it
		// (with the line), and so does this text form.
		if sec := f.allocSectionAt(addr); sec != nil {
			if a2l, ok := f.addr2lineSymbol(addr, sec); ok {
				l := locs[0]
				l.LinkageName, l.Function = a2l.name, f.demangled(a2l.name)
				return AppendAddr2Line(dst, []Location{l}, demangle)
			}
		}
	}
	if len(locs) == 0 {
		if sec := f.allocSectionAt(addr); sec != nil {
			if a2l, ok := f.addr2lineSymbol(addr, sec); ok && a2l.size > 0 && uint64(addr) >= uint64(a2l.start)+uint64(a2l.size) {
				name := a2l.name
				if demangle {
					name = f.demangled(name)
				}
				// addr2line's file is then the STT_FILE symbol's name.
				file := a2l.file
				if file == "" {
					file = "??"
				}
				dst = append(dst, name...)
				dst = append(dst, '\n')
				dst = append(dst, file...)
				return append(dst, ":?\n"...)
			}
		}
	}
	return AppendAddr2Line(dst, locs, demangle)
}

// AddrLocations is the JSON form of one symbolized address, for
// `faultline symbolize --format json`.
type AddrLocations struct {
	Address   string     `json:"address"` // "0x%08x"
	Symbol    *SymbolRef `json:"symbol,omitempty"`
	Locations []Location `json:"locations"` // innermost first; empty when nothing is known
	Error     string     `json:"error,omitempty"`
}

// Describe symbolizes addr into its JSON form: the locations, the nearest
// symbol (which may be "in the gap after" a symbol) and any DWARF error.
func (f *File) Describe(addr uint32) AddrLocations {
	locs, err := f.Symbolize(addr)
	out := AddrLocations{Address: fmt.Sprintf("0x%08x", addr), Locations: locs}
	if out.Locations == nil {
		out.Locations = []Location{}
	}
	if ref, ok := f.SymbolFor(addr); ok {
		out.Symbol = &ref
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}
