package regress

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/emu/uc"
)

const samples = "../firmware-samples"

func skipWithoutEmulator(t *testing.T) {
	t.Helper()
	e, err := uc.Open(uc.CortexM3)
	if errors.Is(err, uc.ErrUnavailable) {
		t.Skip("emulation unavailable (built without cgo)")
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestRun runs one scenario of each outcome: a pass, a wrong expectation,
// a firmware that never faults, a crash handler that agrees with the
// harness and one that does not (the LR-clobbering build).
func TestRegressRun(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	abs := func(p string) string {
		a, err := filepath.Abs(filepath.Join(samples, p))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	spec := `{"schema": "faultline.regress/1", "elf": "` + abs("build/gcc-m3-O2.elf") + `", "scenarios": [
	  {"name": "udf", "trigger": {"set": ["crash_scenario=3"]},
	   "expect": {"fault": {"exception": "HardFault", "causes": ["CFSR.UNDEFINSTR"]},
	              "frames": ["udf_assert_fail", "udf_check", {"function": "udf_process", "file": "main.c", "line": 148}]}},
	  {"name": "udf wrong", "trigger": {"set": ["crash_scenario=3"]}, "expect": {"frames": ["udf_assert_fail", "udf_process"]}},
	  {"name": "idle", "trigger": {"set": ["crash_scenario=0"], "max_insns": 50000}, "expect": {"frames": ["main"]}},
	  {"name": "capture", "elf": "` + abs("capture/build/gcc-m3-O2-capture.elf") + `", "trigger": {"set": ["crash_scenario=5"]},
	   "handler": {"check": true}},
	  {"name": "clobbered", "elf": "` + abs("regress/build/gcc-m3-O2-clobber-lr.elf") + `", "trigger": {"set": ["crash_scenario=1"]},
	   "expect": {"frames": ["null_store", "deep5_mixed"]}, "handler": {"check": true}}
	]}`
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	sum := Run(context.Background(), s, Options{Done: func(r *Result) { done = append(done, r.Scenario.Name) }})
	if len(sum.Results) != 5 || len(done) != 5 || sum.Passed != 2 || sum.Failed != 2 || sum.Errors != 1 || sum.OK() {
		t.Fatalf("summary: %d results (%q reported), %d passed, %d failed, %d errors", len(sum.Results), done, sum.Passed, sum.Failed, sum.Errors)
	}
	want := []Status{StatusPass, StatusFail, StatusError, StatusPass, StatusFail}
	for i, r := range sum.Results {
		if r.Status != want[i] {
			t.Errorf("%s: %v, want %v\n%s", r.Scenario.Name, r.Status, want[i], r.Text(true))
		}
	}
	if r := sum.Results[1]; len(r.Problems) != 1 || r.Problems[0].Summary != "backtrace: frame #1 is udf_check (./src/main.c:142), the spec expects udf_process" {
		t.Errorf("wrong expectation: %+v", r.Problems)
	}
	if r := sum.Results[2]; r.ErrKind != "no-fault" || !strings.Contains(r.Err.Error(), "did not fault") ||
		!strings.Contains(r.Details(), "--set crash_scenario=0 --max-insns 50000") {
		t.Errorf("no fault: %v (%s)\n%s", r.Err, r.ErrKind, r.Details())
	}
	if r := sum.Results[3]; !strings.Contains(r.Handler, "SYS_EXIT") || len(r.Frames) < 8 {
		t.Errorf("capture: handler %q, %d frames", r.Handler, len(r.Frames))
	}
	r := sum.Results[4]
	if len(r.Problems) == 0 || r.Problems[0].Kind != "handler" ||
		!strings.HasPrefix(r.Problems[0].Summary, "handler: the device's crash handler reports frame #0 as ?? at 0x") ||
		!strings.HasSuffix(r.Problems[0].Summary, "the harness saw null_store (./src/main.c:56)") {
		t.Errorf("clobbered LR: %+v", r.Problems)
	}
	if d := collapse(r.Details()); !strings.Contains(d, "- 1 0x000001d8 deep5_mixed ./src/main.c:63 |") ||
		!strings.Contains(d, "--set crash_scenario=1 --run-handler > handler.txt") {
		t.Errorf("clobbered LR details:\n%s", r.Details())
	}

	sel := Run(context.Background(), s, Options{Select: func(n string) bool { return n == "udf" }, Unwinder: "stackscan"})
	if len(sel.Results) != 1 || !sel.OK() || sel.Results[0].Unwinder != "stackscan" {
		t.Errorf("Select/Unwinder: %+v", sel.Results)
	}
}

func TestRegressRunInterrupted(t *testing.T) {
	s, err := Parse([]byte(minimal), "spec.json", okELF)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum := Run(ctx, s, Options{})
	if !sum.Interrupted || sum.OK() || len(sum.Results) != 0 {
		t.Errorf("cancelled run: %+v", sum)
	}
	var b strings.Builder
	if err := sum.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "FAIL  spec.json: interrupted after 0 scenarios") {
		t.Errorf("summary %q, %v", b.String(), err)
	}
}
