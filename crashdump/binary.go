package crashdump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/faultline-dev/faultline/unwinders"
)

// binReader reads the little-endian fields of a binary dump with bounds
// checks. Every error is a *FormatError naming the file and the offset of
// the field that could not be read. When the bytes were decoded from a text
// form (hex lines), pos maps a byte offset of the decoded dump back to the
// offset in the file, so that messages point at the text the user has.
type binReader struct {
	name string
	data []byte
	off  int
	pos  func(int) int64 // nil: the identity
}

// at returns the file offset of decoded byte i.
func (r *binReader) at(i int) int64 {
	if r.pos != nil {
		return r.pos(i)
	}
	return int64(i)
}

// errAt builds a *FormatError at decoded byte offset i.
func (r *binReader) errAt(i int, format string, args ...any) *FormatError {
	msg := fmt.Sprintf(format, args...)
	if r.pos != nil {
		msg = fmt.Sprintf("%s (byte %d of the decoded dump)", msg, i)
	}
	return &FormatError{File: r.name, Offset: r.at(i), Msg: msg}
}

func (r *binReader) left() int { return len(r.data) - r.off }

// need checks that n more bytes are there for what.
func (r *binReader) need(n int, what string) error {
	if n < 0 || r.left() < n {
		return r.errAt(r.off, "truncated: %s needs %d bytes, only %d left", what, n, r.left())
	}
	return nil
}

func (r *binReader) u8(what string) (uint8, error) {
	if err := r.need(1, what); err != nil {
		return 0, err
	}
	v := r.data[r.off]
	r.off++
	return v, nil
}

func (r *binReader) u16(what string) (uint16, error) {
	if err := r.need(2, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(r.data[r.off:])
	r.off += 2
	return v, nil
}

func (r *binReader) u32(what string) (uint32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(r.data[r.off:])
	r.off += 4
	return v, nil
}

// words reads len(w) little-endian words.
func (r *binReader) words(w []uint32, what string) error {
	if err := r.need(4*len(w), what); err != nil {
		return err
	}
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(r.data[r.off+4*i:])
	}
	r.off += 4 * len(w)
	return nil
}

// bytes returns the next n bytes without copying them.
func (r *binReader) bytes(n int, what string) ([]byte, error) {
	if err := r.need(n, what); err != nil {
		return nil, err
	}
	b := r.data[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// regionSet collects the memory regions of an imported dump and enforces
// the limits every importer shares: no empty region (unless allowed), none
// larger than MaxRegionSize, at most MaxTotalSize in all, none past 4 GiB,
// and no two overlapping. at is the file offset of the region's header, for
// messages.
type regionSet struct {
	r       *binReader
	regions []unwinders.Region
	offs    []int // decoded offset of each region's header
	total   int64
}

// checkSize checks a region's length, taken from an untrusted header, before
// anything is read or allocated for it.
func (s *regionSet) checkSize(hdr int, start uint32, size uint64, what string) error {
	switch {
	case size > MaxRegionSize:
		fe := s.r.errAt(hdr, "%s at 0x%08x is %d bytes: larger than the %d byte region limit", what, start, size, MaxRegionSize)
		fe.Err = ErrTooLarge
		return fe
	case s.total+int64(size) > MaxTotalSize:
		fe := s.r.errAt(hdr, "%s at 0x%08x brings the memory to %d bytes: more than the %d byte limit", what, start, s.total+int64(size), MaxTotalSize)
		fe.Err = ErrTooLarge
		return fe
	case uint64(start)+size > 1<<32:
		return s.r.errAt(hdr, "%s at 0x%08x with %d bytes runs past 4 GiB", what, start, size)
	}
	return nil
}

// add records a region whose size checkSize accepted; empty regions are
// dropped.
func (s *regionSet) add(hdr int, name string, start uint32, data []byte) {
	if len(data) == 0 {
		return
	}
	s.total += int64(len(data))
	s.regions = append(s.regions, unwinders.Region{Name: name, Addr: start, Data: data})
	s.offs = append(s.offs, hdr)
}

// overlaps reports the first pair of overlapping regions, naming the later
// one in file order.
func (s *regionSet) overlaps() error {
	idx := make([]int, len(s.regions))
	for i := range idx {
		idx[i] = i
	}
	rs := s.regions
	sort.SliceStable(idx, func(a, b int) bool { return rs[idx[a]].Addr < rs[idx[b]].Addr })
	for k := 1; k < len(idx); k++ {
		a, b := idx[k-1], idx[k]
		if uint64(rs[b].Addr) < rs[a].End() {
			if a > b {
				a, b = b, a
			}
			return s.r.errAt(s.offs[b], "memory region 0x%08x-0x%08x overlaps the region 0x%08x-0x%08x at offset %d: want disjoint regions",
				rs[b].Addr, rs[b].End(), rs[a].Addr, rs[a].End(), s.r.at(s.offs[a]))
		}
	}
	return nil
}

// mergeAgreeing joins regions that overlap where their bytes agree in the
// overlap, as GDB's gcore writes them (a thread's stack segment over the
// .bss it lies in, the same bytes read twice from the target). Overlapping
// regions that disagree are an error, as in overlaps. The merged region
// keeps the name and header offset of the lower one; its bytes are at most
// the two regions' sum, which checkSize already counted.
func (s *regionSet) mergeAgreeing() error {
	if len(s.regions) < 2 {
		return nil
	}
	idx := make([]int, len(s.regions))
	for i := range idx {
		idx[i] = i
	}
	rs := s.regions
	sort.SliceStable(idx, func(a, b int) bool { return rs[idx[a]].Addr < rs[idx[b]].Addr })
	var out []unwinders.Region
	var offs []int
	for _, i := range idx {
		r := rs[i]
		if n := len(out); n > 0 && uint64(r.Addr) < out[n-1].End() {
			cur := &out[n-1]
			lo, hi := uint64(r.Addr), min(cur.End(), r.End())
			a := cur.Data[lo-uint64(cur.Addr) : hi-uint64(cur.Addr)]
			b := r.Data[:hi-lo]
			if !bytes.Equal(a, b) {
				k := 0
				for k < len(a) && a[k] == b[k] {
					k++
				}
				return s.r.errAt(s.offs[i], "memory region 0x%08x-0x%08x overlaps the region 0x%08x-0x%08x at offset %d and holds other bytes there (first at 0x%08x): want the same bytes where regions overlap",
					r.Addr, r.End(), cur.Addr, cur.End(), s.r.at(offs[n-1]), lo+uint64(k))
			}
			if r.End() > cur.End() {
				joined := make([]byte, r.End()-uint64(cur.Addr))
				copy(joined, cur.Data)
				copy(joined[uint64(r.Addr)-uint64(cur.Addr):], r.Data)
				cur.Data = joined
			}
			continue
		}
		out = append(out, r)
		offs = append(offs, s.offs[i])
	}
	if len(out) < len(rs) {
		// Only a merge reorders: otherwise the regions keep file order.
		s.regions, s.offs = out, offs
	}
	return nil
}

// regionName names an imported region after its format and address.
func regionName(format string, addr uint32) string {
	return fmt.Sprintf("%s@0x%08x", format, addr)
}
