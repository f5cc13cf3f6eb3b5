package dwarfexpr

import "testing"

// A DWARF 4 unit's .debug_loc list (clang -gdwarf-4): Reset_Handler's dst
// is r2+4 at 0x6a..0x6e, unknown at 0x6e..0x72, r2+4 again at 0x72..0x74.
func TestDWARF4LocList(t *testing.T) {
	p := openProgram(t, "../testdata/clang-inline-O2-dwarf4.elf")
	for _, tc := range []struct {
		pc   uint32
		want string
	}{{0x6c, "0x68"}, {0x70, ""}, {0x72, "0x68"}} {
		f := &Frame{PC: tc.pc, Reg: func(n int) (uint32, bool) {
			if n == 2 {
				return 100, true
			}
			return 0, false
		}}
		var dst *Var
		for _, s := range p.FrameVars(f, true) {
			for i := range s.Locals {
				if s.Locals[i].Name == "dst" {
					dst = &s.Locals[i]
				}
			}
		}
		switch {
		case dst == nil:
			t.Errorf("pc 0x%x: no local dst", tc.pc)
		case tc.want == "" && !dst.OptimizedOut:
			t.Errorf("pc 0x%x: dst = %+v, want optimized out", tc.pc, *dst)
		case tc.want != "" && dst.Value != tc.want:
			t.Errorf("pc 0x%x: dst = %+v, want %s", tc.pc, *dst, tc.want)
		}
	}
}
