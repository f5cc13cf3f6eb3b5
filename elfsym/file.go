package elfsym

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/unwinders"
)

// Errors wrapped by the *FormatError values that Open and NewFile return;
// test for them with errors.Is.
var (
	// ErrNotELF: the input does not start with the ELF magic number.
	ErrNotELF = errors.New("not an ELF file")
	// ErrUnsupported: a well-formed ELF file that is not a 32-bit
	// little-endian ARM file (ELF64, big-endian, another machine).
	ErrUnsupported = errors.New("unsupported ELF file")
	// ErrMalformed: a header, table or section lies outside the file or
	// holds values the ELF specification does not allow.
	ErrMalformed = errors.New("malformed ELF file")
)

// FormatError describes input that elfsym cannot use: which file, at which
// file offset, and what was expected there.
type FormatError struct {
	File string // name passed to NewFile or Open
	Off  int64  // file offset of the offending data; -1 when not about one place
	Msg  string // what is wrong, and what was expected
	Err  error  // ErrNotELF, ErrUnsupported or ErrMalformed
}

func (e *FormatError) Error() string {
	if e.Off < 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: at offset 0x%x: %s", e.File, e.Off, e.Msg)
}

// Unwrap returns the sentinel the error is a case of.
func (e *FormatError) Unwrap() error { return e.Err }

// Sizes fixed by the ELF32 format (gABI, "ELF Header", "Sections",
// "Program Header", "Symbol Table").
const (
	ehdrSize = 52
	shdrSize = 40
	phdrSize = 32
	symSize  = 16

	// ARM processor-specific section types (IHI 0044 section 5.3.3).
	shtARMExidx      = elf.SectionType(0x70000001)
	shtARMAttributes = elf.SectionType(0x70000003)

	// maxFileSize bounds what NewFile reads from a reader of unknown size:
	// ELF32 offsets cannot point past 4 GiB.
	maxFileSize = 1 << 32
	// maxDecompressed bounds one SHF_COMPRESSED section after inflating.
	maxDecompressed = 1 << 30
)

// SectionInfo describes one section header.
type SectionInfo struct {
	Index  int             `json:"index"`
	Name   string          `json:"name"`
	Type   elf.SectionType `json:"-"`
	Flags  elf.SectionFlag `json:"-"`
	Addr   uint32          `json:"addr"`
	Size   uint32          `json:"size"`
	Offset uint32          `json:"offset"`
	Alloc  bool            `json:"alloc"`           // SHF_ALLOC: occupies target memory
	Exec   bool            `json:"exec"`            // SHF_EXECINSTR
	Write  bool            `json:"write"`           // SHF_WRITE
	TypeS  string          `json:"type"`            // Type as readelf names it
	FlagsS string          `json:"flags,omitempty"` // Flags in readelf's letters
	data   []byte          // file bytes (nil for SHT_NOBITS), inflated if compressed
	link   uint32
	entsz  uint32
}

// ProgInfo describes one program header.
type ProgInfo struct {
	Type   elf.ProgType `json:"-"`
	Flags  elf.ProgFlag `json:"-"`
	Off    uint32       `json:"offset"`
	Vaddr  uint32       `json:"vaddr"`
	Paddr  uint32       `json:"paddr"`
	Filesz uint32       `json:"filesz"`
	Memsz  uint32       `json:"memsz"`
}

// File is an opened ARM ELF file with its indexes. All methods are safe for
// concurrent use.
type File struct {
	name  string
	data  []byte // the whole file
	entry uint32
	flags uint32
	typ   elf.Type

	sections []SectionInfo
	allocs   []allocRange // allocated sections, for allocSectionAt
	progs    []ProgInfo
	segments []unwinders.Region

	syms     symtab
	dw       *dwarfIndex
	warnings []string

	// demangled caches Demangle per mangled name (string -> string):
	// a chain's names repeat from address to address, and demangling a
	// libstdc++ template name costs tens of microseconds.
	demCache sync.Map
	memo     sync.Map // string -> *memoEntry (Memo)
	symCache symCache // Symbolize per address

	// set is the Images this file was made part of (NewImages), nil for
	// a file used alone; written once, before the file is shared.
	set *Images
}

// Open reads the ELF file at path and builds its indexes. The file is read
// into memory once and closed before Open returns.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewFile(f, path)
}

// NewFile reads an ELF file from r and builds its indexes; name is used in
// error messages and warnings. The whole input is read into memory (sections
// and segments are slices of that copy), so r is not used after NewFile
// returns. Cost: one read of the file, one pass over the symbol table, one
// pass over the compilation unit headers of .debug_info; line tables and
// function trees are decoded later, per compilation unit, on first use.
//
// Errors are *FormatError values wrapping ErrNotELF, ErrUnsupported or
// ErrMalformed, or the reader's own I/O error.
func NewFile(r io.ReaderAt, name string) (f *File, err error) {
	data, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Every access below is bounds-checked; this recover is only a last line
	// of defence around debug/dwarf, turning a bug into an error.
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, &FormatError{File: name, Off: -1, Msg: fmt.Sprintf("internal error while parsing: %v", p), Err: ErrMalformed}
		}
	}()
	f = &File{name: name, data: data}
	if err := f.parseHeaders(); err != nil {
		return nil, err
	}
	f.buildAllocs()
	if err := f.buildSymbols(); err != nil {
		return nil, err
	}
	f.buildSegments()
	f.buildDWARF()
	return f, nil
}

// Close releases the file's memory. A File must not be used after Close.
func (f *File) Close() error {
	if f == nil {
		return nil
	}
	f.data = nil
	return nil
}

// Name returns the name the file was opened with.
func (f *File) Name() string { return f.name }

// Entry returns the ELF entry point (e_entry), Thumb bit included.
func (f *File) Entry() uint32 { return f.entry }

// Warnings lists what the file lacks for symbolization (no DWARF, no symbol
// table, undecodable debugging information). The slice is shared; do not
// modify it.
func (f *File) Warnings() []string { return f.warnings }

func (f *File) warnf(format string, args ...any) {
	f.warnings = append(f.warnings, fmt.Sprintf("%s: ", f.name)+fmt.Sprintf(format, args...))
}

func (f *File) errorf(off int64, sentinel error, format string, args ...any) error {
	return &FormatError{File: f.name, Off: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// readAll returns the whole content of r. The size comes from a Size or
// Stat method when r has one; otherwise r is read until EOF (at most 4 GiB).
func readAll(r io.ReaderAt) ([]byte, error) {
	size := int64(-1)
	switch v := r.(type) {
	case interface{ Size() int64 }:
		size = v.Size()
	case interface{ Stat() (os.FileInfo, error) }:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	if size < 0 || size > maxFileSize {
		return io.ReadAll(io.NewSectionReader(r, 0, maxFileSize))
	}
	buf := make([]byte, size)
	n, err := r.ReadAt(buf, 0)
	if n == len(buf) {
		return buf, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// parseHeaders validates the ELF header (gABI "ELF Header"), the section
// header table and the program header table, and loads the section names.
func (f *File) parseHeaders() error {
	d := f.data
	if len(d) < elf.EI_NIDENT {
		return f.errorf(0, ErrNotELF, "file is %d bytes, too short for an ELF identification (16 bytes)", len(d))
	}
	if !bytes.Equal(d[:4], []byte(elf.ELFMAG)) {
		return f.errorf(0, ErrNotELF, "bad magic number % x, want 7f 45 4c 46", d[:4])
	}
	switch elf.Class(d[elf.EI_CLASS]) {
	case elf.ELFCLASS32:
	case elf.ELFCLASS64:
		return f.errorf(elf.EI_CLASS, ErrUnsupported, "ELFCLASS64 file: only 32-bit ARM ELF files are supported")
	default:
		return f.errorf(elf.EI_CLASS, ErrMalformed, "invalid ELF class %d, want 1 (ELFCLASS32)", d[elf.EI_CLASS])
	}
	switch elf.Data(d[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
	case elf.ELFDATA2MSB:
		return f.errorf(elf.EI_DATA, ErrUnsupported, "big-endian (ELFDATA2MSB) file: only little-endian ARM is supported")
	default:
		return f.errorf(elf.EI_DATA, ErrMalformed, "invalid data encoding %d, want 1 (ELFDATA2LSB)", d[elf.EI_DATA])
	}
	if v := d[elf.EI_VERSION]; v != byte(elf.EV_CURRENT) {
		return f.errorf(elf.EI_VERSION, ErrMalformed, "ELF identification version %d, want 1", v)
	}
	if len(d) < ehdrSize {
		return f.errorf(int64(len(d)), ErrMalformed, "file is %d bytes, too short for the 52-byte ELF32 header", len(d))
	}
	le := binary.LittleEndian
	f.typ = elf.Type(le.Uint16(d[16:]))
	if m := elf.Machine(le.Uint16(d[18:])); m != elf.EM_ARM {
		return f.errorf(18, ErrUnsupported, "machine is %v, want EM_ARM", m)
	}
	if v := le.Uint32(d[20:]); v != uint32(elf.EV_CURRENT) {
		return f.errorf(20, ErrMalformed, "e_version %d, want 1", v)
	}
	f.entry = le.Uint32(d[24:])
	phoff := le.Uint32(d[28:])
	shoff := le.Uint32(d[32:])
	f.flags = le.Uint32(d[36:])
	if f.flags&0x00800000 != 0 { // EF_ARM_BE8: big-endian code in a little-endian file
		return f.errorf(36, ErrUnsupported, "EF_ARM_BE8 set: BE8 big-endian code is not supported")
	}
	phentsize := le.Uint16(d[42:])
	phnum := uint32(le.Uint16(d[44:]))
	shentsize := le.Uint16(d[46:])
	shnum := uint32(le.Uint16(d[48:]))
	shstrndx := uint32(le.Uint16(d[50:]))

	// Section header table, with the extended numbering of gABI "Sections":
	// e_shnum == 0 means section 0's sh_size holds the count, and
	// e_shstrndx == SHN_XINDEX means section 0's sh_link holds the index.
	if shoff != 0 {
		if shentsize != shdrSize {
			return f.errorf(46, ErrMalformed, "e_shentsize %d, want %d", shentsize, shdrSize)
		}
		if uint64(shoff)+shdrSize > uint64(len(d)) {
			return f.errorf(32, ErrMalformed, "section header table at 0x%x lies past the end of the file (%d bytes)", shoff, len(d))
		}
		if shnum == 0 {
			shnum = le.Uint32(d[shoff+20:])
		}
		if shstrndx == uint32(elf.SHN_XINDEX) {
			shstrndx = le.Uint32(d[shoff+24:])
		}
		if uint64(shoff)+uint64(shnum)*shdrSize > uint64(len(d)) {
			return f.errorf(int64(shoff), ErrMalformed, "section header table (%d entries of %d bytes) runs past the end of the file (%d bytes)", shnum, shdrSize, len(d))
		}
	} else {
		shnum = 0
	}
	f.sections = make([]SectionInfo, shnum)
	var unusable map[int]string // sections ignored, and why
	for i := range f.sections {
		off := shoff + uint32(i)*shdrSize
		h := d[off : off+shdrSize]
		s := &f.sections[i]
		s.Index = i
		s.Type = elf.SectionType(le.Uint32(h[4:]))
		s.Flags = elf.SectionFlag(le.Uint32(h[8:]))
		s.Addr = le.Uint32(h[12:])
		s.Offset = le.Uint32(h[16:])
		s.Size = le.Uint32(h[20:])
		s.link = le.Uint32(h[24:])
		s.entsz = le.Uint32(h[36:])
		s.Alloc = s.Flags&elf.SHF_ALLOC != 0
		s.Exec = s.Flags&elf.SHF_EXECINSTR != 0
		s.Write = s.Flags&elf.SHF_WRITE != 0
		s.TypeS = sectionTypeName(s.Type)
		s.FlagsS = flagLetters(s.Flags)
		if i == 0 || s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			continue
		}
		if uint64(s.Offset)+uint64(s.Size) > uint64(len(d)) {
			err := f.errorf(int64(off)+16, ErrMalformed, "section %d: data at 0x%x (%d bytes) runs past the end of the file (%d bytes)", i, s.Offset, s.Size, len(d))
			if s.Alloc || uint32(i) == shstrndx {
				return err // the program's own bytes, or the section names
			}
			// A section the program does not load (debug information, the
			// symbol table...): the file is still usable without it, as
			// addr2line and nm find; ignored, with a warning once its
			// name is known.
			if unusable == nil {
				unusable = map[int]string{}
			}
			unusable[i] = fmt.Sprintf("data at 0x%x (%d bytes) runs past the end of the file (%d bytes)", s.Offset, s.Size, len(d))
			continue
		}
		if s.Alloc && uint64(s.Addr)+uint64(s.Size) > 1<<32 {
			return f.errorf(int64(off)+12, ErrMalformed, "section %d: address 0x%x + size 0x%x runs past the 32-bit address space", i, s.Addr, s.Size)
		}
		s.data = d[s.Offset : s.Offset+s.Size]
	}
	if shnum > 0 {
		if shstrndx >= shnum {
			return f.errorf(50, ErrMalformed, "e_shstrndx %d is not a section (there are %d)", shstrndx, shnum)
		}
		strs := f.sections[shstrndx]
		if strs.Type != elf.SHT_STRTAB {
			return f.errorf(int64(shoff+shstrndx*shdrSize+4), ErrMalformed, "section name table (section %d) has type %v, want SHT_STRTAB", shstrndx, strs.Type)
		}
		for i := range f.sections {
			off := shoff + uint32(i)*shdrSize
			nameOff := le.Uint32(d[off:])
			name, ok := cstring(strs.data, nameOff)
			if !ok {
				return f.errorf(int64(off), ErrMalformed, "section %d: name offset 0x%x is outside the section name table (%d bytes) or not NUL-terminated", i, nameOff, len(strs.data))
			}
			f.sections[i].Name = name
		}
	}
	for i := range f.sections {
		if why, ok := unusable[i]; ok {
			f.warnf("section %d (%s) ignored: %s; what it holds (debug information, symbols) is not used", i, f.sections[i].Name, why)
			continue
		}
		if err := f.inflate(&f.sections[i]); err != nil {
			if f.sections[i].Alloc {
				return err
			}
			f.warnf("section %d (%s) ignored: %v", i, f.sections[i].Name, err)
			f.sections[i].data = nil
		}
	}

	// Program headers (gABI "Program Header").
	if phoff != 0 && phnum > 0 {
		if phentsize != phdrSize {
			return f.errorf(42, ErrMalformed, "e_phentsize %d, want %d", phentsize, phdrSize)
		}
		if uint64(phoff)+uint64(phnum)*phdrSize > uint64(len(d)) {
			return f.errorf(28, ErrMalformed, "program header table at 0x%x (%d entries) runs past the end of the file (%d bytes)", phoff, phnum, len(d))
		}
		f.progs = make([]ProgInfo, phnum)
		for i := range f.progs {
			off := phoff + uint32(i)*phdrSize
			h := d[off : off+phdrSize]
			p := &f.progs[i]
			p.Type = elf.ProgType(le.Uint32(h[0:]))
			p.Off = le.Uint32(h[4:])
			p.Vaddr = le.Uint32(h[8:])
			p.Paddr = le.Uint32(h[12:])
			p.Filesz = le.Uint32(h[16:])
			p.Memsz = le.Uint32(h[20:])
			p.Flags = elf.ProgFlag(le.Uint32(h[24:]))
			if p.Type != elf.PT_LOAD {
				continue
			}
			if uint64(p.Off)+uint64(p.Filesz) > uint64(len(d)) {
				return f.errorf(int64(off)+4, ErrMalformed, "load segment %d: file data at 0x%x (%d bytes) runs past the end of the file (%d bytes)", i, p.Off, p.Filesz, len(d))
			}
			if p.Filesz > p.Memsz {
				return f.errorf(int64(off)+16, ErrMalformed, "load segment %d: p_filesz 0x%x exceeds p_memsz 0x%x", i, p.Filesz, p.Memsz)
			}
			if uint64(p.Vaddr)+uint64(p.Memsz) > 1<<32 || uint64(p.Paddr)+uint64(p.Filesz) > 1<<32 {
				return f.errorf(int64(off)+8, ErrMalformed, "load segment %d: address + size runs past the 32-bit address space", i)
			}
		}
	}
	return nil
}

// inflate replaces the data of an SHF_COMPRESSED section (gABI "Section
// Compression") by its zlib-inflated contents, bounded by ch_size.
func (f *File) inflate(s *SectionInfo) error {
	if s.Flags&elf.SHF_COMPRESSED == 0 || s.Type == elf.SHT_NOBITS {
		return nil
	}
	if len(s.data) < 12 {
		return f.errorf(int64(s.Offset), ErrMalformed, "section %s: compressed section shorter than its 12-byte Elf32_Chdr", s.Name)
	}
	le := binary.LittleEndian
	typ, size := elf.CompressionType(le.Uint32(s.data)), le.Uint32(s.data[4:])
	if typ != elf.COMPRESS_ZLIB {
		f.warnf("section %s: compression type %v not supported; section ignored", s.Name, typ)
		s.data = nil
		return nil
	}
	if size > maxDecompressed {
		return f.errorf(int64(s.Offset)+4, ErrMalformed, "section %s: ch_size %d exceeds the %d-byte limit", s.Name, size, maxDecompressed)
	}
	zr, err := zlib.NewReader(bytes.NewReader(s.data[12:]))
	if err != nil {
		return f.errorf(int64(s.Offset)+12, ErrMalformed, "section %s: bad zlib stream: %v", s.Name, err)
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return f.errorf(int64(s.Offset)+12, ErrMalformed, "section %s: zlib stream ends before ch_size %d: %v", s.Name, size, err)
	}
	s.data = out
	return nil
}

// cstring returns the NUL-terminated string at off in tab.
func cstring(tab []byte, off uint32) (string, bool) {
	b, ok := cbytes(tab, off)
	return string(b), ok
}

// cbytes is cstring without the copy: the bytes alias tab.
func cbytes(tab []byte, off uint32) ([]byte, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return nil, off == 0 && len(tab) == 0
	}
	n := bytes.IndexByte(tab[off:], 0)
	if n < 0 {
		return nil, false
	}
	return tab[off : off+uint32(n) : off+uint32(n)], true
}

func sectionTypeName(t elf.SectionType) string {
	switch t {
	case shtARMExidx:
		return "ARM_EXIDX"
	case shtARMAttributes:
		return "ARM_ATTRIBUTES"
	}
	return strings.TrimPrefix(t.String(), "SHT_")
}

func flagLetters(fl elf.SectionFlag) string {
	var b strings.Builder
	for _, x := range []struct {
		f elf.SectionFlag
		c byte
	}{{elf.SHF_WRITE, 'W'}, {elf.SHF_ALLOC, 'A'}, {elf.SHF_EXECINSTR, 'X'}, {elf.SHF_MERGE, 'M'},
		{elf.SHF_STRINGS, 'S'}, {elf.SHF_INFO_LINK, 'I'}, {elf.SHF_LINK_ORDER, 'L'}, {elf.SHF_GROUP, 'G'},
		{elf.SHF_TLS, 'T'}, {elf.SHF_COMPRESSED, 'C'}} {
		if fl&x.f != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// Sections returns every section header, in file order. Cost: one copy of
// the header list.
func (f *File) Sections() []SectionInfo {
	out := make([]SectionInfo, len(f.sections))
	copy(out, f.sections)
	for i := range out {
		out[i].data = nil
	}
	return out
}

// Progs returns every program header, in file order.
func (f *File) Progs() []ProgInfo { return append([]ProgInfo(nil), f.progs...) }

// section returns the first section called name.
func (f *File) section(name string) *SectionInfo {
	for i := range f.sections {
		if f.sections[i].Name == name && i > 0 {
			return &f.sections[i]
		}
	}
	return nil
}

// Section implements unwinders.Program: the address and contents of the
// first section called name. The contents of an SHT_NOBITS section are nil.
// The returned slice aliases the File's memory and must not be modified.
// Cost: linear in the number of sections.
func (f *File) Section(name string) (addr uint32, data []byte, ok bool) {
	s := f.section(name)
	if s == nil {
		return 0, nil, false
	}
	return s.Addr, s.data, true
}

// allocSectionAt returns the SHF_ALLOC section (of non-zero size) holding
// addr, preferring one with contents (the first such in section order,
// else the first without). Cost: linear in the number of allocated
// sections (firmware has a handful), over a compact list.
func (f *File) allocSectionAt(addr uint32) *SectionInfo {
	best := -1
	for _, a := range f.allocs {
		if addr < a.lo || uint64(addr) >= a.hi {
			continue
		}
		if !a.nobits {
			return &f.sections[a.idx]
		}
		if best < 0 {
			best = int(a.idx)
		}
	}
	if best < 0 {
		return nil
	}
	return &f.sections[best]
}

// allocRange is an allocated section of non-zero size, for allocSectionAt.
type allocRange struct {
	hi     uint64
	lo     uint32
	idx    int32
	nobits bool
}

// buildAllocs lists the allocated sections of non-zero size in section
// order.
func (f *File) buildAllocs() {
	for i := 1; i < len(f.sections); i++ {
		s := &f.sections[i]
		if s.Alloc && s.Size > 0 {
			f.allocs = append(f.allocs, allocRange{hi: uint64(s.Addr) + uint64(s.Size), lo: s.Addr, idx: int32(i), nobits: s.Type == elf.SHT_NOBITS})
		}
	}
}

// IsCode implements unwinders.Program: whether addr lies in an allocated,
// executable (SHF_EXECINSTR) section. Literal pools inside code count as
// code here; use Mapping to tell them apart.
func (f *File) IsCode(addr uint32) bool {
	for i := 1; i < len(f.sections); i++ {
		s := &f.sections[i]
		if s.Alloc && s.Exec && addr >= s.Addr && uint64(addr) < uint64(s.Addr)+uint64(s.Size) {
			return true
		}
	}
	return false
}

// buildSegments computes the flash image: the file bytes of every PT_LOAD
// segment at its physical (load) address, plus executable segments whose
// virtual address differs (functions copied to RAM) at that address.
func (f *File) buildSegments() {
	for i, p := range f.progs {
		if p.Type != elf.PT_LOAD || p.Filesz == 0 {
			continue
		}
		data := f.data[p.Off : p.Off+p.Filesz]
		names := f.sectionsIn(p)
		f.segments = append(f.segments, unwinders.Region{
			Name: fmt.Sprintf("%s: load segment %d (%s)", f.name, i, names),
			Addr: p.Paddr,
			Data: data,
		})
		if p.Flags&elf.PF_X != 0 && p.Vaddr != p.Paddr {
			f.segments = append(f.segments, unwinders.Region{
				Name: fmt.Sprintf("%s: load segment %d at its run address (%s)", f.name, i, names),
				Addr: p.Vaddr,
				Data: data,
			})
		}
	}
}

func (f *File) sectionsIn(p ProgInfo) string {
	var names []string
	for _, s := range f.sections {
		if s.Alloc && s.Type != elf.SHT_NOBITS && s.Size > 0 && s.Offset >= p.Off && uint64(s.Offset)+uint64(s.Size) <= uint64(p.Off)+uint64(p.Filesz) {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, " ")
}

// Segments returns the memory image the ELF describes, for the bottom layer
// of an unwinders.Image: every PT_LOAD segment's file bytes at its physical
// (load) address, and additionally every executable segment whose virtual
// address differs from its load address (code run from RAM) at its virtual
// address. The data aliases the File's memory and must not be modified.
func (f *File) Segments() []unwinders.Region {
	return append([]unwinders.Region(nil), f.segments...)
}

// memoEntry is one value of File.Memo.
type memoEntry struct {
	once sync.Once
	v    any
}

// Memo returns the value stored under key, calling build to compute it the
// first time: an index another package derives from the file alone (rtos's
// kernel struct layouts) is then built once per file instead of once per
// dump. Safe for concurrent use; build runs at most once per key and must
// not call Memo itself.
func (f *File) Memo(key string, build func() any) any {
	e, _ := f.memo.LoadOrStore(key, &memoEntry{})
	m := e.(*memoEntry)
	m.once.Do(func() { m.v = build() })
	return m.v
}
