package elfsym

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// benchFiles are opened by the benchmarks: a small test program and the
// largest firmware sample, when present.
var benchFiles = []string{"testdata/gcc-inline-O2.elf", "testdata/clang-inline-O2-dwarf5.elf", "../firmware-samples/build/gcc-m4f-O0.elf",
	"testdata/cxx/build/gcc-cxx-O2.elf", "testdata/cxx/build/clang-cxx-O0.elf"}

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

// benchCase names the oracle cases the per-address benchmarks run on: C
// test programs, a C firmware sample, and libstdc++-heavy C++ firmware of
// both compilers (long mangled names, deep inline chains).
var benchCase = map[string]bool{
	"gcc-inline-O2":                         true,
	"clang-inline-O2-dwarf5":                true,
	"firmware-samples/gcc-m4f-O2-unwind":    true,
	"cxx/gcc-cxx-O2":                        true,
	"cxx/clang-cxx-O2":                      true,
	"firmware-samples/matrix/gcc-m3-O2-cxx": true,
	"firmware-samples/cxx/gcc-m4f-O2":       true,
}

// BenchmarkSymbolize measures Symbolize per address over every instruction
// address of the oracle (units already decoded).
func BenchmarkSymbolize(b *testing.B) {
	for _, c := range oracleCases(b) {
		if !benchCase[c.name] {
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

// BenchmarkAddr2LineText is what `faultline symbolize` does per address:
// AppendAddr2LineText into a reused buffer, without and with -C (units
// decoded, and names demangled, by the first iterations).
func BenchmarkAddr2LineText(b *testing.B) {
	for _, c := range oracleCases(b) {
		if !benchCase[c.name] {
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
		for _, demangle := range []bool{false, true} {
			name := c.name
			if demangle {
				name += "/demangle"
			}
			b.Run(name, func(b *testing.B) {
				var text []byte
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					text, _ = f.AppendAddr2LineText(text[:0], ents[i%len(ents)].addr, demangle)
					i++
				}
			})
		}
	}
}

// BenchmarkLoadFuncs compares the two decoders of a unit's function tree:
// the fast one of die.go and debug/dwarf, which it falls back to. Before
// timing it checks, unit by unit, that both give the same tree (a unit the
// fast decoder hands over is counted, not compared).
func BenchmarkLoadFuncs(b *testing.B) {
	files := append([]string{}, benchFiles...)
	if p := os.Getenv("FAULTLINE_SYNTHETIC_ELF"); p != "" {
		files = append(files, p)
	}
	for _, name := range files {
		f, err := Open(name)
		if err != nil || f.dw == nil {
			continue
		}
		fresh := func(u *unit) *unit {
			return &unit{idx: u.idx, dieOff: u.dieOff, name: u.name, lang: u.lang, version: u.version, rnglistx: u.rnglistx,
				hdrOff: u.hdrOff, end: u.end, abbrevOff: u.abbrevOff, addrSize: u.addrSize, offSize: u.offSize}
		}
		handedOver := 0
		for _, u := range f.dw.units {
			fast, slow := fresh(u), fresh(u)
			errFast := fast.loadFuncsFast(f.dw)
			if errFast == errSlowPath {
				handedOver++
				continue
			}
			errSlow := slow.loadFuncsDwarf(f.dw)
			if (errFast == nil) != (errSlow == nil) || !reflect.DeepEqual(fast.nodes, slow.nodes) ||
				!reflect.DeepEqual(fast.dead, slow.dead) || !reflect.DeepEqual(fast.funcs.items, slow.funcs.items) {
				b.Fatalf("%s: unit %s: the fast decoder differs from debug/dwarf", name, u.name)
			}
		}
		for _, mode := range []string{"fast", "debug-dwarf"} {
			b.Run(filepath.Base(name)+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, u := range f.dw.units {
						v := fresh(u)
						if mode == "fast" {
							v.loadFuncs(f.dw)
						} else {
							v.loadFuncsDwarf(f.dw)
						}
					}
				}
				b.ReportMetric(float64(handedOver), "units-handed-over")
			})
		}
	}
}
