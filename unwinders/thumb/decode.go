package thumb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/unwinders"
)

// ErrTruncated is returned by Decode when the input ends inside an
// instruction (fewer than 2 bytes, or a 32-bit instruction with fewer than
// 4 bytes).
var ErrTruncated = errors.New("thumb: truncated instruction")

// ErrMisaligned is returned for an odd address: Thumb instructions are
// halfword aligned. (A return address or function pointer has bit 0 set to
// mark Thumb state; clear it before decoding.)
var ErrMisaligned = errors.New("thumb: odd instruction address")

// Is32Bit reports whether a halfword is the first halfword of a 32-bit
// Thumb instruction: bits [15:11] are 0b11101, 0b11110 or 0b11111 (ARMv7-M
// ARM A5.1).
func Is32Bit(h1 uint16) bool { return h1>>11 >= 0b11101 }

// Decode decodes the instruction at the start of code, which was read from
// address addr. It never panics and never reads beyond len(code): short
// input returns ErrTruncated, an odd addr ErrMisaligned. Any complete
// halfword sequence decodes (to OpOther if nothing more specific). Decode is
// stateless: instructions are decoded as if outside an IT block; apply an
// ITState to account for IT blocks. Decoding is a scan of a short table:
// constant time, no allocation.
func Decode(code []byte, addr uint32) (Inst, error) {
	if addr&1 != 0 {
		return Inst{}, ErrMisaligned
	}
	if len(code) < 2 {
		return Inst{}, ErrTruncated
	}
	h1 := binary.LittleEndian.Uint16(code)
	if !Is32Bit(h1) {
		return decode16(h1, addr), nil
	}
	if len(code) < 4 {
		return Inst{}, ErrTruncated
	}
	h2 := binary.LittleEndian.Uint16(code[2:])
	return decode32(uint32(h1)<<16|uint32(h2), addr), nil
}

// DecodeAt reads and decodes the instruction at addr. Read errors are
// returned wrapped (errors.Is(err, unwinders.ErrUnmapped) holds for an
// unmapped address); it reads the second halfword only for a 32-bit
// instruction.
func DecodeAt(m unwinders.Memory, addr uint32) (Inst, error) {
	return decodeAt(m, addr, make([]byte, 4))
}

// decodeAt is DecodeAt with a caller-provided 4-byte buffer.
func decodeAt(m unwinders.Memory, addr uint32, b []byte) (Inst, error) {
	if addr&1 != 0 {
		return Inst{}, ErrMisaligned
	}
	// Halfword reads (not m.Read into b): the buffer then stays with the
	// caller, on its stack.
	h1, err := unwinders.ReadU16(m, addr)
	if err != nil {
		return Inst{}, fmt.Errorf("thumb: reading instruction at 0x%08x: %w", addr, err)
	}
	binary.LittleEndian.PutUint16(b, h1)
	if Is32Bit(h1) {
		h2, err := unwinders.ReadU16(m, addr+2)
		if err != nil {
			return Inst{}, fmt.Errorf("thumb: reading instruction at 0x%08x: %w", addr, err)
		}
		binary.LittleEndian.PutUint16(b[2:], h2)
		return Decode(b[:4], addr)
	}
	return Decode(b[:2], addr)
}

// An entry is one row of a decoding table: an instruction matches when
// x&mask == value and args (if any) accepts it. args fills in the operands
// and may reject the bits (returning false) so that a later, more general
// row is tried: this is how the "if Rn == '1101' then SEE ..." clauses of
// the ARM ARM are expressed.
type entry struct {
	mask, value uint32
	op          Op
	flags       Flags
	args        func(i Inst, x uint32) (Inst, bool)
}

func newInst(raw uint32, n int, addr uint32) Inst {
	return Inst{Len: n, Raw: raw, Addr: addr, Cond: AL, Rd: NoReg, Rn: NoReg, Rm: NoReg, Rt2: NoReg}
}

func decode16(h uint16, addr uint32) Inst {
	return scan(index16[h>>10], uint32(h), 2, addr)
}

func decode32(x uint32, addr uint32) Inst {
	return scan(index32[x>>24], x, 4, addr)
}

// index16 and index32 split the tables by the top 6 bits of a 16-bit
// instruction and the top 8 bits of a 32-bit one: each bucket holds, in
// table order, the rows that can match an instruction with those bits. They
// are computed once from the tables and never modified.
var (
	index16 = buildIndex(table16, 10, 6)
	index32 = buildIndex(table32, 24, 8)
)

func buildIndex(t []entry, shift, n uint) [][]entry {
	idx := make([][]entry, 1<<n)
	bucketMask := uint32(1<<n-1) << shift
	for b := range idx {
		prefix := uint32(b) << shift
		for _, e := range t {
			if (prefix^e.value)&e.mask&bucketMask == 0 {
				idx[b] = append(idx[b], e)
			}
		}
	}
	return idx
}

func scan(t []entry, x uint32, n int, addr uint32) Inst {
	for k := range t {
		e := &t[k]
		if x&e.mask != e.value {
			continue
		}
		i := newInst(x, n, addr)
		i.Op = e.op
		i.Flags = e.flags
		if e.flags&flagSOutsideIT != 0 {
			i.Flags |= FlagS
		}
		if e.args != nil {
			var ok bool
			if i, ok = e.args(i, x); !ok {
				continue
			}
		}
		return i
	}
	return newInst(x, n, addr) // unreachable: both tables end with a catch-all
}

// Field helpers.
func bits(x uint32, lo, n uint) uint32     { return x >> lo & (1<<n - 1) }
func reg(x uint32, lo uint) unwinders.Reg  { return unwinders.Reg(bits(x, lo, 4)) }
func lreg(x uint32, lo uint) unwinders.Reg { return unwinders.Reg(bits(x, lo, 3)) }
func rbit(r unwinders.Reg) uint16 {
	if r > unwinders.PC {
		return 0
	}
	return 1 << r
}
func signExtend(v uint32, n uint) int32 { return int32(v<<(32-n)) >> (32 - n) }

// pcValue is the value of PC as an operand: the instruction's address + 4
// (ARMv7-M ARM A5.1, use of 0b1111 as a register specifier); align4 is
// Align(PC, 4), used by literal loads, ADR and BLX (immediate).
func pcValue(i *Inst) uint32 { return i.Addr + 4 }
func align4(i *Inst) uint32  { return (i.Addr + 4) &^ 3 }

// thumbExpandImm implements ThumbExpandImm (ARMv7-M ARM A5.3.2) on the
// 12-bit field i:imm3:imm8.
func thumbExpandImm(imm12 uint32) uint32 {
	if imm12>>10 == 0 {
		b := imm12 & 0xff
		switch imm12 >> 8 & 3 {
		case 0:
			return b
		case 1:
			return b<<16 | b
		case 2:
			return b<<24 | b<<8
		default:
			return b<<24 | b<<16 | b<<8 | b
		}
	}
	v := 0x80 | imm12&0x7f
	rot := imm12 >> 7
	return v>>rot | v<<(32-rot)
}

// imm12 extracts i:imm3:imm8 of a 32-bit data-processing immediate.
func imm12(x uint32) uint32 { return bits(x, 26, 1)<<11 | bits(x, 12, 3)<<8 | bits(x, 0, 8) }

// writesField and writesLow return argument decoders for OpOther rows that
// only record the register written: a 4-bit or a 3-bit field at bit lo.
func writesField(lo uint) func(Inst, uint32) (Inst, bool) {
	return func(in Inst, x uint32) (Inst, bool) {
		in.Writes = rbit(reg(x, lo))
		return in, true
	}
}
func writesLow(lo uint) func(Inst, uint32) (Inst, bool) {
	return func(in Inst, x uint32) (Inst, bool) {
		in.Writes = rbit(lreg(x, lo))
		return in, true
	}
}
