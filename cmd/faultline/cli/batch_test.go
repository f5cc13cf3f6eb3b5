package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// The six scenarios of one build; fixtures/qemu holds 23 builds, and a
// batch decodes against one ELF.
var batchScenarios = []string{"div0", "irq_crash", "null_fnptr", "null_write_deep", "psp_thread", "udf"}

const batchBuild = "gcc-m3-O2"

func batchELF() string { return filepath.Join(repo, "firmware-samples/build", batchBuild+".elf") }

// copyDump copies fixtures/qemu/<build>-<scenario>.json and its RAM file
// into dir as <name>.json, padding the RAM region with zeros to padTo
// bytes when padTo is larger.
func copyDump(t testing.TB, dir, scenario, name string, padTo int) string {
	t.Helper()
	src := filepath.Join(repo, "fixtures/qemu", batchBuild+"-"+scenario)
	man, err := os.ReadFile(src + ".json")
	if err != nil {
		t.Fatal(err)
	}
	ram, err := os.ReadFile(src + ".ram.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(ram) < padTo {
		ram = append(ram, make([]byte, padTo-len(ram))...)
	}
	oldRAM := batchBuild + "-" + scenario + ".ram.bin"
	man = bytes.Replace(man, []byte(`"`+oldRAM+`"`), []byte(`"`+name+`.ram.bin"`), 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, man, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".ram.bin"), ram, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fleet builds a directory of dumps: every scenario in a/ and b/ (so
// every bucket has two dumps), a corrupt manifest, and files that are
// not dumps (a README, an analysis saved as JSON, a dot directory).
func fleet(t *testing.T) string {
	dir := t.TempDir()
	for _, s := range batchScenarios {
		copyDump(t, filepath.Join(dir, "a"), s, "dev1-"+s, 0)
		copyDump(t, filepath.Join(dir, "b", "deeper"), s, "dev2-"+s, 0)
	}
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/corrupt.json", `{"schema": "faultline.dump/1", "registers": {"pc": `)
	write("README.txt", "crash dumps from the field\n")
	write("b/report.json", `{"schema": "faultline.analysis/1", "dump": "x"}`)
	write(".cache/dev3-udf.json", `{"schema": "faultline.dump/1"}`)
	return dir
}

func jsonlDumps(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var r report.Report
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not one analysis per line: %v: %q", err, line)
		}
		names = append(names, r.Dump)
	}
	return names
}

func TestBatchDirectory(t *testing.T) {
	dir := fleet(t)
	var first string
	for _, jobs := range []string{"1", "3", "16"} {
		out, errs, code := run(t, "", "analyze", "--elf", batchELF(), "--format", "jsonl", "-j", jobs, dir)
		if code != ExitInput {
			t.Fatalf("-j %s: exit %d, want 1 (one corrupt dump): %s", jobs, code, errs)
		}
		if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "corrupt.json") {
			t.Errorf("-j %s: stderr %q: want one message naming corrupt.json", jobs, errs)
		}
		names := jsonlDumps(t, out)
		if len(names) != 12 || !slices.IsSorted(names) {
			t.Errorf("-j %s: dumps %q: want the 12 good ones sorted by path", jobs, names)
		}
		for _, n := range names {
			if strings.Contains(n, ".cache") || strings.HasSuffix(n, "report.json") {
				t.Errorf("decoded %s, which is not a dump", n)
			}
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("-j %s: output differs from -j 1", jobs)
		}
	}
}

func TestBatchGlobs(t *testing.T) {
	dir := fleet(t)
	cases := []struct {
		pattern string
		want    int
	}{
		{dir + "/**/*.json", 12},    // ** spans directories; corrupt.json fails
		{dir + "/a/dev1-*.json", 6}, // expanded here, not by a shell
		{dir + "/b/*", 6},           // a matching directory is searched; region files are not dumps
		{dir + "/*/dev?-udf.json", 1},
	}
	for _, c := range cases {
		out, errs, code := run(t, "", "analyze", "--elf", batchELF(), "--format", "jsonl", c.pattern)
		got := 0
		if strings.TrimSpace(out) != "" {
			got = len(jsonlDumps(t, out))
		}
		if got != c.want {
			t.Errorf("%s: %d dumps (exit %d, %s), want %d", c.pattern, got, code, errs, c.want)
		}
	}
	_, errs, code := run(t, "", "analyze", "--elf", batchELF(), dir+"/nothing-*.json")
	if code != ExitInput || !strings.Contains(errs, "no file matches") {
		t.Errorf("a pattern that matches nothing: exit %d %q", code, errs)
	}
	_, errs, code = run(t, "", "analyze", "--elf", batchELF(), dir+"/[")
	if code != ExitUsage {
		t.Errorf("a bad pattern: exit %d %q, want 2", code, errs)
	}
}

// TestBatchKeepsSeveralDumpOutput checks that explicit files give exactly
// what analyze printed before batches existed: reports in argument order,
// a JSON array encoded in one go, text reports separated by a blank line.
func TestBatchKeepsSeveralDumpOutput(t *testing.T) {
	var paths []string
	for _, s := range []string{"udf", "div0", "null_write_deep", "psp_thread"} {
		paths = append(paths, filepath.Join(repo, "fixtures/qemu", batchBuild+"-"+s+".json"))
	}
	elf, err := elfsym.Open(batchELF())
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	var reports []*report.Report
	var txt strings.Builder
	for i, p := range paths {
		d, err := crashdump.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: "auto", MaxFrames: 64})
		if err != nil {
			t.Fatal(err)
		}
		r.Warnings = append(append([]string{}, d.Warnings...), r.Warnings...)
		reports = append(reports, r)
		if i > 0 {
			txt.WriteString("\n")
		}
		textout.Write(&txt, r)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.Encode(reports)
	out, errs, code := run(t, "", append([]string{"analyze", "--format", "json", "--elf", batchELF()}, paths...)...)
	if code != 0 || out != want.String() {
		t.Errorf("json: exit %d %s; output differs from the one-shot encoding", code, errs)
	}
	out, _, code = run(t, "", append([]string{"analyze", "--elf", batchELF()}, paths...)...)
	if code != 0 || out != txt.String() {
		t.Errorf("text: exit %d; output differs", code)
	}
	out, _, code = run(t, "", "analyze", "--format", "json", "--elf", batchELF(), "/nonexistent.json", "/nonexistent2.json")
	if code != ExitInput || out != "[]\n" {
		t.Errorf("no dump decoded of two: exit %d %q, want [] and exit 1", code, out)
	}
}

func TestBatchSummary(t *testing.T) {
	dir := fleet(t)
	out, errs, code := run(t, "", "analyze", "--elf", batchELF(), "--summary", "--format", "json", dir)
	if code != ExitInput {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s bucket.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != bucket.SummarySchema || s.Dumps != 13 || s.Decoded != 12 || len(s.Buckets) != 6 || s.Order != "path" {
		t.Fatalf("schema %q dumps %d decoded %d buckets %d order %q", s.Schema, s.Dumps, s.Decoded, len(s.Buckets), s.Order)
	}
	funcs := map[string]bool{}
	for _, b := range s.Buckets {
		if b.Count != 2 || len(b.Dumps) != 2 || !strings.Contains(b.First, "/a/dev1-") || !strings.Contains(b.Last, "/b/deeper/dev2-") {
			t.Errorf("bucket %s: count %d first %s last %s", b.ID, b.Count, b.First, b.Last)
		}
		if b.Example == nil || b.Example.Dump != b.First || b.Signature.Exception != "HardFault" || len(b.ID) != 12 {
			t.Errorf("bucket %s: example %v signature %+v", b.ID, b.Example != nil, b.Signature)
		}
		funcs[b.Signature.Function] = true
	}
	for _, f := range []string{"null_store", "udf_assert_fail", "div0_average", "psp_store", "irq_touch_device", "??"} {
		if !funcs[f] {
			t.Errorf("no bucket for faulting function %s (have %v)", f, funcs)
		}
	}
	if s.Undecodable.Count != 1 || len(s.Undecodable.Errors) != 1 || !strings.HasSuffix(s.Undecodable.Errors[0].Dump, "corrupt.json") {
		t.Errorf("undecodable %+v", s.Undecodable)
	}
	out, _, _ = run(t, "", "analyze", "--elf", batchELF(), "--summary", dir)
	for _, want := range []string{"Summary of 13 dumps", "12 dumps decoded in 6 buckets, 1 undecodable", "HardFault in null_store", "Undecodable: 1 dump", "corrupt.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("text summary lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := run(t, "", "analyze", "--elf", batchELF(), "--summary", "--format", "jsonl", dir); code != ExitUsage {
		t.Errorf("--summary --format jsonl: exit %d, want 2", code)
	}
}

func TestHTMLOutput(t *testing.T) {
	dump := filepath.Join(repo, "fixtures/qemu", batchBuild+"-null_write_deep.json")
	out, errs, code := run(t, "", "analyze", "--elf", batchELF(), "--format", "html", dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<svg", "null_store", "DACCVIOL", "saved LR → deep4_huge_locals+0x32",
		"fl_null_ptr = value", // the source line, found next to the ELF
		"pc → null_store+0x6", "MSP stack"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing fetched from anywhere.
	for _, bad := range []string{"<script", "<link", "src=", "url(", "@import", "href=\"http"} {
		if strings.Contains(out, bad) {
			t.Errorf("page references an external resource: %q", bad)
		}
	}
	dir := fleet(t)
	pages := filepath.Join(t.TempDir(), "pages")
	_, _, code = run(t, "", "analyze", "--elf", batchELF(), "--format", "html", "-o", pages, dir)
	if code != ExitInput {
		t.Errorf("-o with a corrupt dump: exit %d, want 1", code)
	}
	ents, _ := os.ReadDir(pages)
	if len(ents) != 13 { // 12 pages and the index
		t.Errorf("%d files in -o DIR, want 13", len(ents))
	}
	idx, err := os.ReadFile(filepath.Join(pages, "index.html"))
	if err != nil || !strings.Contains(string(idx), `href="dev1-udf.html"`) || !strings.Contains(string(idx), "corrupt.json") {
		t.Errorf("index: %v", err)
	}
	if _, _, code := run(t, "", "analyze", "--elf", batchELF(), "--format", "html", dir); code != ExitUsage {
		t.Errorf("several pages without -o: exit %d, want 2", code)
	}
}

// BenchmarkBatch measures batch throughput on 64 KiB dumps (the fixtures'
// 16 KiB RAM padded with zeros): dumps/s and dumps/s per core
// (GOMAXPROCS) of wall-clock time, and dumps per CPU-second (user +
// system), the whole command (expansion, loading, analysis, JSON lines)
// included. 40 copies of the six scenarios: 240 dumps per operation.
func BenchmarkBatch(b *testing.B) {
	dir := b.TempDir()
	const copies = 40
	n := 0
	for i := range copies {
		for _, s := range batchScenarios {
			copyDump(b, filepath.Join(dir, fmt.Sprintf("d%02d", i)), s, s, 64<<10)
			n++
		}
	}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		code := Run([]string{"analyze", "--elf", batchELF(), "--format", "jsonl", dir}, strings.NewReader(""), io.Discard, io.Discard)
		if code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	total := float64(n) * float64(b.N)
	perSec := total / b.Elapsed().Seconds()
	b.ReportMetric(perSec, "dumps/s")
	b.ReportMetric(perSec/float64(runtime.GOMAXPROCS(0)), "dumps/s/core")
	// Dumps per CPU-second does not depend on what else the machine runs.
	if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
		b.ReportMetric(total/(cpu1-cpu0).Seconds(), "dumps/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
}
