package cfi_test

import (
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
)

// BenchmarkLoad decodes and indexes a sample firmware's .debug_frame: what
// the first step on a program costs.
func BenchmarkLoad(b *testing.B) {
	f := sampleELF(b, "gcc-m4f-O0")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfi.Load(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStep is one step at a return address: FDE lookup, row
// evaluation and reading the saved registers.
func BenchmarkStep(b *testing.B) {
	fx := openFixture(b, filepath.Join(fixtureDir, "gcc-m3-O2-null_write_deep.json"))
	t := fx.target(b)
	res := unwinders.Walk(t, fx.dump.Regs, chain(), unwinders.Options{})
	frames := res.Frames[:4] // registers, exception, null_store, deep5_mixed
	u := cfi.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := u.Step(t, frames); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalk is a full walk of a fixture with cfi alone.
func BenchmarkWalk(b *testing.B) {
	for _, name := range []string{"gcc-m3-O2-null_write_deep", "clang-m4f-O0-irq_crash"} {
		fx := openFixture(b, filepath.Join(fixtureDir, name+".json"))
		t := fx.target(b)
		c := chain()
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := unwinders.Walk(t, fx.dump.Regs, c, unwinders.Options{}); !res.Stop.Complete() {
					b.Fatal(res.Stop)
				}
			}
		})
	}
}
