package elfsym

import (
	"bytes"
	"os"
	"testing"
)

// benchFiles are opened by the benchmarks: a small test program and the
// largest firmware sample, when present.
var benchFiles = []string{"testdata/gcc-inline-O2.elf", "testdata/clang-inline-O2-dwarf5.elf", "../firmware-samples/build/gcc-m4f-O0.elf"}

// BenchmarkOpen measures NewFile: header validation, the symbol indexes and
// the compilation unit index (line tables are decoded lazily).
func BenchmarkOpen(b *testing.B) {
	for _, name := range benchFiles {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewFile(bytes.NewReader(data), name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenAndDecodeAll is Open plus decoding every compilation unit
// (what the first Symbolize of every unit costs in total).
func BenchmarkOpenAndDecodeAll(b *testing.B) {
	for _, name := range benchFiles {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := NewFile(bytes.NewReader(data), name)
				if err != nil {
					b.Fatal(err)
				}
				for _, u := range f.dw.units {
					u.load(f.dw)
				}
			}
		})
	}
}

// BenchmarkSymbolize measures Symbolize per address over every instruction
// address of the oracle (units already decoded).
func BenchmarkSymbolize(b *testing.B) {
	for _, c := range oracleCases(b) {
		if c.name != "gcc-inline-O2" && c.name != "clang-inline-O2-dwarf5" && c.name != "firmware-samples/gcc-m4f-O0" {
			continue
		}
		_, ents, err := readOracle(c.oracle)
		if err != nil {
			continue
		}
		f, err := Open(c.elf)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Symbolize(ents[i%len(ents)].addr)
				i++
			}
		})
	}
}

// BenchmarkOpenLarge opens the ELF named by $ELFSYM_BIG_ELF (not committed:
// see testdata/README.md for the generator of the 50,000-function image)
// and symbolizes one address in every compilation unit.
func BenchmarkOpenLarge(b *testing.B) {
	name := os.Getenv("ELFSYM_BIG_ELF")
	if name == "" {
		b.Skip("set ELFSYM_BIG_ELF to a large ELF")
	}
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Open(name); err != nil {
				b.Fatal(err)
			}
		}
	})
	f, err := Open(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d function symbols, %d units", len(f.syms.funcs.items), len(f.dw.units))
	b.Run("symbolize-cold-all-units", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, _ := Open(name)
			for _, r := range f.dw.ranges.items {
				f.Symbolize(r.lo)
			}
		}
	})
	items := f.syms.funcs.items
	b.Run("symbolize-warm", func(b *testing.B) {
		for _, r := range f.dw.ranges.items {
			f.Symbolize(r.lo)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Symbolize(items[(i*7919)%len(items)].start + 2)
			i++
		}
	})
}
