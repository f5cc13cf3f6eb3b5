package frame

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kind says which section call frame information came from; the two differ
// in how a CIE is recognised, how an FDE points to its CIE and how
// addresses are encoded.
type Kind uint8

const (
	DebugFrame Kind = iota // .debug_frame (DWARF 5 section 6.4.1)
	EHFrame                // .eh_frame (LSB 5.0 section 10.6)
)

func (k Kind) String() string {
	if k == EHFrame {
		return ".eh_frame"
	}
	return ".debug_frame"
}

// Pointer encodings (DW_EH_PE_*, LSB 5.0 section 10.5.1).
const (
	PEAbsptr  = 0x00
	PEUleb128 = 0x01
	PEUdata2  = 0x02
	PEUdata4  = 0x03
	PEUdata8  = 0x04
	PESleb128 = 0x09
	PESdata2  = 0x0a
	PESdata4  = 0x0b
	PESdata8  = 0x0c

	PEPcrel    = 0x10
	PETextrel  = 0x20
	PEDatarel  = 0x30
	PEFuncrel  = 0x40
	PEAligned  = 0x50
	PEIndirect = 0x80
	PEOmit     = 0xff
)

// CIE is a Common Information Entry: what the FDEs that point to it share.
type CIE struct {
	Offset       uint64 // of the entry in its section
	Length       uint64 // of the entry, without the length field
	DWARF64      bool   // 64-bit DWARF format (initial length 0xffffffff)
	Version      uint8  // 1, 3 or 4
	Augmentation string
	AddressSize  uint8 // 4 unless a version 4 CIE says otherwise
	SegmentSize  uint8
	CodeAlign    uint64 // code alignment factor: multiplies advance deltas
	DataAlign    int64  // data alignment factor: multiplies factored offsets
	RAColumn     uint64 // the DWARF register number of the return address column

	// From the augmentation data ('z' strings of .eh_frame).
	FDEEncoding         uint8 // DW_EH_PE_* of FDE addresses ('R'); PEAbsptr if absent
	LSDAEncoding        uint8 // 'L'; PEOmit if absent
	PersonalityEncoding uint8 // 'P'; PEOmit if absent
	Personality         uint64
	SignalFrame         bool // 'S': FDEs describe signal (exception) frames

	// Instructions are the initial instructions, run before every FDE's.
	Instructions []byte
	instOff      uint64 // section offset of Instructions
	kind         Kind
}

// FDE is a Frame Description Entry: the call frame instructions of one
// address range, usually one function.
type FDE struct {
	Offset uint64 // of the entry in its section
	Length uint64 // of the entry, without the length field
	CIE    *CIE
	// Start and End bound the code the FDE describes, [Start, End):
	// absolute addresses, .eh_frame's pc-relative encodings resolved.
	Start, End uint64
	LSDA       uint64 // the language-specific data area ('L'), 0 if none
	// Instructions are the FDE's call frame instructions.
	Instructions []byte
	instOff      uint64
	secAddr      uint64
	kind         Kind
}

// Kind returns the section the FDE came from.
func (f *FDE) Kind() Kind { return f.kind }

// Contains reports whether pc lies in [Start, End).
func (f *FDE) Contains(pc uint64) bool { return pc >= f.Start && pc < f.End }

func (f *FDE) String() string {
	return fmt.Sprintf("FDE %s+0x%x [0x%08x, 0x%08x)", f.kind, f.Offset, f.Start, f.End)
}

// Section is a decoded .debug_frame or .eh_frame section.
type Section struct {
	Kind Kind
	Addr uint64 // the section's address (the base of .eh_frame's pc-relative pointers)
	CIEs []*CIE // in section order
	FDEs []*FDE // in section order, those that decoded
	// Errs lists the entries that could not be decoded and were skipped,
	// each a *DecodeError.
	Errs []error
}

// maxErrs bounds how many per-entry errors Parse keeps.
const maxErrs = 64

// Parse decodes a call frame section whose contents are data and whose
// address is addr (the base of .eh_frame's pc-relative pointers; ignored
// for .debug_frame). Addresses are 4 bytes (ELF32) unless a version 4 CIE
// says otherwise.
//
// Parse walks the section entry by entry. An entry whose CIE or FDE cannot
// be decoded is skipped and reported; an entry whose length runs past the
// end of the section ends the walk. The returned Section always holds every
// entry that decoded; the error, when not nil, joins the *DecodeErrors of
// the rest (also listed in Section.Errs). An .eh_frame ends at its zero
// terminator; in .debug_frame a zero length is skipped as padding.
//
// Cost: linear in the size of the section. It does not run any call frame
// instruction: that happens per FDE in Rows and RowAt, which report
// malformed instructions.
func Parse(kind Kind, addr uint64, data []byte) (*Section, error) {
	s := &Section{Kind: kind, Addr: addr}
	type rawEntry struct {
		off, length uint64
		dwarf64     bool
		body        reader // from the CIE id / pointer to the end of the entry
		isCIE       bool
		ciePtr      uint64
	}
	var entries []rawEntry
	r := reader{data: data}
	for r.left() > 0 {
		off := r.pos()
		length := uint64(r.u32())
		dwarf64 := false
		if length == 0xffffffff {
			length = r.u64()
			dwarf64 = true
		}
		if !r.ok() {
			s.addErr(decodeErr(kind, off, ErrTruncated, "the entry's initial length runs past the end of the section"))
			break
		}
		if length == 0 {
			if kind == EHFrame {
				break // the terminator
			}
			continue
		}
		if length > uint64(r.left()) {
			s.addErr(decodeErr(kind, off, ErrTruncated, "the entry is 0x%x bytes long but only 0x%x remain in the section", length, r.left()))
			break
		}
		body := reader{data: r.bytes(length), base: r.pos() - length}
		idPos := body.pos()
		idSize := 4
		if dwarf64 && kind == DebugFrame {
			idSize = 8
		}
		id := body.uint(idSize)
		if !body.ok() {
			s.addErr(decodeErr(kind, off, ErrTruncated, "the entry is too short for its CIE id"))
			continue
		}
		e := rawEntry{off: off, length: length, dwarf64: dwarf64, body: body}
		switch kind {
		case DebugFrame:
			e.isCIE = idSize == 4 && id == 0xffffffff || idSize == 8 && id == math.MaxUint64
			e.ciePtr = id
		case EHFrame:
			e.isCIE = id == 0
			if !e.isCIE {
				if id > idPos {
					s.addErr(decodeErr(kind, off, ErrFormat, "FDE: CIE pointer 0x%x points before the start of the section", id))
					continue
				}
				e.ciePtr = idPos - id
			}
		}
		entries = append(entries, e)
	}
	cies := map[uint64]*CIE{}
	bad := map[uint64]error{}
	for i := range entries {
		e := &entries[i]
		if !e.isCIE {
			continue
		}
		c, err := parseCIE(kind, e.off, e.length, e.dwarf64, &e.body)
		if err != nil {
			bad[e.off] = err
			s.addErr(err)
			continue
		}
		cies[e.off] = c
		s.CIEs = append(s.CIEs, c)
	}
	for i := range entries {
		e := &entries[i]
		if e.isCIE {
			continue
		}
		c := cies[e.ciePtr]
		if c == nil {
			switch {
			case bad[e.ciePtr] != nil:
				s.addErr(decodeErr(kind, e.off, ErrFormat, "FDE: its CIE at 0x%x could not be decoded", e.ciePtr))
			case e.ciePtr >= uint64(len(data)):
				s.addErr(decodeErr(kind, e.off, ErrFormat, "FDE: CIE pointer 0x%x is outside the section (size 0x%x)", e.ciePtr, len(data)))
			default:
				s.addErr(decodeErr(kind, e.off, ErrFormat, "FDE: CIE pointer 0x%x does not point to a CIE", e.ciePtr))
			}
			continue
		}
		f, err := parseFDE(kind, addr, e.off, e.length, c, &e.body)
		if err != nil {
			s.addErr(err)
			continue
		}
		s.FDEs = append(s.FDEs, f)
	}
	return s, s.err()
}

func (s *Section) addErr(err error) {
	if len(s.Errs) < maxErrs {
		s.Errs = append(s.Errs, err)
	}
}

func (s *Section) err() error {
	switch len(s.Errs) {
	case 0:
		return nil
	case 1:
		return s.Errs[0]
	}
	return errors.Join(s.Errs...)
}

// parseCIE decodes a CIE's fields after the CIE id (DWARF 5 6.4.1, LSB
// 10.6.1.1).
func parseCIE(kind Kind, off, length uint64, dwarf64 bool, r *reader) (*CIE, error) {
	c := &CIE{Offset: off, Length: length, DWARF64: dwarf64, AddressSize: 4, kind: kind,
		FDEEncoding: PEAbsptr, LSDAEncoding: PEOmit, PersonalityEncoding: PEOmit}
	fail := func(sentinel error, format string, args ...any) (*CIE, error) {
		return nil, decodeErr(kind, off, sentinel, "CIE: "+format, args...)
	}
	c.Version = r.u8()
	switch {
	case !r.ok():
		return fail(ErrTruncated, "ends before its version")
	case c.Version != 1 && c.Version != 3 && c.Version != 4:
		return fail(ErrUnsupported, "version %d (1, 3 and 4 are known)", c.Version)
	}
	c.Augmentation = r.cstring()
	if !r.ok() {
		return fail(ErrTruncated, "the augmentation string is not terminated")
	}
	if c.Augmentation != "" && c.Augmentation[0] != 'z' {
		// Without 'z' nothing says how long the augmentation data of the
		// CIE and its FDEs are: the entries cannot be read safely.
		return fail(ErrUnsupported, "unknown augmentation %q", c.Augmentation)
	}
	if c.Version == 4 {
		c.AddressSize = r.u8()
		c.SegmentSize = r.u8()
		if !r.ok() {
			return fail(ErrTruncated, "ends before its address size")
		}
		if c.AddressSize != 4 && c.AddressSize != 8 {
			return fail(ErrUnsupported, "address size %d", c.AddressSize)
		}
		if c.SegmentSize != 0 {
			return fail(ErrUnsupported, "segment selector size %d (segmented addressing)", c.SegmentSize)
		}
	}
	var okc, okd, okr bool
	c.CodeAlign, okc = r.uleb()
	c.DataAlign, okd = r.sleb()
	if c.Version == 1 {
		c.RAColumn, okr = uint64(r.u8()), true
	} else {
		c.RAColumn, okr = r.uleb()
	}
	switch {
	case !r.ok():
		return fail(ErrTruncated, "ends before its return address column")
	case !okc || !okd || !okr:
		return fail(ErrFormat, "an alignment factor or the return address column does not fit in 64 bits")
	case c.CodeAlign == 0:
		return fail(ErrFormat, "code alignment factor 0")
	}
	if c.Augmentation != "" {
		n, ok := r.uleb()
		if !r.ok() || !ok {
			return fail(ErrTruncated, "ends in its augmentation data length")
		}
		aug := reader{data: r.bytes(n), base: r.pos() - n}
		if !r.ok() {
			return fail(ErrTruncated, "augmentation data of 0x%x bytes runs past the end of the entry", n)
		}
		for _, ch := range c.Augmentation[1:] {
			switch ch {
			case 'R':
				c.FDEEncoding = aug.u8()
				if err := checkEncoding(c.FDEEncoding, false); err != nil && aug.ok() {
					return fail(ErrUnsupported, "FDE pointer encoding 0x%02x: %v", c.FDEEncoding, err)
				}
			case 'L':
				c.LSDAEncoding = aug.u8()
				if err := checkEncoding(c.LSDAEncoding, true); err != nil && aug.ok() {
					return fail(ErrUnsupported, "LSDA pointer encoding 0x%02x: %v", c.LSDAEncoding, err)
				}
			case 'P':
				c.PersonalityEncoding = aug.u8()
				if err := checkEncoding(c.PersonalityEncoding, true); err != nil && aug.ok() {
					return fail(ErrUnsupported, "personality pointer encoding 0x%02x: %v", c.PersonalityEncoding, err)
				}
				v, err := readEncoded(&aug, c.PersonalityEncoding, int(c.AddressSize), 0)
				if err != nil && aug.ok() {
					return fail(ErrUnsupported, "personality pointer: %v", err)
				}
				c.Personality = v
			case 'S':
				c.SignalFrame = true
			case 'B', 'G':
				// AArch64 BTI and MTE flags: no data.
			default:
				return fail(ErrUnsupported, "unknown augmentation %q (letter %q)", c.Augmentation, ch)
			}
			if !aug.ok() {
				return fail(ErrTruncated, "augmentation data ends before the data of %q", ch)
			}
		}
	}
	c.instOff = r.pos()
	c.Instructions = r.data[r.off:]
	return c, nil
}

// parseFDE decodes an FDE's fields after the CIE pointer.
func parseFDE(kind Kind, secAddr, off, length uint64, c *CIE, r *reader) (*FDE, error) {
	f := &FDE{Offset: off, Length: length, CIE: c, kind: kind, secAddr: secAddr}
	fail := func(sentinel error, format string, args ...any) (*FDE, error) {
		return nil, decodeErr(kind, off, sentinel, "FDE: "+format, args...)
	}
	size := int(c.AddressSize)
	var start, rng uint64
	var err error
	if kind == DebugFrame {
		start = r.uint(size)
		rng = r.uint(size)
	} else {
		start, err = readEncoded(r, c.FDEEncoding, size, secAddr)
		if err == nil {
			// The range has the encoding's format, no application.
			rng, err = readEncoded(r, c.FDEEncoding&0x0f, size, 0)
		}
	}
	if !r.ok() {
		return fail(ErrTruncated, "ends before its address range")
	}
	if err != nil {
		return fail(ErrUnsupported, "%v", err)
	}
	f.Start = start
	f.End = start + rng
	limit := uint64(math.MaxUint32)
	if size == 8 {
		limit = math.MaxUint64
	}
	if f.End < start || f.End-1 > limit && rng > 0 {
		return fail(ErrFormat, "range 0x%x at 0x%x runs past the end of the address space", rng, start)
	}
	if strings.HasPrefix(c.Augmentation, "z") {
		n, ok := r.uleb()
		if !r.ok() || !ok {
			return fail(ErrTruncated, "ends in its augmentation data length")
		}
		aug := reader{data: r.bytes(n), base: r.pos() - n}
		if !r.ok() {
			return fail(ErrTruncated, "augmentation data of 0x%x bytes runs past the end of the entry", n)
		}
		if c.LSDAEncoding != PEOmit {
			v, err := readEncoded(&aug, c.LSDAEncoding, size, secAddr)
			if !aug.ok() {
				return fail(ErrTruncated, "augmentation data ends before the LSDA pointer")
			}
			if err != nil {
				return fail(ErrUnsupported, "LSDA pointer: %v", err)
			}
			f.LSDA = v
		}
	}
	f.instOff = r.pos()
	f.Instructions = r.data[r.off:]
	return f, nil
}

// checkEncoding reports whether a DW_EH_PE_* value is one this package can
// decode. indirect is allowed for pointers that are only recorded
// (personality, LSDA), never for code addresses.
func checkEncoding(enc uint8, indirectOK bool) error {
	if enc == PEOmit {
		return nil
	}
	switch enc & 0x0f {
	case PEAbsptr, PEUleb128, PEUdata2, PEUdata4, PEUdata8, PESleb128, PESdata2, PESdata4, PESdata8:
	default:
		return fmt.Errorf("unknown value format 0x%x", enc&0x0f)
	}
	switch enc & 0x70 {
	case 0, PEPcrel, PEAligned:
	case PETextrel, PEDatarel, PEFuncrel:
		return fmt.Errorf("pointers relative to a text, data or function base are %w", ErrUnsupported)
	default:
		return fmt.Errorf("unknown application 0x%x", enc&0x70)
	}
	if enc&PEIndirect != 0 && !indirectOK {
		return fmt.Errorf("an indirect code address is %w", ErrUnsupported)
	}
	return nil
}

// readEncoded reads a pointer encoded with enc (LSB 10.5.1). secAddr is the
// section's address: a pc-relative value is relative to the address of the
// field itself (secAddr + section offset). An indirect pointer is returned
// as the address of the pointer. Values are truncated to the address size.
func readEncoded(r *reader, enc uint8, size int, secAddr uint64) (uint64, error) {
	if enc == PEOmit {
		return 0, nil
	}
	if err := checkEncoding(enc, true); err != nil {
		return 0, err
	}
	if enc&0x70 == PEAligned {
		for (r.pos())%uint64(size) != 0 && r.ok() {
			r.u8()
		}
	}
	fieldAddr := secAddr + r.pos()
	var v uint64
	switch enc & 0x0f {
	case PEAbsptr:
		v = r.uint(size)
	case PEUleb128:
		v, _ = r.uleb()
	case PEUdata2:
		v = uint64(r.u16())
	case PEUdata4:
		v = uint64(r.u32())
	case PEUdata8:
		v = r.u64()
	case PESleb128:
		s, _ := r.sleb()
		v = uint64(s)
	case PESdata2:
		v = uint64(int64(int16(r.u16())))
	case PESdata4:
		v = uint64(int64(int32(r.u32())))
	case PESdata8:
		v = r.u64()
	}
	if enc&0x70 == PEPcrel {
		v += fieldAddr
	}
	if size == 4 {
		v &= math.MaxUint32
	}
	return v, nil
}

// SortedFDEs returns the section's FDEs sorted by Start (a new slice).
func (s *Section) SortedFDEs() []*FDE {
	out := append([]*FDE(nil), s.FDEs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}
