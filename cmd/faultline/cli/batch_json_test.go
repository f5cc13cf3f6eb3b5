package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// The hand-written JSON line must be encoding/json's, byte for byte.

func stdJSONLine(t *testing.T, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReportEncoderFastPath fails when a report type changed shape: update
// frameShape/threadShape/stackShape and appendFrame/appendThread in
// batch_json.go (until then the fields are encoded by encoding/json, and
// the output stays right but slower).
func TestReportEncoderFastPath(t *testing.T) {
	e := newReportEncoder()
	if e.fields == nil || !e.fastFrames || !e.fastThread {
		t.Errorf("fast JSON lines disabled (fields %v, frames %v, threads %v): a report type changed, update batch_json.go", e.fields != nil, e.fastFrames, e.fastThread)
	}
}

// analyzeFixtures analyses every fixture dump that has its ELF: the QEMU
// scenarios, the FreeRTOS and Zephyr builds.
func analyzeFixtures(t *testing.T) []*report.Report {
	t.Helper()
	type pair struct{ dump, elf string }
	var pairs []pair
	for _, d := range oracleFixtures(t) {
		pairs = append(pairs, pair{d, fixtureELF(t, d)})
	}
	for _, kernel := range []string{"freertos", "zephyr"} {
		dir := filepath.Join(repo, "fixtures/rtos", kernel)
		if kernel == "zephyr" {
			dir = filepath.Join(repo, "fixtures/rtos-zephyr")
		}
		m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, d := range m {
			if strings.HasSuffix(d, ".tasks.json") || strings.HasSuffix(d, ".threads.json") {
				continue
			}
			build := strings.TrimSuffix(filepath.Base(d), ".json")
			pairs = append(pairs, pair{d, filepath.Join(repo, "firmware-samples/rtos-"+kernel, "build", build+".elf")})
		}
	}
	elfs := map[string]*analysis.Analyzer{}
	var out []*report.Report
	for _, p := range pairs {
		an, ok := elfs[p.elf]
		if !ok {
			elf, err := elfsym.Open(p.elf)
			if err != nil {
				continue // a fixture without its ELF in this checkout
			}
			t.Cleanup(func() { elf.Close() })
			if an, err = analysis.NewAnalyzer(elf, analysis.Options{Unwinder: "auto"}); err != nil {
				t.Fatal(err)
			}
			elfs[p.elf] = an
		}
		d, err := crashdump.Load(p.dump)
		if err != nil {
			t.Fatalf("%s: %v", p.dump, err)
		}
		r, err := an.Analyze(d)
		if err != nil {
			t.Fatalf("%s: %v", p.dump, err)
		}
		d.Close()
		out = append(out, r)
	}
	if len(out) < 100 {
		t.Fatalf("only %d fixture reports", len(out))
	}
	return out
}

func TestReportEncoderMatchesEncodingJSON(t *testing.T) {
	reports := analyzeFixtures(t)
	e := newReportEncoder()
	threads := 0
	for _, r := range reports {
		threads += len(r.Threads)
		got, err := e.encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSONLine(t, r); !bytes.Equal(got, want) {
			t.Fatalf("%s: fast JSON line differs:\n got %s\nwant %s", r.Dump, got, want)
		}
	}
	if threads == 0 {
		t.Error("no report with threads among the fixtures")
	}

	// Strings a hostile dump or ELF can put anywhere, and empty and
	// absent values.
	rng := rand.New(rand.NewPCG(1, 2))
	odd := []string{"", "<a&b>", "\"q\"\\", "\x00\x01\b\f\n\r\t\x1f\x7f", "é€😀", "\u2028\u2029", "\xff\xfe", "a\xc3", "\xed\xa0\x80"}
	pick := func() string {
		if rng.IntN(3) == 0 {
			b := make([]byte, rng.IntN(12))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return string(b)
		}
		return odd[rng.IntN(len(odd))]
	}
	for i := range 300 {
		src := reports[rng.IntN(len(reports))]
		r := *src
		r.Dump, r.Stop = pick(), pick()
		r.Frames = mangleFrames(append([]report.FrameJSON(nil), src.Frames...), pick, rng)
		r.Threads = append([]report.ThreadJSON(nil), src.Threads...)
		for j := range r.Threads {
			th := &r.Threads[j]
			th.Name, th.State, th.ID, th.WaitingOn, th.Stop, th.Error = pick(), pick(), pick(), pick(), pick(), pick()
			th.Stack.Start, th.Stack.End, th.Stack.SP = pick(), pick(), pick()
			th.Stack.HighWaterBytes = rng.IntN(2000) - 1
			th.Stack.Overflow = rng.IntN(2) == 0
			th.Diagnosis = nil
			for range rng.IntN(3) {
				th.Diagnosis = append(th.Diagnosis, pick())
			}
			if rng.IntN(2) == 0 {
				bp := rng.IntN(40) - 5
				th.BasePriority = &bp
			} else {
				th.BasePriority = nil
			}
			th.Frames = mangleFrames(append([]report.FrameJSON(nil), th.Frames...), pick, rng)
			if rng.IntN(10) == 0 {
				th.Frames = nil
			}
		}
		if i%7 == 0 {
			r.Threads = nil
		}
		if i%11 == 0 {
			r.Frames, r.Registers, r.RTOS = nil, nil, nil
		}
		got, err := e.encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSONLine(t, &r); !bytes.Equal(got, want) {
			t.Fatalf("case %d: fast JSON line differs:\n got %q\nwant %q", i, got, want)
		}
	}
}

func mangleFrames(fs []report.FrameJSON, pick func() string, rng *rand.Rand) []report.FrameJSON {
	for i := range fs {
		f := &fs[i]
		f.Index = rng.IntN(100) - 3
		f.PC, f.Function, f.Symbol, f.File = pick(), pick(), pick(), pick()
		f.Kind, f.Method, f.SP, f.Confidence = pick(), pick(), pick(), pick()
		f.ExcReturn, f.Stack, f.Note = pick(), pick(), pick()
		f.Line = rng.IntN(5) - 1
		f.Gap = rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			o := rng.Int64N(1<<40) - 1<<39
			f.Offset = &o
		} else {
			f.Offset = nil
		}
	}
	return fs
}

// Every byte value and every rune class against encoding/json.
func TestAppendJSONString(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("ab" + string([]byte{byte(c)}) + "cd")
		// At every place of strings long enough for the eight-byte scan,
		// alone and next to a byte just above or below it.
		for i := range 24 {
			b := []byte("/src/firmware/tasks.c:42")
			b[i] = byte(c)
			check(string(b))
			if i+1 < len(b) {
				b[i+1] = byte(c + 1)
				check(string(b))
				b[i+1] = byte(c - 1)
				check(string(b))
			}
		}
	}
	for _, r := range []rune{0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000, 0x10ffff, 0x2027, 0x2028, 0x2029, 0x202a} {
		var b [4]byte
		n := utf8.EncodeRune(b[:], r)
		check(string(b[:n]))
		check("x" + string(b[:n]) + "y")
		for k := 1; k < n; k++ {
			check(string(b[:k]) + "z")
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("<\u2028\xff>")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	})
}

// The RTOS batch gives the same lines with one worker and with several
// (the ELF's caches shared between them; run it with -race), and each line
// is encoding/json's encoding of the report.
func TestRTOSBatchWorkers(t *testing.T) {
	dir := t.TempDir()
	rtosBatchDir(t, dir, 24)
	var outs []string
	for _, j := range []string{"1", "4"} {
		out, errs, code := run(t, "", "analyze", "-j", j, "--format", "jsonl", "--elf", rtosBatchELF(), dir)
		if code != 0 {
			t.Fatalf("-j %s: exit %d: %s", j, code, errs)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatal("-j 1 and -j 4 differ")
	}
	lines := strings.Split(strings.TrimSuffix(outs[0], "\n"), "\n")
	if len(lines) != 24 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var r report.Report
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Threads) != 13 {
			t.Fatalf("%s: %d threads", r.Dump, len(r.Threads))
		}
	}
}

// The search keeps what it read of each dump file for its load, within
// inputCacheMax, and forgets each as it is taken.
func TestInputContents(t *testing.T) {
	dir := t.TempDir()
	rtosBatchDir(t, dir, 5)
	in := expandInputs([]string{dir})
	if len(in.paths) != 5 || len(in.contents) != 5 || in.cached <= 0 || in.cached > inputCacheMax {
		t.Fatalf("%d paths, %d contents, %d bytes", len(in.paths), len(in.contents), in.cached)
	}
	for _, p := range in.paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.take(p); !bytes.Equal(got, want) {
			t.Errorf("%s: kept %d bytes, the file has %d", p, len(got), len(want))
		}
		if in.take(p) != nil {
			t.Errorf("%s: taken twice", p)
		}
	}
}
