package cfi_test

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
)

// sectionProg is a Program made of one call frame section and one code
// range: what Load sees in an ELF whose CFI is hostile.
type sectionProg struct {
	name string
	data []byte
	code unwinders.Range
}

func (p *sectionProg) FuncAt(a uint32) (unwinders.Function, bool) {
	if p.code.Contains(a) {
		return unwinders.Function{Name: "f", Start: p.code.Lo, End: p.code.Hi}, true
	}
	return unwinders.Function{}, false
}
func (p *sectionProg) IsCode(a uint32) bool { return p.code.Contains(a) }
func (p *sectionProg) Section(name string) (uint32, []byte, bool) {
	if name == p.name {
		return 0, p.data, true
	}
	return 0, nil, false
}
func (p *sectionProg) Symbol(string) (uint32, bool) { return 0, false }

// FuzzStep loads a random .debug_frame or .eh_frame through Load (the
// path of a hostile ELF), then steps and walks from a PC inside one of its
// FDEs over random stack and code bytes: no panic, no hang, and a walk
// that ends with a stop reason within the frame limit. The corpus is
// seeded with fixtures/hostile/cfi and the call frame sections of the
// test ELFs.
func FuzzStep(f *testing.F) {
	stack := make([]byte, 64)
	for i := range stack {
		stack[i] = byte(i * 7)
	}
	hostile, _ := filepath.Glob("../../fixtures/hostile/cfi/*")
	if len(hostile) == 0 {
		f.Fatal("no hostile CFI in fixtures/hostile/cfi")
	}
	for _, p := range hostile {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, filepath.Ext(p) == ".eh_frame", stack, uint32(0), uint32(0))
	}
	elfs, _ := filepath.Glob("testdata/*.elf")
	for _, p := range elfs {
		ef, err := elf.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range []string{".debug_frame", ".eh_frame"} {
			if s := ef.Section(name); s != nil && s.Addr == 0 {
				if data, err := s.Data(); err == nil {
					f.Add(data, name == ".eh_frame", stack, uint32(3), uint32(8))
				}
			}
		}
		ef.Close()
	}
	f.Fuzz(func(t *testing.T, section []byte, eh bool, stack []byte, pick, sp uint32) {
		if len(stack) > 4096 {
			stack = stack[:4096]
		}
		name := ".debug_frame"
		if eh {
			name = ".eh_frame"
		}
		prog := &sectionProg{name: name, data: section, code: unwinders.Range{Lo: 0x100, Hi: 0x100 + uint32(len(stack))&^1}}
		tab, err := cfi.Load(prog)
		if err != nil || tab.Len() == 0 {
			return
		}
		// A PC inside one of the FDEs (addresses as the section says).
		var pcs []uint32
		for _, ix := range tab.Indexes() {
			for _, fde := range ix.FDEs() {
				if fde.End > fde.Start && fde.End <= 1<<32 {
					pcs = append(pcs, uint32(fde.Start+uint64(pick>>8)%(fde.End-fde.Start)))
				}
			}
		}
		if len(pcs) == 0 {
			return
		}
		pc := pcs[int(pick&0xff)%len(pcs)] &^ 1
		var im unwinders.Image
		_ = im.AddLayer(unwinders.Region{Name: "code", Addr: 0x100, Data: stack})
		_ = im.AddLayer(unwinders.Region{Name: "ram", Addr: 0x20000000, Data: stack})
		tg := &unwinders.Target{Mem: &im, Prog: prog, Stack: unwinders.Range{Lo: 0x20000000, Hi: 0x20000000 + uint32(len(stack))}}
		var r unwinders.Registers
		for i := unwinders.R0; i <= unwinders.R12; i++ {
			r.Set(i, 0x20000000+uint32(i)*4)
		}
		sp = 0x20000000 + sp%uint32(max(len(stack), 1))&^3
		r.Set(unwinders.SP, sp)
		r.Set(unwinders.MSP, sp)
		r.Set(unwinders.PC, pc)
		if len(stack) >= 4 {
			r.Set(unwinders.LR, binary.LittleEndian.Uint32(stack))
		}
		u := cfi.NewWithTable(tab)
		_, _ = u.Step(tg, []unwinders.Frame{{PC: pc, SP: sp, Regs: r}})
		res := unwinders.Walk(tg, r, []unwinders.Unwinder{u, unwinders.LinkRegister{}}, unwinders.Options{MaxFrames: 16})
		if res.Stop.Kind == unwinders.StopNone || len(res.Frames) > 16 {
			t.Fatalf("stop %v with %d frames", res.Stop, len(res.Frames))
		}
	})
}
