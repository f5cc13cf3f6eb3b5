package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const repo = "../../.."

func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// fixtureELF maps fixtures/qemu/<build>-<scenario>.json to its ELF.
func fixtureELF(t *testing.T, dump string) string {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(dump), ".json")
	i := strings.LastIndex(base, "-")
	if i < 0 {
		t.Fatalf("fixture name %s is not <build>-<scenario>", base)
	}
	return filepath.Join(repo, "firmware-samples/build", base[:i]+".elf")
}

func oracleFixtures(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repo, "fixtures/qemu/*.json"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no oracle fixtures: %v", err)
	}
	return m
}

// truthFunctions returns the oracle's function list with exception
// pseudo-frames marked as "<exception>".
func truthFunctions(tr *crashdump.Truth) []string {
	var out []string
	for _, f := range tr.Frames {
		if f.Kind == "exception" {
			out = append(out, "<exception>")
			continue
		}
		out = append(out, f.Function)
	}
	return out
}

// TestAnalyzeOracleFixtures checks, on every QEMU+GDB fixture, that analyze
// names the exception the oracle stopped in and that every frame it prints
// (exception frames and inlined frames included) is the oracle's.
func TestAnalyzeOracleFixtures(t *testing.T) {
	for _, dump := range oracleFixtures(t) {
		name := strings.TrimSuffix(filepath.Base(dump), ".json")
		t.Run(name, func(t *testing.T) {
			out, errs, code := run(t, "", "analyze", "--format", "json", "--elf", fixtureELF(t, dump), dump)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var r report.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.Schema != "faultline.analysis/1" || r.Fault.Exception != "HardFault" || r.Fault.Number != 3 {
				t.Fatalf("schema %q exception %q number %d", r.Schema, r.Fault.Exception, r.Fault.Number)
			}
			hasForced := false
			for _, c := range r.Fault.Causes {
				hasForced = hasForced || (c.Register == "HFSR" && c.Bit == "FORCED")
			}
			if !hasForced {
				t.Errorf("causes %+v lack HFSR.FORCED", r.Fault.Causes)
			}
			d, err := crashdump.Load(dump)
			if err != nil {
				t.Fatal(err)
			}
			want := truthFunctions(d.Truth)
			var got []string
			for _, f := range r.Frames {
				switch f.Kind {
				case "exception":
					got = append(got, "<exception>")
				case "inlined":
					// GDB shows inlined frames too; keep them.
					got = append(got, f.Function)
				default:
					got = append(got, f.Function)
				}
			}
			// Every frame, GDB's inlined frames included.
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("frames differ from GDB's:\n  got    %q\n  oracle %q", got, want)
			}
			for _, f := range r.Frames {
				if f.Method == "" || f.Confidence == "" {
					t.Errorf("frame %d lacks method or confidence: %+v", f.Index, f)
				}
			}
			if r.Stop == "" {
				t.Error("no stop reason")
			}
		})
	}
}

// TestGolden holds the text and JSON reports of one build per scenario.
func TestGolden(t *testing.T) {
	for _, base := range []string{
		"gcc-m3-O2-null_write_deep", "gcc-m3-O2-null_fnptr", "gcc-m3-O2-udf", "gcc-m3-O2-div0",
		"gcc-m3-O2-irq_crash", "gcc-m3-O2-psp_thread", "clang-m4f-O0-fpu_crash", "gcc-m4f-O2-fpu_crash",
	} {
		for _, format := range []string{"text", "json"} {
			t.Run(base+"."+format, func(t *testing.T) {
				dump := filepath.Join(repo, "fixtures/qemu", base+".json")
				out, errs, code := run(t, "", "analyze", "--format", format, "--elf", fixtureELF(t, dump), dump)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				// Paths in the output are relative to this test's directory.
				golden := filepath.Join(repo, "fixtures/golden", base+"."+format)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if out != string(want) {
					t.Errorf("output differs from %s (run go test -update and review the diff):\n%s", golden, out)
				}
			})
		}
	}
}

func TestExitStatuses(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{\"schema\": \"faultline.dump/1\", \"registers\": {\"pc\": "), 0o644)
	notELF := filepath.Join(dir, "x.elf")
	os.WriteFile(notELF, []byte("\x7fELF\x02\x01\x01"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"analyze", "--elf", elf}, ExitUsage, "analyze needs at least one DUMP"},
		{[]string{"regress", "a.json", "b.json"}, ExitUsage, "regress takes exactly one SPEC, got 2 arguments"},
		{[]string{"emulate", "--elf", elf, "--max-insns", "-4", "-o", "x.json"}, ExitUsage, `--max-insns "-4": want a whole number, 0 or more`},
		{[]string{"analyze", garbage}, ExitUsage, "--elf is required"},
		{[]string{"analyze", "--elf", elf, "--unwinder", "bogus", garbage}, ExitUsage, "--unwinder"},
		{[]string{"analyze", "--elf", elf, "--format", "xml", garbage}, ExitUsage, "--format"},
		{[]string{"analyze", "--nope"}, ExitUsage, "unknown flag"},
		{[]string{"frobnicate"}, ExitUsage, "unknown command"},
		{[]string{"analyze", "--elf", elf, garbage}, ExitInput, "garbage.json"},
		{[]string{"analyze", "--elf", elf, filepath.Join(dir, "missing.json")}, ExitInput, "missing.json"},
		{[]string{"analyze", "--elf", notELF, garbage}, ExitInput, "x.elf"},
		{[]string{"symbolize", "--elf", elf, "zz"}, ExitInput, "\"zz\""},
		{[]string{"info"}, ExitUsage, "--elf"},
	}
	for _, c := range cases {
		_, errs, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) || strings.Contains(errs, "strconv") || strings.Contains(errs, "arg(s)") {
			t.Errorf("%q: exit %d stderr %q; want exit %d mentioning %q (in a user's words)", c.args, code, errs, c.code, c.msg)
		}
		if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
			t.Errorf("%q panicked: %s", c.args, errs)
		}
	}
}

func TestSeveralDumps(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	a := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-udf.json")
	b := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-div0.json")
	out, errs, code := run(t, "", "analyze", "--format", "json", "--elf", elf, a, b)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	var rs []report.Report
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 2 {
		t.Fatalf("want a JSON array of 2 reports: %v", err)
	}
	out, _, code = run(t, "", "analyze", "--elf", elf, a, "/nonexistent.json", b)
	if code != ExitInput || strings.Count(out, "Backtrace") != 2 {
		t.Errorf("a bad dump among good ones: exit %d, %d reports", code, strings.Count(out, "Backtrace"))
	}
}

func TestSymbolizeStdin(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out1, _, code1 := run(t, "", "symbolize", "--elf", elf, "0x1b2", "1dc")
	out2, _, code2 := run(t, "0x1b2\n1dc\n", "symbolize", "--elf", elf)
	if code1 != 0 || code2 != 0 || out1 != out2 || !strings.Contains(out1, "null_store") {
		t.Errorf("args %q (exit %d) vs stdin %q (exit %d)", out1, code1, out2, code2)
	}
	out, _, code := run(t, "", "symbolize", "--format", "json", "--elf", elf, "0x1b2")
	var v []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v) != 1 {
		t.Errorf("json: exit %d %s", code, out)
	}
}

func TestInfo(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out, errs, code := run(t, "", "info", "--elf", elf)
	if code != 0 || !strings.Contains(strings.ToLower(out), "exidx") {
		t.Errorf("exit %d %s %s", code, out, errs)
	}
	out, _, code = run(t, "", "info", "--format", "json", "--elf", elf)
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Errorf("json: exit %d %s", code, out)
	}
}

func TestCompare(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2-unwind.elf")
	dump := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-unwind-null_write_deep.json")
	out, errs, code := run(t, "", "compare", "--format", "json", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Schema  string `json:"schema"`
		Results []struct {
			Unwinder string `json:"unwinder"`
			Stop     string `json:"stop"`
			Error    string `json:"error"`
			Frames   []report.FrameJSON
		} `json:"results"`
		Truth  map[string]any         `json:"truth"`
		Scores map[string]score.Score `json:"scores"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != "faultline.compare/1" || len(v.Results) != len(analysis.Strategies()) || v.Truth == nil {
		t.Fatalf("schema %q, %d results, truth %v", v.Schema, len(v.Results), v.Truth != nil)
	}
	for _, r := range v.Results {
		s, scored := v.Scores[r.Unwinder]
		if r.Error == "" && (!scored || r.Stop == "") {
			t.Errorf("%s: no score or stop", r.Unwinder)
		}
		// Every strategy but framepointer (this build omits frame pointers)
		// must get this crash right.
		if r.Unwinder != "framepointer" && r.Error == "" && !s.Exact {
			t.Errorf("%s: not exact: %+v stop %s", r.Unwinder, s, r.Stop)
		}
	}
	txt, _, code := run(t, "", "compare", "--elf", elf, dump)
	if code != 0 || !strings.Contains(txt, "truth (qemu-gdb)") || !strings.Contains(txt, "deep5_mixed") {
		t.Errorf("text: exit %d\n%s", code, txt)
	}
	if _, _, code := run(t, "", "compare", "--elf", elf); code != ExitUsage {
		t.Errorf("compare without a dump: exit %d", code)
	}
}
