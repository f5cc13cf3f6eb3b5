package frame

import "encoding/binary"

// reader decodes little-endian DWARF data from a byte slice. Reads past the
// end set trunc and return zero; callers check ok() once per item.
type reader struct {
	data  []byte
	off   int // position in data
	base  uint64
	trunc bool
}

// pos returns the section offset of the next byte.
func (r *reader) pos() uint64 { return r.base + uint64(r.off) }

func (r *reader) left() int { return len(r.data) - r.off }

func (r *reader) ok() bool { return !r.trunc }

func (r *reader) bytes(n uint64) []byte {
	if r.trunc || n > uint64(r.left()) {
		r.trunc = true
		r.off = len(r.data)
		return nil
	}
	b := r.data[r.off : r.off+int(n)]
	r.off += int(n)
	return b
}

func (r *reader) u8() uint8 {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u16() uint16 {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// uint reads an unsigned value of size 1, 2, 4 or 8 bytes.
func (r *reader) uint(size int) uint64 {
	switch size {
	case 1:
		return uint64(r.u8())
	case 2:
		return uint64(r.u16())
	case 4:
		return uint64(r.u32())
	case 8:
		return r.u64()
	}
	r.trunc = true
	return 0
}

// uleb reads an unsigned LEB128 number. Bits past the 64th are an error
// (reported as truncation of a sane encoding: overlong is set).
func (r *reader) uleb() (uint64, bool) {
	var v uint64
	var shift uint
	for {
		b := r.u8()
		if r.trunc {
			return 0, true
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
			if shift > 57 && b&0x7f>>(64-shift) != 0 {
				return v, false
			}
		} else if b&0x7f != 0 {
			return v, false
		}
		shift += 7
		if b&0x80 == 0 {
			return v, true
		}
	}
}

// sleb reads a signed LEB128 number.
func (r *reader) sleb() (int64, bool) {
	var v int64
	var shift uint
	var b uint8
	fits := true
	for {
		b = r.u8()
		if r.trunc {
			return 0, true
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		} else if b&0x7f != 0 && b&0x7f != 0x7f {
			fits = false
		}
		shift += 7
		if b&0x80 == 0 {
			break
		}
	}
	if shift < 64 && b&0x40 != 0 {
		v |= -1 << shift
	}
	return v, fits
}

// cstring reads a NUL-terminated string.
func (r *reader) cstring() string {
	for i := r.off; i < len(r.data); i++ {
		if r.data[i] == 0 {
			s := string(r.data[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.trunc = true
	r.off = len(r.data)
	return ""
}
