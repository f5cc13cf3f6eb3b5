package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

const rtosFixtures = "../fixtures/rtos/freertos"

type oracleTasks struct {
	Tasks []struct {
		Name     string        `json:"name"`
		State    string        `json:"state"`
		Priority int           `json:"priority"`
		Current  bool          `json:"current"`
		Frames   []oracleFrame `json:"frames"`
		// HandlerFrames: for a crash inside the context-switch handler
		// (the hook builds), GDB's frames from the crash up to
		// PendSV_Handler, before the task's own.
		HandlerFrames []oracleFrame `json:"handler_frames"`
	} `json:"tasks"`
}

type oracleFrame struct {
	Function string `json:"function"`
	Kind     string `json:"kind"`
}

// taskScore is one build's per-task result against GDB.
type taskScore struct {
	build                     string
	tasks, found, exact, tail int
	accuracy                  float64
	mismatches                []string
}

// scoreRTOSFixture analyses one oracle dump and compares every thread with
// GDB's backtrace of the same task (its tail-call frames, which GDB
// synthesizes from DWARF call-site information and no return-address walk
// can see, left out).
func scoreRTOSFixture(t *testing.T, build string) taskScore {
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/" + build + ".elf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(filepath.Join(rtosFixtures, build+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var o oracleTasks
	b, err := os.ReadFile(filepath.Join(rtosFixtures, build+".tasks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if r.RTOS == nil || len(r.Threads) == 0 {
		t.Fatalf("%s: no threads found", build)
	}
	if !r.Threads[0].Current || fmt.Sprint(r.Threads[0].Frames) != fmt.Sprint(r.Frames) {
		t.Errorf("%s: the current thread is not first or its frames differ from the report's", build)
	}
	byName := map[string]report.ThreadJSON{}
	for _, th := range r.Threads {
		byName[th.Name] = th
	}
	s := taskScore{build: build, tasks: len(o.Tasks)}
	for _, w := range o.Tasks {
		th, ok := byName[w.Name]
		if !ok {
			t.Errorf("%s: task %s not found", build, w.Name)
			continue
		}
		if th.State != w.State || th.Priority == nil || *th.Priority != w.Priority || th.Current != w.Current {
			t.Errorf("%s: task %s: %s prio %s current %v, GDB/kernel say %s prio %d current %v", build, w.Name, th.State, report.PriorityText(th), th.Current, w.State, w.Priority, w.Current)
			continue
		}
		s.found++
		var truth []string
		for _, f := range append(w.HandlerFrames, w.Frames...) {
			switch f.Kind {
			case "tailcall":
				s.tail++
			case "exception":
			default:
				truth = append(truth, f.Function)
			}
		}
		cand := score.CandidateNames(th.Frames, true)
		sc := score.ScoreNames(truth, cand)
		s.accuracy += sc.FrameAccuracy
		if sc.Exact {
			s.exact++
		} else {
			s.mismatches = append(s.mismatches, fmt.Sprintf("%s: got %v, GDB %v", w.Name, cand, truth))
		}
	}
	s.accuracy /= float64(max(s.tasks, 1))
	return s
}

// The per-task accuracy on the FreeRTOS-lookalike fixtures (README,
// "RTOS threads"): every task found with GDB's name, state and priority,
// and the auto walk of each compared with GDB's backtrace of the same
// task. Run with -v for the table.
func TestRTOSThreadsAgainstGDB(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(rtosFixtures, "*.tasks.json"))
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	sort.Strings(paths)
	var rows []string
	total, exact := 0, 0
	for _, p := range paths {
		build := strings.TrimSuffix(filepath.Base(p), ".tasks.json")
		s := scoreRTOSFixture(t, build)
		total += s.tasks
		exact += s.exact
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %d | %.1f%% | %d |", build, s.tasks, s.found, s.exact, 100*s.accuracy, s.tail))
		for _, m := range s.mismatches {
			t.Logf("%s: %s", build, m)
		}
	}
	t.Logf("\n| build | tasks | name, state, priority = oracle | backtrace = GDB | frame accuracy | GDB tail-call frames left out |\n|---|---|---|---|---|---|\n%s\n| all | %d | | %d | | |", strings.Join(rows, "\n"), total, exact)
	// Every mismatch is explained in the README; a regression shows here.
	if exact < total*minExactPercent/100 {
		t.Errorf("only %d of %d task backtraces equal GDB's (want at least %d%%)", exact, total, minExactPercent)
	}
}

const minExactPercent = 100

// BenchmarkRTOSAnalyze is one whole analysis of a 13-task FreeRTOS dump
// with an Analyzer (as analyze does for many dumps): the crash's walk,
// thread discovery and the auto walk of every task, symbolized.
func BenchmarkRTOSAnalyze(b *testing.B) {
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	if err != nil {
		b.Fatal(err)
	}
	d, err := crashdump.Load(filepath.Join(rtosFixtures, "gcc-m3-O2.json"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAnalyzer(elf, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := a.Analyze(d)
		if err != nil || len(r.Threads) != 13 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRTOSAnalyzeScratch is BenchmarkRTOSAnalyze as a batch's worker
// runs it: the gcc-m4f-O2 dump of the RTOS batch, each analysis reusing
// the previous one's memory (Scratch).
func BenchmarkRTOSAnalyzeScratch(b *testing.B) {
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/gcc-m4f-O2.elf")
	if err != nil {
		b.Fatal(err)
	}
	d, err := crashdump.Load(filepath.Join(rtosFixtures, "gcc-m4f-O2.json"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAnalyzer(elf, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var s Scratch
	b.ReportAllocs()
	for b.Loop() {
		r, err := a.AnalyzeScratch(d, &s)
		if err != nil || len(r.Threads) != 13 {
			b.Fatal(err)
		}
	}
}

// The crashing thread's name joins the bucket signature (and its key), so
// the same fault in two tasks is two buckets; without an RTOS the key is
// unchanged.
func TestSignatureHasCrashingThread(t *testing.T) {
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(filepath.Join(rtosFixtures, "gcc-m3-O2.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := bucket.SignatureOf(r)
	if s.Thread != "net" || !strings.HasSuffix(s.Key(), "|thread=net") {
		t.Errorf("signature %+v key %q", s, s.Key())
	}
	r.Threads = nil
	if s2 := bucket.SignatureOf(r); s2.Thread != "" || strings.Contains(s2.Key(), "thread") {
		t.Errorf("without threads: %+v", s2)
	}
}

// The HTML page shows the thread table with one stack-usage bar per task
// (the overflowed one red) and each task's backtrace; the text report has a
// section per thread, the crashing one first.
func TestRTOSThreadsRendered(t *testing.T) {
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/gcc-m4f-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(filepath.Join(rtosFixtures, "gcc-m4f-O2.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	if err := htmlout.Write(&h, r, d, htmlout.Options{}); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	if n := strings.Count(page, `<div class="bar">`); n != 13 {
		t.Errorf("%d stack bars, want 13", n)
	}
	if strings.Count(page, `class="over"`) != 1 || !strings.Contains(page, "dsp_filter_step") {
		t.Errorf("HTML lacks the overflow bar or a task's backtrace")
	}
	var txt strings.Builder
	if err := textout.Write(&txt, r); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	for _, want := range []string{"Threads (freertos, layouts from debug types): 13", "Thread 1: net (running, priority 3)",
		"mutex lock (0x", "held by lo", "5 (base 1)", "OVERFLOW", "Stop: reached the task entry"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if strings.Index(out, "Thread 1: net") > strings.Index(out, "Thread 2:") {
		t.Errorf("the crashing thread is not first")
	}
}

// The stripped look-alike builds (no debug information: the task layout
// from the default layout checked against the kernel's invariants, the
// names from the symbol table) against GDB's backtrace of the same dump
// with DWARF: every task found with its state and priority, every
// backtrace equal once GDB's inlined frames (which need DWARF) are left
// out and GCC's clone suffixes (.constprop.0) are cut.
func TestRTOSThreadsStrippedAgainstGDB(t *testing.T) {
	for _, build := range []string{"gcc-m3-O2", "gcc-m3-O2-cfg", "gcc-m4f-O2-mpu"} {
		elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/" + build + "-strip.elf")
		if err != nil {
			t.Fatal(err)
		}
		d, err := crashdump.Load(filepath.Join(rtosFixtures, build+".json"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Analyze(elf, d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var o oracleTasks
		b, err := os.ReadFile(filepath.Join(rtosFixtures, build+".tasks.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		if r.RTOS == nil || r.RTOS.Source != "default layout" {
			t.Fatalf("%s-strip: rtos %+v", build, r.RTOS)
		}
		byName := map[string]report.ThreadJSON{}
		for _, th := range r.Threads {
			byName[th.Name] = th
		}
		exact := 0
		for _, w := range o.Tasks {
			th, ok := byName[w.Name]
			if !ok || th.State != w.State || th.Priority == nil || *th.Priority != w.Priority {
				t.Errorf("%s-strip: task %s: found %v, %s prio %s; GDB/kernel say %s prio %d", build, w.Name, ok, th.State, report.PriorityText(th), w.State, w.Priority)
				continue
			}
			var truth []string
			for _, f := range append(w.HandlerFrames, w.Frames...) {
				if f.Kind != "tailcall" && f.Kind != "exception" && f.Kind != "inlined" {
					truth = append(truth, f.Function)
				}
			}
			cand := score.CandidateNames(th.Frames, false)
			for i, c := range cand {
				if j := strings.IndexByte(c, '.'); j > 0 {
					cand[i] = c[:j]
				}
			}
			if score.ScoreNames(truth, cand).Exact {
				exact++
			} else {
				t.Errorf("%s-strip: %s: got %v, GDB %v", build, w.Name, cand, truth)
			}
		}
		if exact != len(o.Tasks) {
			t.Errorf("%s-strip: %d of %d task backtraces equal GDB's", build, exact, len(o.Tasks))
		}
	}
}
