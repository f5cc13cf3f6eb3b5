package jsonout

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
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

const repo = "../../.."

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
// jsonout.go (until then the fields are encoded by encoding/json, and
// the output stays right but slower).
func TestReportEncoderFastPath(t *testing.T) {
	e := NewEncoder()
	if e.fields == nil || !e.fastFrames || !e.fastThread {
		t.Errorf("fast JSON lines disabled (fields %v, frames %v, threads %v): a report type changed, update jsonout.go", e.fields != nil, e.fastFrames, e.fastThread)
	}
}

// analyzeFixtures analyses every fixture dump that has its ELF: the QEMU
// scenarios, the FreeRTOS and Zephyr builds.
func analyzeFixtures(t *testing.T) []*report.Report {
	t.Helper()
	type pair struct{ dump, elf string }
	var pairs []pair
	qemu, err := filepath.Glob(filepath.Join(repo, "fixtures/qemu/*.json"))
	if err != nil || len(qemu) == 0 {
		t.Fatalf("no oracle fixtures: %v", err)
	}
	for _, d := range qemu {
		base := strings.TrimSuffix(filepath.Base(d), ".json")
		i := strings.LastIndex(base, "-")
		if i < 0 {
			t.Fatalf("fixture name %s is not <build>-<scenario>", base)
		}
		pairs = append(pairs, pair{d, filepath.Join(repo, "firmware-samples/build", base[:i]+".elf")})
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
	e := NewEncoder()
	threads := 0
	for _, r := range reports {
		threads += len(r.Threads)
		got, err := e.Line(r)
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
		got, err := e.Line(&r)
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
