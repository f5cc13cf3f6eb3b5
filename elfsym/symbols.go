package elfsym

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/faultline-dev/faultline/elfsym/internal/rustdemangle"
	"github.com/faultline-dev/faultline/unwinders"
)

// SymbolKind classifies the symbols SymbolFor can return.
type SymbolKind uint8

const (
	SymFunc   SymbolKind = iota + 1 // STT_FUNC (and STT_GNU_IFUNC)
	SymObject                       // STT_OBJECT, STT_TLS, STT_COMMON
	SymLabel                        // STT_NOTYPE other than a mapping symbol: assembly labels, linker-script symbols
)

func (k SymbolKind) String() string {
	switch k {
	case SymFunc:
		return "function"
	case SymObject:
		return "object"
	case SymLabel:
		return "label"
	}
	return "unknown"
}

// MarshalText names the kind in JSON.
func (k SymbolKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MapKind is what the ARM mapping symbols (IHI 0044 section 5.5.5) say lives
// at an address.
type MapKind uint8

const (
	MapUnknown MapKind = iota // no mapping symbol covers the address
	MapARM                    // $a: A32 instructions
	MapThumb                  // $t: T32 instructions
	MapData                   // $d: data (literal pools, jump tables)
)

func (k MapKind) String() string {
	switch k {
	case MapARM:
		return "arm"
	case MapThumb:
		return "thumb"
	case MapData:
		return "data"
	}
	return "unknown"
}

// sym is one entry of the address-ordered symbol indexes.
type sym struct {
	name   string
	start  uint32 // Thumb bit clear for functions
	size   uint32
	end    uint64 // end of the range the symbol covers in lookups
	shndx  uint32
	order  int32 // index in .symtab
	kind   SymbolKind
	thumb  bool
	global bool
	file   string // STT_FILE name addr2line would report with this symbol
	// fromLabel: an STT_NOTYPE code label taken as a function for FuncAt
	// (an assembler function without .type); not counted as a FUNC symbol.
	fromLabel bool
}

type mapSym struct {
	addr  uint32
	shndx uint32
	kind  MapKind
}

// symtab holds the indexes built from .symtab at open time.
type symtab struct {
	present bool
	funcs   ivIndex[sym] // STT_FUNC: FuncAt
	all     ivIndex[sym] // functions, objects and labels: SymbolFor
	a2l     []a2lSym     // addr2line's candidates (FUNC and NOTYPE), by start then symbol order
	maps    []mapSym     // mapping symbols, by address
	byName  map[string]uint32
	codeAt0 bool // a function symbol starts at address 0

	nThumb, nARM int
}

// a2lSym is an addr2line candidate: its start, for the binary search, and
// the symbol in all.items.
type a2lSym struct {
	start uint32
	idx   int32
}

// isMappingSymbol reports whether name is an ARM mapping symbol: $a, $t or
// $d, optionally followed by a period and any characters (IHI 0044 5.5.5).
func isMappingSymbol[S string | []byte](name S) (MapKind, bool) {
	if len(name) < 2 || name[0] != '$' || (len(name) > 2 && name[2] != '.') {
		return MapUnknown, false
	}
	switch name[1] {
	case 'a':
		return MapARM, true
	case 't':
		return MapThumb, true
	case 'd':
		return MapData, true
	}
	return MapUnknown, false
}

// buildSymbols reads .symtab (or, failing that, .dynsym) and builds the
// function, symbol, mapping-symbol and name indexes. Cost: O(n log n) time
// and one sym per symbol.
func (f *File) buildSymbols() error {
	var tab *SectionInfo
	for i := range f.sections {
		if f.sections[i].Type == elf.SHT_SYMTAB {
			tab = &f.sections[i]
			break
		}
	}
	if tab == nil {
		for i := range f.sections {
			if f.sections[i].Type == elf.SHT_DYNSYM {
				tab = &f.sections[i]
				break
			}
		}
	}
	if tab == nil {
		f.syms.byName = map[string]uint32{}
		f.warnf("no symbol table: addresses cannot be named")
		return nil
	}
	hdrOff := int64(-1)
	if tab.entsz != symSize && tab.entsz != 0 {
		return f.errorf(hdrOff, ErrMalformed, "symbol table %s: sh_entsize %d, want %d", tab.Name, tab.entsz, symSize)
	}
	if len(tab.data)%symSize != 0 {
		return f.errorf(int64(tab.Offset), ErrMalformed, "symbol table %s: size %d is not a multiple of %d", tab.Name, len(tab.data), symSize)
	}
	if tab.link == 0 || int(tab.link) >= len(f.sections) || f.sections[tab.link].Type != elf.SHT_STRTAB {
		return f.errorf(int64(tab.Offset), ErrMalformed, "symbol table %s: sh_link %d is not a string table", tab.Name, tab.link)
	}
	strs := f.sections[tab.link].data
	le := binary.LittleEndian
	n := len(tab.data) / symSize
	f.syms.present = true

	// Count first, so that the tables are allocated once at their size.
	nFunc, nAll, nMap := 0, 0, 0
	for i := 1; i < n; i++ {
		e := tab.data[i*symSize : (i+1)*symSize]
		typ := elf.SymType(e[12] & 0xf)
		nb, _ := cbytes(strs, le.Uint32(e))
		if _, ok := isMappingSymbol(nb); ok && typ == elf.STT_NOTYPE {
			nMap++
			continue
		}
		switch typ {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			nFunc++
			nAll++
		case elf.STT_OBJECT, elf.STT_TLS, elf.STT_COMMON, elf.STT_NOTYPE:
			nAll++
		}
	}
	funcs, all := make([]sym, 0, nFunc), make([]sym, 0, nAll)
	f.syms.maps = make([]mapSym, 0, nMap)
	f.syms.byName = make(map[string]uint32, nAll)
	var file string
	const (
		nothingSeen = iota
		symbolSeen
		fileAfterSymbolSeen
	)
	state := nothingSeen
	for i := 1; i < n; i++ {
		e := tab.data[i*symSize : (i+1)*symSize]
		off := int64(tab.Offset) + int64(i*symSize)
		nameB, ok := cbytes(strs, le.Uint32(e))
		if !ok {
			return f.errorf(off, ErrMalformed, "symbol %d: name offset 0x%x is outside the string table (%d bytes) or not NUL-terminated", i, le.Uint32(e), len(strs))
		}
		value, size := le.Uint32(e[4:]), le.Uint32(e[8:])
		info := e[12]
		typ, bind := elf.SymType(info&0xf), elf.SymBind(info>>4)
		shndx := uint32(le.Uint16(e[14:]))
		if shndx == uint32(elf.SHN_XINDEX) {
			shndx = 0 // extended section indexes need SHT_SYMTAB_SHNDX; treat as unknown
		}
		inSection := shndx != uint32(elf.SHN_UNDEF) && shndx < uint32(elf.SHN_LORESERVE) && int(shndx) < len(f.sections)
		if typ == elf.STT_FILE {
			file = string(nameB)
			if state == symbolSeen {
				state = fileAfterSymbolSeen
			}
			continue
		}
		if state == nothingSeen {
			state = symbolSeen
		}
		if mk, ok := isMappingSymbol(nameB); ok && typ == elf.STT_NOTYPE {
			if inSection {
				f.syms.maps = append(f.syms.maps, mapSym{addr: value, shndx: shndx, kind: mk})
			}
			continue
		}
		if shndx == uint32(elf.SHN_UNDEF) || typ == elf.STT_SECTION {
			continue
		}
		name := string(nameB)
		s := sym{name: name, start: value, size: size, shndx: shndx, order: int32(i), global: bind != elf.STB_LOCAL}
		if !inSection {
			s.shndx = 0
		}
		switch typ {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			s.kind = SymFunc
			s.thumb = value&1 != 0
			s.start = value &^ 1
		case elf.STT_OBJECT, elf.STT_TLS, elf.STT_COMMON:
			s.kind = SymObject
		case elf.STT_NOTYPE:
			s.kind = SymLabel
		default:
			continue
		}
		if name != "" {
			if _, dup := f.syms.byName[name]; !dup || s.global {
				f.syms.byName[name] = s.start
			}
		}
		if !inSection {
			continue // absolute symbols (_estack, ...) name values, not places
		}
		// addr2line's elf_find_function gives a file name only to local
		// symbols, or to any symbol while no STT_FILE followed another
		// symbol (binutils 2.40 bfd/elf.c).
		if file != "" && (!s.global || state != fileAfterSymbolSeen) {
			s.file = file
		}
		if s.kind == SymFunc {
			funcs = append(funcs, s)
			if s.start == 0 {
				f.syms.codeAt0 = true
			}
		}
		all = append(all, s)
	}
	slices.SortStableFunc(f.syms.maps, func(a, b mapSym) int { return cmp.Compare(a.addr, b.addr) })

	// Functions written in assembler without .type (libgcc's
	// __gnu_cmse_nonsecure_call): a global STT_NOTYPE symbol that starts
	// Thumb code ($t at its address) in an executable section is a
	// function for FuncAt, so that a sizeless function before it ends
	// there and its frames are unwound as its own.
	for _, s := range all {
		if s.kind == SymLabel && s.global && s.size == 0 && s.shndx != 0 && int(s.shndx) < len(f.sections) &&
			f.sections[s.shndx].Exec && f.mappingAt(s.start, s.shndx) == MapThumb {
			fn := s
			fn.kind = SymFunc
			fn.thumb = true
			fn.fromLabel = true
			funcs = append(funcs, fn)
		}
	}
	// Thumb state of functions whose value has bit 0 clear: ask the mapping
	// symbol at their start ($t for Thumb code assembled without .thumb_func).
	for i := range funcs {
		if !funcs[i].thumb && f.mappingAt(funcs[i].start, funcs[i].shndx) == MapThumb {
			funcs[i].thumb = true
		}
		switch {
		case funcs[i].fromLabel:
		case funcs[i].thumb:
			f.syms.nThumb++
		default:
			f.syms.nARM++
		}
	}
	nA2L := 0
	for i := range all {
		if all[i].kind == SymFunc && !all[i].thumb && f.mappingAt(all[i].start, all[i].shndx) == MapThumb {
			all[i].thumb = true
		}
		if all[i].kind == SymFunc || all[i].kind == SymLabel {
			nA2L++
		}
	}
	// The sorted copies are exact-size: the indexes live as long as the File.
	f.syms.maps = slices.Clip(f.syms.maps)
	funcs = sortSyms(funcs)
	all = sortSyms(all)
	f.setEnds(funcs)
	f.setEnds(all)
	f.syms.a2l = make([]a2lSym, 0, nA2L)
	for i := range all {
		if all[i].kind == SymFunc || all[i].kind == SymLabel {
			f.syms.a2l = append(f.syms.a2l, a2lSym{all[i].start, int32(i)})
		}
	}
	slices.SortFunc(f.syms.a2l, func(a, b a2lSym) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(all[a.idx].order, all[b.idx].order))
	})
	f.syms.funcs = newIvIndex(funcs, func(s *sym) (uint32, uint64) { return s.start, s.end })
	f.syms.all = newIvIndex(all, func(s *sym) (uint32, uint64) { return s.start, s.end })
	if len(funcs) == 0 {
		f.warnf("symbol table has no function symbols")
	}
	return nil
}

// sortSyms returns syms sorted by start, larger size first, then symbol
// table order, in a new slice of exactly their number. It sorts small
// keys and moves each symbol once: a firmware image has 10^5 symbols.
func sortSyms(syms []sym) []sym {
	type key struct {
		startSize uint64 // start, then the complement of the size
		order     int32
		i         int32
	}
	keys := make([]key, len(syms))
	for i := range syms {
		keys[i] = key{uint64(syms[i].start)<<32 | uint64(^syms[i].size), syms[i].order, int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.startSize != b.startSize {
			return cmp.Compare(a.startSize, b.startSize)
		}
		return cmp.Compare(a.order, b.order)
	})
	out := make([]sym, len(syms))
	for j, k := range keys {
		out[j] = syms[k.i]
	}
	return out
}

// setEnds sets the lookup range of each of syms, sorted by sortSyms:
// [start, start+size) for a sized symbol; for a sizeless one up to the
// next symbol that starts later, and never past the end of its section.
func (f *File) setEnds(syms []sym) {
	for i := range syms {
		s := &syms[i]
		if s.size > 0 {
			s.end = uint64(s.start) + uint64(s.size)
			continue
		}
		end := uint64(s.start) + 1
		if sec := &f.sections[s.shndx]; uint64(sec.Addr)+uint64(sec.Size) > uint64(s.start) {
			end = uint64(sec.Addr) + uint64(sec.Size)
		}
		for j := i + 1; j < len(syms); j++ {
			if syms[j].start > s.start {
				end = min(end, uint64(syms[j].start))
				break
			}
		}
		s.end = end
	}
}

// mappingAt returns the kind of the last mapping symbol at or below addr in
// section shndx. Cost: O(log n).
func (f *File) mappingAt(addr uint32, shndx uint32) MapKind {
	m := f.syms.maps
	i := sort.Search(len(m), func(i int) bool { return m[i].addr > addr }) - 1
	for ; i >= 0; i-- {
		if m[i].shndx == shndx {
			return m[i].kind
		}
		if int(shndx) < len(f.sections) && m[i].addr < f.sections[shndx].Addr {
			break
		}
	}
	return MapUnknown
}

// Mapping reports what the ARM mapping symbols ($a, $t, $d and their $x.N
// forms, IHI 0044 section 5.5.5) say addr holds: ARM code, Thumb code or
// data. It returns MapUnknown when addr is in no section or no mapping
// symbol precedes it in its section (stripped files). Cost: O(log n).
func (f *File) Mapping(addr uint32) MapKind {
	s := f.allocSectionAt(addr)
	if s == nil {
		return MapUnknown
	}
	return f.mappingAt(addr, uint32(s.Index))
}

// FuncAt implements unwinders.Program. It returns the function symbol
// (STT_FUNC) whose range holds addr: [Start, Start+size) for a sized symbol,
// up to the next function symbol (or its section's end) for a sizeless one,
// whose End then equals Start. Where symbols nest or alias, the one that
// starts last wins, then the larger, then the first in the symbol table.
// Mapping symbols are never returned. Cost: O(log n).
func (f *File) FuncAt(addr uint32) (unwinders.Function, bool) {
	s, ok := f.syms.funcs.innermost(addr)
	if !ok {
		return unwinders.Function{}, false
	}
	return unwinders.Function{Name: s.name, Start: s.start, End: s.start + s.size, Thumb: s.thumb}, true
}

// Symbol implements unwinders.Program: the value of the named symbol, Thumb
// bit clear for functions. A global definition wins over a local one of the
// same name. Mapping symbols, section and file symbols are not looked up.
// Cost: one map lookup.
func (f *File) Symbol(name string) (uint32, bool) {
	v, ok := f.syms.byName[name]
	return v, ok
}

// Placement tells how an address relates to the symbol SymbolFor found.
type Placement uint8

const (
	// Inside: the address lies within the symbol's [Start, Start+Size).
	Inside Placement = iota + 1
	// InGap: the address lies past the end of a sized symbol, before the
	// next symbol: the symbol is only the nearest one below, not the owner.
	InGap
	// Unsized: the symbol has no size; the address lies between it and the
	// next symbol, so it probably, not certainly, belongs to it.
	Unsized
)

func (p Placement) String() string {
	switch p {
	case Inside:
		return "inside"
	case InGap:
		return "gap"
	case Unsized:
		return "unsized"
	}
	return "unknown"
}

// MarshalText names the placement in JSON.
func (p Placement) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// SymbolRef is the answer of SymbolFor.
type SymbolRef struct {
	Name      string     `json:"name"`  // raw (mangled) symbol name
	Start     uint32     `json:"start"` // Thumb bit clear
	Size      uint32     `json:"size"`
	Kind      SymbolKind `json:"kind"`
	Thumb     bool       `json:"thumb,omitempty"`
	Offset    uint32     `json:"offset"` // addr - Start
	Placement Placement  `json:"placement"`
}

// String formats the reference the way a backtrace shows it: "name+0x12",
// or "gap after name (name+0x40, 0x8 past its end)".
func (r SymbolRef) String() string {
	if r.Placement == InGap {
		return fmt.Sprintf("gap after %s (%s+0x%x, 0x%x past its end)", r.Name, r.Name, r.Offset, r.Offset-r.Size)
	}
	return fmt.Sprintf("%s+0x%x", r.Name, r.Offset)
}

// SymbolFor returns the symbol nearest to addr: the function, object or
// label containing it when there is one (the one that starts last, functions
// before objects before labels on a tie), else the nearest symbol below addr
// in the same section, marked InGap when that symbol's size ends before
// addr. It returns false when addr lies in no allocated section or nothing
// precedes it there. Mapping symbols are never returned. Cost: O(log n).
func (f *File) SymbolFor(addr uint32) (SymbolRef, bool) {
	ref := func(s sym, p Placement) (SymbolRef, bool) {
		return SymbolRef{Name: s.name, Start: s.start, Size: s.size, Kind: s.kind, Thumb: s.thumb, Offset: addr - s.start, Placement: p}, true
	}
	var inside *sym
	f.syms.all.containing(addr, func(s *sym) bool {
		if s.size > 0 && (inside == nil || s.start == inside.start && s.kind < inside.kind) {
			inside = s
		}
		return inside == nil || s.start == inside.start
	})
	if inside != nil {
		return ref(*inside, Inside)
	}
	sec := f.allocSectionAt(addr)
	if sec == nil {
		return SymbolRef{}, false
	}
	items := f.syms.all.items
	i := sort.Search(len(items), func(i int) bool { return items[i].start > addr }) - 1
	var best *sym
	for ; i >= 0 && items[i].start >= sec.Addr; i-- {
		s := &items[i]
		if s.shndx != uint32(sec.Index) {
			continue
		}
		if best != nil && s.start != best.start {
			break
		}
		if best == nil || s.kind < best.kind {
			best = s
		}
	}
	if best == nil {
		return SymbolRef{}, false
	}
	if best.size > 0 {
		if uint64(addr) < uint64(best.start)+uint64(best.size) {
			return ref(*best, Inside)
		}
		return ref(*best, InGap)
	}
	return ref(*best, Unsized)
}

// addr2lineSymbol mirrors elf_find_function of binutils 2.40 (bfd/elf.c,
// with elf32_arm_maybe_function_sym): the function or NOTYPE symbol of
// addr's section with the greatest value <= addr, the larger one on a tie,
// sizes otherwise ignored. Cost: O(log n).
func (f *File) addr2lineSymbol(addr uint32, sec *SectionInfo) (sym, bool) {
	idx, all := f.syms.a2l, f.syms.all.items
	lo, hi := 0, len(idx)
	for lo < hi { // the first candidate starting above addr
		if m := int(uint(lo+hi) >> 1); idx[m].start > addr {
			hi = m
		} else {
			lo = m + 1
		}
	}
	i := lo - 1
	var best *sym
	for ; i >= 0 && idx[i].start >= sec.Addr; i-- {
		s := &all[idx[i].idx]
		if s.shndx != uint32(sec.Index) {
			continue
		}
		if best != nil && s.start != best.start {
			break
		}
		if best == nil || max(s.size, 1) > max(best.size, 1) || (max(s.size, 1) == max(best.size, 1) && s.order < best.order) {
			best = s
		}
	}
	if best == nil {
		return sym{}, false
	}
	return *best, true
}

// ivIndex is a static interval index: items sorted by start, with the
// running maximum of their ends, so that the items containing an address
// are found by a binary search plus a backwards scan that stops as soon as
// no earlier item can reach the address. Cost: O(log n + k) per query for k
// overlapping items. newIvIndex sorts the items itself (stably, so items
// with equal starts keep their order): callers may hand them over in any
// order, e.g. the sequences of a line program in the order the program
// lists them, which gcc does not make ascending (COMDAT template sequences
// come before a unit's main .text one).
type ivIndex[T any] struct {
	items  []T
	starts []uint32
	maxEnd []uint64
	span   func(*T) (uint32, uint64)
}

func newIvIndex[T any](items []T, span func(*T) (uint32, uint64)) ivIndex[T] {
	byStart := func(a, b T) int {
		la, _ := span(&a)
		lb, _ := span(&b)
		return cmp.Compare(la, lb)
	}
	if !slices.IsSortedFunc(items, byStart) {
		slices.SortStableFunc(items, byStart)
	}
	ix := ivIndex[T]{items: items, starts: make([]uint32, len(items)), maxEnd: make([]uint64, len(items))}
	var m uint64
	for i := range items {
		lo, hi := span(&items[i])
		ix.starts[i] = lo
		m = max(m, hi)
		ix.maxEnd[i] = m
	}
	ix.span = span
	return ix
}

// last returns the index of the last item starting at or below addr, or
// -1.
func (ix *ivIndex[T]) last(addr uint32) int {
	s := ix.starts
	lo, hi := 0, len(s)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); s[m] > addr {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// innermost returns the containing item with the greatest start (the first
// such in index order on a tie).
func (ix *ivIndex[T]) innermost(addr uint32) (T, bool) {
	var zero T
	i := ix.last(addr)
	found := -1
	for ; i >= 0 && ix.maxEnd[i] > uint64(addr); i-- {
		if found >= 0 && ix.starts[i] != ix.starts[found] {
			break
		}
		if _, hi := ix.span(&ix.items[i]); hi > uint64(addr) {
			found = i
		}
	}
	if found < 0 {
		return zero, false
	}
	return ix.items[found], true
}

// containing calls fn for every item containing addr, latest start first,
// until fn returns false.
func (ix *ivIndex[T]) containing(addr uint32, fn func(*T) bool) {
	i := ix.last(addr)
	for ; i >= 0 && ix.maxEnd[i] > uint64(addr); i-- {
		if _, hi := ix.span(&ix.items[i]); hi > uint64(addr) {
			if !fn(&ix.items[i]) {
				return
			}
		}
	}
}

// Demangle returns the readable form of a symbol name: C++ (Itanium ABI)
// as c++filt prints it, Rust's legacy and v0 manglings as rustfilt prints
// them by default (legacy without its hash, v0 without crate
// disambiguators), or name itself when it is not a mangled name. It is the
// entry point for any name a report shows (notes, stop reasons, frames).
func Demangle(name string) string {
	return demangledOrRaw(name)
}

// demangledOrRaw is Demangle.
func demangledOrRaw(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	if d, ok := rustdemangle.Demangle(name); ok {
		return d
	}
	if !strings.HasPrefix(name, "_Z") {
		return name
	}
	// Rust legacy names were tried above (with the hash element they
	// always have); the C++ demangler must not treat them, or a
	// hash-less _ZN...E, as Rust: it drops one underscore of "__x".
	if d, err := demangle.ToString(name, demangle.NoRust); err == nil {
		return d
	}
	return name
}

// Demangle is the package's Demangle through the File's cache: callers
// that name many frames or notes of one ELF demangle each name once.
func (f *File) Demangle(name string) string {
	return f.demangled(name)
}

// demangled is demangledOrRaw through the File's cache: each distinct
// mangled name is demangled once. Names that cannot be mangled return at
// once.
func (f *File) demangled(name string) string {
	if len(name) < 2 || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') {
		return name
	}
	if d, ok := f.demCache.Load(name); ok {
		return d.(string)
	}
	d := demangledOrRaw(name)
	f.demCache.Store(name, d)
	return d
}

// FileSymbol finds a local object or function symbol named name that the
// symbol table places under the STT_FILE symbol file (compared by base
// name: "log_output.c" matches "../subsys/logging/log_output.c"), as
// static variables of one source file are: several files may each have a
// static "freq". Cost: O(symbols).
func (f *File) FileSymbol(file, name string) (SymbolRef, bool) {
	for i := range f.syms.all.items {
		s := &f.syms.all.items[i]
		if s.global || s.name != name || s.file == "" {
			continue
		}
		base := s.file
		if k := strings.LastIndexAny(base, `/\`); k >= 0 {
			base = base[k+1:]
		}
		if base == file {
			return SymbolRef{Name: s.name, Start: s.start, Size: s.size, Kind: s.kind, Thumb: s.thumb, Placement: Inside}, true
		}
	}
	return SymbolRef{}, false
}
