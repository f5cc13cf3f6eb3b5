package unwinders

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// ErrUnmapped is wrapped by every error a Memory returns for an address that
// no region covers.
var ErrUnmapped = errors.New("address not mapped")

// Memory is the narrow interface the unwinders read the target through: a
// live probe, a crash dump and an emulator snapshot all look the same.
// Read fills p with the little-endian bytes at addr. It returns an error
// wrapping ErrUnmapped when any byte of [addr, addr+len(p)) is not covered;
// p's contents are then unspecified.
type Memory interface {
	Read(addr uint32, p []byte) error
}

// UnmappedError says which read failed and where: Addr and Size are the
// read, Missing the first address of it that no region covers.
type UnmappedError struct {
	Addr    uint32
	Size    int
	Missing uint32
}

func (e *UnmappedError) Error() string {
	if e.Missing != e.Addr {
		return fmt.Sprintf("read of %d bytes at 0x%08x: memory at 0x%08x: %v", e.Size, e.Addr, e.Missing, ErrUnmapped)
	}
	return fmt.Sprintf("read of %d bytes at 0x%08x: %v", e.Size, e.Addr, ErrUnmapped)
}

func (e *UnmappedError) Unwrap() error { return ErrUnmapped }

// ReadU32 reads a little-endian word.
func ReadU32(m Memory, addr uint32) (uint32, error) {
	if im, ok := m.(*Image); ok {
		// The concrete call keeps the buffer on the stack.
		if b, ok := im.slice(addr, 4); ok {
			return binary.LittleEndian.Uint32(b), nil
		}
		var b [4]byte
		if err := im.Read(addr, b[:]); err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(b[:]), nil
	}
	var b [4]byte
	if err := m.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// ReadU16 reads a little-endian halfword.
func ReadU16(m Memory, addr uint32) (uint16, error) {
	if im, ok := m.(*Image); ok {
		if b, ok := im.slice(addr, 2); ok {
			return binary.LittleEndian.Uint16(b), nil
		}
		var b [2]byte
		if err := im.Read(addr, b[:]); err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint16(b[:]), nil
	}
	var b [2]byte
	if err := m.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b[:]), nil
}

// Region is a contiguous block of target memory.
type Region struct {
	Name string // where it came from: "flash .text", "ram.bin", ...
	Addr uint32
	Data []byte
}

// End returns the address one past the region's last byte, as a uint64 so a
// region ending at 4 GiB does not wrap.
func (r Region) End() uint64 { return uint64(r.Addr) + uint64(len(r.Data)) }

// Contains reports whether addr lies inside the region.
func (r Region) Contains(addr uint32) bool {
	return addr >= r.Addr && uint64(addr) < r.End()
}

// Image is a spliced memory image: regions are added in layers, and a later
// layer wins where layers overlap (ELF flash at the bottom, the RAM and
// peripheral contents of a crash dump above it). Within one layer regions
// must not overlap. The zero Image is empty and ready to use. An Image is
// safe for concurrent reads once built.
type Image struct {
	layers [][]Region // each sorted by Addr
}

// AddLayer adds a layer of regions on top of the existing ones. It returns
// an error if two regions of the new layer overlap.
func (im *Image) AddLayer(regions ...Region) error {
	l := make([]Region, 0, len(regions))
	for _, r := range regions {
		if len(r.Data) == 0 {
			continue
		}
		if r.End() > 1<<32 {
			return fmt.Errorf("region %s at 0x%08x (%d bytes) runs past the end of the 32-bit address space", r.Name, r.Addr, len(r.Data))
		}
		l = append(l, r)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].Addr < l[j].Addr })
	for i := 1; i < len(l); i++ {
		if uint64(l[i].Addr) < l[i-1].End() {
			return fmt.Errorf("regions %s (0x%08x-0x%08x) and %s (0x%08x-0x%08x) overlap",
				l[i-1].Name, l[i-1].Addr, l[i-1].End(), l[i].Name, l[i].Addr, l[i].End())
		}
	}
	im.layers = append(im.layers, l)
	return nil
}

// search returns the index of the first region of layer l that ends
// above addr (len(l) when none does).
func search(l []Region, addr uint32) int {
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l[m].End() > uint64(addr) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// find returns the region of layer l holding addr.
func find(l []Region, addr uint32) (Region, bool) {
	i := search(l, addr)
	if i < len(l) && l[i].Contains(addr) {
		return l[i], true
	}
	return Region{}, false
}

// slice returns the image's bytes [addr, addr+n) without copying when one
// region holds them all and no region of a higher layer covers any of
// them (the common case: a word of the dump's RAM, an instruction of the
// ELF's flash); ok is false otherwise, and Read then does the general
// work. The bytes must not be modified.
func (im *Image) slice(addr uint32, n int) ([]byte, bool) {
	end := uint64(addr) + uint64(n)
	for li := len(im.layers) - 1; li >= 0; li-- {
		l := im.layers[li]
		i := search(l, addr)
		if i >= len(l) {
			continue
		}
		r := &l[i]
		if r.Addr > addr {
			// No region of this layer holds addr; one starting inside
			// the run would hide the layers below.
			if uint64(r.Addr) < end {
				return nil, false
			}
			continue
		}
		if end > r.End() {
			return nil, false
		}
		o := int(addr - r.Addr)
		return r.Data[o : o+n : o+n], true
	}
	return nil, false
}

// Bytes returns the bytes [addr, addr+n) in place, without copying, when
// a single region holds them all and nothing of a higher layer covers
// them; ok is false otherwise (Read then copies them, or says which byte
// is missing). The caller must not modify or keep the bytes.
func (im *Image) Bytes(addr uint32, n int) ([]byte, bool) {
	if n < 0 || uint64(addr)+uint64(n) > 1<<32 {
		return nil, false
	}
	return im.slice(addr, n)
}

// Read implements Memory. A read may span regions and layers.
func (im *Image) Read(addr uint32, p []byte) error {
	if uint64(addr)+uint64(len(p)) > 1<<32 {
		return &UnmappedError{Addr: addr, Size: len(p), Missing: addr}
	}
	if b, ok := im.slice(addr, len(p)); ok {
		copy(p, b)
		return nil
	}
	done := 0
	for done < len(p) {
		a := addr + uint32(done)
		li := len(im.layers) - 1
		var (
			r  Region
			ok bool
		)
		for ; li >= 0; li-- {
			if r, ok = find(im.layers[li], a); ok {
				break
			}
		}
		if !ok {
			return &UnmappedError{Addr: addr, Size: len(p), Missing: a}
		}
		end := min(r.End(), uint64(addr)+uint64(len(p)))
		// A region of a higher layer may begin inside this run: stop there.
		for _, l := range im.layers[li+1:] {
			j := search(l, a)
			if j < len(l) && uint64(l[j].Addr) < end {
				end = uint64(l[j].Addr)
			}
		}
		n := copy(p[done:], r.Data[a-r.Addr:uint64(a-r.Addr)+(end-uint64(a))])
		done += n
	}
	return nil
}

// Regions returns every region of every layer, bottom layer first.
func (im *Image) Regions() []Region {
	var out []Region
	for _, l := range im.layers {
		out = append(out, l...)
	}
	return out
}

// Mapped reports whether addr is covered by any region.
func (im *Image) Mapped(addr uint32) bool {
	for _, l := range im.layers {
		if _, ok := find(l, addr); ok {
			return true
		}
	}
	return false
}
