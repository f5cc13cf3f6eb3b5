package framepointer_test

import (
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/framepointer"
)

// BenchmarkWalk walks whole fixtures to the reset handler (gcc-m3-O0
// null_write_deep: ten frames through one exception frame, the GCC r7+N
// layout; clang-m3-O2-fp div0: seven frames, clang's layout)
// with framepointer then LR. "cold" analyses every function anew (a new
// Unwinder per walk, as for a single dump); "warm" reuses one Unwinder and
// its per-function cache (as when many dumps of one firmware are decoded).
func BenchmarkWalk(b *testing.B) {
	for _, name := range []string{"gcc-m3-O0-null_write_deep", "clang-m3-O2-fp-div0"} {
		fx := loadFixture(b, fixtureDir+"/"+name+".json")
		t := fx.target(b)
		run := func(b *testing.B, u func() unwinders.Unwinder) {
			b.ReportAllocs()
			for b.Loop() {
				tt := *t
				res := unwinders.Walk(&tt, fx.dump.Regs, []unwinders.Unwinder{u(), unwinders.LinkRegister{}}, unwinders.Options{})
				if !res.Stop.Complete() {
					b.Fatalf("%s: %d frames: %v", name, len(res.Frames), res.Stop)
				}
			}
		}
		b.Run(name+"/cold", func(b *testing.B) { run(b, func() unwinders.Unwinder { return framepointer.New() }) })
		warm := framepointer.New()
		b.Run(name+"/warm", func(b *testing.B) { run(b, func() unwinders.Unwinder { return warm }) })
	}
}
