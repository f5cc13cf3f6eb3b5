package thumb

import "github.com/faultline-dev/faultline/unwinders"

// Op is the operation of a decoded instruction. Its String method returns
// the GNU objdump mnemonic without condition, flag-setting or width suffix
// ("push", "ldr", "blx").
type Op uint16

// The operations. Every Op but OpOther names an instruction whose operands
// Decode fills in; see each constant for the fields it uses.
const (
	// OpOther is any instruction outside the decoded subset, including
	// UNDEFINED encodings. Len, Raw, Addr and Writes are valid.
	OpOther Op = iota

	OpB      // B T1-T4 (A7.7 B): Target; Cond for T1 and T3
	OpBL     // BL T1 (A7.7 BL): Target, a Thumb address
	OpBLXImm // BLX (immediate) T2: Target = Align(PC,4)+imm, ARM state; not on M-profile cores
	OpBLXReg // BLX (register) T1 (A7.7 BLX (register)): Rm; with FlagNS, ARMv8-M BLXNS
	OpBX     // BX T1 (A7.7 BX): Rm; a branch (a return when Rm is LR), not a call; with FlagNS, ARMv8-M BXNS
	OpCBZ    // CBZ T1 (A7.7 CBNZ, CBZ): Rn, Target
	OpCBNZ   // CBNZ T1: Rn, Target
	OpTBB    // TBB T1 (A7.7 TBB, TBH): Rn, Rm
	OpTBH    // TBH T1: Rn, Rm (shifted left by 1)
	OpIT     // IT T1 (A7.7 IT): Cond = firstcond, ITMask = mask

	OpPUSH   // PUSH T1, T2 (= STMDB SP!), T3 (= STR Rt,[SP,#-4]!) (A7.7 PUSH): RegList
	OpPOP    // POP T1, T2 (= LDMIA SP!), T3 (= LDR Rt,[SP],#4) (A7.7 POP): RegList
	OpSTMIA  // STM T1, T2 (A7.7 STM): Rn, RegList, FlagWriteback
	OpSTMDB  // STMDB T1 (A7.7 STMDB): Rn, RegList, FlagWriteback (never SP with writeback: that is OpPUSH)
	OpLDMIA  // LDM T1, T2 (A7.7 LDM): Rn, RegList, FlagWriteback (never SP with writeback: that is OpPOP)
	OpLDMDB  // LDMDB T1 (A7.7 LDMDB): Rn, RegList, FlagWriteback
	OpSTR    // STR (immediate) T1-T4 (A7.7 STR (immediate)): Rd = Rt, Rn, Imm = signed offset, Index
	OpLDR    // LDR (immediate) T1-T4 (A7.7 LDR (immediate)): Rd = Rt, Rn, Imm, Index
	OpLDRLit // LDR (literal) T1, T2 (A7.7 LDR (literal)): Rd = Rt, Rn = PC, Imm = signed offset, Target = Align(PC,4)+Imm
	OpSTRD   // STRD (immediate) T1 (A7.7 STRD (immediate)): Rd = Rt, Rt2, Rn, Imm, Index
	OpLDRD   // LDRD (immediate) T1 (A7.7 LDRD (immediate)): Rd = Rt, Rt2, Rn, Imm, Index

	OpVPUSH  // VPUSH T1 (D regs), T2 (S regs) (A7.7 VPUSH): VFirst, VCount, VDouble
	OpVPOP   // VPOP T1, T2 (A7.7 VPOP): VFirst, VCount, VDouble
	OpVSTMIA // VSTM, increment after (A7.7 VSTM): Rn, VFirst, VCount, VDouble, FlagWriteback
	OpVSTMDB // VSTM, decrement before, writeback (A7.7 VSTM); never Rn = SP (that is OpVPUSH)
	OpVLDMIA // VLDM, increment after (A7.7 VLDM); never SP with writeback (that is OpVPOP)
	OpVLDMDB // VLDM, decrement before, writeback (A7.7 VLDM)

	OpADD  // ADD (immediate, register, SP plus immediate, SP plus register) all encodings: Rd, Rn, then Imm (FlagImm) or Rm, Shift, ShiftN
	OpSUB  // SUB (immediate, register, SP minus immediate, SP minus register) all encodings: as OpADD
	OpADDW // ADDW: ADD (immediate) T4 / ADD (SP plus immediate) T4, imm12: Rd, Rn, Imm
	OpSUBW // SUBW: SUB (immediate) T4 / SUB (SP minus immediate) T3, imm12: Rd, Rn, Imm
	OpADR  // ADR T1-T3 (A7.7 ADR): Rd, Imm = signed offset, Target = Align(PC,4)+Imm
	// OpMOV is MOV (immediate) T1, T2 and MOV (register) T1-T3 (A7.7 MOV):
	// Rd, then Imm (FlagImm) or Rm. The 32-bit register form also covers
	// LSL/LSR/ASR/ROR/RRX (immediate) T2, which share its encoding and which
	// objdump prints as "mov.w rd, rm, asr #n": Rm is then shifted by Shift
	// and ShiftN, so check ShiftN == 0 && Shift == LSL for a plain copy.
	OpMOV
	OpMOVW // MOV (immediate) T3, 16-bit immediate (A7.7 MOV (immediate)): Rd, Imm
	OpMOVT // MOVT T1 (A7.7 MOVT): Rd, Imm (the high halfword; the low one is kept)
	OpMVN  // MVN (immediate) T1, MVN (register) T1, T2 (A7.7 MVN): Rd, then Imm = the operand before inversion (FlagImm) or Rm

	numOps
)

var opNames = [numOps]string{
	OpOther: "other", OpB: "b", OpBL: "bl", OpBLXImm: "blx", OpBLXReg: "blx", OpBX: "bx",
	OpCBZ: "cbz", OpCBNZ: "cbnz", OpTBB: "tbb", OpTBH: "tbh", OpIT: "it",
	OpPUSH: "push", OpPOP: "pop", OpSTMIA: "stmia", OpSTMDB: "stmdb", OpLDMIA: "ldmia", OpLDMDB: "ldmdb",
	OpSTR: "str", OpLDR: "ldr", OpLDRLit: "ldr", OpSTRD: "strd", OpLDRD: "ldrd",
	OpVPUSH: "vpush", OpVPOP: "vpop", OpVSTMIA: "vstmia", OpVSTMDB: "vstmdb", OpVLDMIA: "vldmia", OpVLDMDB: "vldmdb",
	OpADD: "add", OpSUB: "sub", OpADDW: "addw", OpSUBW: "subw", OpADR: "adr",
	OpMOV: "mov", OpMOVW: "movw", OpMOVT: "movt", OpMVN: "mvn",
}

// String returns the objdump mnemonic of the operation.
func (op Op) String() string {
	if op < numOps {
		return opNames[op]
	}
	return "op?"
}

// Cond is an ARM condition code (ARMv7-M ARM A7.3, the condition code table).
type Cond uint8

// The condition codes, in encoding order. AL is "always": the condition of
// every unconditional instruction.
const (
	EQ Cond = iota
	NE
	CS
	CC
	MI
	PL
	VS
	VC
	HI
	LS
	GE
	LT
	GT
	LE
	AL
)

var condNames = [16]string{"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"}

// String returns the condition's lower-case suffix ("eq", "al").
func (c Cond) String() string { return condNames[c&15] }

// Invert returns the opposite condition (EQ <-> NE, ...). AL inverts to AL.
func (c Cond) Invert() Cond {
	if c >= AL {
		return c
	}
	return c ^ 1
}

// Shift is the shift applied to a register operand (ARMv7-M ARM A7.4, shifts applied to a register).
type Shift uint8

// The shift types. RRX is ROR with a zero amount in the encoding.
const (
	LSL Shift = iota
	LSR
	ASR
	ROR
	RRX
)

var shiftNames = [...]string{"lsl", "lsr", "asr", "ror", "rrx"}

// String returns the shift's lower-case name.
func (s Shift) String() string {
	if int(s) < len(shiftNames) {
		return shiftNames[s]
	}
	return "shift?"
}

// Index says how a load or store uses its offset (the P and W bits).
type Index uint8

// Addressing modes of the loads and stores (ARMv7-M ARM A7.7, LDR (immediate): the P, U and W bits).
const (
	Offset    Index = iota // [Rn, #imm]: Rn unchanged
	PreIndex               // [Rn, #imm]!: address Rn+imm, Rn updated to it
	PostIndex              // [Rn], #imm: address Rn, then Rn += imm
)

// Flags are boolean properties of a decoded instruction.
type Flags uint16

// The flags.
const (
	FlagS          Flags = 1 << iota // sets the condition flags (the S suffix)
	FlagImm                          // the second operand is Imm, not Rm
	FlagWriteback                    // the base register is updated: LDM/STM, PUSH/POP, VLDM/VSTM, pre- and post-indexed LDR/STR/LDRD/STRD
	FlagInIT                         // inside an IT block (set by ITState.Apply)
	FlagWide                         // objdump prints a ".w" suffix
	FlagNarrow                       // objdump prints a ".n" suffix
	FlagNS                           // BXNS, BLXNS: the ARMv8-M non-secure branch forms
	flagSOutsideIT                   // a 16-bit encoding that sets flags only outside an IT block
)

// Inst is one decoded instruction. Which fields are meaningful depends on Op;
// the documentation of each Op lists them. Unused register fields hold
// NoReg.
type Inst struct {
	Op   Op
	Len  int    // 2 or 4
	Raw  uint32 // h1<<16 | h2 for a 32-bit instruction, h1 for a 16-bit one
	Addr uint32 // the address it was decoded at
	// Cond is the condition: of B T1/T3, firstcond of IT, or the IT block's
	// condition after ITState.Apply. AL otherwise.
	Cond  Cond
	Flags Flags

	Rd, Rn, Rm unwinders.Reg // Rd holds Rt for loads and stores
	Rt2        unwinders.Reg // second transfer register of LDRD/STRD
	Shift      Shift         // shift applied to Rm
	ShiftN     uint8         // shift amount
	Index      Index         // addressing mode of LDR/STR/LDRD/STRD
	Imm        int32         // immediate: signed offset of a load/store or literal, constant of ADD/SUB/MOV/MOVW/MOVT/MVN
	Target     uint32        // branch or call target; literal or ADR address
	RegList    uint16        // core registers of PUSH/POP/LDM/STM: bit n = rn
	ITMask     uint8         // IT's 4-bit mask
	// VFP register range of VPUSH/VPOP/VLDM/VSTM: VCount registers from
	// VFirst, double-precision (D registers, 8 bytes each) if VDouble, else
	// single-precision (S registers, 4 bytes each).
	VFirst, VCount uint8
	VDouble        bool

	// Writes is the set of core registers the instruction writes (bit n =
	// rn), including the base register of a writeback and PC for every
	// branch and call; calls also write LR. It is derived from the encoding
	// for OpOther too. Conventions: MSR to MSP, PSP or CONTROL counts as
	// writing SP (it may change the active stack pointer); UNPREDICTABLE
	// encodings write what their fields name (LDC with Rn = PC and
	// writeback writes PC); generic coprocessor reads (MRC, MRRC) write their
	// Rt/Rt2 fields except Rt = 15 (APSR flags); memory hints (PLD, PLI, and
	// LDRH/LDRSH/LDRSB with Rt = PC) and UNDEFINED encodings write nothing.
	Writes uint16
}

// NoReg marks an unused register field of Inst.
const NoReg unwinders.Reg = 0xff

const (
	bitSP = 1 << 13
	bitLR = 1 << 14
	bitPC = 1 << 15
)

// WritesSP reports whether the instruction changes SP.
func (i *Inst) WritesSP() bool { return i.Writes&bitSP != 0 }

// WritesLR reports whether the instruction changes LR. Calls do.
func (i *Inst) WritesLR() bool { return i.Writes&bitLR != 0 }

// WritesPC reports whether the instruction may transfer control: every
// branch, call and return.
func (i *Inst) WritesPC() bool { return i.Writes&bitPC != 0 }

// IsCall reports whether the instruction is a call (BL, BLX imm, BLX Rm),
// conditional or not. BX is not a call.
func (i *Inst) IsCall() bool {
	return i.Op == OpBL || i.Op == OpBLXImm || i.Op == OpBLXReg
}

// IsBranch reports whether the instruction writes PC without being a call:
// B, CBZ/CBNZ, TBB/TBH, BX, returns and any other load or data-processing
// instruction whose destination is PC.
func (i *Inst) IsBranch() bool { return i.WritesPC() && !i.IsCall() }

// IsReturn reports whether the instruction is a function return of one of
// the shapes compilers emit: BX LR, MOV PC, LR, POP {..., PC} (any
// encoding, including LDMIA.W SP! and LDR PC,[SP],#4). It may be
// conditional: see IsConditional.
func (i *Inst) IsReturn() bool {
	switch i.Op {
	case OpBX:
		return i.Rm == unwinders.LR
	case OpMOV:
		return i.Rd == unwinders.PC && i.Flags&FlagImm == 0 && i.Rm == unwinders.LR && i.Shift == LSL && i.ShiftN == 0
	case OpPOP:
		return i.RegList&bitPC != 0
	}
	return false
}

// IsConditional reports whether the instruction executes only under a
// condition: B<c>, CBZ/CBNZ, or any instruction inside an IT block whose
// condition is not AL (after ITState.Apply).
func (i *Inst) IsConditional() bool {
	return i.Op == OpCBZ || i.Op == OpCBNZ || (i.Op != OpIT && i.Cond != AL)
}

// ITCount returns the number of instructions an IT instruction makes
// conditional (1 to 4), or 0 if i is not IT.
func (i *Inst) ITCount() int {
	if i.Op != OpIT {
		return 0
	}
	switch {
	case i.ITMask&1 != 0:
		return 4
	case i.ITMask&2 != 0:
		return 3
	case i.ITMask&4 != 0:
		return 2
	}
	return 1
}

// ITConds returns the conditions of the instructions of an IT block, in
// order (ARMv7-M ARM A7.7 IT: a mask bit equal to firstcond[0] is "then").
// It returns nil if i is not IT.
func (i *Inst) ITConds() []Cond {
	n := i.ITCount()
	if n == 0 {
		return nil
	}
	out := make([]Cond, n)
	out[0] = i.Cond
	for k := 1; k < n; k++ {
		bit := Cond(i.ITMask>>(4-k)) & 1
		out[k] = i.Cond&^1 | bit
	}
	return out
}

// SPDelta returns how the instruction changes SP when it executes: the
// signed number of bytes added to SP, and whether that is known from the
// instruction alone. Instructions that do not write SP return (0, true).
// SUB SP, SP, Rm and ADD SP, SP, Rm return (0, false): the caller knows the
// register operand (Rm) and may have tracked its value (MOVW/MOVT, LDR
// literal); MOV SP, Rm and other writes relative to another register also
// return false.
func (i *Inst) SPDelta() (int32, bool) {
	if !i.WritesSP() {
		return 0, true
	}
	switch i.Op {
	case OpPUSH, OpSTMDB:
		if i.Rn == unwinders.SP || i.Op == OpPUSH {
			return -4 * int32(popcount(i.RegList)), true
		}
	case OpPOP, OpLDMIA, OpSTMIA:
		if (i.Rn == unwinders.SP || i.Op == OpPOP) && i.RegList&bitSP == 0 {
			return 4 * int32(popcount(i.RegList)), true
		}
	case OpLDMDB:
		if i.Rn == unwinders.SP && i.RegList&bitSP == 0 {
			return -4 * int32(popcount(i.RegList)), true
		}
	case OpVPUSH:
		return -int32(i.vbytes()), true
	case OpVPOP:
		return int32(i.vbytes()), true
	case OpSTR, OpLDR, OpSTRD, OpLDRD:
		if i.Rn == unwinders.SP && i.Index != Offset && i.Rd != unwinders.SP {
			return i.Imm, true
		}
	case OpADD, OpSUB, OpADDW, OpSUBW:
		if i.Rd == unwinders.SP && i.Rn == unwinders.SP && i.Flags&FlagImm != 0 {
			if i.Op == OpSUB || i.Op == OpSUBW {
				return -i.Imm, true
			}
			return i.Imm, true
		}
	case OpVLDMIA, OpVSTMIA:
		if i.Rn == unwinders.SP {
			return int32(i.vbytes()), true
		}
	case OpVSTMDB, OpVLDMDB:
		if i.Rn == unwinders.SP {
			return -int32(i.vbytes()), true
		}
	}
	return 0, false
}

// vbytes is the size of a VFP register list in bytes.
func (i *Inst) vbytes() int {
	if i.VDouble {
		return 8 * int(i.VCount)
	}
	return 4 * int(i.VCount)
}

func popcount(x uint16) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
