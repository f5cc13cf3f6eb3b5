package elfsym

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// dwarfIndex is built at open time: the units of .debug_info and the
// address ranges they cover. Each unit's line table and function tree are
// decoded on first use (unit.load).
type dwarfIndex struct {
	d        *dwarf.Data
	env      lineEnv
	units    []*unit
	ranges   ivIndex[cuRange]
	segs     segIndex // the same ranges by elementary segment, when not too large
	versions []int    // DWARF versions of the unit headers, sorted, unique
	// deadUnits: address ranges of units that were dropped as removed
	// code (their start relocated to 0 or a tombstone), for deadCovers.
	deadUnits [][2]uint64
	live      func(lo uint32) bool

	// Section contents for the entry decoder of die.go; rngLists is nil
	// unless debug/dwarf accepted .debug_rnglists too.
	info, abbrev, str, lineStr, rangesSec, rngLists []byte
}

type cuRange struct {
	hi   uint64
	lo   uint32
	unit int32
}

// unit is one compilation unit.
type unit struct {
	idx      int
	dieOff   dwarf.Offset // offset of the unit's DW_TAG_compile_unit entry
	name     string
	compDir  string
	lang     int64
	stmtList int64 // offset in .debug_line, -1 if none
	version  int
	rnglistx bool // the unit has DW_AT_rnglists_base: its DW_AT_ranges use DW_FORM_rnglistx

	// The unit header, for the entry decoder of die.go.
	hdrOff    int    // offset of the header in .debug_info
	end       int    // offset past the unit
	abbrevOff uint64 // its abbreviation table in .debug_abbrev
	addrSize  int
	offSize   int // 4, or 8 for the 64-bit DWARF format

	once  sync.Once
	lines *lineTable
	nodes []fnode
	funcs ivIndex[frange]
	dead  [][2]uint64 // ranges of removed functions, skipped
	err   error
}

// fnode is a DW_TAG_subprogram or DW_TAG_inlined_subroutine with code.
// (Fields ordered to pack into 48 bytes.)
type fnode struct {
	name     string // linkage name when there is one, else DW_AT_name
	callFile uint64
	parent   int32 // enclosing function node, -1 for none
	depth    int32
	firstLow uint32 // low end of binutils' first address range (arangeLow)
	// ownLow is the lowest address where this node is the innermost
	// function (not covered by a nested inlined subroutine), valid when
	// hasOwn: where addr2line would first look the function up when
	// addresses are queried in ascending order.
	ownLow   uint32
	hasOwn   bool
	callLine uint32
	callCol  uint32
	inlined  bool
	linkage  bool // name is a linkage name in addr2line's sense
	// indexedRanges: the entry's DW_AT_ranges is (in all likelihood) a
	// DW_FORM_rnglistx index, which binutils 2.40 does not follow for
	// functions; see the accepted differences of the oracle test.
	indexedRanges bool
}

type frange struct {
	hi   uint64
	lo   uint32
	node int32
}

// DWARF constants not named by debug/dwarf.
const (
	attrMIPSLinkageName = dwarf.Attr(0x2007)
	utCompile           = 1
	utType              = 2
	utPartial           = 3
	utSkeleton          = 4
	utSplitCompile      = 5
	utSplitType         = 6
)

// isLive reports whether code or debugging information starting at lo
// describes a function the linker kept. GNU ld relocates removed ones to 0, ld.lld
// to a tombstone near 0xffffffff (cortex-m.md section 6.4). Address 0 is
// accepted when a function symbol really starts there.
func (f *File) isLive(lo uint32) bool {
	if lo >= 0xfffffff0 {
		return false
	}
	return lo != 0 || f.syms.codeAt0
}

// buildDWARF indexes the compilation units of .debug_info. Failures become
// warnings: a file with broken debugging information still has symbols.
// Cost: one pass over the unit headers and each unit's first entry;
// a unit without address ranges has its line table decoded now to find them.
func (f *File) buildDWARF() {
	sec := func(name string) []byte {
		if s := f.section(name); s != nil && s.Type != elf.SHT_NOBITS {
			return s.data
		}
		return nil
	}
	info := sec(".debug_info")
	if len(info) == 0 {
		if f.syms.present {
			f.warnf("no DWARF debugging information (.debug_info): locations are symbol+offset only")
		}
		return
	}
	d, err := dwarf.New(sec(".debug_abbrev"), sec(".debug_aranges"), sec(".debug_frame"), info,
		sec(".debug_line"), sec(".debug_pubnames"), sec(".debug_ranges"), sec(".debug_str"))
	if err != nil {
		f.warnf("DWARF ignored: %s", dwarfReason(err))
		return
	}
	var rngLists []byte // what debug/dwarf holds as .debug_rnglists
	for _, name := range []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"} {
		if data := sec(name); data != nil {
			if err := d.AddSection(name, data); err != nil {
				f.warnf("DWARF section %s ignored: %s", name, dwarfReason(err))
			} else if name == ".debug_rnglists" {
				rngLists = data
			}
		}
	}
	dw := &dwarfIndex{d: d, live: f.isLive, info: info, abbrev: sec(".debug_abbrev"), str: sec(".debug_str"),
		lineStr: sec(".debug_line_str"), rangesSec: sec(".debug_ranges"), rngLists: rngLists}
	dw.env = lineEnv{debugLine: sec(".debug_line"), debugStr: sec(".debug_str"), debugLineStr: sec(".debug_line_str"), live: f.isLive}

	// Unit headers (DWARF 5 section 7.5.1), walked here so that opening
	// does not decode every entry.
	vers := map[int]bool{}
	var ranges []cuRange
	r := d.Reader()
	for off := 0; off < len(info); {
		b := &buf{sec: ".debug_info", data: info[off:], off: off}
		length := uint64(b.u32("unit_length"))
		offSize := 4
		if length == 0xffffffff {
			length = b.u64("unit_length")
			offSize = 8
		}
		hdr := b.pos
		version := int(b.u16("version"))
		if b.err != nil || length < 2 || length > uint64(len(b.data)-hdr) {
			f.warnf("DWARF: .debug_info: at offset 0x%x: unit length 0x%x does not fit the section; later units ignored", off, length)
			break
		}
		next := off + hdr + int(length)
		ut := utCompile
		var abbrevOff uint64
		var addrSize uint8
		switch {
		case version >= 2 && version <= 4:
			abbrevOff = b.uint(offSize, "debug_abbrev_offset")
			addrSize = b.u8("address_size")
		case version == 5:
			ut = int(b.u8("unit_type"))
			addrSize = b.u8("address_size")
			abbrevOff = b.uint(offSize, "debug_abbrev_offset")
			switch ut {
			case utSkeleton, utSplitCompile:
				b.u64("dwo_id")
			case utType, utSplitType:
				b.u64("type_signature")
				b.uint(offSize, "type_offset")
			}
		default:
			f.warnf("DWARF: .debug_info: at offset 0x%x: unit version %d not supported; unit ignored", off, version)
			off = next
			continue
		}
		vers[version] = true
		dieOff := dwarf.Offset(off + b.pos)
		hdrOff := off
		off = next
		if b.err != nil || (ut != utCompile && ut != utPartial && ut != utSkeleton) {
			continue
		}
		r.Seek(dieOff)
		e, err := r.Next()
		if err != nil || e == nil {
			f.warnf("DWARF: .debug_info: at offset 0x%x: cannot read the unit entry: %v", dieOff, err)
			continue
		}
		u := &unit{idx: len(dw.units), dieOff: dieOff, stmtList: -1, version: version,
			hdrOff: hdrOff, end: next, abbrevOff: abbrevOff, addrSize: int(addrSize), offSize: offSize}
		u.rnglistx = e.AttrField(dwarf.AttrRnglistsBase) != nil
		u.name, _ = e.Val(dwarf.AttrName).(string)
		u.compDir, _ = e.Val(dwarf.AttrCompDir).(string)
		u.lang, _ = e.Val(dwarf.AttrLanguage).(int64)
		if v, ok := e.Val(dwarf.AttrStmtList).(int64); ok && v >= 0 {
			u.stmtList = v
		}
		dw.units = append(dw.units, u)
		rs, err := d.Ranges(e)
		if err != nil {
			f.warnf("DWARF: unit %q: bad address ranges: %v", u.name, err)
		}
		n := 0
		for _, rg := range rs {
			if rg[0] >= rg[1] || rg[1] > 1<<32 {
				continue
			}
			if !f.isLive(uint32(rg[0])) {
				dw.deadUnits = append(dw.deadUnits, rg)
				continue
			}
			ranges = append(ranges, cuRange{lo: uint32(rg[0]), hi: rg[1], unit: int32(u.idx)})
			n++
		}
		if len(rs) == 0 && u.stmtList >= 0 {
			// No DW_AT_ranges/low_pc (some assemblers): the line table
			// tells where the unit's code is.
			u.load(dw)
			if u.lines != nil {
				for _, s := range u.lines.seqs.items {
					ranges = append(ranges, cuRange{lo: s.lo, hi: s.hi, unit: int32(u.idx)})
				}
			}
		}
	}
	for v := range vers {
		dw.versions = append(dw.versions, v)
	}
	sort.Ints(dw.versions)
	slices.SortStableFunc(ranges, func(a, b cuRange) int { return cmp.Compare(a.lo, b.lo) })
	dw.ranges = newIvIndex(ranges, func(c *cuRange) (uint32, uint64) { return c.lo, c.hi })
	dw.segs = newSegIndex(dw.ranges.items)
	f.dw = dw
}

// load decodes the unit's line table and function tree once.
func (u *unit) load(dw *dwarfIndex) {
	u.once.Do(func() {
		defer func() {
			if p := recover(); p != nil { // last line of defence around debug/dwarf
				u.err = fmt.Errorf("unit %q: internal error decoding DWARF: %v", u.name, p)
			}
		}()
		// Without a .debug_line (absent, or ignored as corrupt with a
		// warning when the file was opened) the unit has no lines.
		if u.stmtList >= 0 && len(dw.env.debugLine) > 0 {
			env := dw.env
			env.compDir, env.compName = u.compDir, u.name
			lt, err := decodeLineTable(&env, uint64(u.stmtList))
			if err != nil {
				u.err = fmt.Errorf("unit %q: line table: %v", u.name, err)
			} else {
				u.lines = lt
			}
		}
		if err := u.loadFuncs(dw); err != nil && u.err == nil {
			u.err = fmt.Errorf("unit %q: %v", u.name, err)
		}
	})
}

// loadFuncs walks the unit's entries and records every subprogram and
// inlined subroutine that has code, with its enclosing function. Entries
// of removed functions (ranges at 0 or a tombstone) are skipped with their
// whole subtree. Cost: linear in the unit's entries.
//
// The entries are read by the fast decoder of die.go; a unit it does not
// handle is read again, from scratch, through debug/dwarf.
func (u *unit) loadFuncs(dw *dwarfIndex) error {
	err := u.loadFuncsFast(dw)
	if err != errSlowPath {
		return err
	}
	u.nodes, u.dead, u.funcs = nil, nil, ivIndex[frange]{}
	return u.loadFuncsDwarf(dw)
}

// loadFuncsFast is loadFuncsDwarf on the decoder of die.go. It returns
// nil or errSlowPath.
func (u *unit) loadFuncsFast(dw *dwarfIndex) error {
	r, err := newDieReader(dw, u)
	if err != nil {
		return err
	}
	var cu, e dieEntry
	if err := r.entry(int(u.dieOff), &cu); err != nil || cu.tag == 0 {
		return errSlowPath
	}
	if !cu.children {
		return nil
	}
	var (
		ranges []frange
		rs     [][2]uint64
		live   []frange
	)
	names := map[dwarf.Offset]nameInfo{}
	stack := []int32{-1} // enclosing function node per open entry level
	pos := cu.next
	for len(stack) > 0 {
		if pos >= u.end {
			return errSlowPath // debug/dwarf would go on into the next unit
		}
		if err := r.entry(pos, &e); err != nil {
			return err
		}
		pos = e.next
		if e.tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		cur := parent
		switch e.tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			return errSlowPath
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagEntryPoint:
			if rs, err = r.funcRanges(&e, &cu, rs); err != nil {
				return err
			}
			if len(rs) == 0 {
				break
			}
			live = live[:0]
			for _, rg := range rs {
				if rg[0] < rg[1] && rg[1] <= 1<<32 && dw.live(uint32(rg[0])) {
					live = append(live, frange{lo: uint32(rg[0]), hi: rg[1]})
				}
			}
			if len(live) == 0 {
				// Removed by the linker: ignore it and everything inside.
				u.dead = append(u.dead, rs...)
				if pos, err = r.skipChildren(&e, 0); err != nil {
					return err
				}
				continue
			}
			ni, err := r.resolveName(&e, names, 0)
			if err != nil {
				return err
			}
			n := fnode{parent: parent, inlined: e.tag == dwarf.TagInlinedSubroutine, name: ni.name, firstLow: arangeLow(rs)}
			n.linkage = ni.linkage || (ni.name != "" && cLikeLanguage(u.lang))
			n.indexedRanges = u.version >= 5 && u.rnglistx && e.ranges
			if parent >= 0 {
				n.depth = u.nodes[parent].depth + 1
			}
			if e.callFileOK && e.callFile >= 0 {
				n.callFile = uint64(e.callFile)
			}
			if e.callLineOK && e.callLine >= 0 {
				n.callLine = uint32(min(e.callLine, 1<<31))
			}
			if e.callColOK && e.callCol >= 0 {
				n.callCol = uint32(min(e.callCol, 1<<31))
			}
			cur = int32(len(u.nodes))
			u.nodes = append(u.nodes, n)
			for _, rg := range live {
				rg.node = cur
				ranges = append(ranges, rg)
			}
		case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType:
			// A class local to a function (a lambda's closure type
			// among them) holds its member functions' code, nested:
			// its children are read. Elsewhere member functions are
			// defined outside the class (DW_AT_specification).
			if parent >= 0 {
				break
			}
			if pos, err = r.skipChildren(&e, 0); err != nil {
				return err
			}
			continue
		case dwarf.TagBaseType,
			dwarf.TagEnumerationType, dwarf.TagTypedef, dwarf.TagArrayType, dwarf.TagSubroutineType,
			dwarf.TagFormalParameter, dwarf.TagVariable, dwarf.TagPointerType, dwarf.TagConstType,
			dwarf.TagVolatileType, dwarf.TagMember:
			if pos, err = r.skipChildren(&e, 0); err != nil {
				return err
			}
			continue
		}
		if e.children {
			stack = append(stack, cur)
		}
	}
	u.finishFuncs(ranges)
	return nil
}

// loadFuncsDwarf is loadFuncs through debug/dwarf.
func (u *unit) loadFuncsDwarf(dw *dwarfIndex) error {
	d := dw.d
	r := d.Reader()
	r.Seek(u.dieOff)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return fmt.Errorf("cannot read the unit entry at 0x%x: %v", u.dieOff, err)
	}
	var ranges []frange
	names := map[dwarf.Offset]nameInfo{}
	nr := d.Reader()
	stack := []int32{-1} // enclosing function node per open entry level
	if !cu.Children {
		return nil
	}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		cur := parent
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagEntryPoint:
			rs, _ := d.Ranges(e)
			if len(rs) == 0 {
				break
			}
			var live []frange
			for _, rg := range rs {
				if rg[0] < rg[1] && rg[1] <= 1<<32 && dw.live(uint32(rg[0])) {
					live = append(live, frange{lo: uint32(rg[0]), hi: rg[1]})
				}
			}
			if len(live) == 0 {
				// Removed by the linker: ignore it and everything inside.
				for _, rg := range rs {
					u.dead = append(u.dead, rg)
				}
				if e.Children {
					r.SkipChildren()
				}
				continue
			}
			ni := resolveName(nr, e, names, 0)
			n := fnode{parent: parent, inlined: e.Tag == dwarf.TagInlinedSubroutine, name: ni.name, firstLow: arangeLow(rs)}
			n.linkage = ni.linkage || (ni.name != "" && cLikeLanguage(u.lang))
			n.indexedRanges = u.version >= 5 && u.rnglistx && e.AttrField(dwarf.AttrRanges) != nil
			if parent >= 0 {
				n.depth = u.nodes[parent].depth + 1
			}
			if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok && v >= 0 {
				n.callFile = uint64(v)
			}
			if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok && v >= 0 {
				n.callLine = uint32(min(v, 1<<31))
			}
			if v, ok := e.Val(dwarf.AttrCallColumn).(int64); ok && v >= 0 {
				n.callCol = uint32(min(v, 1<<31))
			}
			cur = int32(len(u.nodes))
			u.nodes = append(u.nodes, n)
			for _, rg := range live {
				rg.node = cur
				ranges = append(ranges, rg)
			}
		case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType:
			// As in loadFuncsFast: a function-local class is read.
			if parent >= 0 {
				break
			}
			if e.Children {
				r.SkipChildren()
			}
			continue
		case dwarf.TagBaseType,
			dwarf.TagEnumerationType, dwarf.TagTypedef, dwarf.TagArrayType, dwarf.TagSubroutineType,
			dwarf.TagFormalParameter, dwarf.TagVariable, dwarf.TagPointerType, dwarf.TagConstType,
			dwarf.TagVolatileType, dwarf.TagMember:
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		if e.Children {
			stack = append(stack, cur)
		}
	}
	u.finishFuncs(ranges)
	return nil
}

// arangeLow returns the low end of the first address range binutils keeps
// for a function with the ranges rs, in DWARF order: its arange_add skips
// empty ranges and grows the first range by any later one that starts at
// its end or ends at its start.
func arangeLow(rs [][2]uint64) uint32 {
	var lo, hi uint64
	set := false
	for _, r := range rs {
		switch {
		case r[0] >= r[1]:
		case !set:
			lo, hi, set = r[0], r[1], true
		case r[0] == hi:
			hi = r[1]
		case r[1] == lo:
			lo = r[0]
		}
	}
	if !set && len(rs) > 0 {
		lo = rs[0][0]
	}
	return uint32(lo)
}

// setOwnLow sets every node's ownLow: the lowest address of its ranges
// that none of its children's ranges covers. Cost: O(n log n) in the
// number of ranges.
func (u *unit) setOwnLow(ranges []frange) {
	own := slices.Clone(ranges)
	slices.SortFunc(own, func(a, b frange) int { return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.lo, b.lo)) })
	kids := make([]frange, 0, len(ranges))
	for _, r := range ranges {
		if p := u.nodes[r.node].parent; p >= 0 {
			r.node = p // keyed by the parent
			kids = append(kids, r)
		}
	}
	slices.SortFunc(kids, func(a, b frange) int { return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.lo, b.lo)) })
	var union [][2]uint64
	k := 0
	for i := 0; i < len(own); {
		n := own[i].node
		j := i
		for j < len(own) && own[j].node == n {
			j++
		}
		for k < len(kids) && kids[k].node < n {
			k++
		}
		union = union[:0]
		for ; k < len(kids) && kids[k].node == n; k++ {
			if l := len(union); l > 0 && uint64(kids[k].lo) <= union[l-1][1] {
				union[l-1][1] = max(union[l-1][1], kids[k].hi)
				continue
			}
			union = append(union, [2]uint64{uint64(kids[k].lo), kids[k].hi})
		}
		best, found := uint64(0), false
		for _, r := range own[i:j] {
			cur := uint64(r.lo)
			// The union interval that may contain cur: the last one
			// starting at or below it.
			x := sort.Search(len(union), func(x int) bool { return union[x][0] > cur }) - 1
			if x >= 0 && union[x][1] > cur {
				cur = union[x][1]
			}
			if cur < r.hi && (!found || cur < best) {
				best, found = cur, true
			}
		}
		if found {
			u.nodes[n].ownLow, u.nodes[n].hasOwn = uint32(best), true
		}
		i = j
	}
}

// finishFuncs indexes the function ranges loadFuncs found.
func (u *unit) finishFuncs(ranges []frange) {
	u.setOwnLow(ranges)
	slices.SortStableFunc(ranges, func(a, b frange) int { return cmp.Compare(a.lo, b.lo) })
	// The tables live as long as the File: drop the growth slack.
	if cap(u.nodes) > len(u.nodes)+len(u.nodes)/8 {
		u.nodes = slices.Clone(u.nodes)
	}
	if cap(ranges) > len(ranges)+len(ranges)/8 {
		ranges = slices.Clone(ranges)
	}
	u.funcs = newIvIndex(ranges, func(r *frange) (uint32, uint64) { return r.lo, r.hi })
}

type nameInfo struct {
	name    string
	linkage bool
}

// resolveName returns an entry's name: its DW_AT_linkage_name (or the MIPS
// form) if any, else its DW_AT_name, else whatever DW_AT_abstract_origin or
// DW_AT_specification lead to (DWARF 5 sections 3.3.8 and 2.13), following
// at most 8 references.
func resolveName(r *dwarf.Reader, e *dwarf.Entry, cache map[dwarf.Offset]nameInfo, depth int) nameInfo {
	if ni, ok := cache[e.Offset]; ok {
		return ni
	}
	var ni nameInfo
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		ni = nameInfo{s, true}
	} else if s, ok := e.Val(attrMIPSLinkageName).(string); ok && s != "" {
		ni = nameInfo{s, true}
	}
	if !ni.linkage && depth < 8 {
		for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
			off, ok := e.Val(a).(dwarf.Offset)
			if !ok {
				continue
			}
			r.Seek(off)
			oe, err := r.Next()
			if err != nil || oe == nil {
				continue
			}
			o := resolveName(r, oe, cache, depth+1)
			if o.linkage {
				ni = o
				break
			}
			if ni.name == "" {
				ni.name = o.name
			}
		}
	}
	if ni.name == "" {
		ni.name, _ = e.Val(dwarf.AttrName).(string)
	}
	cache[e.Offset] = ni
	return ni
}

// cLikeLanguage reports whether binutils treats DW_AT_name of the language
// as a linkage name (mangle_style() == 0 in binutils 2.40 bfd/dwarf2.c).
func cLikeLanguage(lang int64) bool {
	switch lang {
	case 0x1, 0x2, 0x5, 0x6, 0x7, 0x8, 0x9, 0xc, 0xe, 0xf, 0x10, 0x12, 0x15, 0x16, 0x1d, 0x22, 0x23, 0x2c, 0x8001:
		// C89, C, Cobol74/85, Fortran77/90, Pascal83, C99, Fortran95, PLI,
		// ObjC, UPC, Python, OpenCL, C11, Fortran03/08, C17, MIPS assembler.
		return true
	}
	return false
}

// innermost returns the deepest function node whose ranges hold addr (a
// later entry on a tie), or -1.
func (u *unit) innermost(addr uint32, skip func(*fnode) bool) int32 {
	best := int32(-1)
	u.funcs.containing(addr, func(r *frange) bool {
		if skip != nil && skip(&u.nodes[r.node]) {
			return true
		}
		if best < 0 || u.nodes[r.node].depth > u.nodes[best].depth || (u.nodes[r.node].depth == u.nodes[best].depth && r.node > best) {
			best = r.node
		}
		return true
	})
	return best
}

// deadCovers reports whether debugging information of removed code (line
// sequences or functions that were skipped as relocated to 0 or to a
// tombstone) covers addr. It decodes every unit: for tests and diagnostics.
func (dw *dwarfIndex) deadCovers(addr uint32) bool {
	in := func(rs [][2]uint64) bool {
		for _, r := range rs {
			if uint64(addr) >= r[0] && uint64(addr) < r[1] {
				return true
			}
		}
		return false
	}
	for _, u := range dw.units {
		u.load(dw)
		if in(u.dead) || (u.lines != nil && in(u.lines.dead)) {
			return true
		}
	}
	return false
}

// DWARF returns the file's decoded debugging information, or nil when the
// file has none (or it could not be decoded: see Warnings). The returned
// value is shared: callers read it through their own dwarf.Reader and must
// not call its Type method, whose cache is not safe for concurrent use.
func (f *File) DWARF() *dwarf.Data {
	if f.dw == nil {
		return nil
	}
	return f.dw.d
}

// segIndex answers "which unit ranges contain addr" in O(log n + k) even
// when a few long ranges overlap many short ones (a unit whose range spans
// the others makes the running-maximum scan of ivIndex walk back over
// every earlier range, for every address). The address space is cut at
// every range end into elementary segments; each segment lists the ranges
// covering it, in the order ivIndex.containing yields them (latest start
// first). Built only while the lists stay within a few times the number of
// ranges; otherwise ok is false and ivIndex is used.
type segIndex struct {
	ok     bool
	starts []uint64 // segment i is [starts[i], starts[i+1])
	offs   []int32  // ranges of segment i: items[offs[i]:offs[i+1]]
	items  []int32  // indexes into the sorted ranges
}

func newSegIndex(rs []cuRange) segIndex {
	if len(rs) == 0 {
		return segIndex{}
	}
	bounds := make([]uint64, 0, 2*len(rs))
	for _, r := range rs {
		bounds = append(bounds, uint64(r.lo), r.hi)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	seg := func(a uint64) int { // the segment starting at a
		i, _ := slices.BinarySearch(bounds, a)
		return i
	}
	limit := 8*len(rs) + 1<<16
	counts := make([]int32, len(bounds))
	total := 0
	for _, r := range rs {
		n := seg(r.hi) - seg(uint64(r.lo))
		total += n
		if total > limit {
			return segIndex{}
		}
		for k := seg(uint64(r.lo)); k < seg(r.hi); k++ {
			counts[k]++
		}
	}
	ix := segIndex{ok: true, starts: bounds, offs: make([]int32, len(bounds)+1), items: make([]int32, total)}
	for k, c := range counts {
		ix.offs[k+1] = ix.offs[k] + c
	}
	fill := slices.Clone(ix.offs[:len(bounds)])
	for i := len(rs) - 1; i >= 0; i-- {
		for k := seg(uint64(rs[i].lo)); k < seg(rs[i].hi); k++ {
			ix.items[fill[k]] = int32(i)
			fill[k]++
		}
	}
	return ix
}

// containing calls fn for every unit range containing addr, latest start
// first, until fn returns false.
func (dw *dwarfIndex) unitRangesAt(addr uint32, fn func(*cuRange) bool) {
	if !dw.segs.ok {
		dw.ranges.containing(addr, fn)
		return
	}
	ix := &dw.segs
	k := sort.Search(len(ix.starts), func(k int) bool { return ix.starts[k] > uint64(addr) }) - 1
	if k < 0 {
		return
	}
	for _, i := range ix.items[ix.offs[k]:ix.offs[k+1]] {
		if !fn(&dw.ranges.items[i]) {
			return
		}
	}
}

// dwarfReason words a debug/dwarf error for a user: the section and offset
// and what is wrong ("section .debug_info at offset 0x4: cannot determine
// byte order"), not the library's "decoding dwarf section info".
func dwarfReason(err error) string {
	var de dwarf.DecodeError
	if errors.As(err, &de) {
		return fmt.Sprintf("section .debug_%s at offset 0x%x: %s", de.Name, uint64(de.Offset), de.Err)
	}
	return err.Error()
}
