package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// noteTailCalls says, on a caller frame whose call went to a function that
// tail-called the frame below it, which function that was: its frame is
// not on the stack (a tail call is a branch), so the walk shows the caller
// calling the callee directly. GDB reconstructs such a function as a frame
// of its own from DWARF call sites; faultline names it in a note and adds
// no frame, since no stack memory proves it (dwarfexpr.TailCallVia).
//
// Undecodable debugging information never stops the report: a failure in
// the decoder drops the notes not made yet, with a warning.
func noteTailCalls(elf *elfsym.File, frames []unwinders.Frame, js []report.FrameJSON) (warning string) {
	if elf == nil {
		return ""
	}
	defer func() {
		if e := recover(); e != nil {
			warning = fmt.Sprintf("%s: the DWARF call sites could not be decoded (%v): tail calls may go unnamed", elf.Name(), e)
		}
	}()
	for j := range js {
		p := js[j].Phys
		if j > 0 && js[j-1].Phys == p {
			continue // only the innermost entry of a physical frame made the call
		}
		if p == 0 || p >= len(frames) {
			continue
		}
		callee, caller := &frames[p-1], &frames[p]
		if callee.Kind != unwinders.KindNormal || caller.Kind != unwinders.KindNormal || !caller.ReturnAddress || caller.AfterSVC {
			continue
		}
		img := elf.ImageAt(caller.LookupPC())
		if img == nil || img != elf.ImageAt(callee.LookupPC()) {
			continue
		}
		prog := img.Vars()
		if prog == nil {
			continue
		}
		tc, ok := prog.TailCallVia(caller.LookupPC(), caller.PC, callee.LookupPC())
		if !ok {
			continue
		}
		js[j].Note = joinNote(js[j].Note, fmt.Sprintf("called %s (returning to %s), which tail-called %s by the branch before %s: %s has no frame on the stack (DWARF call sites; GDB shows it as a frame)",
			tc.Via, report.Hex(tc.CallPC), demangleText(elf, prog.FuncName(callee.LookupPC())), report.Hex(tc.TailRet), tc.Via))
	}
	return ""
}
