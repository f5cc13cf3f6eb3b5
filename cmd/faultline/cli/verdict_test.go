package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type stackVerdictJSON struct {
	Overflow bool     `json:"overflow"`
	Stack    string   `json:"stack"`
	Evidence []string `json:"evidence"`
}

// emulateVerdict emulates elf (with the --set/--flags given), analyzes the
// dump and returns its stack_verdict (nil when absent) and the text report.
func emulateVerdict(t *testing.T, elf string, args ...string) (*stackVerdictJSON, string) {
	t.Helper()
	dump := filepath.Join(t.TempDir(), "d.json")
	out, errOut, code := run(t, "", append([]string{"emulate", "--elf", elf, "-o", dump}, args...)...)
	if code != 0 {
		t.Fatalf("emulate %s %v: exit %d: %s%s", elf, args, code, out, errOut)
	}
	out, errOut, code = run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, errOut)
	}
	var r struct {
		StackVerdict *stackVerdictJSON `json:"stack_verdict"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	text, _, _ := run(t, "", "analyze", "--elf", elf, dump)
	return r.StackVerdict, text
}

// Issue 24, item 4: every scenario built for a stack overflow is named as
// one, with its evidence; the emulated dump holds the MPU registers the
// guard was set with.
func TestStackVerdictEmulated(t *testing.T) {
	skipWithoutEmulator(t)
	// The matrix's stack_guard: the main stack runs into its MPU guard
	// (_stack_guard), on every build with an MPU (not v6-M).
	elfs, err := filepath.Glob(filepath.Join(repo, "firmware-samples/matrix/build/*.elf"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range elfs {
		if strings.Contains(filepath.Base(e), "-m0") {
			continue
		}
		n++
		v, text := emulateVerdict(t, e, "--set", "crash_scenario=14")
		if want := (&stackVerdictJSON{true, "main", []string{"MPU guard"}}); !reflect.DeepEqual(v, want) {
			t.Errorf("%s stack_guard: verdict %+v, want %+v", filepath.Base(e), v, want)
		} else if !strings.Contains(text, "\nStack overflow: main (evidence: MPU guard)\n  the main stack overflowed into its MPU guard: MemManage fault at 0x") {
			t.Errorf("%s: text lacks the verdict:\n%.900s", filepath.Base(e), text)
		}
	}
	if n < 40 {
		t.Errorf("only %d matrix builds", n)
	}
	for _, c := range []struct {
		elf  string
		args []string
		want stackVerdictJSON
	}{
		// Unbounded recursion on v6-M runs the SP below RAM: lockup.
		{"emu/testdata/lockup-m0.elf", nil, stackVerdictJSON{true, "main", []string{"lockup", "SP below RAM"}}},
		// A PSP thread's recursion stacks into its 32-byte guard (MSTKERR).
		{"emu/testdata/checks-m4.elf", []string{"--set", "crash_scenario=8"}, stackVerdictJSON{true, "process", []string{"MPU guard"}}},
		// The same with MemManage disabled: the core locks up.
		{"emu/testdata/checks-m4.elf", []string{"--set", "crash_scenario=9"}, stackVerdictJSON{true, "process", []string{"MPU guard", "lockup"}}},
	} {
		v, _ := emulateVerdict(t, filepath.Join(repo, c.elf), c.args...)
		if !reflect.DeepEqual(v, &c.want) {
			t.Errorf("%s %v: verdict %+v, want %+v", c.elf, c.args, v, c.want)
		}
	}
	// Crashes that are no overflow, on the same firmware: no verdict.
	for _, s := range []string{"1", "4", "10", "12", "16"} {
		e := filepath.Join(repo, "firmware-samples/matrix/build/gcc-m4f-O2.elf")
		if v, _ := emulateVerdict(t, e, "--set", "crash_scenario="+s); v != nil {
			t.Errorf("gcc-m4f-O2 scenario %s: verdict %+v on a crash that is no stack overflow", s, *v)
		}
	}
}
