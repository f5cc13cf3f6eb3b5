package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
)

// Info summarises what an ELF file offers for unwinding and symbolization,
// for `faultline info`.
type Info struct {
	File       string `json:"file"`
	Entry      string `json:"entry"`              // e_entry, "0x%08x", Thumb bit included
	Flags      string `json:"flags"`              // e_flags
	BuildID    string `json:"build_id,omitempty"` // the GNU build ID in hex; "" without one
	Sections   int    `json:"sections"`
	LoadBytes  uint64 `json:"load_bytes"` // file bytes of all PT_LOAD segments
	HasSymtab  bool   `json:"has_symtab"`
	Functions  int    `json:"functions"`
	ThumbFuncs int    `json:"thumb_functions"`
	ARMFuncs   int    `json:"arm_functions"`

	Exidx       *ExidxInfo     `json:"exidx,omitempty"`
	Extab       *SectionBrief  `json:"extab,omitempty"`
	DebugFrame  *SectionBrief  `json:"debug_frame,omitempty"`
	EhFrame     *SectionBrief  `json:"eh_frame,omitempty"`
	DWARF       *DWARFInfo     `json:"dwarf,omitempty"`
	Stack       []NamedAddress `json:"stack_symbols,omitempty"`
	Vectors     *VectorInfo    `json:"vector_table,omitempty"`
	Attributes  *Attributes    `json:"attributes,omitempty"`
	Warnings    []string       `json:"warnings,omitempty"`
	ExidxErrors []string       `json:"exidx_errors,omitempty"`
}

// SectionBrief locates a section.
type SectionBrief struct {
	Name string `json:"name"`
	Addr uint32 `json:"addr"`
	Size uint32 `json:"size"`
}

// ExidxInfo describes .ARM.exidx (EHABI section 5): its entries and how
// many function symbols they cover.
type ExidxInfo struct {
	SectionBrief
	Entries    int `json:"entries"`
	Inline     int `json:"inline"`      // compact model, unwind opcodes in the entry
	Extab      int `json:"extab"`       // pointing into .ARM.extab
	CantUnwind int `json:"cant_unwind"` // EXIDX_CANTUNWIND entries
	// Function symbols by the entry that covers their start:
	// FuncsCovered have an unwinding entry of their own (starting at the
	// function), FuncsCantUnwind an EXIDX_CANTUNWIND entry (their own or
	// inherited), FuncsInherited only the entry of an earlier function
	// (the linker merged identical entries, or a terminator is missing:
	// unwinders should check it against the symbol table, cortex-m.md 5),
	// FuncsUncovered lie below the first entry.
	FuncsCovered    int `json:"functions_covered"`
	FuncsCantUnwind int `json:"functions_cant_unwind"`
	FuncsInherited  int `json:"functions_inherited"`
	FuncsUncovered  int `json:"functions_uncovered"`
}

// DWARFInfo describes the debugging information.
type DWARFInfo struct {
	Versions     []int `json:"versions"`      // of the unit headers
	LineVersions []int `json:"line_versions"` // of the line number programs
	Units        int   `json:"units"`
	InfoBytes    int   `json:"info_bytes"`
	LineBytes    int   `json:"line_bytes"`
}

// NamedAddress is a symbol the unwinder cares about.
type NamedAddress struct {
	Name string `json:"name"`
	Addr uint32 `json:"addr"`
}

// VectorInfo is the start of the vector table (ARMv7-M ARM B1.5.3).
type VectorInfo struct {
	Source       string `json:"source"` // the symbol or section it was found by
	Addr         uint32 `json:"addr"`
	InitialSP    uint32 `json:"initial_sp"`
	Reset        uint32 `json:"reset"` // vector 1, Thumb bit included
	ResetHandler string `json:"reset_handler,omitempty"`
}

// Attributes are the "aeabi" build attributes of .ARM.attributes
// (IHI 0045, "Addenda to, and Errata in, the ABI for the Arm Architecture",
// section 2).
type Attributes struct {
	CPUName    string `json:"cpu_name,omitempty"`    // Tag_CPU_name (5)
	CPUArch    string `json:"cpu_arch,omitempty"`    // Tag_CPU_arch (6)
	Profile    string `json:"profile,omitempty"`     // Tag_CPU_arch_profile (7)
	FPArch     string `json:"fp_arch,omitempty"`     // Tag_FP_arch (10)
	FPHardABI  bool   `json:"fp_hard_abi,omitempty"` // Tag_ABI_VFP_args (28) = 1
	THUMBISA   int    `json:"thumb_isa,omitempty"`   // Tag_THUMB_ISA_use (9)
	CPUArchRaw int    `json:"cpu_arch_raw"`
}

var stackSymbols = []string{"_estack", "__StackTop", "__stack", "_stack_top", "__initial_sp", "_stack",
	"__stack_end__", "_sstack", "__StackLimit", "__stack_start__", "_stack_start", "__stack_size__", "_main_stack_size"}

var vectorSymbols = []string{"g_pfnVectors", "__isr_vector", "__Vectors", "vector_table", "_vectors", "__vector_table", "isr_vector", "_vector_table", "vectors"}

// Info reports what the file offers for unwinding. Cost: linear in the size
// of .ARM.exidx and the number of function symbols; the DWARF line headers
// are read but not decoded.
func (f *File) Info() Info {
	in := Info{
		File:      f.name,
		Entry:     fmt.Sprintf("0x%08x", f.entry),
		Flags:     fmt.Sprintf("0x%08x", f.flags),
		Sections:  len(f.sections),
		HasSymtab: f.syms.present,
		Functions: f.syms.nThumb + f.syms.nARM, ThumbFuncs: f.syms.nThumb, ARMFuncs: f.syms.nARM,
		Warnings: f.warnings,
		BuildID:  f.BuildID(),
	}
	for _, p := range f.progs {
		if p.Type == elf.PT_LOAD {
			in.LoadBytes += uint64(p.Filesz)
		}
	}
	brief := func(name string) *SectionBrief {
		if s := f.section(name); s != nil {
			return &SectionBrief{Name: s.Name, Addr: s.Addr, Size: s.Size}
		}
		return nil
	}
	in.Extab = brief(".ARM.extab")
	in.DebugFrame = brief(".debug_frame")
	in.EhFrame = brief(".eh_frame")
	in.Exidx, in.ExidxErrors = f.exidxInfo()
	if f.dw != nil {
		di := &DWARFInfo{Versions: f.dw.versions, Units: len(f.dw.units)}
		if s := f.section(".debug_info"); s != nil {
			di.InfoBytes = len(s.data)
		}
		lv := map[int]bool{}
		if s := f.section(".debug_line"); s != nil {
			di.LineBytes = len(s.data)
			for _, u := range f.dw.units {
				if v := lineVersion(s.data, u.stmtList); v > 0 {
					lv[v] = true
				}
			}
		}
		for v := range lv {
			di.LineVersions = append(di.LineVersions, v)
		}
		sort.Ints(di.LineVersions)
		in.DWARF = di
	}
	for _, n := range stackSymbols {
		if v, ok := f.Symbol(n); ok {
			in.Stack = append(in.Stack, NamedAddress{n, v})
		}
	}
	in.Vectors = f.vectorTable()
	in.Attributes = f.attributes()
	return in
}

// lineVersion returns the version of the line program at off, 0 if none.
func lineVersion(data []byte, off int64) int {
	if off < 0 || off+6 > int64(len(data)) {
		return 0
	}
	if binary.LittleEndian.Uint32(data[off:]) == 0xffffffff {
		if off+14 > int64(len(data)) {
			return 0
		}
		return int(binary.LittleEndian.Uint16(data[off+12:]))
	}
	return int(binary.LittleEndian.Uint16(data[off+4:]))
}

// prel31 decodes a place-relative 31-bit offset (EHABI section 4.4.2)
// stored at address at.
func prel31(word, at uint32) uint32 {
	off := word & 0x7fffffff
	if off&0x40000000 != 0 {
		off |= 0x80000000
	}
	return at + off
}

// exidxInfo decodes .ARM.exidx (EHABI section 5): 8-byte entries, the first
// word a prel31 offset to the function start, the second 1
// (EXIDX_CANTUNWIND), an inline entry (bit 31 set) or a prel31 offset into
// .ARM.extab. Entries are sorted; each covers functions up to the next.
func (f *File) exidxInfo() (*ExidxInfo, []string) {
	var s *SectionInfo
	for i := range f.sections {
		if f.sections[i].Type == shtARMExidx || f.sections[i].Name == ".ARM.exidx" {
			s = &f.sections[i]
			break
		}
	}
	if s == nil {
		return nil, nil
	}
	x := &ExidxInfo{SectionBrief: SectionBrief{Name: s.Name, Addr: s.Addr, Size: s.Size}}
	var errs []string
	if len(s.data)%8 != 0 {
		errs = append(errs, fmt.Sprintf("%s: size %d is not a multiple of 8; trailing bytes ignored", s.Name, len(s.data)))
	}
	type ent struct {
		fn   uint32
		kind int // 0 cantunwind, 1 inline, 2 extab
	}
	ents := make([]ent, 0, len(s.data)/8)
	le := binary.LittleEndian
	for i := 0; i+8 <= len(s.data); i += 8 {
		at := s.Addr + uint32(i)
		w0, w1 := le.Uint32(s.data[i:]), le.Uint32(s.data[i+4:])
		if w0&0x80000000 != 0 {
			errs = append(errs, fmt.Sprintf("%s: entry %d at 0x%08x: bit 31 of the function offset is set", s.Name, i/8, at))
		}
		e := ent{fn: prel31(w0, at)}
		switch {
		case w1 == 1:
			e.kind = 0
			x.CantUnwind++
		case w1&0x80000000 != 0:
			e.kind = 1
			x.Inline++
		default:
			e.kind = 2
			x.Extab++
		}
		ents = append(ents, e)
	}
	x.Entries = len(ents)
	for _, fn := range f.syms.funcs.items {
		if fn.fromLabel {
			continue // readelf's FUNC symbols only
		}
		i := sort.Search(len(ents), func(i int) bool { return ents[i].fn > fn.start }) - 1
		switch {
		case i < 0:
			x.FuncsUncovered++
		case ents[i].kind == 0:
			x.FuncsCantUnwind++
		case ents[i].fn == fn.start:
			x.FuncsCovered++
		default:
			x.FuncsInherited++
		}
	}
	return x, errs
}

// vectorTable finds the vector table: a well-known symbol, else section
// .isr_vector or .vectors, else the start of the first executable load
// segment, and reads the initial SP and reset vector from the flash image.
func (f *File) vectorTable() *VectorInfo {
	var v VectorInfo
	found := false
	for _, n := range vectorSymbols {
		if a, ok := f.Symbol(n); ok {
			v.Source, v.Addr, found = "symbol "+n, a, true
			break
		}
	}
	if !found {
		for _, n := range []string{".isr_vector", ".vectors", ".vector_table", ".isr_vectors"} {
			if s := f.section(n); s != nil && s.Alloc {
				v.Source, v.Addr, found = "section "+n, s.Addr, true
				break
			}
		}
	}
	if !found {
		for _, p := range f.progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Filesz > 0 {
				v.Source, v.Addr, found = "first executable load segment", p.Paddr, true
				break
			}
		}
	}
	if !found {
		return nil
	}
	var w [8]byte
	if !f.readImage(v.Addr, w[:]) {
		return &v
	}
	v.InitialSP = binary.LittleEndian.Uint32(w[:])
	v.Reset = binary.LittleEndian.Uint32(w[4:])
	if fn, ok := f.FuncAt(v.Reset &^ 1); ok {
		v.ResetHandler = fn.Name
	}
	return &v
}

// readImage fills p from the flash image (load addresses).
func (f *File) readImage(addr uint32, p []byte) bool {
	for _, r := range f.segments {
		if r.Contains(addr) && uint64(addr)+uint64(len(p)) <= r.End() {
			copy(p, r.Data[addr-r.Addr:])
			return true
		}
	}
	return false
}

var cpuArchNames = []string{"Pre-v4", "v4", "v4T", "v5T", "v5TE", "v5TEJ", "v6", "v6KZ", "v6T2", "v6K", "v7",
	"v6-M", "v6S-M", "v7E-M", "v8-A", "v8-R", "v8-M.baseline", "v8-M.mainline", "v8.1-A", "v8.2-A", "v8.3-A",
	"v8.1-M.mainline", "v9"}

var fpArchNames = []string{"none", "VFPv1", "VFPv2", "VFPv3", "VFPv3-D16", "VFPv4", "VFPv4-D16", "FP-ARMv8", "FPv5/FP-D16 for ARMv8"}

// attributes decodes the "aeabi" subsection of .ARM.attributes (IHI 0045
// section 2.2): format 'A', then vendor subsections, each holding tagged
// file/section/symbol attribute lists. Only file-scope attributes are read.
// Returns nil when the section is absent or unreadable.
func (f *File) attributes() *Attributes {
	s := f.section(".ARM.attributes")
	if s == nil || len(s.data) < 1 || s.data[0] != 'A' {
		return nil
	}
	le := binary.LittleEndian
	d := s.data[1:]
	for len(d) >= 4 {
		n := le.Uint32(d)
		if n < 4 || uint64(n) > uint64(len(d)) {
			return nil
		}
		sub := d[4:n]
		d = d[n:]
		vendor, ok := cstring(sub, 0)
		if !ok || vendor != "aeabi" {
			continue
		}
		sub = sub[len(vendor)+1:]
		for len(sub) >= 5 {
			tag, size := sub[0], le.Uint32(sub[1:])
			if size < 5 || uint64(size) > uint64(len(sub)) {
				return nil
			}
			body := sub[5:size]
			sub = sub[size:]
			if tag != 1 { // Tag_File
				continue
			}
			return parseAttrs(body)
		}
	}
	return nil
}

func parseAttrs(b []byte) *Attributes {
	a := &Attributes{}
	r := &buf{sec: ".ARM.attributes", data: b}
	for r.pos < len(r.data) && r.err == nil {
		tag := r.uleb("tag")
		// IHI 0045 2.2.6: tags 4, 5, 67 and odd tags above 32 hold
		// NUL-terminated strings, everything else a ULEB128, except
		// Tag_compatibility (32): ULEB128 then a string.
		switch {
		case tag == 4 || tag == 5 || tag == 67:
			v := r.cstr("string attribute")
			if tag == 5 {
				a.CPUName = v
			}
		case tag == 32:
			r.uleb("flag")
			r.cstr("vendor")
		case tag > 32 && tag%2 == 1:
			r.cstr("string attribute")
		default:
			v := r.uleb("attribute")
			switch tag {
			case 6:
				a.CPUArchRaw = int(v)
				if v < uint64(len(cpuArchNames)) {
					a.CPUArch = cpuArchNames[v]
				}
			case 7:
				if v != 0 {
					a.Profile = string(rune(v))
				}
			case 9:
				a.THUMBISA = int(v)
			case 10:
				if v < uint64(len(fpArchNames)) {
					a.FPArch = fpArchNames[v]
				}
			case 28:
				a.FPHardABI = v == 1
			}
		}
	}
	return a
}

// Attributes returns the file's build attributes (.ARM.attributes), or nil
// when it has none. Cost: one pass over the section.
func (f *File) Attributes() *Attributes { return f.attributes() }
