package elfsym

import (
	"bytes"
	"debug/dwarf"
	"errors"
)

// A fast decoder of debugging information entries (DWARF 5 section 7.5)
// for loadFuncs. debug/dwarf decodes every attribute of every entry into
// an allocated Entry, which makes the function tree of a large unit cost
// several times what its line table costs; this decoder reads entries in
// place and keeps only the attributes loadFuncs uses.
//
// It is a fast path, not a second implementation of the format: it
// accepts only what it decodes exactly as debug/dwarf does (the forms
// GCC and clang emit for DWARF 2 to 5, except the indexed forms strx,
// addrx and rnglistx, and offset-based range lists). On anything else,
// and on any inconsistency or truncation, it gives up with errSlowPath and
// loadFuncs decodes the whole unit again through debug/dwarf, so the
// result is always the one debug/dwarf gives.

// errSlowPath: the unit needs debug/dwarf.
var errSlowPath = errors.New("elfsym: DWARF unit needs the general decoder")

// DWARF forms (DWARF 5 section 7.5.6) not named elsewhere in the package.
const (
	formAddr          = 0x01
	formFlag          = 0x0c
	formRefAddr       = 0x10
	formRef1          = 0x11
	formRef2          = 0x12
	formRef4          = 0x13
	formRef8          = 0x14
	formRefUdata      = 0x15
	formIndirect      = 0x16
	formSecOffset     = 0x17
	formExprloc       = 0x18
	formFlagPresent   = 0x19
	formRefSup4       = 0x1c
	formStrpSup       = 0x1d
	formRefSig8       = 0x20
	formImplicitConst = 0x21
	formLoclistx      = 0x22
	formRefSup8       = 0x24
	formGNURefAlt     = 0x1f20
	formGNUStrpAlt    = 0x1f21
)

// dieAttr is one attribute specification of an abbreviation.
type dieAttr struct {
	attr dwarf.Attr
	form uint64
	imp  int64 // DW_FORM_implicit_const value
}

// dieAbbrev is one abbreviation (DWARF 5 section 7.5.3).
type dieAbbrev struct {
	tag      dwarf.Tag
	children bool
	attrs    []dieAttr
}

// dieReader reads the entries of one unit.
type dieReader struct {
	dw      *dwarfIndex
	u       *unit
	data    []byte // .debug_info up to the end of the unit
	abbrevs map[uint32]*dieAbbrev
	dense   []*dieAbbrev // abbrevs by code when the codes are small
}

// dieEntry is what loadFuncs needs of one entry: for each attribute the
// value of its first occurrence, as debug/dwarf's Entry.Val returns it.
type dieEntry struct {
	off      int
	next     int // offset of the entry that follows (its first child, if any)
	tag      dwarf.Tag
	children bool

	lowPC     uint64 // DW_AT_low_pc of class address
	lowOK     bool
	lowSeen   bool
	highSeen  bool   // DW_AT_high_pc present (the first occurrence decides)
	highAddr  bool   // ... as an address
	highConst bool   // ... as a constant (an offset from low_pc)
	highPC    uint64 // address, or the constant as int64 bits
	entryPC   uint64 // DW_AT_entry_pc of class address (compile units)
	entryOK   bool
	entrySeen bool
	ranges    bool  // DW_AT_ranges present
	rangesInt bool  // ... with an int64 value (constant or sec_offset form)
	rangesSec bool  // ... in DW_FORM_sec_offset
	rangesVal int64 // its value

	linkage, mips, name       []byte // string values (nil: none)
	linkageOK, mipsOK, nameOK bool
	origin, spec, sibling     dwarf.Offset
	originOK, specOK, sibOK   bool
	callFile, callLine        int64
	callCol                   int64
	callFileOK, callLineOK    bool
	callColOK                 bool
}

// newDieReader parses the unit's abbreviation table.
func newDieReader(dw *dwarfIndex, u *unit) (*dieReader, error) {
	if u.end > len(dw.info) || int(u.dieOff) > u.end || (u.addrSize != 4 && u.addrSize != 8) {
		return nil, errSlowPath
	}
	r := &dieReader{dw: dw, u: u, data: dw.info[:u.end], abbrevs: map[uint32]*dieAbbrev{}}
	if u.abbrevOff >= uint64(len(dw.abbrev)) {
		return nil, errSlowPath
	}
	b := &buf{sec: ".debug_abbrev", data: dw.abbrev[u.abbrevOff:]}
	maxCode := uint32(0)
	for {
		code := uint32(b.uleb("code"))
		if code == 0 || b.err != nil {
			break
		}
		a := &dieAbbrev{tag: dwarf.Tag(b.uleb("tag"))}
		a.children = b.u8("children") != 0
		for b.err == nil {
			attr, form := b.uleb("attr"), b.uleb("form")
			if attr == 0 && form == 0 {
				break
			}
			form = uint64(uint32(form)) // debug/dwarf keeps 32 bits
			at := dieAttr{attr: dwarf.Attr(attr), form: form}
			if form == formImplicitConst {
				at.imp = b.sleb("implicit_const")
			}
			a.attrs = append(a.attrs, at)
		}
		r.abbrevs[code] = a // a later definition replaces an earlier one, as in debug/dwarf
		maxCode = max(maxCode, code)
	}
	if b.err != nil {
		return nil, errSlowPath
	}
	if int(maxCode) <= 4*len(r.abbrevs)+64 {
		r.dense = make([]*dieAbbrev, maxCode+1)
		for c, a := range r.abbrevs {
			r.dense[c] = a
		}
	}
	return r, nil
}

// uleb and sleb decode LEB128 as debug/dwarf does (bits past 64 dropped).
func uleb(d []byte, pos int) (uint64, uint, int, bool) {
	var v uint64
	var bits uint
	for i := pos; i < len(d); i++ {
		c := d[i]
		v |= uint64(c&0x7f) << bits
		bits += 7
		if c&0x80 == 0 {
			return v, bits, i + 1, true
		}
	}
	return 0, 0, pos, false
}

func sleb(d []byte, pos int) (int64, int, bool) {
	u, bits, next, ok := uleb(d, pos)
	x := int64(u)
	if ok && bits > 0 && x&(1<<(bits-1)) != 0 {
		x |= -1 << bits
	}
	return x, next, ok
}

func le(d []byte, pos, n int) (uint64, bool) {
	if n < 0 || pos+n > len(d) || pos+n < pos {
		return 0, false
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(d[pos+i])
	}
	return v, true
}

// cstrAt returns the NUL-terminated string at off of tab, as debug/dwarf
// reads a DW_FORM_strp: an offset past the end or a missing NUL is an
// error.
func cstrAt(tab []byte, off uint64) ([]byte, bool) {
	if off >= uint64(len(tab)) {
		return nil, false
	}
	n := bytes.IndexByte(tab[off:], 0)
	if n < 0 {
		return nil, false
	}
	return tab[off : off+uint64(n) : off+uint64(n)], true
}

// entry decodes the entry at off. An abbreviation code of 0 (the end of a
// sibling list) gives tag 0.
func (r *dieReader) entry(off int, e *dieEntry) error {
	*e = dieEntry{off: off}
	d := r.data
	code64, _, pos, ok := uleb(d, off)
	if !ok {
		return errSlowPath
	}
	code := uint32(code64)
	if code == 0 {
		e.next = pos
		return nil
	}
	var a *dieAbbrev
	if int(code) < len(r.dense) {
		a = r.dense[code]
	} else if r.dense == nil {
		a = r.abbrevs[code]
	}
	if a == nil {
		return errSlowPath
	}
	e.tag, e.children = a.tag, a.children
	u := r.u
	base := uint64(u.hdrOff)
	for i := range a.attrs {
		at := &a.attrs[i]
		var (
			kind byte // 'a' address, 'c' int64 constant, 'r' reference, 's' string, 0 other
			val  uint64
			str  []byte
		)
		switch at.form {
		case formAddr:
			val, ok = le(d, pos, u.addrSize)
			pos += u.addrSize
			kind = 'a'
		case formData1, formData2, formData4, formData8:
			n := dataSize(at.form)
			val, ok = le(d, pos, n)
			pos += n
			kind = 'c'
		case formSdata:
			var v int64
			v, pos, ok = sleb(d, pos)
			val, kind = uint64(v), 'c'
		case formUdata:
			val, _, pos, ok = uleb(d, pos)
			kind = 'c'
		case formImplicitConst:
			val, kind = uint64(at.imp), 'c'
		case formSecOffset, formGNURefAlt, formGNUStrpAlt:
			val, ok = le(d, pos, u.offSize)
			pos += u.offSize
			kind = 'c'
			if at.form == formSecOffset && at.attr == dwarf.AttrRanges && !e.ranges {
				e.rangesSec = true
			}
		case formFlag:
			_, ok = le(d, pos, 1)
			pos++
		case formFlagPresent:
		case formData16:
			pos += 16
		case formBlock1, formBlock2, formBlock4, formBlock, formExprloc:
			var n uint64
			switch at.form {
			case formBlock1:
				n, ok = le(d, pos, 1)
				pos++
			case formBlock2:
				n, ok = le(d, pos, 2)
				pos += 2
			case formBlock4:
				n, ok = le(d, pos, 4)
				pos += 4
			default:
				n, _, pos, ok = uleb(d, pos)
			}
			if !ok || n > uint64(len(d)-min(pos, len(d))) {
				return errSlowPath
			}
			pos += int(n)
		case formString:
			i := bytes.IndexByte(d[min(pos, len(d)):], 0)
			if i < 0 {
				return errSlowPath
			}
			str = d[pos : pos+i : pos+i]
			pos += i + 1
			kind = 's'
		case formStrp, formLineStrp:
			val, ok = le(d, pos, u.offSize)
			pos += u.offSize
			if !ok {
				return errSlowPath
			}
			tab := r.dw.str
			if at.form == formLineStrp {
				tab = r.dw.lineStr
			}
			if str, ok = cstrAt(tab, val); !ok {
				return errSlowPath
			}
			kind = 's'
		case formRefAddr:
			n := u.offSize
			if u.version == 2 {
				n = u.addrSize
			}
			val, ok = le(d, pos, n)
			pos += n
			kind = 'r'
		case formRef1, formRef2, formRef4, formRef8:
			n := dataSize(at.form)
			val, ok = le(d, pos, n)
			pos += n
			val += base
			kind = 'r'
		case formRefUdata:
			val, _, pos, ok = uleb(d, pos)
			val += base
			kind = 'r'
		case formRefSup4:
			_, ok = le(d, pos, 4)
			pos += 4
		case formRefSup8, formRefSig8:
			_, ok = le(d, pos, 8)
			pos += 8
		case formStrpSup:
			_, ok = le(d, pos, u.offSize)
			pos += u.offSize
		case formLoclistx:
			_, _, pos, ok = uleb(d, pos)
		default:
			// strx, addrx, rnglistx, indirect, GNU index forms and
			// unknown forms.
			return errSlowPath
		}
		if !ok || pos > len(d) {
			return errSlowPath
		}
		switch at.attr {
		case dwarf.AttrLowpc:
			// Only the first occurrence counts: one that is not an
			// address makes Val(AttrLowpc).(uint64) fail.
			if !e.lowSeen {
				e.lowSeen = true
				e.lowPC, e.lowOK = val, kind == 'a'
			}
		case dwarf.AttrHighpc:
			if !e.highSeen {
				e.highSeen = true
				e.highAddr = kind == 'a'
				e.highConst = kind == 'c' && at.form != formSecOffset && at.form != formGNURefAlt && at.form != formGNUStrpAlt
				e.highPC = val
			}
		case dwarf.AttrEntrypc:
			if !e.entrySeen {
				e.entrySeen = true
				e.entryPC, e.entryOK = val, kind == 'a'
			}
		case dwarf.AttrRanges:
			if !e.ranges {
				e.ranges = true
				e.rangesInt = kind == 'c'
				e.rangesVal = int64(val)
			}
		case dwarf.AttrLinkageName:
			if !e.linkageOK {
				e.linkageOK = true
				e.linkage = str
				if kind != 's' {
					e.linkage = nil
				}
			}
		case attrMIPSLinkageName:
			if !e.mipsOK {
				e.mipsOK = true
				e.mips = str
				if kind != 's' {
					e.mips = nil
				}
			}
		case dwarf.AttrName:
			if !e.nameOK {
				e.nameOK = true
				e.name = str
				if kind != 's' {
					e.name = nil
				}
			}
		case dwarf.AttrAbstractOrigin, dwarf.AttrSpecification, dwarf.AttrSibling:
			p, set := &e.origin, &e.originOK
			switch at.attr {
			case dwarf.AttrSpecification:
				p, set = &e.spec, &e.specOK
			case dwarf.AttrSibling:
				p, set = &e.sibling, &e.sibOK
			}
			if !*set {
				*set = true
				if kind == 'r' {
					*p = dwarf.Offset(val)
				} else {
					*p = ^dwarf.Offset(0) // present, but not a reference
				}
			}
		case dwarf.AttrCallFile, dwarf.AttrCallLine, dwarf.AttrCallColumn:
			p, set := &e.callFile, &e.callFileOK
			switch at.attr {
			case dwarf.AttrCallLine:
				p, set = &e.callLine, &e.callLineOK
			case dwarf.AttrCallColumn:
				p, set = &e.callCol, &e.callColOK
			}
			if !*set {
				*set = true
				*p = -1 // not an int64: ignored like a negative value
				if kind == 'c' {
					*p = int64(val)
				}
			}
		}
	}
	e.next = pos
	return nil
}

// dataSize is the size of the fixed-size data and reference forms.
func dataSize(form uint64) int {
	switch form {
	case formData1, formRef1:
		return 1
	case formData2, formRef2:
		return 2
	case formData4, formRef4:
		return 4
	}
	return 8
}

// ref returns a reference attribute's offset, and whether the attribute
// is a reference (debug/dwarf's Val(attr).(dwarf.Offset)).
func ref(off dwarf.Offset, set bool) (dwarf.Offset, bool) {
	return off, set && off != ^dwarf.Offset(0)
}

// funcRanges is debug/dwarf's Data.Ranges for a function entry of the
// unit: [low_pc, high_pc) and the range list of DW_AT_ranges. cu is the
// unit's entry (the base address of range lists).
func (r *dieReader) funcRanges(e, cu *dieEntry, ret [][2]uint64) ([][2]uint64, error) {
	ret = ret[:0]
	if e.lowOK {
		switch {
		case e.highAddr:
			ret = append(ret, [2]uint64{e.lowPC, e.highPC})
		case e.highConst:
			ret = append(ret, [2]uint64{e.lowPC, e.lowPC + e.highPC})
		}
	}
	if !e.ranges {
		return ret, nil
	}
	base := uint64(0)
	switch {
	case cu.entryOK:
		base = cu.entryPC
	case cu.lowOK:
		base = cu.lowPC
	}
	if r.u.version >= 5 && r.dw.rngLists != nil {
		if !e.rangesSec {
			// A constant form is not a range list pointer in DWARF 5:
			// debug/dwarf ignores it.
			return ret, nil
		}
		return r.rangeList5(base, e.rangesVal, ret)
	}
	if !e.rangesInt || r.dw.rangesSec == nil {
		return ret, nil
	}
	return r.rangeList2(base, e.rangesVal, ret)
}

// rangeList2 reads a .debug_ranges list (DWARF 4 section 2.17.3).
func (r *dieReader) rangeList2(base uint64, off int64, ret [][2]uint64) ([][2]uint64, error) {
	d := r.dw.rangesSec
	if off < 0 || off > int64(len(d)) {
		return nil, errSlowPath
	}
	n := r.u.addrSize
	maxAddr := ^uint64(0) >> uint((8-n)*8)
	for pos := int(off); pos < len(d); pos += 2 * n {
		lo, ok1 := le(d, pos, n)
		hi, ok2 := le(d, pos+n, n)
		if !ok1 || !ok2 {
			return nil, errSlowPath
		}
		if lo == 0 && hi == 0 {
			break
		}
		if lo == maxAddr {
			base = hi
		} else {
			ret = append(ret, [2]uint64{base + lo, base + hi})
		}
	}
	return ret, nil
}

// rangeList5 reads a .debug_rnglists list (DWARF 5 section 2.17.3) made
// of the entries that need no .debug_addr.
func (r *dieReader) rangeList5(base uint64, off int64, ret [][2]uint64) ([][2]uint64, error) {
	d := r.dw.rngLists
	if off < 0 || off >= int64(len(d)) {
		return nil, errSlowPath
	}
	n := r.u.addrSize
	pos := int(off)
	for {
		if pos >= len(d) {
			return nil, errSlowPath
		}
		op := d[pos]
		pos++
		var a, b uint64
		ok1, ok2 := true, true
		switch op {
		case 0: // DW_RLE_end_of_list
			return ret, nil
		case 4: // DW_RLE_offset_pair
			a, _, pos, ok1 = uleb(d, pos)
			b, _, pos, ok2 = uleb(d, pos)
			ret = append(ret, [2]uint64{base + a, base + b})
		case 5: // DW_RLE_base_address
			base, ok1 = le(d, pos, n)
			pos += n
		case 6: // DW_RLE_start_end
			a, ok1 = le(d, pos, n)
			b, ok2 = le(d, pos+n, n)
			pos += 2 * n
			ret = append(ret, [2]uint64{a, b})
		case 7: // DW_RLE_start_length
			a, ok1 = le(d, pos, n)
			pos += n
			b, _, pos, ok2 = uleb(d, pos)
			ret = append(ret, [2]uint64{a, a + b})
		default: // the indexed entries, and unknown ones
			return nil, errSlowPath
		}
		if !ok1 || !ok2 {
			return nil, errSlowPath
		}
	}
}

// skipChildren skips the children of e, as debug/dwarf's
// Reader.SkipChildren does: to DW_AT_sibling when it points forward,
// else entry by entry. It returns the offset after the subtree.
func (r *dieReader) skipChildren(e *dieEntry, depth int) (int, error) {
	if !e.children {
		return e.next, nil
	}
	if sib, ok := ref(e.sibling, e.sibOK); ok && int64(sib) >= int64(e.next) {
		if int64(sib) >= int64(r.u.end) {
			return 0, errSlowPath // into another unit
		}
		return int(sib), nil
	}
	if depth > 1000 {
		return 0, errSlowPath
	}
	pos := e.next
	var c dieEntry
	for {
		if pos >= r.u.end {
			return 0, errSlowPath // the unit ends inside the subtree
		}
		if err := r.entry(pos, &c); err != nil {
			return 0, err
		}
		if c.tag == 0 {
			return c.next, nil
		}
		if c.tag == dwarf.TagCompileUnit || c.tag == dwarf.TagPartialUnit {
			return 0, errSlowPath
		}
		next, err := r.skipChildren(&c, depth+1)
		if err != nil {
			return 0, err
		}
		pos = next
	}
}

// resolveName is resolveName (dwarf.go) on entries of this unit; a
// reference out of the unit, or to something that is not an entry, needs
// debug/dwarf.
func (r *dieReader) resolveName(e *dieEntry, cache map[dwarf.Offset]nameInfo, depth int) (nameInfo, error) {
	if ni, ok := cache[dwarf.Offset(e.off)]; ok {
		return ni, nil
	}
	var ni nameInfo
	if e.linkageOK && len(e.linkage) > 0 {
		ni = nameInfo{string(e.linkage), true}
	} else if e.mipsOK && len(e.mips) > 0 {
		ni = nameInfo{string(e.mips), true}
	}
	if !ni.linkage && depth < 8 {
		for _, a := range [2]struct {
			off dwarf.Offset
			set bool
		}{{e.origin, e.originOK}, {e.spec, e.specOK}} {
			off, ok := ref(a.off, a.set)
			if !ok {
				continue
			}
			if int64(off) < int64(r.u.dieOff) || int64(off) >= int64(r.u.end) {
				return nameInfo{}, errSlowPath
			}
			var oe dieEntry
			if err := r.entry(int(off), &oe); err != nil || oe.tag == 0 {
				return nameInfo{}, errSlowPath
			}
			o, err := r.resolveName(&oe, cache, depth+1)
			if err != nil {
				return nameInfo{}, err
			}
			if o.linkage {
				ni = o
				break
			}
			if ni.name == "" {
				ni.name = o.name
			}
		}
	}
	if ni.name == "" && e.nameOK {
		ni.name = string(e.name)
	}
	cache[dwarf.Offset(e.off)] = ni
	return ni, nil
}
