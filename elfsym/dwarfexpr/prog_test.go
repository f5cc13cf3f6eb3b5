package dwarfexpr

import (
	"debug/elf"
	"testing"
)

// openProgram builds a Program from an ELF with debug/elf (this package
// cannot import elfsym, which imports it).
func openProgram(t *testing.T, path string) *Program {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	p := &Program{D: d}
	sec := func(name string) []byte {
		s := f.Section(name)
		if s == nil {
			return nil
		}
		b, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p.Loc, p.Loclists, p.AddrSec, p.Info = sec(".debug_loc"), sec(".debug_loclists"), sec(".debug_addr"), sec(".debug_info")
	return p
}
