package matrix

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const repo = ".."

func TestLoadSamplesSpec(t *testing.T) {
	file := filepath.Join(repo, "fixtures/matrix/samples.json")
	s, err := LoadSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Builds) != 4 || len(s.Scenarios) != 9 {
		t.Fatalf("%d builds, %d scenarios", len(s.Builds), len(s.Scenarios))
	}
	cases := s.Cases(Filter{})
	// fpu_crash needs the fpu feature: only the two m4f builds have it.
	if len(cases) != 2*8+2*9 {
		t.Errorf("%d cases, want 34", len(cases))
	}
	if got, want := cases[0].ELF, filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"); got != want {
		t.Errorf("ELF path %q, want %q (relative to the spec)", got, want)
	}
	if cases[0].Name() != "gcc-m3-O2 null_write_deep" || cases[len(cases)-1].Name() != "clang-m4f-O0 fpu_crash" {
		t.Errorf("order: first %q, last %q", cases[0].Name(), cases[len(cases)-1].Name())
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	if b := s.Builds[1]; b.Line() != 7 || b.CPU != "cortex-m4" || b.Features[3] != "fpu" {
		t.Errorf("build 2: %+v (line %d)", b, b.Line())
	}
	if sc := s.Scenarios[6]; sc.Name != "irq_over_idle" || sc.Trigger.IRQ[0] != "23@5000" || sc.Trigger.MaxInsns != 1000000 {
		t.Errorf("scenario 7: %+v", sc)
	}
}

func TestCasesFilterAndRequires(t *testing.T) {
	s, err := ParseSpec("m.json", []byte(`{"schema": "faultline.matrixspec/1",
 "builds": [{"name": "a-m0", "elf": "/abs/a.elf", "features": ["v6m"]},
            {"name": "b-m4", "elf": "b.elf", "features": ["v7m", "fpu", "div"]},
            {"name": "c-m33", "elf": "sub/c.elf", "features": ["v8m"]}],
 "scenarios": [{"name": "plain", "trigger": {}},
               {"name": "fp", "requires": ["fpu", "div"], "trigger": {}},
               {"name": "secure", "requires": ["trustzone"], "trigger": {}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	names := func(cs []Case) string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name())
		}
		return strings.Join(n, ", ")
	}
	if got := names(s.Cases(Filter{})); got != "a-m0 plain, b-m4 plain, b-m4 fp, c-m33 plain" {
		t.Errorf("cases: %s", got)
	}
	if got := names(s.Cases(Filter{Build: "b-*"})); got != "b-m4 plain, b-m4 fp" {
		t.Errorf("--build b-*: %s", got)
	}
	if got := names(s.Cases(Filter{Scenario: "p*"})); got != "a-m0 plain, b-m4 plain, c-m33 plain" {
		t.Errorf("--scenario p*: %s", got)
	}
	if got := s.Cases(Filter{})[0].ELF; got != "/abs/a.elf" {
		t.Errorf("absolute ELF path became %q", got)
	}
	if got := s.Cases(Filter{})[3].ELF; got != filepath.FromSlash("sub/c.elf") {
		t.Errorf("relative ELF path became %q", got)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], `m.json:7: scenario "secure" applies to no build`) {
		t.Errorf("warnings %q", w)
	}
	if err := (Filter{Build: "[x"}).Check(); err == nil {
		t.Error("bad glob: no error")
	}
}

// TestSpecErrors: every malformed spec gives a *SpecError naming the file,
// the line and the problem.
func TestSpecErrors(t *testing.T) {
	const head = `{"schema": "faultline.matrixspec/1",` + "\n"
	const build = ` "builds": [{"name": "b", "elf": "b.elf"}],` + "\n"
	const scen = ` "scenarios": [{"name": "s", "trigger": {}}]}` + "\n"
	for _, tc := range []struct {
		name, spec string
		line       int
		want       string
	}{
		{"syntax", head + build + ` "scenarios": [{"name": "s",, "trigger": {}}]}`, 3, "invalid JSON"},
		{"truncated", head + build + ` "scenarios": [{"name": "s"`, 3, "unexpected end of the file"},
		{"not an object", `["x"]`, 1, "the spec: want an object"},
		{"no schema", `{"builds": []}`, 1, `no "schema"`},
		{"wrong schema", `{` + "\n" + `"schema": "faultline.matrix/1"}`, 2, `want "faultline.matrixspec/1"`},
		{"unknown top-level field", head + build + ` "scenario": []}`, 3, `unknown field "scenario"`},
		{"twice", head + build + build + scen, 3, `"builds" appears twice`},
		{"builds not an array", head + ` "builds": {},` + "\n" + scen, 2, "builds: want an array"},
		{"unknown build field", head + ` "builds": [` + "\n" + `{"name": "b", "elf": "b.elf", "cflags": "-O2"}],` + "\n" + scen, 3, `build 1: unknown field "cflags"`},
		{"type", head + build + ` "scenarios": [{"name": "s", "trigger": {"max_insns": "many"}}]}`, 3, "scenario 1: trigger.max_insns: want uint64, not JSON string"},
		{"negative", head + build + ` "scenarios": [{"name": "s", "trigger": {"max_insns": -1}}]}`, 3, "want uint64"},
		{"no builds", head + ` "builds": [],` + "\n" + scen, 0, "no builds"},
		{"no scenarios", head + build + ` "scenarios": []}`, 0, "no scenarios"},
		{"no elf", head + ` "builds": [{"name": "b"}],` + "\n" + scen, 2, `build "b": no "elf"`},
		{"build name", head + ` "builds": [{"name": "gcc m3", "elf": "x"}],` + "\n" + scen, 2, `build name "gcc m3"`},
		{"empty name", head + ` "builds": [{"elf": "x"}],` + "\n" + scen, 2, `build name ""`},
		{"duplicate build", head + ` "builds": [{"name": "b", "elf": "x"},` + "\n" + ` {"name": "b", "elf": "y"}],` + "\n" + scen, 3, `build "b" is also defined on line 2`},
		{"cpu", head + ` "builds": [{"name": "b", "elf": "x", "cpu": "cortex-a9"}],` + "\n" + scen, 2, `cpu "cortex-a9"`},
		{"irq", head + build + ` "scenarios": [{"name": "s", "trigger": {"irq": ["21"]}}]}`, 3, `scenario "s": trigger: --irq "21"`},
		{"set", head + build + ` "scenarios": [{"name": "s", "trigger": {"set": ["crash_scenario"]}}]}`, 3, `--set "crash_scenario"`},
		{"timeout", head + build + ` "scenarios": [{"name": "s", "trigger": {"timeout": "soon"}}]}`, 3, `--timeout "soon"`},
		{"trigger cpu", head + build + ` "scenarios": [{"name": "s", "trigger": {"cpu": "m4"}}]}`, 3, "the build says which CPU"},
		{"unknown trigger field", head + build + ` "scenarios": [` + "\n\n" + `{"name": "s", "trigger": {"imprecise_store": true}}]}`, 5, `unknown field "imprecise_store"`},
		{"cause", head + build + ` "scenarios": [{"name": "s", "trigger": {}, "expect": {"causes": ["PRECISERR"]}}]}`, 3, `cause "PRECISERR": want REGISTER.BIT`},
		{"duplicate scenario", head + build + ` "scenarios": [{"name": "s", "trigger": {}},` + "\n" + `{"name": "s", "trigger": {}}]}`, 4, `scenario "s" is also defined on line 3`},
		{"trailing", head + build + scen + `{}`, 4, "after top-level value"},
		{"type on a later line", head + build + ` "scenarios": [{"name": "s",` + "\n" + `  "trigger": {"max_insns": "many"}}]}`, 4, "trigger.max_insns"},
		{"syntax on a later line", head + build + ` "scenarios": [{"name": "s",` + "\n" + `  "trigger": {"max_insns": 1,}}]}`, 4, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("spec.json", []byte(tc.spec))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *SpecError", err, err)
			}
			if se.File != "spec.json" || se.Line != tc.line || !strings.Contains(se.What, tc.want) {
				t.Errorf("got %q (line %d), want line %d and %q", err, se.Line, tc.line, tc.want)
			}
		})
	}
	if _, err := LoadSpec(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseSpec: no input makes the parser panic, and every error is a
// *SpecError with a line inside the input.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(`{"schema": "faultline.matrixspec/1", "builds": [{"name": "b", "elf": "b.elf"}], "scenarios": [{"name": "s", "trigger": {"set": ["x=1"], "irq": ["21@5"]}, "expect": {"causes": ["CFSR.X"]}}]}`))
	f.Add([]byte(`{"schema": "faultline.matrixspec/1", "builds": [`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec("f.json", data)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%T %v", err, err)
			}
			if se.Line < 0 || se.Line > strings.Count(string(data), "\n")+1 {
				t.Fatalf("line %d outside the input", se.Line)
			}
			return
		}
		_ = s.Cases(Filter{})
		_ = s.Warnings()
	})
}
