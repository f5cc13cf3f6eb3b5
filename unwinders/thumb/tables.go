package thumb

import "github.com/faultline-dev/faultline/unwinders"

const (
	sp = unwinders.SP
	lr = unwinders.LR
	pc = unwinders.PC
)

// table16 decodes 16-bit instructions (ARMv7-M ARM A5.2). Rows are in
// priority order: special cases before the general rows that contain them.
var table16 = []entry{
	// A5.2.5 miscellaneous 16-bit instructions.
	{0xff00, 0xbf00, OpIT, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 IT T1; mask 0000 = hints (NOP, YIELD, WFE, WFI, SEV)
		if x&0xf == 0 {
			i.Op = OpOther
			return in, true
		}
		i.Cond, i.ITMask = Cond(bits(x, 4, 4)), uint8(x&0xf)
		return in, true
	}},
	{0xff80, 0xb000, OpADD, FlagImm, spImm7},            // A7.7 ADD (SP plus immediate) T2
	{0xff80, 0xb080, OpSUB, FlagImm, spImm7},            // A7.7 SUB (SP minus immediate) T1
	{0xf500, 0xb100, OpCBZ, 0, cbz},                     // A7.7 CBNZ, CBZ T1 (bit 11 = nonzero)
	{0xfe00, 0xb400, OpPUSH, 0, push16},                 // A7.7 PUSH T1 (bit 8 = LR)
	{0xfe00, 0xbc00, OpPOP, 0, pop16},                   // A7.7 POP T1 (bit 8 = PC)
	{0xff00, 0xb200, OpOther, 0, writesLow(0)},          // SXTH, SXTB, UXTH, UXTB
	{0xffc0, 0xba80, OpOther, 0, nil},                   // UNDEFINED on v7-M (HLT on v8-A)
	{0xff00, 0xba00, OpOther, 0, writesLow(0)},          // REV, REV16, REVSH
	{0xf000, 0xb000, OpOther, 0, nil},                   // CPS, BKPT and unallocated
	{0xff87, 0x4780, OpBLXReg, 0, bxReg},                // A7.7 BLX (register) T1
	{0xff87, 0x4784, OpBLXReg, FlagNS, bxReg},           // BLXNS T1 (ARMv8-M Security Extension)
	{0xff87, 0x4704, OpBX, FlagNS, bxReg},               // BXNS T1 (ARMv8-M Security Extension)
	{0xff80, 0x4780, OpOther, 0, writes(bitPC | bitLR)}, // BLX with nonzero (0) bits: UNPREDICTABLE, taken as a call
	{0xff80, 0x4700, OpBX, 0, bxReg},                    // A7.7 BX T1 (nonzero (0) bits [2:0] are UNPREDICTABLE)
	{0xff00, 0x4400, OpADD, 0, addHigh},                 // A7.7 ADD (register) T2, ADD (SP plus register) T1/T2
	{0xff00, 0x4500, OpOther, 0, nil},                   // CMP (register) T2
	{0xff00, 0x4600, OpMOV, 0, movHigh},                 // A7.7 MOV (register) T1
	{0xffc0, 0x43c0, OpMVN, flagSOutsideIT, dp16},       // A7.7 MVN (register) T1
	{0xfc00, 0x4000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A5.2.2 data processing
		switch bits(x, 6, 4) {
		case 8, 10, 11: // TST, CMP, CMN
		default:
			i.Writes = rbit(lreg(x, 0))
		}
		return in, true
	}},
	{0xf800, 0x4800, OpLDRLit, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 LDR (literal) T1
		i.Rd, i.Rn, i.Imm = lreg(x, 8), pc, int32(bits(x, 0, 8)*4)
		i.Target = align4(i) + uint32(i.Imm)
		i.Writes = rbit(i.Rd)
		return in, true
	}},
	{0xf000, 0x5000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A5.2.4 load/store register offset
		if bits(x, 9, 3) >= 3 {
			i.Writes = rbit(lreg(x, 0))
		}
		return in, true
	}},
	{0xf800, 0x6000, OpSTR, 0, ldst16(2, false)}, // A7.7 STR (immediate) T1
	{0xf800, 0x6800, OpLDR, 0, ldst16(2, false)}, // A7.7 LDR (immediate) T1
	{0xf000, 0x7000, OpOther, 0, ldstOther16},    // STRB, LDRB (immediate)
	{0xf000, 0x8000, OpOther, 0, ldstOther16},    // STRH, LDRH (immediate)
	{0xf800, 0x9000, OpSTR, 0, ldst16(2, true)},  // A7.7 STR (immediate) T2, SP-relative
	{0xf800, 0x9800, OpLDR, 0, ldst16(2, true)},  // A7.7 LDR (immediate) T2, SP-relative
	{0xf800, 0xa000, OpADR, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 ADR T1
		i.Rd, i.Imm = lreg(x, 8), int32(bits(x, 0, 8)*4)
		i.Target = align4(i) + uint32(i.Imm)
		i.Writes = rbit(i.Rd)
		return in, true
	}},
	{0xf800, 0xa800, OpADD, FlagImm, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 ADD (SP plus immediate) T1
		i.Rd, i.Rn, i.Imm = lreg(x, 8), sp, int32(bits(x, 0, 8)*4)
		i.Writes = rbit(i.Rd)
		return in, true
	}},
	{0xf800, 0xc000, OpSTMIA, FlagWriteback, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 STM T1
		i.Rn, i.RegList = lreg(x, 8), uint16(x&0xff)
		i.Writes = rbit(i.Rn)
		return in, true
	}},
	{0xf800, 0xc800, OpLDMIA, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 LDM T1: writeback unless Rn is in the list
		i.Rn, i.RegList = lreg(x, 8), uint16(x&0xff)
		i.Writes = i.RegList
		if i.RegList&rbit(i.Rn) == 0 {
			i.Flags |= FlagWriteback
			i.Writes |= rbit(i.Rn)
		}
		return in, true
	}},
	{0xff00, 0xde00, OpOther, 0, nil}, // UDF T1
	{0xff00, 0xdf00, OpOther, 0, nil}, // SVC T1
	{0xf000, 0xd000, OpB, FlagNarrow, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 B T1
		i.Cond = Cond(bits(x, 8, 4))
		i.Target = pcValue(i) + uint32(signExtend(bits(x, 0, 8)<<1, 9))
		i.Writes = bitPC
		return in, true
	}},
	{0xf800, 0xe000, OpB, FlagNarrow, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 B T2
		i.Target = pcValue(i) + uint32(signExtend(bits(x, 0, 11)<<1, 12))
		i.Writes = bitPC
		return in, true
	}},
	// A5.2.1 shift (immediate), add, subtract, move and compare.
	{0xffc0, 0x0000, OpMOV, flagSOutsideIT, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 MOV (register) T2 (LSL #0)
		i.Rd, i.Rm = lreg(x, 0), lreg(x, 3)
		i.Writes = rbit(i.Rd)
		return in, true
	}},
	{0xe000, 0x0000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // LSL, LSR, ASR (immediate)
		if x>>11 == 3 {
			return in, false
		}
		i.Writes = rbit(lreg(x, 0))
		return in, true
	}},
	{0xfe00, 0x1800, OpADD, flagSOutsideIT, addSub3(false)},          // A7.7 ADD (register) T1
	{0xfe00, 0x1a00, OpSUB, flagSOutsideIT, addSub3(false)},          // A7.7 SUB (register) T1
	{0xfe00, 0x1c00, OpADD, flagSOutsideIT | FlagImm, addSub3(true)}, // A7.7 ADD (immediate) T1
	{0xfe00, 0x1e00, OpSUB, flagSOutsideIT | FlagImm, addSub3(true)}, // A7.7 SUB (immediate) T1
	{0xf800, 0x2000, OpMOV, flagSOutsideIT | FlagImm, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 MOV (immediate) T1
		i.Rd, i.Imm = lreg(x, 8), int32(bits(x, 0, 8))
		i.Writes = rbit(i.Rd)
		return in, true
	}},
	{0xf800, 0x2800, OpOther, 0, nil},                         // CMP (immediate) T1
	{0xf800, 0x3000, OpADD, flagSOutsideIT | FlagImm, imm8dn}, // A7.7 ADD (immediate) T2
	{0xf800, 0x3800, OpSUB, flagSOutsideIT | FlagImm, imm8dn}, // A7.7 SUB (immediate) T2
	{0, 0, OpOther, 0, nil},
}

// writes returns an argument decoder that only records written registers.
func writes(w uint16) func(Inst, uint32) (Inst, bool) {
	return func(in Inst, x uint32) (Inst, bool) {
		in.Writes = w
		return in, true
	}
}

func spImm7(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rd, i.Rn, i.Imm = sp, sp, int32(bits(x, 0, 7)*4)
	i.Writes = bitSP
	return in, true
}

func cbz(in Inst, x uint32) (Inst, bool) {
	i := &in
	if x&0x800 != 0 {
		i.Op = OpCBNZ
	}
	i.Rn = lreg(x, 0)
	i.Target = pcValue(i) + (bits(x, 9, 1)<<6 | bits(x, 3, 5)<<1)
	i.Writes = bitPC
	return in, true
}

func push16(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rn, i.RegList = sp, uint16(x&0xff|bits(x, 8, 1)<<14)
	i.Flags |= FlagWriteback
	i.Writes = bitSP
	return in, true
}

func pop16(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rn, i.RegList = sp, uint16(x&0xff|bits(x, 8, 1)<<15)
	i.Flags |= FlagWriteback
	i.Writes = bitSP | i.RegList
	return in, true
}

func bxReg(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rm = reg(x, 3)
	i.Writes = bitPC
	if i.Op == OpBLXReg {
		i.Writes |= bitLR
	}
	return in, true
}

func addHigh(in Inst, x uint32) (Inst, bool) {
	i := &in
	d := unwinders.Reg(bits(x, 7, 1)<<3 | bits(x, 0, 3))
	i.Rd, i.Rn, i.Rm = d, d, reg(x, 3)
	i.Writes = rbit(d)
	return in, true
}

func movHigh(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rd, i.Rm = unwinders.Reg(bits(x, 7, 1)<<3|bits(x, 0, 3)), reg(x, 3)
	i.Writes = rbit(i.Rd)
	return in, true
}

func dp16(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rd, i.Rm = lreg(x, 0), lreg(x, 3)
	i.Writes = rbit(i.Rd)
	return in, true
}

// ldst16 decodes LDR/STR (immediate) T1 (Rt, Rn, imm5) and T2 (Rt, SP,
// imm8), scaled by 1<<shift.
func ldst16(shift uint, spRel bool) func(Inst, uint32) (Inst, bool) {
	return func(in Inst, x uint32) (Inst, bool) {
		i := &in
		if spRel {
			i.Rd, i.Rn, i.Imm = lreg(x, 8), sp, int32(bits(x, 0, 8)<<shift)
		} else {
			i.Rd, i.Rn, i.Imm = lreg(x, 0), lreg(x, 3), int32(bits(x, 6, 5)<<shift)
		}
		if x&0x0800 != 0 { // L
			i.Writes = rbit(i.Rd)
		}
		return in, true
	}
}

func ldstOther16(in Inst, x uint32) (Inst, bool) {
	i := &in
	if x&0x0800 != 0 {
		i.Writes = rbit(lreg(x, 0))
	}
	return in, true
}

func addSub3(imm bool) func(Inst, uint32) (Inst, bool) {
	return func(in Inst, x uint32) (Inst, bool) {
		i := &in
		i.Rd, i.Rn = lreg(x, 0), lreg(x, 3)
		if imm {
			i.Imm = int32(bits(x, 6, 3))
		} else {
			i.Rm = lreg(x, 6)
		}
		i.Writes = rbit(i.Rd)
		return in, true
	}
}

func imm8dn(in Inst, x uint32) (Inst, bool) {
	i := &in
	i.Rd, i.Rn, i.Imm = lreg(x, 8), lreg(x, 8), int32(bits(x, 0, 8))
	i.Writes = rbit(i.Rd)
	return in, true
}

// table32 decodes 32-bit instructions (ARMv7-M ARM A5.3), x = h1<<16 | h2.
var table32 = []entry{
	// A5.3.4 branches and miscellaneous control (op1 = 10, op = 1).
	{0xf800d000, 0xf000d000, OpBL, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 BL T1
		i.Target = pcValue(i) + uint32(branchOffset(x))
		i.Writes = bitPC | bitLR
		return in, true
	}},
	// ARMv8.1-M low-overhead loops (the H = 1 space of BLX (immediate)):
	// LCTP, LE, LETP, WLS, WLSTP, DLS, DLSTP; the branch-future
	// instructions (BF, BFX, BFL, BFLX, BFCSEL) write no register.
	{0xffffffff, 0xf00fe001, OpOther, 0, nil},                   // LCTP
	{0xfffff001, 0xf02fc001, OpOther, 0, writes(bitPC)},         // LE (no decrement)
	{0xffeff001, 0xf00fc001, OpOther, 0, writes(bitPC | bitLR)}, // LE LR, LETP LR
	{0xfff0f001, 0xf040c001, OpOther, 0, writes(bitPC | bitLR)}, // WLS
	{0xffc0f001, 0xf000c001, OpOther, 0, writes(bitPC | bitLR)}, // WLSTP
	{0xfff0ffff, 0xf040e001, OpOther, 0, writes(bitLR)},         // DLS
	{0xffc0ffff, 0xf000e001, OpOther, 0, writes(bitLR)},         // DLSTP
	{0xf800d001, 0xf000c001, OpOther, 0, nil},                   // BF family, UNDEFINED BLX
	{0xf800d001, 0xf000c000, OpBLXImm, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // BLX (immediate) T2 (ARMv7-A/R; UNDEFINED on M-profile)
		i.Target = align4(i) + uint32(branchOffset(x))
		i.Writes = bitPC | bitLR
		return in, true
	}},
	{0xf800d000, 0xf0009000, OpB, FlagWide, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 B T4
		i.Target = pcValue(i) + uint32(branchOffset(x))
		i.Writes = bitPC
		return in, true
	}},
	{0xf800d000, 0xf0008000, OpB, FlagWide, func(in Inst, x uint32) (Inst, bool) {
		i := &in // A7.7 B T3; cond 111x is A5.3.4 misc control
		c := bits(x, 22, 4)
		if c >= 14 {
			return in, false
		}
		i.Cond = Cond(c)
		off := bits(x, 26, 1)<<20 | bits(x, 11, 1)<<19 | bits(x, 13, 1)<<18 | bits(x, 16, 6)<<12 | bits(x, 0, 11)<<1
		i.Target = pcValue(i) + uint32(signExtend(off, 21))
		i.Writes = bitPC
		return in, true
	}},
	{0xf800d000, 0xf0008000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in // MSR, MRS, hints, barriers, UDF.W
		switch {
		case x&0xffe0f000 == 0xf3e08000: // MRS
			i.Writes = rbit(reg(x, 8))
		case x&0xffe0f000 == 0xf3808000: // MSR: MSP, PSP and CONTROL (SPSEL) may change SP
			if s := x & 0xff; s == 8 || s == 9 || s == 20 {
				i.Writes = bitSP
			}
		}
		return in, true
	}},
	// A5.3.1 data processing (modified immediate).
	{0xfa008000, 0xf0000000, OpOther, 0, dpModImm},
	// A5.3.3 data processing (plain binary immediate).
	{0xfa008000, 0xf2000000, OpOther, 0, dpPlainImm},
	// ARMv8.1-M CLRM: clears the listed registers (bit 15 is APSR, not PC).
	{0xffff2000, 0xe89f0000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in
		i.Writes = uint16(x) &^ bitPC
		return in, true
	}},
	// A5.3.5 load/store multiple.
	{0xfe400000, 0xe8000000, OpOther, 0, ldstMultiple},
	// A5.3.6 load/store dual or exclusive, table branch.
	{0xfe400000, 0xe8400000, OpOther, 0, ldstDual},
	// A5.3.11 data processing (shifted register).
	{0xfe000000, 0xea000000, OpOther, 0, dpShiftedReg},
	// A5.3.7-A5.3.10 load/store single data item.
	{0xfe000000, 0xf8000000, OpOther, 0, ldstSingle},
	// A5.3.12 data processing (register): Rd is bits [11:8].
	{0xff000000, 0xfa000000, OpOther, 0, writesField(8)},
	// A5.3.16 multiply, multiply accumulate, absolute difference.
	{0xff800000, 0xfb000000, OpOther, 0, writesField(8)},
	// A5.3.17 long multiply, long multiply accumulate, divide.
	{0xff800000, 0xfb800000, OpOther, 0, func(in Inst, x uint32) (Inst, bool) {
		i := &in
		if op1 := bits(x, 20, 3); op1 == 1 || op1 == 3 { // SDIV, UDIV
			i.Writes = rbit(reg(x, 8))
		} else {
			i.Writes = rbit(reg(x, 12)) | rbit(reg(x, 8))
		}
		return in, true
	}},
	// A5.3.18 coprocessor instructions, A6 FP extension register load/store.
	{0xec000000, 0xec000000, OpOther, 0, coproc},
	{0, 0, OpOther, 0, nil},
}

// branchOffset decodes the offset of BL, BLX (immediate) and B T4:
// SignExtend(S:I1:I2:imm10:imm11:'0') with I1 = NOT(J1 XOR S), I2 = NOT(J2 XOR
// S) (A7.7 BL). For BLX the low bit of imm11 (H) is zero.
func branchOffset(x uint32) int32 {
	s := bits(x, 26, 1)
	j1, j2 := bits(x, 13, 1), bits(x, 11, 1)
	i1, i2 := ^(j1^s)&1, ^(j2^s)&1
	off := s<<24 | i1<<23 | i2<<22 | bits(x, 16, 10)<<12 | bits(x, 0, 11)<<1
	return signExtend(off, 25)
}

func dpModImm(in Inst, x uint32) (Inst, bool) {
	i := &in
	op, s := bits(x, 21, 4), x&(1<<20) != 0
	rn, rd := reg(x, 16), reg(x, 8)
	imm := thumbExpandImm(imm12(x))
	setRd := func(o Op) {
		i.Op, i.Rd, i.Imm = o, rd, int32(imm)
		i.Flags |= FlagImm | FlagWide
		if s {
			i.Flags |= FlagS
		}
		i.Writes = rbit(rd)
	}
	switch op {
	case 0b0000, 0b0100, 0b1000, 0b1101: // AND/TST, EOR/TEQ, ADD/CMN, SUB/CMP
		if rd == pc && s {
			return in, true // compare: no register written
		}
		switch op {
		case 0b1000:
			setRd(OpADD) // A7.7 ADD (immediate) T3, ADD (SP plus immediate) T3
			i.Rn = rn
		case 0b1101:
			setRd(OpSUB) // A7.7 SUB (immediate) T3, SUB (SP minus immediate) T2
			i.Rn = rn
		default:
			i.Writes = rbit(rd)
		}
	case 0b0010: // ORR; Rn = PC: A7.7 MOV (immediate) T2
		if rn == pc {
			setRd(OpMOV)
		} else {
			i.Writes = rbit(rd)
		}
	case 0b0011: // ORN; Rn = PC: A7.7 MVN (immediate) T1
		if rn == pc {
			setRd(OpMVN)
			i.Imm = int32(imm)
		} else {
			i.Writes = rbit(rd)
		}
	case 0b0001, 0b1010, 0b1011, 0b1110: // BIC, ADC, SBC, RSB
		i.Writes = rbit(rd)
	}
	return in, true
}

func dpPlainImm(in Inst, x uint32) (Inst, bool) {
	i := &in
	rn, rd := reg(x, 16), reg(x, 8)
	imm := imm12(x)
	switch op := bits(x, 20, 5); op {
	case 0b00000, 0b01010: // ADDW, SUBW; Rn = PC: ADR T3 / T2
		i.Rd = rd
		i.Writes = rbit(rd)
		if rn == pc {
			i.Op, i.Imm = OpADR, int32(imm)
			if op == 0b01010 {
				i.Imm = -i.Imm
			}
			i.Target = align4(i) + uint32(i.Imm)
			return in, true
		}
		i.Op, i.Rn, i.Imm = OpADDW, rn, int32(imm)
		if op == 0b01010 {
			i.Op = OpSUBW
		}
		i.Flags |= FlagImm
	case 0b00100, 0b01100: // A7.7 MOV (immediate) T3 (MOVW), MOVT T1
		i.Op, i.Rd = OpMOVW, rd
		if op == 0b01100 {
			i.Op = OpMOVT
		}
		i.Imm = int32(bits(x, 16, 4)<<12 | imm)
		i.Flags |= FlagImm
		i.Writes = rbit(rd)
	case 0b10000, 0b10010, 0b10100, 0b10110, 0b11000, 0b11010, 0b11100: // SSAT, SBFX, BFI, USAT, UBFX
		i.Writes = rbit(rd)
	}
	return in, true
}

func ldstMultiple(in Inst, x uint32) (Inst, bool) {
	i := &in
	op, w, l, rn := bits(x, 23, 2), x&(1<<21) != 0, x&(1<<20) != 0, reg(x, 16)
	list := uint16(x)
	switch op {
	case 0b01: // A7.7 STM T2, LDM T2, POP T2
		i.Op = OpSTMIA
		if l {
			i.Op = OpLDMIA
			if rn == sp && w {
				i.Op = OpPOP
			}
		}
		i.Flags |= FlagWide
	case 0b10: // A7.7 STMDB T1, PUSH T2, LDMDB T1
		i.Op = OpSTMDB
		if l {
			i.Op = OpLDMDB
		} else if rn == sp && w {
			i.Op = OpPUSH
		}
	default: // SRS, RFE: not in ARMv7-M
		return in, true
	}
	i.Rn, i.RegList = rn, list
	if w {
		i.Flags |= FlagWriteback
		i.Writes = rbit(rn)
	}
	if l {
		i.Writes |= list
	}
	return in, true
}

func ldstDual(in Inst, x uint32) (Inst, bool) {
	i := &in
	p, u, w, l := x&(1<<24) != 0, x&(1<<23) != 0, x&(1<<21) != 0, x&(1<<20) != 0
	rn := reg(x, 16)
	h1 := x >> 16
	if !p && !w {
		switch {
		case h1&0xfff0 == 0xe8d0 && x&0xffe0 == 0xf000: // A7.7 TBB, TBH
			i.Op, i.Rn, i.Rm = OpTBB, rn, reg(x, 0)
			if x&0x10 != 0 {
				i.Op = OpTBH
			}
			i.Writes = bitPC
		case h1&0xfff0 == 0xe840: // STREX
			i.Writes = rbit(reg(x, 8))
		case h1&0xfff0 == 0xe850: // LDREX
			i.Writes = rbit(reg(x, 12))
		case h1&0xfff0 == 0xe8c0: // STREXB/H, ARMv8-M STL*, STLEX*: Rd is bits [3:0]
			switch bits(x, 4, 4) {
			case 0b0100, 0b0101, 0b0111, 0b1100, 0b1101, 0b1110, 0b1111:
				i.Writes = rbit(reg(x, 0))
			}
		case h1&0xfff0 == 0xe8d0: // LDREXB/H, ARMv8-M LDA*, LDAEX*
			switch bits(x, 4, 4) {
			case 0b0100, 0b0101, 0b1000, 0b1001, 0b1010, 0b1100, 0b1101, 0b1110:
				i.Writes = rbit(reg(x, 12))
			case 0b0111, 0b1111: // LDREXD, LDAEXD (not M-profile)
				i.Writes = rbit(reg(x, 12)) | rbit(reg(x, 8))
			}
		}
		return in, true
	}
	// A7.7 STRD (immediate), LDRD (immediate), LDRD (literal).
	i.Op = OpSTRD
	if l {
		i.Op = OpLDRD
	}
	i.Rd, i.Rt2, i.Rn = reg(x, 12), reg(x, 8), rn
	i.Imm = int32(bits(x, 0, 8) * 4)
	if !u {
		i.Imm = -i.Imm
	}
	switch {
	case p && w:
		i.Index = PreIndex
	case !p:
		i.Index = PostIndex
	}
	if rn == pc && l {
		i.Target = align4(i) + uint32(i.Imm)
	}
	if w {
		i.Flags |= FlagWriteback
		i.Writes = rbit(rn)
	}
	if l {
		i.Writes |= rbit(i.Rd) | rbit(i.Rt2)
	}
	return in, true
}

func dpShiftedReg(in Inst, x uint32) (Inst, bool) {
	i := &in
	op, s := bits(x, 21, 4), x&(1<<20) != 0
	rn, rd, rm := reg(x, 16), reg(x, 8), reg(x, 0)
	typ, imm5 := Shift(bits(x, 4, 2)), bits(x, 12, 3)<<2|bits(x, 6, 2)
	setShift := func() {
		i.Shift, i.ShiftN = typ, uint8(imm5)
		if (typ == LSR || typ == ASR) && imm5 == 0 {
			i.ShiftN = 32
		}
		if typ == ROR && imm5 == 0 {
			i.Shift = RRX
		}
	}
	set := func(o Op) {
		i.Op, i.Rd, i.Rm = o, rd, rm
		i.Flags |= FlagWide
		if s {
			i.Flags |= FlagS
		}
		setShift()
		i.Writes = rbit(rd)
	}
	switch op {
	case 0b0000, 0b0100, 0b1000, 0b1101: // AND/TST, EOR/TEQ, ADD/CMN, SUB/CMP
		if rd == pc && s {
			return in, true
		}
		switch op {
		case 0b1000: // A7.7 ADD (register) T3, ADD (SP plus register) T3
			set(OpADD)
			i.Rn = rn
		case 0b1101: // A7.7 SUB (register) T2, SUB (SP minus register) T1
			set(OpSUB)
			i.Rn = rn
		default:
			i.Writes = rbit(rd)
		}
	case 0b0010: // ORR; Rn = PC: MOV (register) T3, or LSL/LSR/ASR/ROR/RRX (immediate) T2 as MOV with a shifted Rm
		if rn == pc {
			set(OpMOV)
		} else {
			i.Writes = rbit(rd)
		}
	case 0b0011: // ORN; Rn = PC: A7.7 MVN (register) T2
		if rn == pc {
			set(OpMVN)
		} else {
			i.Writes = rbit(rd)
		}
	case 0b0001, 0b0110, 0b1010, 0b1011, 0b1110: // BIC, PKH, ADC, SBC, RSB
		i.Writes = rbit(rd)
	}
	return in, true
}

// ldstSingle decodes A5.3.7-A5.3.10: loads and stores of bytes, halfwords and
// words. Word LDR/STR with an immediate offset (and the PUSH T3 / POP T3
// special cases) get their own ops; the rest are OpOther.
func ldstSingle(in Inst, x uint32) (Inst, bool) {
	i := &in
	h1 := x >> 16
	l := h1&0x10 != 0
	size := bits(x, 21, 2)
	rn, rt := reg(x, 16), reg(x, 12)
	if h1&0x0100 != 0 && !l { // stores have bit 24 clear
		return in, true
	}
	if size == 3 {
		return in, true // UNDEFINED
	}
	imm8 := int32(bits(x, 0, 8))
	// Writes of the non-word forms and the register-offset forms.
	other := func() {
		if l && (rt != pc || size == 2) { // Rt = PC of LDRB/LDRH/LDRSB/LDRSH: PLD, PLI
			i.Writes = rbit(rt)
		}
		if rn != pc && h1&0x80 == 0 && x&0x800 != 0 && (x&0x100 != 0 || x&0x400 == 0) {
			i.Writes |= rbit(rn) // T4 with writeback (W = 1 or post-indexed)
		}
	}
	if size != 2 || h1&0x0100 != 0 {
		other()
		return in, true
	}
	i.Rd, i.Rn = rt, rn
	i.Flags |= FlagWide
	i.Op = OpSTR
	if l {
		i.Op = OpLDR
	}
	switch {
	case rn == pc && l: // A7.7 LDR (literal) T2
		i.Op, i.Imm = OpLDRLit, int32(bits(x, 0, 12))
		if h1&0x80 == 0 {
			i.Imm = -i.Imm
		}
		i.Target = align4(i) + uint32(i.Imm)
	case rn == pc:
		i.Op, i.Rd, i.Rn = OpOther, NoReg, NoReg
		return in, true // STR with Rn = PC: UNDEFINED
	case h1&0x80 != 0: // T3: imm12, offset
		i.Imm = int32(bits(x, 0, 12))
	case x&0x800 != 0: // T4: 1PUW imm8
		p, u, w := x&0x400 != 0, x&0x200 != 0, x&0x100 != 0
		switch {
		case p && u && !w: // LDRT, STRT
			i.Op, i.Rd, i.Rn = OpOther, NoReg, NoReg
			other()
			return in, true
		case !p && !w:
			i.Op, i.Rd, i.Rn = OpOther, NoReg, NoReg
			return in, true // UNDEFINED
		}
		i.Imm = imm8
		if !u {
			i.Imm = -imm8
		}
		switch {
		case p && w:
			i.Index = PreIndex
		case !p:
			i.Index = PostIndex
		}
		if rn == sp && rt != sp && i.Imm == -4 && i.Index == PreIndex && !l {
			i.Op, i.RegList = OpPUSH, uint16(rbit(rt)) // A7.7 PUSH T3
		}
		if rn == sp && rt != sp && i.Imm == 4 && i.Index == PostIndex && l {
			i.Op, i.RegList = OpPOP, uint16(rbit(rt)) // A7.7 POP T3
		}
	case bits(x, 6, 6) == 0: // register offset
		i.Op, i.Rd, i.Rn = OpOther, NoReg, NoReg
		other()
		return in, true
	default:
		i.Op, i.Rd, i.Rn = OpOther, NoReg, NoReg
		return in, true // UNDEFINED
	}
	if l {
		i.Writes = rbit(rt)
	}
	if i.Index != Offset {
		i.Flags |= FlagWriteback
		i.Writes |= rbit(rn)
	}
	return in, true
}

// coproc decodes A5.3.18: the FP extension register loads and stores of
// chapter A6 (VPUSH, VPOP, VLDM, VSTM) get ops; the rest are OpOther with the core
// registers they write.
func coproc(in Inst, x uint32) (Inst, bool) {
	i := &in
	h1 := x >> 16
	rn, rt := reg(x, 16), reg(x, 12)
	switch {
	case h1&0xefe0 == 0xec40: // MCRR, MRRC, VMOV (two core registers)
		if h1&0x10 != 0 {
			i.Writes = rbit(rt) | rbit(reg(x, 16))
		}
		return in, true
	case h1&0xefe0 == 0xec00: // UNDEFINED
		return in, true
	case h1&0xef00 == 0xef00: // Advanced SIMD / MVE data processing: no core register (not in ARMv7-M)
		return in, true
	case h1&0xef00 == 0xee00: // CDP, MCR, MRC, VFP data processing, VMOV, VMRS
		if x&0x10 != 0 && h1&0x10 != 0 && rt != pc {
			i.Writes = rbit(rt) // MRC, VMOV core <- S, VMRS (Rt = 15 is APSR_nzcv)
		}
		return in, true
	}
	if h1&0xffe0 == 0xec20 && x&0xffff == 0x0a00 {
		// VLSTM, VLLDM (ARMv8-M ARM C2.4.277-278, Security Extension):
		// the lazy FP state save and restore at [Rn]; Rn is not written
		// (what looks like the W bit is part of the opcode).
		return in, true
	}
	// LDC, STC, VLDM, VSTM, VLDR, VSTR (h1 = 111x 110P UDWL Rn).
	fp := h1&0xf000 == 0xe000 && bits(x, 9, 3) == 0b101 // coprocessor 10 or 11
	p, u, w, l := h1&0x100 != 0, h1&0x80 != 0, h1&0x20 != 0, h1&0x10 != 0
	if w { // with Rn = PC this is UNPREDICTABLE: reported as a write of PC
		i.Writes = rbit(rn)
	}
	if !fp || (p && !w) || p == u {
		return in, true // LDC/STC, VLDR/VSTR, or an UNDEFINED combination
	}
	imm8 := bits(x, 0, 8)
	d := bits(x, 22, 1)
	vd := bits(x, 12, 4)
	if x&0x100 != 0 { // double precision
		if imm8&1 != 0 {
			return in, true // FLDMX/FSTMX
		}
		i.VDouble, i.VFirst, i.VCount = true, uint8(d<<4|vd), uint8(imm8/2)
		if imm8 == 0 || imm8 > 32 || uint32(i.VFirst)+imm8/2 > 32 {
			return in, true // UNPREDICTABLE register list
		}
	} else {
		i.VFirst, i.VCount = uint8(vd<<1|d), uint8(imm8)
		if imm8 == 0 || uint32(i.VFirst)+imm8 > 32 {
			return in, true // UNPREDICTABLE register list
		}
	}
	i.Rn = rn
	if w {
		i.Flags |= FlagWriteback
	}
	switch {
	case !p && l: // increment after
		i.Op = OpVLDMIA
		if rn == sp && w {
			i.Op = OpVPOP
		}
	case !p:
		i.Op = OpVSTMIA
	case l: // decrement before
		i.Op = OpVLDMDB
	default:
		i.Op = OpVSTMDB
		if rn == sp {
			i.Op = OpVPUSH
		}
	}
	return in, true
}
