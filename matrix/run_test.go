package matrix

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/emu/uc"
)

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

// TestRunner runs valid and broken cases: a good crash, a trigger that
// does not fault, a crash that is not the expected one, an ELF that is
// missing and a file that is not an ELF. Broken cases are invalid with a
// clear error; nothing panics; the report is the same with 1 and 3 jobs.
func TestRunner(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	elf, err := filepath.Abs(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.elf"), []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `{"schema": "faultline.matrixspec/1",
 "builds": [{"name": "gcc-m3-O2", "elf": "` + filepath.ToSlash(elf) + `", "cpu": "cortex-m3", "features": ["ok"]},
            {"name": "junk", "elf": "junk.elf", "features": ["ok"]},
            {"name": "missing", "elf": "missing.elf", "features": ["ok"]}],
 "scenarios": [
  {"name": "udf", "trigger": {"set": ["crash_scenario=3"]},
   "expect": {"exception": "HardFault", "causes": ["CFSR.UNDEFINSTR", "HFSR.FORCED"], "function": "udf_assert_fail"}},
  {"name": "null_fnptr", "trigger": {"set": ["crash_scenario=2"]}, "expect": {"function": "??"}},
  {"name": "idle", "trigger": {"set": ["crash_scenario=99"], "max_insns": 100000}},
  {"name": "wrong", "trigger": {"set": ["crash_scenario=3"]}, "expect": {"causes": ["CFSR.PRECISERR"], "function": "main"}}]}`
	file := filepath.Join(dir, "m.json")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Cases(Filter{})
	done := 0
	r := (&Runner{Jobs: 3, Done: func(*CaseResult) { done++ }}).Run(context.Background(), cases)
	if done != len(cases) || len(r.Cases) != 12 {
		t.Fatalf("%d done, %d results, want 12", done, len(r.Cases))
	}
	byName := map[string]*CaseResult{}
	for i := range r.Cases {
		c := &r.Cases[i]
		if want := cases[i].Name(); c.Build+" "+c.Scenario != want {
			t.Errorf("case %d is %s %s, want %s (spec order)", i, c.Build, c.Scenario, want)
		}
		byName[c.Build+" "+c.Scenario] = c
	}
	for _, name := range []string{"gcc-m3-O2 udf", "gcc-m3-O2 null_fnptr"} {
		c := byName[name]
		if c.Invalid() {
			t.Fatalf("%s: invalid: %s", name, c.Error)
		}
		if len(c.Results) != len(StrategyNames()) || !c.Results["auto"].Exact || c.Insns == 0 {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if tr := strings.Join(byName["gcc-m3-O2 udf"].Truth, " "); tr != "udf_assert_fail udf_check udf_process scenario_udf run_scenario main Reset_Handler" {
		t.Errorf("truth %s", tr)
	}
	for name, want := range map[string]string{
		"gcc-m3-O2 idle":  "did not fault: instruction limit of 100000 reached",
		"gcc-m3-O2 wrong": "not the expected crash: causes [CFSR.UNDEFINSTR HFSR.FORCED], want CFSR.PRECISERR; faulting function udf_assert_fail, want main",
		"junk udf":        "cannot open the ELF",
		"missing idle":    "cannot open the ELF: open " + filepath.Join(dir, "missing.elf"),
	} {
		c := byName[name]
		if !c.Invalid() || !strings.Contains(c.Error, want) || len(c.Results) != 0 {
			t.Errorf("%s: error %q, want %q and no results", name, c.Error, want)
		}
	}
	if rp := byName["gcc-m3-O2 idle"].Reproduce; !strings.Contains(rp, "--set crash_scenario=99 --max-insns 100000") || !strings.Contains(rp, "--cpu cortex-m3") {
		t.Errorf("reproduce %q", rp)
	}

	// The same report with one worker.
	r1 := (&Runner{Jobs: 1}).Run(context.Background(), cases)
	var a, b bytes.Buffer
	r.WriteJSON(&a)
	r1.WriteJSON(&b)
	if a.String() != b.String() {
		t.Errorf("1 job and 3 jobs differ:\n%s\n%s", a.String(), b.String())
	}

	// A cancelled run reports every case as not run.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rc := (&Runner{}).Run(ctx, cases[:2])
	for _, c := range rc.Cases {
		if !strings.Contains(c.Error, "not run") {
			t.Errorf("cancelled: %+v", c)
		}
	}
}

func TestReproduceQuoting(t *testing.T) {
	s, err := ParseSpec("m.json", []byte(`{"schema": "faultline.matrixspec/1", "builds": [{"name": "b", "elf": "my fw.elf"}],
 "scenarios": [{"name": "s", "trigger": {"set": ["x=1"], "call": "f", "timeout": "2s"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases(Filter{})[0]
	if got := Reproduce(c.ELF, c.Scenario.Trigger); got != "faultline emulate --elf 'my fw.elf' -o case.json --set x=1 --call f --timeout 2s" {
		t.Errorf("%s", got)
	}
}

// TestScoreSymbols: against the emulator's truth (raw ELF symbols, no
// inlined frames) a C++ backtrace is compared by raw symbol, inlined
// frames left out and a PC in the gap past a symbol unnamed; against a
// truth with inlined frames (GDB's), by readable name.
func TestScoreSymbols(t *testing.T) {
	r := &report.Report{Frames: []report.FrameJSON{
		{Function: "HardFault_Handler", Symbol: "HardFault_Handler", Kind: "normal"},
		{Kind: "exception"},
		{Function: "Journal::~Journal()", Symbol: "_ZN7JournalD1Ev", Kind: "normal"},
		{Function: "flush", Symbol: "_Z3runv", Kind: "inlined"},
		{Function: "run()", Symbol: "_Z3runv", Kind: "normal"},
		{Symbol: "after_main", Gap: true, Kind: "normal"},
	}}
	emuTruth := &crashdump.Truth{Source: "emulator-shadow-stack", Frames: []crashdump.TruthFrame{
		{Function: "HardFault_Handler"}, {Kind: "exception"},
		{Function: "_ZN7JournalD1Ev"}, {Function: "_Z3runv"}, {Function: ""}}}
	s, cand := Score(r, emuTruth)
	if !s.Exact || strings.Join(cand, ",") != "_ZN7JournalD1Ev,_Z3runv," {
		t.Errorf("emulator truth: %+v %q", s, cand)
	}
	gdbTruth := &crashdump.Truth{Source: "gdb", Frames: []crashdump.TruthFrame{
		{Function: "HardFault_Handler"}, {Kind: "exception"},
		{Function: "Journal::~Journal()"}, {Function: "flush"}, {Function: "run()"}, {Function: ""}}}
	if s, _ := Score(r, gdbTruth); !s.Exact {
		t.Errorf("GDB truth: %+v", s)
	}
	emuTruth.Frames[3].Function = "_Z5otherv"
	if s, _ := Score(r, emuTruth); s.Exact || s.Bogus != 1 || s.FrameAccuracy != 1.0/3 {
		t.Errorf("wrong caller: %+v", s)
	}
}
