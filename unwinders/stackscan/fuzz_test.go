package stackscan_test

import (
	"encoding/binary"
	"path/filepath"
	"sort"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/stackscan"
)

// fuzzELF is the real firmware the fuzzed stacks are read against, so that
// random words meet real functions, BLs, BLX and veneer-free code.
const fuzzELF = "gcc-m3-O2"

const fuzzRAM = 0x20003000

// FuzzStep feeds random stack memory and registers to Step and to a full
// walk: neither may panic or hang, and a step never moves SP down or out of
// the scanned range. The corpus is seeded with the live stack of every
// fixture of the fuzz firmware.
func FuzzStep(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, fuzzELF+"-*.json"))
	sort.Strings(paths)
	for _, p := range paths {
		fx := loadFixture(f, p)
		sp := fx.dump.Regs.Value(unwinders.SP)
		for _, r := range fx.dump.Memory {
			if r.Contains(sp) {
				lo := sp - r.Addr
				f.Add(append([]byte(nil), r.Data[lo:min(len(r.Data), int(lo)+0x400)]...), uint16(0),
					fx.dump.Regs.Value(unwinders.PC), fx.dump.Regs.Value(unwinders.LR), int16(0))
			}
		}
	}
	f.Add(make([]byte, 64), uint16(3), uint32(0x100), uint32(0xFFFFFFF9), int16(-1))
	elf := openELF(f, fuzzELF)
	u0 := stackscan.New(stackscan.Options{})
	f.Fuzz(func(t *testing.T, stack []byte, spOff uint16, pc, lr uint32, la int16) {
		if len(stack) > 0x1000 {
			stack = stack[:0x1000]
		}
		im := &unwinders.Image{}
		_ = im.AddLayer(elf.Segments()...)
		_ = im.AddLayer(unwinders.Region{Name: "ram", Addr: fuzzRAM, Data: stack})
		top := uint32(fuzzRAM + len(stack))
		tg := &unwinders.Target{Mem: im, Prog: elf, Profile: unwinders.V7M,
			Stack: unwinders.Range{Lo: fuzzRAM, Hi: top}, ResetHandler: elf.Info().Vectors.Reset &^ 1}
		sp := fuzzRAM + uint32(spOff)%0x1100 // sometimes beyond the RAM
		var regs unwinders.Registers
		regs.Set(unwinders.PC, pc)
		regs.Set(unwinders.SP, sp)
		regs.Set(unwinders.MSP, sp)
		regs.Set(unwinders.LR, lr)
		regs.Set(unwinders.PSP, fuzzRAM)
		u := u0
		if la != 0 {
			u = stackscan.New(stackscan.Options{Lookahead: int(la), MaxBytes: uint32(uint16(la))})
		}
		f0, _ := unwinders.StartFrame(regs)
		caller, err := u.Step(tg, []unwinders.Frame{f0})
		if err == nil {
			if caller.SP < f0.SP || uint64(caller.SP) > uint64(top) || caller.Method != stackscan.Name {
				t.Fatalf("step from SP 0x%08x: %+v", f0.SP, caller)
			}
		}
		_, _ = u.Candidates(tg, []unwinders.Frame{f0})
		res := unwinders.Walk(tg, regs, []unwinders.Unwinder{u, unwinders.LinkRegister{}}, unwinders.Options{MaxFrames: 32})
		if res.Stop.Kind == unwinders.StopNone || len(res.Frames) == 0 || len(res.Frames) > 32 {
			t.Fatalf("stop %v with %d frames", res.Stop, len(res.Frames))
		}
	})
}

// BenchmarkWalk is a full walk of the deepest fixture chain.
func BenchmarkWalk(b *testing.B) {
	for _, name := range []string{"gcc-m3-O0-null_write_deep", "clang-m4f-O2-irq_crash"} {
		b.Run(name, func(b *testing.B) {
			fx := loadFixture(b, filepath.Join(fixtureDir, name+".json"))
			tg := fx.target(b)
			chain := []unwinders.Unwinder{stackscan.New(stackscan.Options{}), unwinders.LinkRegister{}}
			b.ReportAllocs()
			for b.Loop() {
				res := unwinders.Walk(tg, fx.dump.Regs, chain, unwinders.Options{})
				if !res.Stop.Complete() {
					b.Fatal(res.Stop)
				}
			}
		})
	}
}

// BenchmarkStepWorstCase is one step over the whole default budget (64 KiB
// of random words with no candidate): the bound on a step's cost.
func BenchmarkStepWorstCase(b *testing.B) {
	elf := openELF(b, fuzzELF)
	ram := make([]byte, stackscan.DefaultMaxBytes)
	x := xorshift(12345)
	for i := 0; i < len(ram); i += 4 {
		binary.LittleEndian.PutUint32(ram[i:], x.next()&^1) // even: never a return address
	}
	im := &unwinders.Image{}
	_ = im.AddLayer(elf.Segments()...)
	_ = im.AddLayer(unwinders.Region{Name: "ram", Addr: 0x20000000, Data: ram})
	tg := &unwinders.Target{Mem: im, Prog: elf, Profile: unwinders.V7M, Stack: unwinders.Range{Lo: 0x20000000, Hi: 0x20000000 + uint32(len(ram))}}
	var regs unwinders.Registers
	regs.Set(unwinders.PC, 0x200)
	regs.Set(unwinders.SP, 0x20000000)
	f0, _ := unwinders.StartFrame(regs)
	u := stackscan.New(stackscan.Options{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := u.Step(tg, []unwinders.Frame{f0}); err == nil {
			b.Fatal("found a candidate in even words")
		}
	}
}
