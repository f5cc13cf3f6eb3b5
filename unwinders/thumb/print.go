package thumb

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// objdump's register names (the "gcc" set of GNU objdump's ARM disassembler).
var regNames = [16]string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "sl", "fp", "ip", "sp", "lr", "pc"}

func rname(r unwinders.Reg) string {
	if r <= unwinders.PC {
		return regNames[r]
	}
	return "?"
}

// RegListString formats a core register list like objdump: "{r4, r5, lr}".
func RegListString(list uint16) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for r := 0; r < 16; r++ {
		if list&(1<<r) == 0 {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(regNames[r])
	}
	b.WriteByte('}')
	return b.String()
}

// VRegListString formats the VFP register range of i like objdump:
// "{d8-d15}", "{s16}".
func (i *Inst) VRegListString() string {
	p := "s"
	if i.VDouble {
		p = "d"
	}
	if i.VCount <= 1 {
		return fmt.Sprintf("{%s%d}", p, i.VFirst)
	}
	return fmt.Sprintf("{%s%d-%s%d}", p, i.VFirst, p, int(i.VFirst)+int(i.VCount)-1)
}

// mnemonic builds op + "s" + condition + width suffix, objdump's order.
func (i *Inst) mnemonic(base string) string {
	m := base
	if i.Flags&FlagNS != 0 {
		m += "ns"
	}
	if i.Flags&FlagS != 0 {
		m += "s"
	}
	if i.Op != OpIT && (i.Cond != AL || i.Flags&FlagInIT != 0) {
		m += i.Cond.String() // objdump prints "al" inside an IT AL block
	}
	switch {
	case i.Flags&FlagWide != 0:
		m += ".w"
	case i.Flags&FlagNarrow != 0:
		m += ".n"
	}
	return m
}

func imm(v int32) string { return fmt.Sprintf("#%d", v) }

func (i *Inst) shiftString() string {
	switch {
	case i.Shift == RRX:
		return ", rrx"
	case i.Shift == LSL && i.ShiftN == 0:
		return ""
	}
	return fmt.Sprintf(", %s #%d", i.Shift, i.ShiftN)
}

// memString formats the address operand of a load or store like objdump.
func (i *Inst) memString(zeroBare bool) string {
	rn := rname(i.Rn)
	switch i.Index {
	case PreIndex:
		return fmt.Sprintf("[%s, #%d]!", rn, i.Imm)
	case PostIndex:
		return fmt.Sprintf("[%s], #%d", rn, i.Imm)
	}
	if i.Imm == 0 && zeroBare {
		return "[" + rn + "]"
	}
	return fmt.Sprintf("[%s, #%d]", rn, i.Imm)
}

// String returns the instruction in the syntax of GNU objdump -d (binutils
// 2.40) without objdump's trailing "@" comments: mnemonic, a tab, operands.
// Branch targets and literal addresses are printed as bare hex like
// objdump's, without the symbol. OpOther prints as ".inst.n 0x...." or
// ".inst.w 0x........", which GNU as assembles back to the same bytes.
// Push and pop encodings print as objdump shows them: PUSH T2 as "stmdb
// sp!, {...}", POP T2 as "ldmia.w sp!, {...}", PUSH T3 as "str.w rN, [sp,
// #-4]!" and POP T3 as "ldr.w rN, [sp], #4".
func (i Inst) String() string {
	m, args := i.format()
	if args == "" {
		return m
	}
	return m + "\t" + args
}

func (i *Inst) format() (string, string) {
	wide := i.Len == 4
	switch i.Op {
	case OpB:
		return i.mnemonic("b"), fmt.Sprintf("%x", i.Target)
	case OpBL, OpBLXImm:
		return i.mnemonic(i.Op.String()), fmt.Sprintf("%x", i.Target)
	case OpBLXReg, OpBX:
		return i.mnemonic(i.Op.String()), rname(i.Rm)
	case OpCBZ, OpCBNZ:
		return i.Op.String(), fmt.Sprintf("%s, %x", rname(i.Rn), i.Target)
	case OpTBB:
		return i.mnemonic("tbb"), fmt.Sprintf("[%s, %s]", rname(i.Rn), rname(i.Rm))
	case OpTBH:
		return i.mnemonic("tbh"), fmt.Sprintf("[%s, %s, lsl #1]", rname(i.Rn), rname(i.Rm))
	case OpIT:
		m := "it"
		for _, c := range i.ITConds()[1:] {
			if c == i.Cond {
				m += "t"
			} else {
				m += "e"
			}
		}
		return m, i.Cond.String()
	case OpPUSH:
		switch {
		case !wide:
			return i.mnemonic("push"), RegListString(i.RegList)
		case i.Raw>>16 == 0xf84d:
			return i.mnemonic("str"), i.regFromList() + ", " + i.memString(false)
		}
		return i.mnemonic("stmdb"), "sp!, " + RegListString(i.RegList)
	case OpPOP:
		switch {
		case !wide:
			return i.mnemonic("pop"), RegListString(i.RegList)
		case i.Raw>>16 == 0xf85d:
			return i.mnemonic("ldr"), i.regFromList() + ", " + i.memString(false)
		}
		return i.mnemonic("ldmia"), "sp!, " + RegListString(i.RegList)
	case OpSTMIA, OpLDMIA, OpSTMDB, OpLDMDB:
		wb := ""
		if i.Flags&FlagWriteback != 0 {
			wb = "!"
		}
		return i.mnemonic(i.Op.String()), rname(i.Rn) + wb + ", " + RegListString(i.RegList)
	case OpSTR, OpLDR:
		return i.mnemonic(i.Op.String()), rname(i.Rd) + ", " + i.memString(wide)
	case OpLDRLit:
		if wide && i.Imm == 0 {
			return i.mnemonic("ldr"), rname(i.Rd) + ", [pc]"
		}
		return i.mnemonic("ldr"), fmt.Sprintf("%s, [pc, #%d]", rname(i.Rd), i.Imm)
	case OpSTRD, OpLDRD:
		return i.mnemonic(i.Op.String()), rname(i.Rd) + ", " + rname(i.Rt2) + ", " + i.memString(true)
	case OpVPUSH, OpVPOP:
		return i.mnemonic(i.Op.String()), i.VRegListString()
	case OpVSTMIA, OpVSTMDB, OpVLDMIA, OpVLDMDB:
		wb := ""
		if i.Flags&FlagWriteback != 0 {
			wb = "!"
		}
		return i.mnemonic(i.Op.String()), rname(i.Rn) + wb + ", " + i.VRegListString()
	case OpADD, OpSUB:
		return i.formatAddSub()
	case OpADDW, OpSUBW:
		return i.mnemonic(i.Op.String()), fmt.Sprintf("%s, %s, #%d", rname(i.Rd), rname(i.Rn), i.Imm)
	case OpADR:
		switch {
		case !wide:
			return i.mnemonic("add"), fmt.Sprintf("%s, pc, #%d", rname(i.Rd), i.Imm)
		case i.Imm < 0:
			return i.mnemonic("subw"), fmt.Sprintf("%s, pc, #%d", rname(i.Rd), -i.Imm)
		}
		return i.mnemonic("addw"), fmt.Sprintf("%s, pc, #%d", rname(i.Rd), i.Imm)
	case OpMOV, OpMVN:
		if i.Raw == 0x46c0 && i.Len == 2 { // MOV r8, r8: the pre-UAL Thumb NOP
			return i.mnemonic("nop"), ""
		}
		if i.Flags&FlagImm != 0 {
			return i.mnemonic(i.Op.String()), fmt.Sprintf("%s, #%d", rname(i.Rd), uint32(i.Imm))
		}
		return i.mnemonic(i.Op.String()), rname(i.Rd) + ", " + rname(i.Rm) + i.shiftString()
	case OpMOVW, OpMOVT:
		return i.mnemonic(i.Op.String()), fmt.Sprintf("%s, #%d", rname(i.Rd), i.Imm)
	}
	if wide {
		return ".inst.w", fmt.Sprintf("0x%08x", i.Raw)
	}
	return ".inst.n", fmt.Sprintf("0x%04x", i.Raw)
}

// regFromList returns the single register of a PUSH/POP T3 list.
func (i *Inst) regFromList() string {
	for r := 0; r < 16; r++ {
		if i.RegList == 1<<r {
			return regNames[r]
		}
	}
	return "?"
}

func (i *Inst) formatAddSub() (string, string) {
	m := i.mnemonic(i.Op.String())
	rd, rn := rname(i.Rd), rname(i.Rn)
	if i.Len == 2 {
		switch h := i.Raw; {
		case h&0xff00 == 0xb000: // ADD/SUB SP, SP, #imm7
			return m, "sp, " + imm(i.Imm)
		case h&0xf000 == 0x3000: // ADDS/SUBS Rdn, #imm8
			return m, rd + ", " + imm(i.Imm)
		case h&0xff00 == 0x4400: // ADD Rdn, Rm
			return m, rd + ", " + rname(i.Rm)
		}
	}
	if i.Flags&FlagImm != 0 {
		return m, fmt.Sprintf("%s, %s, #%d", rd, rn, uint32(i.Imm))
	}
	return m, rd + ", " + rn + ", " + rname(i.Rm) + i.shiftString()
}
