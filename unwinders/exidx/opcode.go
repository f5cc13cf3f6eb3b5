package exidx

import (
	"fmt"
	"strings"
)

// Op is the kind of an EHABI unwinding instruction (EHABI 10.3, table 4).
type Op uint8

const (
	OpVSPAdd      Op = iota + 1 // 00xxxxxx, 10110010 uleb128: vsp += N
	OpVSPSub                    // 01xxxxxx: vsp -= N
	OpRefuse                    // 10000000 00000000: refuse to unwind
	OpPop                       // 1000iiii iiiiiiii, 10100nnn, 10101nnn, 10110001 0000iiii: pop core registers by mask
	OpVSPReg                    // 1001nnnn: vsp = r[n]
	OpFinish                    // 10110000
	OpPopVFP                    // 10110011, 10111nnn (FSTMFDX), 11001000, 11001001, 11010nnn (VPUSH)
	OpPopPAC                    // 10110100: pop the return address authentication code
	OpPACModifier               // 10110101: vsp is the modifier for PAC validation
	OpWMMX                      // 11000nnn, 11000110, 11000111: iWMMXt pops (no iWMMXt on M-profile)
	OpSpare                     // spare encodings
	OpReserved                  // reserved encodings (vsp = r13, vsp = r15)
	OpTruncated                 // the stream ended inside a multi-byte instruction
)

var opNames = [...]string{
	OpVSPAdd: "vsp+", OpVSPSub: "vsp-", OpRefuse: "refuse", OpPop: "pop", OpVSPReg: "vsp=r",
	OpFinish: "finish", OpPopVFP: "vpop", OpPopPAC: "pop-pac", OpPACModifier: "pac-modifier",
	OpWMMX: "iwmmxt", OpSpare: "spare", OpReserved: "reserved", OpTruncated: "truncated",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Opcode is one decoded unwinding instruction.
type Opcode struct {
	Offset int    // position in the entry's opcode stream
	Bytes  []byte // the instruction's bytes (a sub-slice of the stream)
	Op     Op
	// Value is the byte count of OpVSPAdd/OpVSPSub, the register number of
	// OpVSPReg, and the first D register of OpPopVFP.
	Value uint32
	// Mask is the register mask of OpPop (bit n = r[n]).
	Mask uint16
	// Count is the number of D registers an OpPopVFP pops.
	Count int
	// FSTMFDX is set for OpPopVFP pops of an FSTMFDX frame (one pad word
	// after the registers).
	FSTMFDX bool
	// Problem is non-empty when the instruction cannot be executed: spare,
	// reserved, iWMMXt, refuse, an impossible register range, a truncated
	// stream, an over-long uleb128.
	Problem string
}

// Text renders the instruction the way GNU readelf -u does ("pop {r4,
// r14}", "vsp = vsp + 16", "pop {D8-D15}", "finish"), except for the
// encodings readelf calls "[unsupported opcode]" (here "[spare]") and the
// iWMMXt pops (here "[iWMMXt] ..."): on M-profile they are all failures.
func (o Opcode) Text() string {
	switch o.Op {
	case OpVSPAdd:
		return fmt.Sprintf("vsp = vsp + %d", o.Value)
	case OpVSPSub:
		return fmt.Sprintf("vsp = vsp - %d", o.Value)
	case OpRefuse:
		return "Refuse to unwind"
	case OpPop:
		var b strings.Builder
		b.WriteString("pop {")
		first := true
		for r := 0; r < 16; r++ {
			if o.Mask&(1<<r) == 0 {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "r%d", r)
		}
		b.WriteString("}")
		return b.String()
	case OpVSPReg:
		return fmt.Sprintf("vsp = r%d", o.Value)
	case OpFinish:
		return "finish"
	case OpPopVFP:
		if o.Count == 1 {
			return fmt.Sprintf("pop {D%d}", o.Value)
		}
		return fmt.Sprintf("pop {D%d-D%d}", o.Value, int(o.Value)+o.Count-1)
	case OpPopPAC:
		return "pop {ra_auth_code}"
	case OpPACModifier:
		return "vsp as modifier for PAC validation"
	case OpWMMX:
		return "[iWMMXt]"
	case OpSpare:
		return "[spare]"
	case OpReserved:
		return "[reserved]"
	case OpTruncated:
		return "[truncated]"
	}
	return "[?]"
}

// String gives the bytes and the text: "0x84 0x31 pop {r4, r8, r9, r14}".
func (o Opcode) String() string {
	var b strings.Builder
	for _, x := range o.Bytes {
		fmt.Fprintf(&b, "0x%02x ", x)
	}
	b.WriteString(o.Text())
	if o.Problem != "" {
		b.WriteString(" (" + o.Problem + ")")
	}
	return b.String()
}

// maxULEB is the longest uleb128 accepted after 10110010: five bytes hold
// any 32-bit value; anything longer cannot describe a real frame.
const maxULEB = 5

// decodeOp decodes the instruction at b[i:] (EHABI 10.3, table 4). It
// always consumes at least one byte, so a loop over a stream ends.
func decodeOp(b []byte, i int) Opcode {
	op := Opcode{Offset: i}
	n := 1
	x := b[i]
	need := func(k int) bool {
		if i+k > len(b) {
			op.Op, op.Problem = OpTruncated, fmt.Sprintf("instruction 0x%02x needs %d bytes, the stream ends after %d", x, k, len(b)-i)
			n = len(b) - i
			return false
		}
		n = k
		return true
	}
	switch {
	case x&0xC0 == 0x00: // 00xxxxxx
		op.Op, op.Value = OpVSPAdd, uint32(x&0x3F)<<2+4
	case x&0xC0 == 0x40: // 01xxxxxx
		op.Op, op.Value = OpVSPSub, uint32(x&0x3F)<<2+4
	case x&0xF0 == 0x80: // 1000iiii iiiiiiii
		if !need(2) {
			break
		}
		m := uint16(x&0x0F)<<8 | uint16(b[i+1])
		if m == 0 {
			op.Op, op.Problem = OpRefuse, "refuse-to-unwind opcode"
			break
		}
		op.Op, op.Mask = OpPop, m<<4
	case x&0xF0 == 0x90: // 1001nnnn
		r := x & 0x0F
		if r == 13 || r == 15 {
			op.Op, op.Value, op.Problem = OpReserved, uint32(r), fmt.Sprintf("vsp = r%d is reserved", r)
			break
		}
		op.Op, op.Value = OpVSPReg, uint32(r)
	case x&0xF0 == 0xA0: // 1010Lnnn
		m := uint16(1)<<(x&7+1) - 1 // r4..r[4+nnn]
		m <<= 4
		if x&0x08 != 0 {
			m |= 1 << 14
		}
		op.Op, op.Mask = OpPop, m
	case x == 0xB0:
		op.Op = OpFinish
	case x == 0xB1: // 10110001 0000iiii
		if !need(2) {
			break
		}
		y := b[i+1]
		if y == 0 || y&0xF0 != 0 {
			op.Op, op.Problem = OpSpare, fmt.Sprintf("0xb1 0x%02x is spare", y)
			break
		}
		op.Op, op.Mask = OpPop, uint16(y)
	case x == 0xB2: // 10110010 uleb128
		var v uint64
		k := 1
		for shift := 0; ; shift += 7 {
			if i+k >= len(b) {
				op.Op, op.Problem = OpTruncated, "uleb128 runs past the end of the opcode stream"
				n = len(b) - i
				return finish(op, b, n)
			}
			if k > maxULEB {
				op.Op, op.Problem = OpSpare, fmt.Sprintf("uleb128 longer than %d bytes", maxULEB)
				n = k
				return finish(op, b, n)
			}
			c := b[i+k]
			v |= uint64(c&0x7F) << shift
			k++
			if c&0x80 == 0 {
				break
			}
		}
		n = k
		sum := 0x204 + v<<2
		if sum > 0xFFFFFFFF {
			op.Op, op.Problem = OpSpare, fmt.Sprintf("vsp adjustment 0x%x does not fit 32 bits", sum)
			break
		}
		op.Op, op.Value = OpVSPAdd, uint32(sum)
	case x == 0xB3: // 10110011 sssscccc: FSTMFDX D[s]..D[s+c]
		if !need(2) {
			break
		}
		vfp(&op, uint32(b[i+1]>>4), int(b[i+1]&0x0F)+1, true, 16)
	case x == 0xB4:
		op.Op = OpPopPAC
	case x == 0xB5:
		op.Op = OpPACModifier
	case x&0xF8 == 0xB8: // 10111nnn: FSTMFDX D8..D[8+n]
		vfp(&op, 8, int(x&7)+1, true, 16)
	case x == 0xC6 || x == 0xC7: // iWMMXt wR / wCGR pops, two bytes
		if !need(2) {
			break
		}
		y := b[i+1]
		if x == 0xC7 && (y == 0 || y&0xF0 != 0) {
			op.Op, op.Problem = OpSpare, fmt.Sprintf("0xc7 0x%02x is spare", y)
			break
		}
		op.Op, op.Problem = OpWMMX, "iWMMXt registers do not exist on M-profile"
	case x&0xF8 == 0xC0: // 11000nnn (nnn != 6, 7): iWMMXt wR10..wR[10+n]
		op.Op, op.Problem = OpWMMX, "iWMMXt registers do not exist on M-profile"
	case x == 0xC8: // 11001000 sssscccc: VPUSH D[16+s]..D[16+s+c]
		if !need(2) {
			break
		}
		vfp(&op, 16+uint32(b[i+1]>>4), int(b[i+1]&0x0F)+1, false, 32)
	case x == 0xC9: // 11001001 sssscccc: VPUSH D[s]..D[s+c]
		if !need(2) {
			break
		}
		vfp(&op, uint32(b[i+1]>>4), int(b[i+1]&0x0F)+1, false, 32)
	case x&0xF8 == 0xD0: // 11010nnn: VPUSH D8..D[8+n]
		vfp(&op, 8, int(x&7)+1, false, 32)
	default: // 10110110-10110111, 11001yyy (yyy != 000, 001), 11011xxx, 111xxxxx
		op.Op, op.Problem = OpSpare, fmt.Sprintf("0x%02x is spare", x)
	}
	return finish(op, b, n)
}

func finish(op Opcode, b []byte, n int) Opcode {
	op.Bytes = b[op.Offset : op.Offset+n : op.Offset+n]
	return op
}

// vfp fills a D-register pop, checking the range against the register
// file: FSTMFDX frames hold D0-D15 only, VPUSH frames D0-D31 (EHABI 10.3
// remark d; libgcc rejects the same ranges).
func vfp(op *Opcode, first uint32, count int, fstmx bool, limit int) {
	op.Op, op.Value, op.Count, op.FSTMFDX = OpPopVFP, first, count, fstmx
	if int(first)+count > limit {
		op.Problem = fmt.Sprintf("D%d-D%d is past D%d", first, int(first)+count-1, limit-1)
	}
}

// Decode decodes a whole opcode stream into its instructions, in order,
// including the padding "finish" bytes after the first finish (as readelf
// lists them). The stream is at most a few hundred bytes long (EHABI 7.3:
// 255 extra words), so this is cheap.
func Decode(stream []byte) []Opcode {
	var out []Opcode
	for i := 0; i < len(stream); {
		op := decodeOp(stream, i)
		out = append(out, op)
		i += len(op.Bytes)
	}
	return out
}
