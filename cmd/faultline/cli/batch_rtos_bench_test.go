package cli

import (
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

// The RTOS batch: the 13-task FreeRTOS dump of the gcc-m4f-O2 build
// (fixtures/rtos/freertos) copied rtosBatchCopies times into one
// directory, each copy with its own RAM file, and analysed with one
// worker into JSON lines, as
//
//	faultline analyze -j 1 --format jsonl --elf firmware-samples/rtos-freertos/build/gcc-m4f-O2.elf DIR
//
// does (make bench-rtos-batch times that command as a whole process).

const (
	rtosBatchBuild  = "gcc-m4f-O2"
	rtosBatchCopies = 500
)

func rtosBatchELF() string {
	return filepath.Join(repo, "firmware-samples/rtos-freertos/build", rtosBatchBuild+".elf")
}

// rtosBatchDir fills dir with n copies of the fixture, d000/ .. d499/.
func rtosBatchDir(t testing.TB, dir string, n int) {
	t.Helper()
	src := filepath.Join(repo, "fixtures/rtos/freertos", rtosBatchBuild)
	man, err := os.ReadFile(src + ".json")
	if err != nil {
		t.Fatal(err)
	}
	ram, err := os.ReadFile(src + ".ram.bin")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, rtosBatchBuild+".json"), man, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, rtosBatchBuild+".ram.bin"), ram, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkRTOSBatch runs the whole analyze command on the RTOS batch
// in-process (argument expansion, ELF opening and indexing, loading,
// thread discovery and every task's walk, JSON lines) and reports dumps
// per CPU-second (user + system of the process, over all operations) and
// dumps per wall-clock second. Process start-up is not in it: the
// whole-process figure is make bench-rtos-batch's.
func BenchmarkRTOSBatch(b *testing.B) {
	dir := b.TempDir()
	rtosBatchDir(b, dir, rtosBatchCopies)
	args := []string{"analyze", "-j", "1", "--format", "jsonl", "--elf", rtosBatchELF(), dir}
	var errs strings.Builder
	if code := Run(args, strings.NewReader(""), io.Discard, &errs); code != 0 {
		b.Fatalf("exit %d: %s", code, errs.String())
	}
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if code := Run(args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	total := float64(rtosBatchCopies) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "dumps/s")
	if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
		b.ReportMetric(total/(cpu1-cpu0).Seconds(), "dumps/cpu-s")
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/total, "ns/dump")
	b.ReportMetric(0, "ns/op")
}

// The stages of one dump of the RTOS batch, to see where its time goes:
// loading (manifest and RAM file), analysing with the shared Analyzer
// (thread discovery, every task's walk, symbolization), writing the line.

func rtosStageSetup(b *testing.B) (string, *analysis.Analyzer) {
	b.Helper()
	dir := b.TempDir()
	rtosBatchDir(b, dir, 1)
	elf, err := elfsym.Open(rtosBatchELF())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { elf.Close() })
	an, err := analysis.NewAnalyzer(elf, analysis.Options{Unwinder: "auto"})
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "d000", rtosBatchBuild+".json"), an
}

func BenchmarkRTOSBatchStage(b *testing.B) {
	p, an := rtosStageSetup(b)
	d, err := crashdump.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	r, err := an.Analyze(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			d, err := crashdump.Load(p)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
	b.Run("analyze", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := an.Analyze(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonl", func(b *testing.B) {
		rw := &reportWriter{w: io.Discard, format: "jsonl"}
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			if err := rw.report(batchResult{report: r}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuPerOp reports the process's CPU time (user + system) per operation,
// which other processes on the machine disturb less than wall time; call
// the function it returns after the loop.
func cpuPerOp(b *testing.B) func() {
	cpu0, ok0 := processCPU()
	return func() {
		if cpu1, ok1 := processCPU(); ok0 && ok1 && b.N > 0 {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// TestRTOSBatchReuse: the batch reuses memory from dump to dump (region
// buffers, the thread walks' frames); RTOS dumps that differ (a different
// kilobyte of RAM zeroed in each, so different tasks lose their TCB or
// stack) give, with one worker or several, the lines each gives alone.
func TestRTOSBatchReuse(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	rtosBatchDir(t, dir, n)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i), rtosBatchBuild+".ram.bin")
		ram, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			off := (i - 1) * 1024 % len(ram)
			clear(ram[off:min(off+1024, len(ram))])
		}
		if err := os.WriteFile(p, ram, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var alone strings.Builder
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i), rtosBatchBuild+".json")
		out, errs, code := run(t, "", "analyze", "--elf", rtosBatchELF(), "--format", "jsonl", p)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", p, code, errs)
		}
		alone.WriteString(out)
	}
	if strings.Count(alone.String(), "\n") != n {
		t.Fatalf("%d lines for %d dumps", strings.Count(alone.String(), "\n"), n)
	}
	for _, jobs := range []string{"1", "3"} {
		out, errs, code := run(t, "", "analyze", "--elf", rtosBatchELF(), "--format", "jsonl", "-j", jobs, dir)
		if code != 0 {
			t.Fatalf("-j %s: exit %d: %s", jobs, code, errs)
		}
		if out != alone.String() {
			t.Errorf("-j %s: the batch's lines differ from each dump's alone", jobs)
		}
	}
}
