package frame_test

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
)

func benchSection(b *testing.B) *frame.Section {
	b.Helper()
	return loadSections(b, filepath.Join(samplesDir, "gcc-m4f-O0.elf"))[".debug_frame"]
}

// BenchmarkParse decodes a sample firmware's .debug_frame (53 FDEs).
func BenchmarkParse(b *testing.B) {
	data := rawSection(b, filepath.Join(samplesDir, "gcc-m4f-O0.elf"), ".debug_frame")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := frame.Parse(frame.DebugFrame, 0, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexBuild sorts and filters the FDEs of a section.
func BenchmarkIndexBuild(b *testing.B) {
	s := benchSection(b)
	b.ReportAllocs()
	for b.Loop() {
		frame.NewIndex(s.FDEs, frame.IndexOptions{})
	}
}

// BenchmarkLookup finds the FDE of an address (binary search).
func BenchmarkLookup(b *testing.B) {
	ix := frame.NewIndex(benchSection(b).FDEs, frame.IndexOptions{})
	fdes := ix.FDEs()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f := fdes[i%len(fdes)]
		if _, ok := ix.Lookup(f.Start + (f.End-f.Start)/2); !ok {
			b.Fatal("not found")
		}
		i++
	}
}

// BenchmarkRowAt evaluates the row at the last address of every FDE (the
// whole instruction stream runs).
func BenchmarkRowAt(b *testing.B) {
	fdes := benchSection(b).FDEs
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f := fdes[i%len(fdes)]
		if _, err := f.RowAt(f.End - 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRows builds the whole table of every FDE of the shrink-wrapped
// GCC -O2 program (remember/restore state).
func BenchmarkRows(b *testing.B) {
	fdes := loadSections(b, filepath.Join(testdata, "shrinkwrap-gcc-m4f-O2.elf"))[".debug_frame"].FDEs
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range fdes {
			if _, err := f.Rows(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func rawSection(b *testing.B, path, name string) []byte {
	b.Helper()
	f, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(name).Data()
	if err != nil {
		b.Fatal(err)
	}
	return data
}
