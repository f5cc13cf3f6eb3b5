package matrix

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/score"
)

var update = flag.Bool("update", false, "rewrite the golden files in fixtures/matrix/golden")

func exact() Result { return Result{Score: score.Score{Exact: true, FrameAccuracy: 1}} }

func failed(acc float64, bogus int, frames ...string) Result {
	return Result{Score: score.Score{FrameAccuracy: acc, Bogus: bogus}, Frames: frames}
}

// sampleReport is a hand-made run with every kind of outcome: exact,
// known and new failures, bogus frames, a strategy error, an invalid case.
func sampleReport() *Report {
	truth := []string{"crash_store", "deep2", "deep1", "main", "Reset_Handler"}
	return &Report{
		Schema:     Schema,
		Strategies: []string{"auto", "cfi", "exidx"},
		Builds:     []string{"gcc-m3-O2", "clang-m0-Os"},
		Cases: []CaseResult{
			{Build: "gcc-m3-O2", Scenario: "deep_chain", Truth: truth, Insns: 1200,
				Reproduce: "faultline emulate --elf build/gcc-m3-O2.elf -o case.json --cpu cortex-m3 --set crash_scenario=1",
				Results:   map[string]Result{"auto": exact(), "cfi": exact(), "exidx": failed(0.2, 0, "crash_store")}},
			{Build: "gcc-m3-O2", Scenario: "recursion", Truth: truth, Insns: 5400,
				Reproduce: "faultline emulate --elf build/gcc-m3-O2.elf -o case.json --cpu cortex-m3 --set crash_scenario=2",
				Results: map[string]Result{"auto": failed(0.6, 2, "crash_store", "deep2", "deep1", "", "stale_fn"), "cfi": exact(),
					"exidx": failed(0.2, 0, "crash_store")}},
			{Build: "gcc-m3-O2", Scenario: "isr", Results: map[string]Result{},
				Error:     "did not fault: instruction limit of 1000000 reached (after 1000000 instructions, pc=0x000001f0)",
				Reproduce: "faultline emulate --elf build/gcc-m3-O2.elf -o case.json --cpu cortex-m3 --set crash_scenario=3"},
			{Build: "clang-m0-Os", Scenario: "deep_chain", Truth: truth, Insns: 1300,
				Results: map[string]Result{"auto": exact(), "cfi": {Error: "no FDE covers 0x00000120", Frames: []string{}}, "exidx": exact()}},
			{Build: "clang-m0-Os", Scenario: "recursion", Truth: truth, Insns: 5500,
				Results: map[string]Result{"auto": exact(), "cfi": exact(), "exidx": exact()}},
		},
	}
}

const sampleKnown = `# the sample report's known failures
gcc-* * exidx: no .ARM.exidx | see <README>
clang-m0-Os * cfi: stripped: no .debug_frame
* isr auto: the ISR scenario is flaky
clang-* recursion exidx: fixed long ago
nothing * auto: matches no case at all
`

func loadSampleKnown(t *testing.T) *Known {
	t.Helper()
	k, err := ParseKnown("known-failures.txt", []byte(sampleKnown), []string{"auto", "cfi", "exidx"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestApplyKnownAndAggregate(t *testing.T) {
	r := sampleReport()
	r.ApplyKnown(loadSampleKnown(t), false)
	get := func(c int, s string) Result { return r.Cases[c].Results[s] }
	if res := get(0, "exidx"); res.Known != "no .ARM.exidx | see <README>" || res.New {
		t.Errorf("known failure: %+v", res)
	}
	if res := get(1, "auto"); !res.New || res.Known != "" {
		t.Errorf("new failure: %+v", res)
	}
	if res := get(3, "cfi"); res.Known != "stripped: no .debug_frame" {
		t.Errorf("strategy error covered by an entry: %+v", res)
	}
	if res := get(0, "auto"); res.New || res.Known != "" {
		t.Errorf("exact result marked: %+v", res)
	}
	// Line 5 covers exact results only, line 6 nothing; line 4 covers an
	// invalid case, about which the run says nothing.
	var stale []int
	for _, e := range r.Stale {
		stale = append(stale, e.Line)
	}
	if len(stale) != 2 || stale[0] != 5 || stale[1] != 6 {
		t.Errorf("stale lines %v, want [5 6]", stale)
	}
	r.ApplyKnown(loadSampleKnown(t), true)
	if len(r.Stale) != 1 || r.Stale[0].Line != 5 {
		t.Errorf("partial run: stale %v, want only line 5", r.Stale)
	}
	if !r.Failing() {
		t.Error("a new failure and an invalid case: not failing")
	}

	tb := r.Aggregate()
	if strings.Join(tb.Builds, ",") != "gcc-m3-O2,clang-m0-Os" {
		t.Errorf("builds %v", tb.Builds)
	}
	a := tb.Rows["gcc-m3-O2"]["auto"]
	if a.Cases != 2 || a.Exact != 1 || math.Abs(a.FrameAccuracy-0.8) > 1e-9 || a.Bogus != 2 || a.New != 1 || a.Known != 0 {
		t.Errorf("gcc-m3-O2 auto %+v", a)
	}
	e := tb.Total["exidx"]
	if e.Cases != 4 || e.Exact != 2 || math.Abs(e.FrameAccuracy-0.6) > 1e-9 || e.Known != 2 {
		t.Errorf("total exidx %+v", e)
	}
	if tb.Valid[""] != 4 || tb.Invalid[""] != 1 || tb.Invalid["gcc-m3-O2"] != 1 || tb.Valid["clang-m0-Os"] != 2 {
		t.Errorf("valid %v invalid %v", tb.Valid, tb.Invalid)
	}
	if got := a.String(); got != "1/2, 80%, 2" {
		t.Errorf("cell %q", got)
	}
	if got := (&Cell{Cases: 3, Exact: 2, FrameAccuracy: 0.9999}).String(); got != "2/3, 99%, 0" {
		t.Errorf("an imperfect score reads %q, want 99%% (never rounded up to 100%%)", got)
	}
	r.Summarize()
	if s := r.Summary; s.Cases != 5 || s.Invalid != 1 || s.NewFailures != 1 || s.KnownFailures != 3 || len(s.StaleKnown) != 1 {
		t.Errorf("summary %+v", s)
	}

	clean := sampleReport()
	clean.Cases = clean.Cases[3:]
	clean.ApplyKnown(loadSampleKnown(t), false)
	if clean.Failing() {
		t.Error("only known failures: failing")
	}
	clean.ApplyKnown(nil, false)
	if !clean.Failing() || clean.Stale != nil {
		t.Error("no known-failures file: the cfi error is not a new failure")
	}
}

// TestRenderGolden renders the sample report in every format and compares
// with fixtures/matrix/golden (refresh with go test -update).
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		file   string
		render func(*Report, *bytes.Buffer) error
	}{
		{"sample.txt", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b) }},
		{"sample.md", func(r *Report, b *bytes.Buffer) error { return r.WriteMarkdown(b, false) }},
		{"sample-readme.md", func(r *Report, b *bytes.Buffer) error { return r.WriteMarkdown(b, true) }},
		{"sample.json", func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{"sample.html", func(r *Report, b *bytes.Buffer) error { return r.WriteHTML(b) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := sampleReport()
			r.ApplyKnown(loadSampleKnown(t), false)
			r.Summarize()
			var b bytes.Buffer
			if err := tc.render(r, &b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(repo, "fixtures/matrix/golden", tc.file)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(want, b.Bytes()) {
				t.Errorf("%s changed (run go test -update and review the diff):\n%s", tc.file, b.String())
			}
		})
	}
}

// TestJSONContract: the faultline.matrix/1 fields the issue fixes are
// there, with their names and types, whatever else is added.
func TestJSONContract(t *testing.T) {
	r := sampleReport()
	r.ApplyKnown(loadSampleKnown(t), false)
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Cases  []map[string]json.RawMessage
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "faultline.matrix/1" || len(doc.Cases) != 5 {
		t.Fatalf("schema %q, %d cases", doc.Schema, len(doc.Cases))
	}
	for i, c := range doc.Cases {
		var build, scen string
		var results map[string]map[string]any
		if json.Unmarshal(c["build"], &build) != nil || json.Unmarshal(c["scenario"], &scen) != nil || json.Unmarshal(c["results"], &results) != nil || results == nil {
			t.Fatalf("case %d: %s", i, b.String())
		}
		for s, res := range results {
			_, isBool := res["exact"].(bool)
			_, isNum := res["frame_accuracy"].(float64)
			_, isNum2 := res["bogus"].(float64)
			if !isBool || !isNum || !isNum2 {
				t.Errorf("case %d %s: %v", i, s, res)
			}
		}
	}
}

func TestReplaceBetweenMarkers(t *testing.T) {
	const b, e = "<!-- matrix:begin -->", "<!-- matrix:end -->"
	doc := "# x\n\n" + b + "\nold\ntable\n" + e + "\n\nrest\n"
	got, err := ReplaceBetweenMarkers(doc, b, e, "new table")
	if err != nil || got != "# x\n\n"+b+"\nnew table\n"+e+"\n\nrest\n" {
		t.Errorf("%q, %v", got, err)
	}
	if again, _ := ReplaceBetweenMarkers(got, b, e, "new table\n"); again != got {
		t.Errorf("not idempotent: %q", again)
	}
	for _, bad := range []string{"no markers", e + "\n" + b, b + b + e} {
		if _, err := ReplaceBetweenMarkers(bad, b, e, "x"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	file := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateBetweenMarkers(file, b, e, "new table"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(file); !strings.Contains(string(data), b+"\nnew table\n"+e) {
		t.Errorf("file: %q", data)
	}
}
