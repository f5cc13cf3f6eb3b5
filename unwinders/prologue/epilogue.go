package prologue

import (
	"fmt"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// maxEpilogue bounds the forward scan for a return sequence.
const maxEpilogue = 16

// epilogue looks for a return sequence starting at the interrupted PC of f
// and, if there is one, simulates it: the result is the state the return
// would leave. It returns (nil, nil) when the code at the PC is not such a
// sequence, so the forward scan runs instead.
//
// Allowed before the return: instructions that only increase SP (ADD SP,
// #imm; POP without PC; VPOP; LDR Rt,[SP],#imm; LDRD post-indexed; MOV SP,
// Rm and ADD/SUB SP, Rm, #imm when Rm's value is known and the new SP is not
// lower) and instructions that write nothing but r0-r3 and r12 and do not
// store. The return is POP {..., PC} in any encoding, BX LR, POP {Rn}; BX
// Rn, or a tail call (B to an address outside the function, BX Rm) after
// the sequence popped LR. An IT block anywhere in
// the sequence, or the PC inside one, means the sequence may not run: no
// result.
func epilogue(t *unwinders.Target, f *unwinders.Frame, fn unwinders.Function) (*Analysis, error) {
	if x, ok := f.Regs.Get(unwinders.XPSR); ok && itBits(x) != 0 {
		return nil, nil
	}
	if h, err := unwinders.ReadU16(t.Mem, f.PC-2); err == nil && f.PC >= fn.Start+2 && h&0xff00 == 0xbf00 && h&0xf != 0 {
		return nil, nil // the PC follows an IT instruction
	}
	regs := f.Regs
	sp := f.SP
	var saved []Saved
	var popped uint16 // core registers loaded from the stack by the sequence
	var wrote uint16  // core registers written (and not popped since)
	pc := f.PC
	pop := func(r unwinders.Reg, addr uint32) (uint32, error) {
		v, err := unwinders.ReadU32(t.Mem, addr)
		if err != nil {
			return 0, memError("a popped word", addr, err)
		}
		regs.Set(r, v)
		if r < 16 {
			popped |= 1 << r
			wrote &^= 1 << r
		}
		if _, ok := slotOf(r); ok && r != unwinders.LR {
			saved = append(saved, Saved{Reg: r, Addr: addr, Value: v})
		}
		return v, nil
	}
	done := func(ret uint32, slot uint32) *Analysis {
		a := &Analysis{
			Func: fn, Mode: ModeEpilogue, CFA: sp, Size: sp - f.SP, ReturnAddress: ret, ReturnSlot: slot,
			FrameReg: NoFrameReg, Straight: true, Insns: 0,
			Notes: []string{fmt.Sprintf("PC is in a return sequence ending at 0x%08x", pc)},
		}
		// Keep the last value popped for each register, in register order.
		seen := map[unwinders.Reg]bool{}
		for i := len(saved) - 1; i >= 0; i-- {
			if !seen[saved[i].Reg] {
				seen[saved[i].Reg] = true
				a.Saved = append(a.Saved, saved[i])
			}
		}
		for i, j := 0, len(a.Saved)-1; i < j; i, j = i+1, j-1 {
			a.Saved[i], a.Saved[j] = a.Saved[j], a.Saved[i]
		}
		sortSaved(a.Saved)
		for r := unwinders.R4; r <= unwinders.R11; r++ {
			if wrote&(1<<r) != 0 {
				a.Clobbered = append(a.Clobbered, r)
			}
		}
		return a
	}
	for n := 0; n < maxEpilogue; n++ {
		if fn.End > fn.Start && pc >= fn.End {
			return nil, nil
		}
		in, err := thumb.DecodeAt(t.Mem, pc)
		if err != nil {
			return nil, nil
		}
		if in.IsConditional() || in.Op == thumb.OpIT {
			return nil, nil
		}
		switch {
		case in.IsReturn() && in.Op == thumb.OpPOP:
			addr := sp
			var ret, slot uint32
			for r := 0; r < 16; r++ {
				if in.RegList&(1<<r) == 0 {
					continue
				}
				v, err := pop(unwinders.Reg(r), addr)
				if err != nil {
					return nil, err
				}
				if r == 15 {
					ret, slot = v, addr
				}
				addr += 4
			}
			if addr < sp {
				return nil, nil // wraps around the address space
			}
			sp = addr
			return done(ret, slot), nil
		case in.Op == thumb.OpBX && in.Flags&thumb.FlagNS == 0 && in.Rm < 16 && popped&(1<<in.Rm) != 0:
			// POP {r3}; BX r3: a return through a popped register.
			return done(regs.Value(in.Rm), 0), nil
		case in.IsReturn() && (in.Op == thumb.OpBX || in.Op == thumb.OpMOV),
			popped&bitLR != 0 && in.Op == thumb.OpBX && in.Flags&thumb.FlagNS == 0,
			popped&bitLR != 0 && in.Op == thumb.OpB && !(in.Target >= fn.Start && (fn.End <= fn.Start || in.Target < fn.End)):
			// A return through LR, or a tail call (B to another function,
			// BX Rm) after the sequence restored LR: the callee returns to
			// LR. Without that restore a branch out of the function may be
			// a jump to a split-off part (foo.cold) with the frame still
			// in place: the forward scan decides instead.
			lr, ok := regs.Get(unwinders.LR)
			if !ok {
				return nil, nil
			}
			return done(lr, 0), nil
		case in.WritesPC() || in.IsCall():
			return nil, nil
		case in.WritesSP():
			next, ok, err := epilogueSP(t, &in, sp, &regs, pop)
			if err != nil {
				return nil, err
			}
			if !ok || next < sp {
				return nil, nil
			}
			sp = next
		default:
			// Data processing into r0-r12 (the return value, or GCC -O0's
			// "adds r7, #8" before "mov sp, r7"): track the value where it
			// is a simple copy or addition, else forget it.
			if in.Writes&(bitSP|bitLR|bitPC) != 0 || in.Writes == 0 && in.Op != thumb.OpOther || isStore(&in) {
				return nil, nil
			}
			v, known := epilogueValue(&in, &regs)
			for r := 0; r < 16; r++ {
				if in.Writes&(1<<r) != 0 {
					regs.Forget(unwinders.Reg(r))
					wrote |= 1 << r
				}
			}
			if known {
				regs.Set(in.Rd, v)
			}
		}
		pc += uint32(in.Len)
	}
	return nil, nil
}

// epilogueSP applies an SP-increasing instruction of an epilogue. ok is
// false for anything else.
func epilogueSP(t *unwinders.Target, in *thumb.Inst, sp uint32, regs *unwinders.Registers, pop func(unwinders.Reg, uint32) (uint32, error)) (uint32, bool, error) {
	if in.Writes&^(bitSP|calleeSaved|callerSaved|bitLR) != 0 {
		return 0, false, nil
	}
	d, known := in.SPDelta()
	if known {
		if d < 0 {
			return 0, false, nil
		}
		switch in.Op {
		case thumb.OpPOP:
			addr := sp
			for r := 0; r < 16; r++ {
				if in.RegList&(1<<r) != 0 {
					if _, err := pop(unwinders.Reg(r), addr); err != nil {
						return 0, false, err
					}
					addr += 4
				}
			}
		case thumb.OpLDR, thumb.OpLDRD:
			if in.Index != thumb.PostIndex {
				return 0, false, nil
			}
			if _, err := pop(in.Rd, sp); err != nil {
				return 0, false, err
			}
			if in.Op == thumb.OpLDRD {
				if _, err := pop(in.Rt2, sp+4); err != nil {
					return 0, false, err
				}
			}
		case thumb.OpVPOP:
			addr := sp
			for k := 0; k < int(in.VCount); k++ {
				regsN := []int{int(in.VFirst) + k}
				if in.VDouble {
					regsN = []int{2 * (int(in.VFirst) + k), 2*(int(in.VFirst)+k) + 1}
				}
				for _, n := range regsN {
					if n < 32 {
						if _, err := pop(unwinders.S(n), addr); err != nil {
							return 0, false, err
						}
					}
					addr += 4
				}
			}
		case thumb.OpADD, thumb.OpADDW:
		default:
			return 0, false, nil
		}
		if sp+uint32(d) < sp {
			return 0, false, nil // wraps around the address space
		}
		return sp + uint32(d), true, nil
	}
	// SP from another register: MOV SP, Rm; ADD/SUB SP, Rn, #imm.
	imm := in.Flags&thumb.FlagImm != 0
	switch in.Op {
	case thumb.OpMOV:
		if !imm && in.Shift == thumb.LSL && in.ShiftN == 0 {
			if v, ok := regs.Get(in.Rm); ok && in.Rm != unwinders.SP {
				return v, true, nil
			}
		}
	case thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW:
		if imm && in.Rn != unwinders.SP {
			if v, ok := regs.Get(in.Rn); ok {
				if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
					return v - uint32(in.Imm), true, nil
				}
				return v + uint32(in.Imm), true, nil
			}
		}
	}
	return 0, false, nil
}

// isStore reports whether a decoded instruction stores to memory.
func isStore(in *thumb.Inst) bool {
	switch in.Op {
	case thumb.OpSTR, thumb.OpSTRD, thumb.OpSTMIA, thumb.OpSTMDB, thumb.OpPUSH, thumb.OpVPUSH, thumb.OpVSTMIA, thumb.OpVSTMDB:
		return true
	}
	return false
}

// itBits returns the ITSTATE bits of an xPSR value (EPSR IT[7:2] in bits
// [15:10], IT[1:0] in bits [26:25]; ARMv7-M ARM B1.4.2).
func itBits(xpsr uint32) uint32 {
	return (xpsr>>10)&0x3f<<2 | (xpsr>>25)&3
}

func sortSaved(s []Saved) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Reg < s[j-1].Reg; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// epilogueValue computes the result of a register copy or an addition of
// an immediate whose operand is known.
func epilogueValue(in *thumb.Inst, regs *unwinders.Registers) (uint32, bool) {
	if in.Rd >= 13 || in.IsConditional() {
		return 0, false
	}
	imm := in.Flags&thumb.FlagImm != 0
	switch in.Op {
	case thumb.OpMOV, thumb.OpMOVW:
		if imm || in.Op == thumb.OpMOVW {
			return uint32(in.Imm), true
		}
		if in.Shift == thumb.LSL && in.ShiftN == 0 {
			return regs.Get(in.Rm)
		}
	case thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW:
		if !imm {
			return 0, false
		}
		v, ok := regs.Get(in.Rn)
		if !ok {
			return 0, false
		}
		if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
			return v - uint32(in.Imm), true
		}
		return v + uint32(in.Imm), true
	}
	return 0, false
}
