package analysis

import "testing"

// BenchmarkAnalyze times one whole analysis (walk, fault decoding,
// symbolization with inline expansion) per strategy on a deep-chain
// fixture of a build with unwind tables, the ELF already indexed.
func BenchmarkAnalyze(b *testing.B) {
	elf, d := load(b, "gcc-m3-O2-unwind", "null_write_deep")
	for _, s := range Strategies() {
		if !s.Available {
			continue
		}
		b.Run(s.Name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Analyze(elf, d, Options{Unwinder: s.Name, MaxFrames: 64}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
