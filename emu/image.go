package emu

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu/uc"
)

// A FormatError reports an ELF the harness cannot run, saying where.
type FormatError struct {
	File string // path of the ELF
	What string // what is wrong
	Err  error  // underlying error, if any
}

func (e *FormatError) Error() string {
	s := e.File + ": " + e.What
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// Region is a range of guest memory with permissions.
type Region struct {
	Addr uint32
	Size uint32
	Perm uc.Perm
	Name string // "flash", "ram", "map" (a Config.Maps entry)
	// Zero makes a Config.Maps region read as zero and ignore writes (a
	// stub for a peripheral the firmware pokes); Perm is then ignored.
	Zero bool
}

// End returns the first address after the region (as uint64: a region may
// end at 4 GiB).
func (r Region) End() uint64 { return uint64(r.Addr) + uint64(r.Size) }

func (r Region) contains(a uint32) bool { return a >= r.Addr && uint64(a) < r.End() }

// chunk is bytes to write at an address before the run.
type chunk struct {
	addr uint32
	data []byte
}

// symbol is an ELF symbol of interest to the harness.
type symbol struct {
	name  string
	addr  uint32 // Thumb bit cleared for functions
	size  uint32
	fn    bool
	nobit bool // in a SHT_NOBITS section (.bss): zeroed by startup code
}

// image is the parsed firmware: what to load, the memory map and symbols.
type image struct {
	path    string
	chunks  []chunk
	regions []Region
	vtor    uint32   // vector table address
	sp, pc  uint32   // vector 0 and 1
	funcs   []symbol // sorted by addr
	byName  map[string]symbol
	cpu     string // from .ARM.attributes, "" if unknown
	buildID string // the GNU build ID in lower-case hex, "" without one
	// dataLMA maps run addresses of initialised data to load addresses so
	// that Config.Sets reach the copy the startup code makes.
	segs []elf.ProgHeader
}

const regionAlign = 0x1000

func alignDown(a, n uint64) uint64 { return a &^ (n - 1) }
func alignUp(a, n uint64) uint64   { return (a + n - 1) &^ (n - 1) }

// loadImage parses an ARM ELF32 executable (ELF for the ARM Architecture,
// IHI 0044: EM_ARM, PT_LOAD segments) and works out the memory map.
func loadImage(path string, r io.ReaderAt) (*image, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, &FormatError{File: path, What: "not an ELF file", Err: err}
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS32 || f.Machine != elf.EM_ARM || f.Data != elf.ELFDATA2LSB {
		return nil, &FormatError{File: path, What: fmt.Sprintf("not a little-endian 32-bit ARM ELF (%v %v %v)", f.Class, f.Machine, f.Data)}
	}
	img := &image{path: path, byName: make(map[string]symbol)}

	type extent struct {
		lo, hi uint64
		perm   uc.Perm
		ram    bool
	}
	var exts []extent
	for i, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		if p.Vaddr+p.Memsz > 1<<32 || p.Paddr+p.Filesz > 1<<32 || p.Filesz > p.Memsz {
			return nil, &FormatError{File: path, What: fmt.Sprintf("program header %d: segment [%#x+%#x] does not fit in 32 bits", i, p.Vaddr, p.Memsz)}
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, &FormatError{File: path, What: fmt.Sprintf("program header %d: reading %d bytes at file offset %#x", i, p.Filesz, p.Off), Err: err}
		}
		img.segs = append(img.segs, p.ProgHeader)
		perm := uc.PermRead
		if p.Flags&elf.PF_X != 0 {
			perm |= uc.PermExec
		}
		writable := p.Flags&elf.PF_W != 0
		if writable {
			// Run address: RAM.
			exts = append(exts, extent{lo: p.Vaddr, hi: p.Vaddr + p.Memsz, perm: perm | uc.PermWrite, ram: true})
			if p.Filesz > 0 {
				img.chunks = append(img.chunks, chunk{addr: uint32(p.Vaddr), data: data})
			}
			if p.Paddr != p.Vaddr && p.Filesz > 0 {
				// Load address of initialised data: flash.
				exts = append(exts, extent{lo: p.Paddr, hi: p.Paddr + p.Filesz, perm: uc.PermRead | uc.PermExec})
				img.chunks = append(img.chunks, chunk{addr: uint32(p.Paddr), data: data})
			}
			continue
		}
		exts = append(exts, extent{lo: p.Paddr, hi: p.Paddr + p.Memsz, perm: perm | uc.PermExec})
		if p.Filesz > 0 {
			img.chunks = append(img.chunks, chunk{addr: uint32(p.Paddr), data: data})
		}
		if p.Paddr != p.Vaddr {
			exts = append(exts, extent{lo: p.Vaddr, hi: p.Vaddr + p.Memsz, perm: perm | uc.PermExec})
			if p.Filesz > 0 {
				img.chunks = append(img.chunks, chunk{addr: uint32(p.Vaddr), data: data})
			}
		}
	}
	if len(img.chunks) == 0 {
		return nil, &FormatError{File: path, What: "no loadable segments"}
	}

	// The vector table: address 0 when the image covers it, else the lowest
	// executable load address (a bootloader or the boot alias would point
	// VTOR there; B3.2.5).
	img.vtor = ^uint32(0)
	for _, c := range img.chunks {
		if c.addr == 0 {
			img.vtor = 0
			break
		}
	}
	if img.vtor != 0 {
		for _, e := range exts {
			if e.perm&uc.PermExec != 0 && !e.ram && uint32(e.lo) < img.vtor {
				img.vtor = uint32(e.lo)
			}
		}
	}
	var vec [8]byte
	if !img.read(img.vtor, vec[:]) {
		return nil, &FormatError{File: path, What: fmt.Sprintf("no vector table at %#x", img.vtor)}
	}
	img.sp = binary.LittleEndian.Uint32(vec[0:])
	img.pc = binary.LittleEndian.Uint32(vec[4:])

	// RAM: the writable run ranges plus the stack below the initial SP.
	if img.sp != 0 {
		// Down to the lowest writable segment within 1 MiB below the SP
		// (the SRAM the stack shares with .data/.bss), else 64 KiB.
		sp := uint64(img.sp)
		lo := sp - min(sp, 0x10000)
		found := false
		for _, e := range exts {
			if e.ram && e.lo < sp && e.lo+1<<20 >= sp && (!found || e.lo < lo) {
				lo, found = e.lo, true
			}
		}
		exts = append(exts, extent{lo: lo, hi: sp, perm: uc.PermRead | uc.PermWrite | uc.PermExec, ram: true})
	}
	img.regions = mergeExtents(func(yield func(lo, hi uint64, perm uc.Perm, ram bool)) {
		for _, e := range exts {
			yield(e.lo, e.hi, e.perm, e.ram)
		}
	})

	if err := img.loadSymbols(f); err != nil {
		return nil, &FormatError{File: path, What: "symbol table", Err: err}
	}
	img.cpu = cpuFromAttributes(f)
	img.buildID = buildIDOf(f)
	return img, nil
}

// buildIDOf returns the GNU build ID of f (the NT_GNU_BUILD_ID note of
// an SHT_NOTE section, else of a PT_NOTE segment) in lower-case hex, as
// elfsym.File.BuildID reads it; "" when there is none or it cannot be read.
func buildIDOf(f *elf.File) string {
	const maxNotes = 1 << 16 // note areas are a few dozen bytes
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > maxNotes {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		if id, ok := elfsym.FindBuildIDNote(b); ok {
			return hex.EncodeToString(id)
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > maxNotes {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		if id, ok := elfsym.FindBuildIDNote(b); ok {
			return hex.EncodeToString(id)
		}
	}
	return ""
}

// mergeExtents rounds extents to regionAlign and merges the ones that touch
// or overlap. RAM extents that lie within 1 MiB of each other are joined
// into one region (the stack below the initial SP and the data segments
// usually share one SRAM).
func mergeExtents(each func(yield func(lo, hi uint64, perm uc.Perm, ram bool))) []Region {
	type ext struct {
		lo, hi uint64
		perm   uc.Perm
		ram    bool
	}
	var xs []ext
	each(func(lo, hi uint64, perm uc.Perm, ram bool) {
		xs = append(xs, ext{alignDown(lo, regionAlign), alignUp(hi, regionAlign), perm, ram})
	})
	sort.Slice(xs, func(i, j int) bool { return xs[i].lo < xs[j].lo })
	var out []ext
	for _, x := range xs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			gap := uint64(0)
			if last.ram && x.ram {
				gap = 1 << 20
			}
			if x.lo <= last.hi+gap {
				if x.hi > last.hi {
					last.hi = x.hi
				}
				last.perm |= x.perm
				last.ram = last.ram || x.ram
				continue
			}
		}
		out = append(out, x)
	}
	regions := make([]Region, 0, len(out))
	for _, x := range out {
		name := "flash"
		if x.ram {
			name = "ram"
		}
		if x.hi > 1<<32 {
			x.hi = 1 << 32
		}
		regions = append(regions, Region{Addr: uint32(x.lo), Size: uint32(x.hi - x.lo), Perm: x.perm, Name: name})
	}
	return regions
}

// read copies image bytes at addr into buf; false if not fully covered.
func (img *image) read(addr uint32, buf []byte) bool {
	for _, c := range img.chunks {
		if addr >= c.addr && uint64(addr)+uint64(len(buf)) <= uint64(c.addr)+uint64(len(c.data)) {
			copy(buf, c.data[addr-c.addr:])
			return true
		}
	}
	return false
}

func (img *image) loadSymbols(f *elf.File) error {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if s.Name == "" || s.Section == elf.SHN_UNDEF || (typ != elf.STT_FUNC && typ != elf.STT_OBJECT) {
			continue
		}
		sym := symbol{name: s.Name, addr: uint32(s.Value), size: uint32(s.Size), fn: typ == elf.STT_FUNC}
		if sym.fn {
			sym.addr &^= 1
		}
		if int(s.Section) < len(f.Sections) && f.Sections[s.Section].Type == elf.SHT_NOBITS {
			sym.nobit = true
		}
		if old, ok := img.byName[s.Name]; !ok || elf.ST_BIND(s.Info) == elf.STB_GLOBAL && !old.fn {
			img.byName[s.Name] = sym
		}
		if sym.fn {
			img.funcs = append(img.funcs, sym)
		}
	}
	sort.SliceStable(img.funcs, func(i, j int) bool { return img.funcs[i].addr < img.funcs[j].addr })
	return nil
}

// funcAt returns the name of the function containing addr, or "".
// Binary search over the function symbols: O(log n).
func (img *image) funcAt(addr uint32) string {
	i := sort.Search(len(img.funcs), func(i int) bool { return img.funcs[i].addr > addr }) - 1
	for ; i >= 0; i-- {
		s := img.funcs[i]
		if addr < s.addr {
			continue
		}
		if s.size == 0 || addr < s.addr+s.size {
			return s.name
		}
		// An earlier symbol at the same address may be larger.
		if i > 0 && img.funcs[i-1].addr == s.addr {
			continue
		}
		return ""
	}
	return ""
}

// funcEnd returns the end of the function whose symbol starts at addr: the
// largest such symbol's extent, cut at the next function's start. ok is
// false when no sized function symbol starts there.
func (img *image) funcEnd(addr uint32) (end uint32, ok bool) {
	i := sort.Search(len(img.funcs), func(i int) bool { return img.funcs[i].addr >= addr })
	for ; i < len(img.funcs) && img.funcs[i].addr == addr; i++ {
		if s := img.funcs[i]; s.size != 0 && s.addr+s.size > end && s.addr+s.size > s.addr {
			end, ok = s.addr+s.size, true
		}
	}
	if ok && i < len(img.funcs) && img.funcs[i].addr < end {
		end = img.funcs[i].addr
	}
	return end, ok
}

// funcRanges partitions the code into the functions funcAt names: one
// range [starts[i], ends[i]) per distinct symbol address, as long as the
// largest symbol there (to the next function's start for a symbol of size
// 0) and cut at the next function's start. Two addresses are in the same
// range exactly when funcAt finds the same symbol for both (aliases such as
// a C++ D1/D2 destructor pair share a range).
func (img *image) funcRanges() (starts, ends []uint32) {
	fs := img.funcs
	for i := 0; i < len(fs); {
		start := fs[i].addr
		end, unbounded := start, false
		j := i
		for ; j < len(fs) && fs[j].addr == start; j++ {
			if fs[j].size == 0 {
				unbounded = true
			} else if e := start + fs[j].size; e > end && e > start {
				end = e
			} else if e <= start { // wraps around
				unbounded = true
			}
		}
		if j < len(fs) && (unbounded || end > fs[j].addr) {
			end = fs[j].addr
		} else if unbounded {
			end = 0xFFFFFFFF
		}
		starts = append(starts, start)
		ends = append(ends, end)
		i = j
	}
	return starts, ends
}

// loadAddrs returns the addresses at which a write to run address addr must
// also be made so that the startup code's copy of .data keeps it.
func (img *image) loadAddrs(addr uint32) []uint32 {
	var out []uint32
	for _, p := range img.segs {
		if p.Flags&elf.PF_W != 0 && p.Paddr != p.Vaddr && uint64(addr) >= p.Vaddr && uint64(addr) < p.Vaddr+p.Filesz {
			out = append(out, uint32(p.Paddr+(uint64(addr)-p.Vaddr)))
		}
	}
	return out
}

// cpuFromAttributes reads Tag_CPU_arch from the "aeabi" public attributes
// (Addenda to the ARM ABI, IHI 0045, section 2.5) and returns the harness's
// CPU name, or "" when unknown.
func cpuFromAttributes(f *elf.File) string {
	sec := f.Section(".ARM.attributes")
	if sec == nil {
		return ""
	}
	b, err := sec.Data()
	if err != nil || len(b) < 1 || b[0] != 'A' {
		return ""
	}
	b = b[1:]
	arch := -1
	for len(b) >= 4 {
		n := binary.LittleEndian.Uint32(b)
		if n < 4 || int(n) > len(b) {
			return ""
		}
		sub := b[4:n]
		b = b[n:]
		vend := bytes.IndexByte(sub, 0)
		if vend < 0 || string(sub[:vend]) != "aeabi" {
			continue
		}
		sub = sub[vend+1:]
		for len(sub) >= 5 {
			tag := sub[0]
			sz := binary.LittleEndian.Uint32(sub[1:])
			if sz < 5 || int(sz) > len(sub) {
				break
			}
			body := sub[5:sz]
			sub = sub[sz:]
			if tag != 1 { // Tag_File
				continue
			}
			for len(body) > 0 {
				t, k := uleb(body)
				if k == 0 {
					break
				}
				body = body[k:]
				switch {
				case t == 4 || t == 5 || t == 67 || (t >= 32 && t%2 == 1):
					if t == 32 {
						_, k = uleb(body)
						body = body[k:]
					}
					z := bytes.IndexByte(body, 0)
					if z < 0 {
						body = nil
						break
					}
					body = body[z+1:]
				default:
					v, k := uleb(body)
					if k == 0 {
						body = nil
						break
					}
					body = body[k:]
					if t == 6 { // Tag_CPU_arch
						arch = int(v)
					}
				}
			}
		}
	}
	switch arch {
	case 11, 12: // ARMv6-M, ARMv6S-M
		return "cortex-m0"
	case 10: // ARMv7 (with profile M)
		return "cortex-m3"
	case 13: // ARMv7E-M (Cortex-M4 or M7)
		return "cortex-m4"
	case 16, 17, 21: // ARMv8-M baseline, mainline, v8.1-M mainline
		return "cortex-m33"
	}
	return ""
}

func uleb(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
