package stackscan

import "github.com/faultline-dev/faultline/unwinders"

// maxVeneerHops bounds how many veneers veneerTarget follows in a row.
const maxVeneerHops = 2

// veneerTarget reports where the code at addr (a BL target) branches to
// when it is a linker veneer or trampoline rather than a function: one of
//
//	B.W label            (T4)          ARMv7-M ARM A7.7.12
//	B label              (T2, 16-bit)
//	LDR.W PC, [PC, #±imm] + literal    A7.7.43 (GNU ld's Thumb-2 long branch)
//	MOVW ip, #lo; MOVT ip, #hi; BX ip  A7.7.76, A7.7.79, A7.7.20
//
// It follows at most maxVeneerHops of them and returns the final address
// with the Thumb bit clear.
func veneerTarget(m unwinders.Memory, addr uint32) (uint32, bool) {
	cur, moved := addr, false
	for range maxVeneerHops {
		next, ok := veneerStep(m, cur)
		if !ok {
			break
		}
		cur, moved = next, true
	}
	return cur, moved
}

// veneerStep decodes one veneer at addr.
func veneerStep(m unwinders.Memory, addr uint32) (uint32, bool) {
	var b [12]byte
	n := len(b)
	if err := m.Read(addr, b[:]); err != nil {
		n = 4
		if err := m.Read(addr, b[:4]); err != nil {
			n = 2
			if err := m.Read(addr, b[:2]); err != nil {
				return 0, false
			}
		}
	}
	hw := func(i int) uint16 { return uint16(b[2*i]) | uint16(b[2*i+1])<<8 }
	h1 := hw(0)
	if h1&0xF800 == 0xE000 { // B T2
		off := uint32(h1&0x7FF) << 1
		if off&0x800 != 0 {
			off |= 0xFFFFF000
		}
		return addr + 4 + off, true
	}
	if n < 4 {
		return 0, false
	}
	h2 := hw(1)
	switch {
	case h1&0xF800 == 0xF000 && h2&0xD000 == 0x9000: // B.W T4
		return branchT4(addr, h1, h2), true
	case (h1 == 0xF8DF || h1 == 0xF85F) && h2&0xF000 == 0xF000: // LDR.W PC, [PC, #±imm12]
		base := (addr + 4) &^ 3
		imm := uint32(h2 & 0xFFF)
		lit := base + imm
		if h1 == 0xF85F {
			lit = base - imm
		}
		v, err := unwinders.ReadU32(m, lit)
		if err != nil || v&1 == 0 {
			return 0, false
		}
		return v &^ 1, true
	case n == 12 && h1&0xFBF0 == 0xF240 && hw(1)&0x8F00 == 0x0C00 &&
		hw(2)&0xFBF0 == 0xF2C0 && hw(3)&0x8F00 == 0x0C00 && hw(4) == 0x4760: // MOVW ip; MOVT ip; BX ip
		lo := movImm16(h1, h2)
		hi := movImm16(hw(2), hw(3))
		v := hi<<16 | lo
		if v&1 == 0 {
			return 0, false
		}
		return v &^ 1, true
	}
	return 0, false
}

// branchT4 computes a B.W (T4) or BL (T1) target: PC+4 +
// SignExtend(S:I1:I2:imm10:imm11:0), I1 = NOT(J1 XOR S), I2 = NOT(J2 XOR S).
func branchT4(addr uint32, h1, h2 uint16) uint32 {
	s := uint32(h1>>10) & 1
	j1 := uint32(h2>>13) & 1
	j2 := uint32(h2>>11) & 1
	i1 := ^(j1 ^ s) & 1
	i2 := ^(j2 ^ s) & 1
	off := s<<24 | i1<<23 | i2<<22 | (uint32(h1)&0x3FF)<<12 | (uint32(h2)&0x7FF)<<1
	if s != 0 {
		off |= 0xFE000000
	}
	return addr + 4 + off
}

// movImm16 extracts imm4:i:imm3:imm8 of MOVW/MOVT (T3/T1).
func movImm16(h1, h2 uint16) uint32 {
	imm4 := uint32(h1) & 0xF
	i := uint32(h1>>10) & 1
	imm3 := uint32(h2>>12) & 7
	imm8 := uint32(h2) & 0xFF
	return imm4<<12 | i<<11 | imm3<<8 | imm8
}
