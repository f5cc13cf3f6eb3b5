package exidx

import (
	"debug/elf"
	"sort"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// elfProg is a minimal unwinders.Program over debug/elf for the tests (the
// real one lives in elfsym, which a strategy must not import).
type elfProg struct {
	secs  map[string]elfSec
	funcs []unwinders.Function // sorted by Start
	syms  map[string]uint32
	code  []unwinders.Range
	flash []unwinders.Region
}

type elfSec struct {
	addr uint32
	data []byte
}

func loadELF(tb testing.TB, path string) *elfProg {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p := &elfProg{secs: map[string]elfSec{}, syms: map[string]uint32{}}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			tb.Fatal(err)
		}
		p.secs[s.Name] = elfSec{uint32(s.Addr), d}
		p.flash = append(p.flash, unwinders.Region{Name: s.Name, Addr: uint32(s.Addr), Data: d})
		if s.Flags&elf.SHF_EXECINSTR != 0 {
			p.code = append(p.code, unwinders.Range{Lo: uint32(s.Addr), Hi: uint32(s.Addr + s.Size)})
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF {
			continue
		}
		start := uint32(s.Value) &^ 1
		p.funcs = append(p.funcs, unwinders.Function{Name: s.Name, Start: start, End: start + uint32(s.Size), Thumb: s.Value&1 != 0})
		p.syms[s.Name] = start
	}
	sort.SliceStable(p.funcs, func(i, j int) bool { return p.funcs[i].Start < p.funcs[j].Start })
	return p
}

func (p *elfProg) FuncAt(addr uint32) (unwinders.Function, bool) {
	i := sort.Search(len(p.funcs), func(i int) bool { return p.funcs[i].Start > addr }) - 1
	if i < 0 {
		return unwinders.Function{}, false
	}
	fn := p.funcs[i]
	if fn.End > fn.Start {
		return fn, addr < fn.End
	}
	return fn, true
}

func (p *elfProg) IsCode(addr uint32) bool {
	for _, r := range p.code {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}

func (p *elfProg) Section(name string) (uint32, []byte, bool) {
	s, ok := p.secs[name]
	return s.addr, s.data, ok
}

func (p *elfProg) Symbol(name string) (uint32, bool) {
	a, ok := p.syms[name]
	return a, ok
}

// image returns the ELF's sections as the bottom layer of a memory image,
// with extra regions (a stack) above.
func (p *elfProg) image(tb testing.TB, extra ...unwinders.Region) *unwinders.Image {
	tb.Helper()
	im := &unwinders.Image{}
	if err := im.AddLayer(p.flash...); err != nil {
		tb.Fatal(err)
	}
	if len(extra) > 0 {
		if err := im.AddLayer(extra...); err != nil {
			tb.Fatal(err)
		}
	}
	return im
}
