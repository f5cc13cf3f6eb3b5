package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// The arguments a caller passed, proven from its code: the BL before a
// return address calls the reporting function, and on every path to that
// BL the last write of r0-r3 is a constant (MOVS/MOV/MOVW[+MOVT] #imm, LDR
// from a literal pool, ADR). Every path: the code from the last branch
// target (a branch, a CBZ/CBNZ, a call's return) up to the BL is straight
// line, found by decoding the caller's whole function linearly with its
// literal pools skipped ($d mapping symbols); a function with a jump table
// (TBB/TBH, ADD PC, LDR PC from a table) or without mapping symbols proves
// nothing. What a constant register held is then what the callee was told,
// whatever the callee did with it afterwards.

// maxProofFunc bounds the caller's code decoded for a proof.
const maxProofFunc = 64 << 10

// callSiteValue is one proven argument register.
type callSiteValue struct {
	v  uint32
	at uint32 // the instruction that set it
}

// callSiteArgs proves what r0-r3 held at the call at ret-4 (a BL to
// callee). The map holds only proven registers.
func callSiteArgs(elf *elfsym.File, mem unwinders.Memory, ret, callee uint32) (map[int]callSiteValue, error) {
	if elf == nil || mem == nil || ret < 4 {
		return nil, fmt.Errorf("no code")
	}
	bl := ret - 4
	fn, ok := elf.FuncAt(bl)
	if !ok || fn.End <= fn.Start || fn.End-fn.Start > maxProofFunc || !fn.Thumb {
		return nil, fmt.Errorf("the caller's function has no size")
	}
	var insts []thumb.Inst
	targets := map[uint32]bool{}
	for pc := fn.Start; pc < fn.End; {
		switch elf.Mapping(pc) {
		case elfsym.MapData:
			pc += 2 // a literal pool: skip to the next code
			continue
		case elfsym.MapThumb:
		default:
			return nil, fmt.Errorf("no mapping symbols at 0x%08x: code and literal pools cannot be told apart", pc)
		}
		d := thumb.NewDecoder(mem, pc, fn.End)
		var in thumb.Inst
		for d.Next(&in) == nil {
			if elf.Mapping(in.Addr) != elfsym.MapThumb {
				break
			}
			switch {
			case in.Op == thumb.OpTBB || in.Op == thumb.OpTBH:
				return nil, fmt.Errorf("a jump table at 0x%08x", in.Addr)
			case in.Op == thumb.OpB || in.Op == thumb.OpCBZ || in.Op == thumb.OpCBNZ:
				targets[in.Target] = true
			case in.IsCall():
				targets[in.Addr+uint32(in.Len)] = true
			case in.WritesPC() && !isReturn(&in):
				return nil, fmt.Errorf("a computed branch at 0x%08x", in.Addr)
			}
			insts = append(insts, in)
		}
		if len(insts) == 0 || insts[len(insts)-1].Addr+uint32(insts[len(insts)-1].Len) <= pc {
			return nil, fmt.Errorf("undecodable code at 0x%08x", pc)
		}
		pc = insts[len(insts)-1].Addr + uint32(insts[len(insts)-1].Len)
	}
	at := -1
	for i := range insts {
		if insts[i].Addr == bl {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("no instruction at 0x%08x", bl)
	}
	call := &insts[at]
	if call.Op != thumb.OpBL || call.Flags&thumb.FlagInIT != 0 || call.Target&^1 != callee&^1 {
		return nil, fmt.Errorf("the instruction at 0x%08x is not a BL to 0x%08x", bl, callee)
	}
	out := map[int]callSiteValue{}
	done := uint16(0)        // registers whose last write was seen
	high := map[int]uint32{} // MOVT seen, its MOVW not yet
	for i := at - 1; i >= 0 && at-i <= 64 && done != 0xf; i-- {
		in := &insts[i]
		if in.Addr+uint32(in.Len) != insts[i+1].Addr || in.Op == thumb.OpIT || in.Flags&thumb.FlagInIT != 0 || in.WritesPC() {
			break
		}
		for r := 0; r < 4; r++ {
			if in.Writes&(1<<r) == 0 || done&(1<<r) != 0 {
				continue
			}
			h, hasHigh := high[r]
			if in.Op == thumb.OpMOVT && int(in.Rd) == r && !hasHigh {
				high[r] = uint32(in.Imm) & 0xffff
				continue
			}
			done |= 1 << r
			var v uint32
			ok := true
			switch {
			case in.Op == thumb.OpMOVW && int(in.Rd) == r:
				v = uint32(in.Imm) & 0xffff
			case hasHigh:
				ok = false // a MOVT whose low half is not a MOVW
			case in.Op == thumb.OpMOV && in.Flags&thumb.FlagImm != 0 && int(in.Rd) == r:
				v = uint32(in.Imm)
			case in.Op == thumb.OpADR && int(in.Rd) == r:
				v = in.Target
			case in.Op == thumb.OpLDRLit && int(in.Rd) == r && in.Writes == 1<<r:
				w, err := unwinders.ReadU32(mem, in.Target)
				if err != nil {
					ok = false
				}
				v = w
			default:
				ok = false
			}
			if ok {
				if hasHigh {
					v |= h << 16
				}
				out[r] = callSiteValue{v: v, at: in.Addr}
			}
		}
		if targets[in.Addr] {
			break // control may arrive here from elsewhere
		}
	}
	return out, nil
}

// isReturn: an instruction that leaves the function (its only PC write
// goes back to a caller), not a branch inside it.
func isReturn(in *thumb.Inst) bool {
	switch in.Op {
	case thumb.OpBX:
		return true // BX LR, or a tail call through a register
	case thumb.OpPOP:
		return true
	case thumb.OpMOV:
		return in.Flags&thumb.FlagImm == 0 && in.Rm == unwinders.LR
	case thumb.OpLDR:
		return in.Rn == unwinders.SP && in.Index == thumb.PostIndex
	}
	return false
}
