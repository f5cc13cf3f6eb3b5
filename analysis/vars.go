package analysis

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/elfsym/dwarfexpr"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
)

// vframes builds the dwarfexpr view of the walk's frames: registers each
// frame really has, its CFA (the caller's SP) and its caller for entry
// values. Frames that are not functions (exception, gap) or only a hint
// (low confidence past frame 0) get nil.
func vframes(elf *elfsym.File, t *unwinders.Target, frames []unwinders.Frame) []*dwarfexpr.Frame {
	out := make([]*dwarfexpr.Frame, len(frames))
	var read func(uint32, []byte) error
	if t != nil && t.Mem != nil {
		read = t.Mem.Read
	}
	guessed := false
	// Callee-saved registers an inner frame's function wrote without
	// saving them (vars_clobber.go): unknown in every frame outwards until
	// a function that saved them is passed.
	var clobber uint16
	for i := range frames {
		f := &frames[i]
		inherited := clobber
		if f.Kind == unwinders.KindNormal && t != nil {
			if s, w, ok := calleeClobber(elf.ImageAt(f.LookupPC()), t.Mem, f.LookupPC(), f.PC); ok {
				clobber = clobber&^s | w
			}
		}
		// A caller found by a fallback because the memory its unwind
		// needed was not captured (a partial dump) has guessed registers,
		// and so has every frame past it: no value is read with them.
		guessed = guessed || strings.Contains(f.Note, " not captured: ")
		if f.Kind != unwinders.KindNormal || (i > 0 && f.Confidence < unwinders.ConfidenceMedium) || guessed {
			continue
		}
		afterExc := i > 0 && frames[i-1].Kind == unwinders.KindException
		regs := f.Regs
		if i > 0 && !afterExc {
			// A caller's caller-saved registers are never known.
			regs.ForgetCallerSaved()
		}
		for r := unwinders.Reg(4); r <= 11; r++ {
			if inherited&(1<<r) != 0 {
				regs.Forget(r)
			}
		}
		sp := f.SP
		// Looked up at PC-1 for a return address, as GDB does: compilers
		// end a location list entry of a register the call clobbers at the
		// return address minus one.
		pc := f.PC
		if (f.ReturnAddress || f.AfterSVC) && pc > 0 {
			pc--
		}
		vf := &dwarfexpr.Frame{PC: pc, Read: read}
		vf.Reg = func(n int) (uint32, bool) {
			switch {
			case n == 13:
				return sp, true
			case n < 16:
				return regs.Get(unwinders.Reg(n))
			case n >= 64 && n < 96:
				return regs.Get(unwinders.S(n - 64))
			}
			return 0, false
		}
		if i+1 < len(frames) && frames[i+1].Kind == unwinders.KindNormal && frames[i+1].Confidence == unwinders.ConfidenceHigh {
			// (A guessed caller's SP, from a stack scan past memory the
			// dump lacks, is no CFA: values at it would be invented.)
			cfa := frames[i+1].SP
			vf.CFA = func() (uint32, bool) { return cfa, true }
		} else if cfa, ok := cfaByCFI(elf.ImageAt(pc), t, pc, sp, &regs); ok {
			// No caller frame (the outermost one, or one an exception
			// interrupted) or only a guessed one: the CFA from the
			// frame's own CFI row.
			vf.CFA = func() (uint32, bool) { return cfa, true }
		}
		out[i] = vf
	}
	for i := range out {
		if out[i] == nil || i+1 >= len(out) || out[i+1] == nil {
			continue
		}
		if c := &frames[i+1]; c.ReturnAddress && !c.AfterSVC {
			out[i+1].ReturnPC = c.PC
			out[i].Caller = out[i+1]
		}
	}
	return out
}

func varsJSON(vs []dwarfexpr.Var, demangle func(string) string) []report.VarJSON {
	if len(vs) == 0 {
		return nil
	}
	out := make([]report.VarJSON, 0, len(vs))
	for _, v := range vs {
		j := report.VarJSON{Name: v.Name, Type: v.Type, Value: v.Value, Entry: v.Entry, OptimizedOut: v.OptimizedOut, Raw: v.Raw}
		if v.Value == "" && !v.OptimizedOut {
			j.Note = v.Err
			if strings.Contains(v.Err, "unmapped") || strings.Contains(v.Err, "not mapped") {
				j.Note = "memory not captured: " + v.Err
			}
		}
		out = append(out, j)
	}
	return out
}

// attachVars fills frames[].args (and locals when asked) of js, the
// symbolized form of the walk's frames.
//
// Undecodable debugging information never stops the report: a failure in
// the decoder drops the arguments of the frames not done yet, with a
// warning.
func attachVars(elf *elfsym.File, t *unwinders.Target, frames []unwinders.Frame, js []report.FrameJSON, locals bool) (warning string) {
	if elf == nil {
		return ""
	}
	defer func() {
		if e := recover(); e != nil {
			warning = fmt.Sprintf("%s: the DWARF variables could not be decoded (%v): arguments and locals may be missing", elf.Name(), e)
		}
	}()
	if elf.Images() == nil && elf.Vars() == nil {
		return ""
	}
	vfs := vframes(elf, t, frames)
	for j := 0; j < len(js); {
		k := j
		for k < len(js) && js[k].Phys == js[j].Phys {
			k++
		}
		p := js[j].Phys
		// The variables of the image that holds the frame's code.
		var prog *dwarfexpr.Program
		if p < len(frames) {
			prog = elf.ImageAt(frames[p].LookupPC()).Vars()
		}
		if p < len(vfs) && vfs[p] != nil && js[j].Function != "" && prog != nil {
			scopes := prog.FrameVars(vfs[p], locals)
			// Align from the outermost level (the physical function).
			for a, b := k-1, len(scopes)-1; a >= j && b >= 0; a, b = a-1, b-1 {
				if scopes[b].Function != "" && !sameName(scopes[b].Function, js[a].Function) {
					break
				}
				js[a].Args = varsJSON(scopes[b].Args, nil)
				if locals {
					js[a].Locals = varsJSON(scopes[b].Locals, nil)
				}
			}
		}
		j = k
	}
	return ""
}

func sameName(dw, shown string) bool {
	return dw == shown || strings.HasPrefix(shown, dw+"(") || strings.HasSuffix(shown, "::"+dw) || strings.Contains(shown, "::"+dw+"(")
}

// cfaByCFI computes the CFA of a frame at pc from its CFI row, when the
// register the row bases it on is known.
func cfaByCFI(elf *elfsym.File, t *unwinders.Target, pc, sp uint32, regs *unwinders.Registers) (uint32, bool) {
	if elf == nil || t == nil || t.Prog == nil {
		return 0, false
	}
	tab, _ := elf.Memo("analysis.vars.cfi", func() any {
		tab, err := cfi.Load(t.Prog)
		if err != nil {
			return (*cfi.Table)(nil)
		}
		return tab
	}).(*cfi.Table)
	if tab == nil {
		return 0, false
	}
	fde, ok := tab.Lookup(pc)
	if !ok {
		return 0, false
	}
	row, err := fde.RowAt(uint64(pc))
	if err != nil || row.CFA.IsExpression() || row.CFA.Reg > 15 {
		return 0, false
	}
	var base uint32
	if row.CFA.Reg == 13 {
		base = sp
	} else if base, ok = regs.Get(unwinders.Reg(row.CFA.Reg)); !ok {
		return 0, false
	}
	return uint32(int64(base) + row.CFA.Offset), true
}
