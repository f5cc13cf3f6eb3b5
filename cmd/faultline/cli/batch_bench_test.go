package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
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
	job := batchJob{name: p, load: func(*crashdump.Buffers) (*crashdump.Dump, error) { return crashdump.Load(p) }}
	b.ReportAllocs()
	for b.Loop() {
		if r := analyzeOne(an, job, false, nil); r.err != nil {
			b.Fatal(r.err)
		}
	}
}

// BenchmarkBatchFieldDumps is BenchmarkBatch on dumps as they come from
// the field, as fixtures/bench/peers.sh part (c) times them: no truth,
// 64 KiB of RAM, one worker (-j 1). 40 copies of the six scenarios.
func BenchmarkBatchFieldDumps(b *testing.B) {
	dir := b.TempDir()
	n := 0
	for i := range 40 {
		for _, s := range batchScenarios {
			p := copyDump(b, filepath.Join(dir, fmt.Sprintf("d%02d", i)), s, s, 64<<10)
			stripTruth(b, p)
			n++
		}
	}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		code := Run([]string{"analyze", "--elf", batchELF(), "--format", "jsonl", "-j", "1", dir}, strings.NewReader(""), io.Discard, io.Discard)
		if code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	total := float64(n) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "dumps/s")
	if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
		b.ReportMetric(total/(cpu1-cpu0).Seconds(), "dumps/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
}

// stripTruth removes "truth" from the manifest at p.
func stripTruth(b *testing.B, p string) {
	b.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	delete(m, "truth")
	if data, err = json.MarshalIndent(m, "", " "); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
}
