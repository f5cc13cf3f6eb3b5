package exidx

import (
	"fmt"
	"math/bits"

	"github.com/faultline-dev/faultline/unwinders"
)

// maxProveBytes bounds the code proveBody decodes: functions longer than
// this are not proven (the scan is linear from the function start).
const maxProveBytes = 0x10000

// shape is what an entry's instructions say about the frame, relative to a
// base: the body's SP, or r[FP] for a frame-pointer entry (one starting
// with vsp = r[n]).
type shape struct {
	fp      int    // -1: no frame pointer; else the register of vsp = r[n]
	size    uint32 // entry SP - base: the bytes the prologue pushed and allocated (no fp), or r[fp] + size = entry SP
	lowest  int64  // lowest offset from base that a pop reads (fp frames)
	lrSaved bool   // the entry pops r14 or r15: LR's value on entry is on the stack
}

// frameShape symbolically runs the instructions without memory. It returns
// ok=false for shapes the prologue check does not model.
func frameShape(stream []byte) (s shape, ok bool) {
	s.fp = -1
	var off int64 // vsp - base
	for i, n := 0, 0; i < len(stream) && n < maxOps; n++ {
		op := decodeOp(stream, i)
		i += len(op.Bytes)
		switch op.Op {
		case OpFinish:
			i = len(stream)
		case OpVSPAdd:
			off += int64(op.Value)
		case OpVSPSub:
			if s.fp < 0 {
				return s, false
			}
			off -= int64(op.Value)
		case OpVSPReg:
			if n != 0 {
				return s, false
			}
			s.fp = int(op.Value)
		case OpPop:
			if op.Mask&(1<<13) != 0 {
				return s, false
			}
			if op.Mask&(1<<14|1<<15) != 0 {
				s.lrSaved = true
			}
			s.lowest = min(s.lowest, off)
			off += 4 * int64(bits.OnesCount16(op.Mask))
		case OpPopVFP:
			s.lowest = min(s.lowest, off)
			off += 8 * int64(op.Count)
			if op.FSTMFDX {
				off += 4
			}
		case OpPopPAC:
			s.lowest = min(s.lowest, off)
			off += 4
		case OpPACModifier:
		default:
			return s, false
		}
	}
	if off < 0 || off > 1<<31 {
		return s, false
	}
	s.size = uint32(off)
	return s, true
}

// proveBody reports why the interrupted pc cannot be shown to lie in the
// body of the function e describes, or "" when it does.
//
// The check decodes the function linearly from its start up to pc. It
// follows the prologue (PUSH, STMDB SP!, STR Rt,[SP,#-4]!, VPUSH, SUB SP,
// and the frame-pointer set-up ADD Rn,SP,#k / MOV Rn,SP) until it has
// pushed and allocated what the entry's instructions pop (for a frame-
// pointer entry: until r[n] is set with the offset the entry implies and
// every slot the entry reads is below SP). From there to pc no instruction
// may change SP (for a frame-pointer entry: none may write r[n] or raise
// SP, since slots above SP may have been overwritten by the exception
// frame), which rules out an epilogue in progress; and when the entry takes the return address from
// LR, no instruction may have written LR. Anything the check cannot model
// makes it fail: it proves, it does not guess.
func proveBody(t *unwinders.Target, e *Entry, pc uint32) string {
	if t.Prog == nil {
		return "without symbols its function start is not known"
	}
	fn, ok := t.Prog.FuncAt(pc)
	if !ok {
		return "it is in no known function"
	}
	if fn.Start != e.FuncStart() && fn.Start != e.InheritedBy {
		return fmt.Sprintf("the entry starts at 0x%08x, not at the function start 0x%08x", e.FuncStart(), fn.Start)
	}
	if pc == fn.Start {
		return "it is at the first instruction, before the prologue"
	}
	if pc-fn.Start > maxProveBytes {
		return "the function is too long to check its prologue"
	}
	s, ok := frameShape(e.stream)
	if !ok {
		return "the entry's frame shape is not one the prologue check models"
	}
	var delta uint32 // bytes pushed and allocated so far
	done := s.fp < 0 && s.size == 0
	fpSet := false
	a := fn.Start
	for a < pc {
		h1, err := unwinders.ReadU16(t.Mem, a)
		if err != nil {
			return fmt.Sprintf("its code at 0x%08x is not in the image", a)
		}
		var h2 uint16
		size := uint32(2)
		if is32(h1) {
			if h2, err = unwinders.ReadU16(t.Mem, a+2); err != nil {
				return fmt.Sprintf("its code at 0x%08x is not in the image", a+2)
			}
			size = 4
		}
		c := classify(h1, h2, size == 4)
		if !done {
			switch c.kind {
			case insPush, insAlloc:
				delta += c.n
			case insFPSetup:
				if int(c.reg) == s.fp {
					if int64(delta)-int64(c.n) != int64(s.size) {
						return fmt.Sprintf("the frame-pointer set-up at 0x%08x does not match the entry", a)
					}
					fpSet = true
				}
			case insSPWrite:
				return fmt.Sprintf("the prologue changes SP at 0x%08x in a way the check does not model", a)
			}
			if s.fp < 0 {
				if delta == s.size {
					done = true
				} else if delta > s.size {
					return fmt.Sprintf("the prologue allocates more than the entry describes (at 0x%08x)", a)
				}
			} else if fpSet && int64(delta) >= int64(s.size)-s.lowest {
				done = true
			}
		} else {
			// Without a frame pointer any SP change moves the base the
			// entry is relative to. With one, SP may go down (alloca), but
			// an SP that went up has released slots the entry still reads,
			// and an exception frame stacked below SP may have overwritten
			// them: only decreases are safe.
			if c.kind == insSPWrite || c.kind == insFPSetup && c.reg == 13 || s.fp < 0 && (c.kind == insPush || c.kind == insAlloc) {
				return fmt.Sprintf("SP changes at 0x%08x, before the PC (an epilogue or a dynamic allocation)", a)
			}
			if s.fp >= 0 && mayWrite(h1, h2, size == 4, s.fp) {
				return fmt.Sprintf("r%d may change at 0x%08x, before the PC (an epilogue)", s.fp, a)
			}
		}
		if !s.lrSaved && mayWrite(h1, h2, size == 4, 14) {
			return fmt.Sprintf("LR may be overwritten at 0x%08x and the entry does not save it", a)
		}
		a += size
	}
	if a != pc {
		return fmt.Sprintf("decoding from the function start does not reach 0x%08x", pc)
	}
	if !done {
		return "it is inside the prologue"
	}
	return ""
}

// is32 reports whether a halfword starts a 32-bit Thumb instruction
// (ARMv7-M ARM A5.1: bits 15:11 = 0b11101, 0b11110 or 0b11111).
func is32(h uint16) bool {
	x := h >> 11
	return x == 0x1D || x == 0x1E || x == 0x1F
}

type insKind uint8

const (
	insOther   insKind = iota
	insPush            // PUSH, STMDB SP!, STR Rt,[SP,#-4]!, VPUSH: n bytes
	insAlloc           // SUB SP,SP,#n
	insFPSetup         // ADD reg,SP,#n / MOV reg,SP (n = 0); reg 13 = ADD SP,SP,#n
	insSPWrite         // any other instruction that may write SP
)

type ins struct {
	kind insKind
	n    uint32
	reg  uint8
}

// classify recognises the prologue instructions of cortex-m.md 3 and every
// other instruction that may write SP (ARMv7-M ARM A5.2, A5.3).
func classify(h1, h2 uint16, wide bool) ins {
	if !wide {
		h := h1
		switch {
		case h&0xFE00 == 0xB400: // PUSH T1
			return ins{kind: insPush, n: 4 * uint32(bits.OnesCount16(h&0x1FF))}
		case h&0xFF80 == 0xB080: // SUB SP,SP,#imm7*4
			return ins{kind: insAlloc, n: uint32(h&0x7F) * 4}
		case h&0xF800 == 0xA800: // ADD Rd,SP,#imm8*4
			return ins{kind: insFPSetup, reg: uint8(h >> 8 & 7), n: uint32(h&0xFF) * 4}
		case h&0xFF00 == 0x4600 && (h>>3)&0xF == 13 && (h>>4&8|h&7) != 13: // MOV Rd,SP
			return ins{kind: insFPSetup, reg: uint8(h>>4&8 | h&7)}
		}
		if mayWrite(h1, 0, false, 13) {
			return ins{kind: insSPWrite}
		}
		return ins{}
	}
	imm12 := uint32(h1>>10&1)<<11 | uint32(h2>>12&7)<<8 | uint32(h2&0xFF)
	switch {
	case h1 == 0xE92D && h2&0xA000 == 0: // PUSH.W / STMDB SP!
		return ins{kind: insPush, n: 4 * uint32(bits.OnesCount16(h2))}
	case h1 == 0xF84D && h2&0x0FFF == 0x0D04: // STR Rt,[SP,#-4]!
		return ins{kind: insPush, n: 4}
	case h1&0xFFBF == 0xED2D && h2&0x0E00 == 0x0A00: // VPUSH
		return ins{kind: insPush, n: 4 * uint32(h2&0xFF)}
	case h1&0xFBEF == 0xF1AD && h2&0x8F00 == 0x0D00: // SUB.W SP,SP,#const
		return ins{kind: insAlloc, n: thumbExpandImm(imm12)}
	case h1&0xFBFF == 0xF2AD && h2&0x8F00 == 0x0D00: // SUBW SP,SP,#imm12
		return ins{kind: insAlloc, n: imm12}
	case h1&0xFBEF == 0xF10D && h2&0x8000 == 0: // ADD.W Rd,SP,#const
		return ins{kind: insFPSetup, reg: uint8(h2 >> 8 & 0xF), n: thumbExpandImm(imm12)}
	case h1&0xFBFF == 0xF20D && h2&0x8000 == 0: // ADDW Rd,SP,#imm12
		return ins{kind: insFPSetup, reg: uint8(h2 >> 8 & 0xF), n: imm12}
	}
	if mayWrite(h1, h2, true, 13) {
		return ins{kind: insSPWrite}
	}
	return ins{}
}

// thumbExpandImm is ARMv7-M ARM A5.3.2 (the carry is not needed).
func thumbExpandImm(imm12 uint32) uint32 {
	imm8 := imm12 & 0xFF
	if imm12>>10 == 0 {
		switch imm12 >> 8 & 3 {
		case 0:
			return imm8
		case 1:
			return imm8<<16 | imm8
		case 2:
			return imm8<<24 | imm8<<8
		}
		return imm8 * 0x01010101
	}
	return bits.RotateLeft32(0x80|imm12&0x7F, -int(imm12>>7))
}

// mayWrite reports whether the instruction may write core register n. It
// errs on the side of yes: register fields are matched wherever the
// encoding group puts a destination (ARMv7-M ARM A5.2 and A5.3).
func mayWrite(h1, h2 uint16, wide bool, n int) bool {
	if !wide {
		h := h1
		switch {
		case h&0xFF00 == 0x4400 || h&0xFF00 == 0x4600: // ADD/MOV (register) with high registers
			return int(h>>4&8|h&7) == n
		case h&0xFF80 == 0x4780: // BLX Rm
			return n == 14
		case h&0xFF00 == 0x4700: // BX
			return false
		case h&0xFF00 == 0xB000: // ADD/SUB SP,SP,#imm
			return n == 13
		case h&0xFE00 == 0xBC00: // POP: the list, and SP
			return n == 13 || n < 8 && h&(1<<n) != 0
		case h&0xFE00 == 0xB400: // PUSH
			return n == 13
		case h&0xF000 == 0xB000: // other misc: extend, reverse (Rd in bits 2:0), CBZ, IT, hints
			return n < 8 && (h&0xFF00 == 0xB200 || h&0xFF00 == 0xBA00) && int(h&7) == n
		case h&0xF800 == 0xC800: // LDM: the list and the base
			return n < 8 && (h&(1<<n) != 0 || int(h>>8&7) == n)
		case h&0xF800 == 0xC000: // STM: writes back the base
			return n < 8 && int(h>>8&7) == n
		case h&0xF000 == 0xD000 || h&0xF800 == 0xE000: // conditional branch, SVC, B
			return false
		}
		if n >= 8 {
			return false
		}
		lo, mid := int(h&7), int(h>>8&7)
		switch {
		case h < 0x2000: // shift (immediate), add/subtract (register, imm3): Rd 2:0
			return lo == n
		case h&0xF800 == 0x2800: // CMP (immediate)
			return false
		case h < 0x4000: // MOV, ADD, SUB (imm8): Rdn 10:8
			return mid == n
		case h < 0x4400: // data processing: Rdn 2:0 (TST, CMP, CMN write nothing)
			op := h >> 6 & 0xF
			return lo == n && op != 0x8 && op != 0xA && op != 0xB
		case h&0xF800 == 0x4800: // LDR (literal): Rt 10:8
			return mid == n
		case h&0xF000 == 0x5000: // load/store (register offset): loads from 0x5600 up
			return h >= 0x5600 && lo == n
		case h >= 0x6000 && h < 0x9000: // load/store (immediate): L is bit 11
			return h&0x0800 != 0 && lo == n
		case h&0xF000 == 0x9000: // load/store SP-relative: Rt 10:8
			return h&0x0800 != 0 && mid == n
		case h&0xF000 == 0xA000: // ADR, ADD Rd,SP: Rd 10:8
			return mid == n
		}
		return lo == n || mid == n
	}
	rd, rt, rlo := int(h2>>8&0xF), int(h2>>12&0xF), int(h2&0xF)
	rn := int(h1 & 0xF)
	switch {
	case h1&0xF800 == 0xF000 && h2&0x8000 != 0: // branches and miscellaneous control
		if h2&0x5000 == 0x5000 || h2&0x5000 == 0x4000 { // BL, BLX imm
			return n == 14
		}
		if h1&0xFFE0 == 0xF3E0 { // MRS
			return rd == n
		}
		return false
	case h1&0xF800 == 0xF000, h1&0xFE00 == 0xEA00: // data processing (immediate, shifted register)
		return rd == n
	case h1&0xFE00 == 0xFA00: // data processing (register)
		return rd == n
	case h1&0xFF00 == 0xFB00: // multiply, long multiply, divide
		return rd == n || rt == n
	case h1&0xFE00 == 0xF800: // load/store single
		if h1&0x0010 != 0 && rt == n { // load
			return true
		}
		return rn == n && h1&0x0080 == 0 && h2&0x0800 != 0 && h2&0x0100 != 0 // T4 writeback
	case h1&0xFE00 == 0xE800: // load/store multiple, dual, exclusive, table branch
		if h1&0x0040 == 0 { // LDM/STM
			if h1&0x0020 != 0 && rn == n {
				return true
			}
			return h1&0x0010 != 0 && h2&(1<<n) != 0
		}
		if h1&0x0020 != 0 && rn == n { // LDRD/STRD writeback
			return true
		}
		return rt == n || rd == n || rlo == n
	case h1&0xFFE0 == 0xEC40: // VMOV two core registers <-> D or two S: to core when bit 4 is set
		return h1&0x0010 != 0 && (rt == n || rn == n)
	case h1&0xFE00 == 0xEC00: // 0xEC, 0xED: VLDR, VSTR, VLDM, VSTM: only a writeback (bit 5) writes Rn
		return h1&0x0020 != 0 && rn == n
	case h1&0xFE00 == 0xEE00: // 0xEE, 0xEF: VFP data processing and transfers: VMOV/VMRS to a core register
		return h1&0x0010 != 0 && h2&0x0F10 == 0x0A10 && rt == n
	}
	return rd == n || rt == n
}
