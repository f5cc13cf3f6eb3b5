package unwinders

// CallKind says how a call was made.
type CallKind uint8

const (
	CallNone  CallKind = iota
	CallBL             // BL imm (T1), 32-bit
	CallBLXr           // BLX Rm (T1), 16-bit
	CallBLXi           // BLX imm (T2), to ARM state: not on M-profile, reported for completeness
	CallBLXNS          // BLXNS Rm (T1, ARMv8-M Security Extension): Secure code calling Non-secure code
)

// CallSite describes the call instruction that precedes a return address.
type CallSite struct {
	Kind   CallKind
	Addr   uint32 // address of the call instruction
	Target uint32 // BL/BLX imm: the branch target (Thumb bit clear); BLX Rm: 0
	Rm     Reg    // BLX Rm: the register
}

// CallBefore decodes the instruction that ends just before the return
// address ret (Thumb bit ignored) and reports whether it is a call: BL
// (T1, full J1/J2 range), BLX Rm, BLX imm, or BLXNS Rm. BX Rm is not a
// call.
// ARMv7-M ARM A7.7.18 (BL), A7.7.19 (BLX register); cortex-m.md 3.
func CallBefore(m Memory, ret uint32) (CallSite, bool) {
	ret &^= 1
	if ret < 2 {
		return CallSite{}, false
	}
	// A 32-bit BL ending at ret starts at ret-4. Check it first: a BLX Rm
	// halfword pattern can also be the second half of a BL.
	if ret >= 4 {
		if w, err := ReadU32(m, ret-4); err == nil {
			h1, h2 := uint16(w), uint16(w>>16)
			if h1&0xF800 == 0xF000 && h2&0xD000 == 0xD000 {
				return CallSite{Kind: CallBL, Addr: ret - 4, Target: blTarget(ret-4, h1, h2)}, true
			}
			if h1&0xF800 == 0xF000 && h2&0xD001 == 0xC000 {
				// Target = Align(PC, 4) + offset (A7.7.18 T2).
				pc := ret - 4 + 4
				t := blTarget(ret-4, h1, h2&^1) - pc + pc&^3
				return CallSite{Kind: CallBLXi, Addr: ret - 4, Target: t}, true
			}
		}
	}
	h, err := ReadU16(m, ret-2)
	if err != nil {
		return CallSite{}, false
	}
	if h&0xFF87 == 0x4780 {
		// A 16-bit halfword at ret-2 could also be the second half of a
		// 32-bit instruction starting at ret-4; a real BL was excluded above,
		// and no other 32-bit encoding ends in 0x478x/0x47Fx in a way a
		// compiler emits before a return address.
		return CallSite{Kind: CallBLXr, Addr: ret - 2, Rm: Reg((h >> 3) & 0xF)}, true
	}
	if h&0xFF87 == 0x4784 {
		// BLXNS Rm (ARMv8-M ARM C2.4.25): its return address is pushed on
		// the Secure stack and LR holds FNC_RETURN.
		return CallSite{Kind: CallBLXNS, Addr: ret - 2, Rm: Reg((h >> 3) & 0xF)}, true
	}
	return CallSite{}, false
}

// blTarget computes a BL T1 target: PC+4 + SignExtend(S:I1:I2:imm10:imm11:0)
// with I1 = NOT(J1 XOR S), I2 = NOT(J2 XOR S).
func blTarget(addr uint32, h1, h2 uint16) uint32 {
	s := uint32(h1>>10) & 1
	imm10 := uint32(h1) & 0x3FF
	j1 := uint32(h2>>13) & 1
	j2 := uint32(h2>>11) & 1
	imm11 := uint32(h2) & 0x7FF
	i1 := ^(j1 ^ s) & 1
	i2 := ^(j2 ^ s) & 1
	off := s<<24 | i1<<23 | i2<<22 | imm10<<12 | imm11<<1
	if s != 0 {
		off |= 0xFE000000
	}
	return addr + 4 + off
}
