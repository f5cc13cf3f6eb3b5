package cli

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/faultline-dev/faultline/cmd/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// The stages of one dump in a batch, on a 64 KiB dump of the deep-chain
// scenario, to see where BenchmarkBatch's time goes: loading the dump
// (manifest and RAM file), analysing it with the shared Analyzer, and
// writing its JSON line.

func benchDump(b *testing.B) (string, *analysis.Analyzer) {
	b.Helper()
	p := copyDump(b, b.TempDir(), "null_write_deep", "d", 64<<10)
	elf, err := elfsym.Open(batchELF())
	if err != nil {
		b.Fatal(err)
	}
	an, err := analysis.NewAnalyzer(elf, analysis.Options{Unwinder: "auto", MaxFrames: 64})
	if err != nil {
		b.Fatal(err)
	}
	return p, an
}

func BenchmarkBatchStageLoad(b *testing.B) {
	p, _ := benchDump(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := crashdump.Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchStageAnalyze(b *testing.B) {
	p, an := benchDump(b)
	d, err := crashdump.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := an.Analyze(d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchStageJSONL(b *testing.B) {
	p, an := benchDump(b)
	d, err := crashdump.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	r, err := an.Analyze(d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := json.NewEncoder(io.Discard).Encode(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchStageOne is one dump through analyzeOne, as a worker runs it.
func BenchmarkBatchStageOne(b *testing.B) {
	p, an := benchDump(b)
	job := batchJob{name: p, load: func() (*crashdump.Dump, error) { return crashdump.Load(p) }}
	b.ReportAllocs()
	for b.Loop() {
		if r := analyzeOne(an, job); r.err != nil {
			b.Fatal(r.err)
		}
	}
}
