package analysis

import (
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// A callee-saved register (r4-r11) that a frame's function wrote before
// saving it, or without saving it at all, does not hold its caller's
// value: the AAPCS promise is kept only by functions that return, and
// compilers drop it for noreturn ones. newlib's __assert_func (gcc, -O2)
// moves its arguments into r4 and r5 before its PUSH {lr}: a caller's
// argument living in r4 or r5 then reads as the assertion's line or
// function name. GDB's CFI default rule ("same value") prints those; the
// CFI cannot say otherwise, but the code can.
//
// calleeClobber decodes the code of the function holding lookup (a
// frame's LookupPC: a noreturn call's return address may be the next
// function's first byte) from its start up to pc (exclusive),
// linearly, with its literal pools skipped, and returns the r4-r11 it
// saves before writing them (PUSH, STMDB SP!, STR/STRD to SP) and those it writes while not
// yet saved. Linear order over-approximates the paths: a write on any
// path counts, which only ever makes a value unknown. ok is false when
// the code cannot be told from data (no mapping symbols) or decoded.
func calleeClobber(elf *elfsym.File, mem unwinders.Memory, lookup, pc uint32) (saved, written uint16, ok bool) {
	const calleeSaved = 0x0ff0 // r4-r11
	if elf == nil || mem == nil {
		return 0, 0, false
	}
	fn, found := elf.FuncAt(lookup)
	if !found || !fn.Thumb || pc <= fn.Start || pc-fn.Start > maxProofFunc {
		return 0, 0, false
	}
	for at := fn.Start; at < pc; {
		switch elf.Mapping(at) {
		case elfsym.MapData:
			at += 2
			continue
		case elfsym.MapThumb:
		default:
			return 0, 0, false
		}
		d := thumb.NewDecoder(mem, at, pc)
		var in thumb.Inst
		next := at
		for d.Next(&in) == nil && in.Addr < pc {
			if elf.Mapping(in.Addr) != elfsym.MapThumb {
				break
			}
			next = in.Addr + uint32(in.Len)
			switch {
			case in.Op == thumb.OpPUSH:
				saved |= in.RegList & calleeSaved &^ written
				continue
			case in.Op == thumb.OpSTMDB && in.Rn == unwinders.SP:
				saved |= in.RegList & calleeSaved &^ written
			case (in.Op == thumb.OpSTR || in.Op == thumb.OpSTRD) && in.Rn == unwinders.SP:
				if in.Rd != thumb.NoReg {
					saved |= (1 << in.Rd) & calleeSaved &^ written
				}
				if in.Op == thumb.OpSTRD && in.Rt2 != thumb.NoReg {
					saved |= (1 << in.Rt2) & calleeSaved &^ written
				}
			}
			written |= in.Writes & calleeSaved &^ saved
		}
		if next <= at {
			return 0, 0, false
		}
		at = next
	}
	return saved, written, true
}
