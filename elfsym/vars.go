package elfsym

import (
	"github.com/faultline-dev/faultline/elfsym/dwarfexpr"
)

// Vars returns the file's DWARF variables program (arguments and locals
// of frames, see package dwarfexpr), built once; nil without DWARF.
func (f *File) Vars() *dwarfexpr.Program {
	p, _ := f.Memo("elfsym.vars", func() any {
		d := f.DWARF()
		if d == nil {
			return (*dwarfexpr.Program)(nil)
		}
		p := &dwarfexpr.Program{D: d}
		_, p.Loc, _ = f.Section(".debug_loc")
		_, p.Loclists, _ = f.Section(".debug_loclists")
		_, p.AddrSec, _ = f.Section(".debug_addr")
		_, p.Info, _ = f.Section(".debug_info")
		p.Symbol = func(addr uint32) (string, uint32, bool) {
			ref, ok := f.SymbolFor(addr)
			if !ok && addr&1 == 1 {
				ref, ok = f.SymbolFor(addr &^ 1)
			}
			if !ok || ref.Placement == InGap {
				return "", 0, false
			}
			off := addr - ref.Start
			if ref.Kind == SymFunc && addr&^1 == ref.Start {
				off = 0
			}
			return ref.Name, off, true
		}
		return p
	}).(*dwarfexpr.Program)
	return p
}
