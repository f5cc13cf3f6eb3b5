package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixSamples runs `faultline matrix` on fixtures/matrix/samples.json
// (four sample builds, the scenarios of firmware-samples/src/fw.h plus
// imprecise and externally raised interrupts): faultline.matrix/1 as the
// issue fixes it, every strategy scored on every case, auto exact
// everywhere, every failure known (exit 0).
func TestMatrixSamples(t *testing.T) {
	skipWithoutEmulator(t)
	stdout, stderr, code := run(t, "", "matrix", "--format", "json", filepath.Join(repo, "fixtures/matrix/samples.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc struct {
		Schema string `json:"schema"`
		Cases  []struct {
			Build    string `json:"build"`
			Scenario string `json:"scenario"`
			Error    string `json:"error"`
			Results  map[string]struct {
				Exact         *bool    `json:"exact"`
				FrameAccuracy *float64 `json:"frame_accuracy"`
				Bogus         *int     `json:"bogus"`
				Known         string   `json:"known"`
				New           bool     `json:"new"`
			} `json:"results"`
		} `json:"cases"`
		Summary struct {
			NewFailures int `json:"new_failures"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if doc.Schema != "faultline.matrix/1" || len(doc.Cases) != 34 {
		t.Fatalf("schema %q, %d cases, want faultline.matrix/1 and 34", doc.Schema, len(doc.Cases))
	}
	if c := doc.Cases[0]; c.Build != "gcc-m3-O2" || c.Scenario != "null_write_deep" {
		t.Errorf("first case %s %s: not in spec order", c.Build, c.Scenario)
	}
	for _, c := range doc.Cases {
		if c.Error != "" {
			t.Errorf("%s %s: invalid: %s", c.Build, c.Scenario, c.Error)
			continue
		}
		if len(c.Results) != len(StrategyNames()) {
			t.Errorf("%s %s: %d strategies scored, want %d", c.Build, c.Scenario, len(c.Results), len(StrategyNames()))
		}
		for s, r := range c.Results {
			if r.Exact == nil || r.FrameAccuracy == nil || r.Bogus == nil {
				t.Errorf("%s %s %s: exact, frame_accuracy or bogus missing", c.Build, c.Scenario, s)
				continue
			}
			if !*r.Exact && (r.Known == "" || r.New) {
				t.Errorf("%s %s %s: a failure that is not known", c.Build, c.Scenario, s)
			}
		}
		if a := c.Results["auto"]; a.Exact == nil || !*a.Exact {
			t.Errorf("%s %s: auto is not exact", c.Build, c.Scenario)
		}
	}
	if !strings.Contains(stderr, "matrix: 34 cases in") {
		t.Errorf("no timing line on stderr: %q", stderr)
	}

	// The text table, and the same cases whatever the number of jobs.
	stdout, _, code = run(t, "", "matrix", "-j", "1", "--build", "clang-m4f-O0", filepath.Join(repo, "fixtures/matrix/samples.json"))
	if code != 0 || !strings.Contains(stdout, "clang-m4f-O0  9      9/9, 100%, 0") {
		t.Errorf("text: exit %d\n%s", code, stdout)
	}
}

// writeMatrixSpec writes a one-build, one-scenario spec (gcc-m3-O2, udf:
// exidx and framepointer are not exact there) and returns its path.
func writeMatrixSpec(t *testing.T, dir string) string {
	t.Helper()
	elf, err := filepath.Abs(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"schema": "faultline.matrixspec/1",
 "builds": [{"name": "gcc-m3-O2", "elf": "` + filepath.ToSlash(elf) + `", "cpu": "cortex-m3"}],
 "scenarios": [{"name": "udf", "trigger": {"set": ["crash_scenario=3"]},
                "expect": {"exception": "HardFault", "causes": ["CFSR.UNDEFINSTR"], "function": "udf_assert_fail"}}]}
`
	file := filepath.Join(dir, "matrix.json")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestMatrixKnownFailures: a known-failures entry turns a failure into a
// known one (exit 0); without it the failure is NEW (exit 1); an entry
// that matches nothing failing is reported as stale.
func TestMatrixKnownFailures(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	spec := writeMatrixSpec(t, dir)
	known := filepath.Join(dir, "known-failures.txt")
	write := func(s string) {
		if err := os.WriteFile(known, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Without a known-failures file (none next to the spec) every
	// failure is new.
	stdout, stderr, code := run(t, "", "matrix", spec)
	if code != 1 || !strings.Contains(stdout, "exidx 14% NEW, framepointer 28% NEW") || !strings.Contains(stderr, "2 new failures, 0 invalid cases") {
		t.Errorf("no known failures: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The default file next to the spec covers both.
	write("# gcc -O2 without unwind tables\ngcc-* * exidx: no .ARM.exidx\ngcc-m3-O2 udf framepointer: no r7 frame\n")
	stdout, stderr, code = run(t, "", "matrix", spec)
	if code != 0 || !strings.Contains(stdout, "0 new failures, 2 known failures") || strings.Contains(stdout, "% NEW") {
		t.Errorf("all known: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = run(t, "", "matrix", "--format", "json", spec)
	if code != 0 || !strings.Contains(stdout, `"known": "no r7 frame"`) {
		t.Errorf("json: exit %d\n%s", code, stdout)
	}

	// One entry missing: a new failure, exit 1, named on stderr for the
	// non-text formats.
	write("gcc-* * exidx: no .ARM.exidx\ngcc-* * auto: stale entry\n")
	stdout, stderr, code = run(t, "", "matrix", "--format", "json", "--known", known, spec)
	if code != 1 || !strings.Contains(stderr, "NEW failure gcc-m3-O2 udf framepointer") || !strings.Contains(stdout, `"new": true`) {
		t.Errorf("missing entry: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "stale known-failure entry "+known+":2: gcc-* * auto") {
		t.Errorf("stale entry not reported:\n%s", stderr)
	}
	stdout, _, _ = run(t, "", "matrix", "--known", known, spec)
	if !strings.Contains(stdout, "framepointer 28% NEW") || !strings.Contains(stdout, "Stale known-failure entries (1)") || !strings.Contains(stdout, "truth: udf_assert_fail < udf_check") {
		t.Errorf("text:\n%s", stdout)
	}

	// Markdown and HTML render; --update-readme rewrites only between the
	// markers.
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# fw\n\n<!-- matrix:begin -->\nold\n<!-- matrix:end -->\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("gcc-* * exidx: no .ARM.exidx\ngcc-* * framepointer: no r7\n")
	stdout, _, code = run(t, "", "matrix", "--format", "markdown", "--update-readme", readme, spec)
	if code != 0 || !strings.Contains(stdout, "| gcc-m3-O2 | udf | | | 14% | | 28% | |") {
		t.Errorf("markdown: exit %d\n%s", code, stdout)
	}
	data, _ := os.ReadFile(readme)
	if s := string(data); !strings.HasPrefix(s, "# fw\n\n<!-- matrix:begin -->\n1 case (1 build, 1 scenario)") || !strings.HasSuffix(s, "<!-- matrix:end -->\n\nafter\n") || strings.Contains(s, "old") {
		t.Errorf("README:\n%s", s)
	}
	html := filepath.Join(dir, "m.html")
	if _, stderr, code := run(t, "", "matrix", "--format", "html", "-o", html, spec); code != 0 {
		t.Errorf("html: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(html); !strings.HasPrefix(string(data), "<!DOCTYPE html>") || strings.Contains(string(data), "<script") {
		t.Errorf("html page:\n%.300s", data)
	}
}

// TestMatrixErrors: usage errors exit 2; bad input exits 1 with a message
// naming the file and line; nothing panics.
func TestMatrixErrors(t *testing.T) {
	dir := t.TempDir()
	spec := writeMatrixSpec(t, dir)
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"schema\": \"faultline.matrixspec/1\",\n \"builds\": [{\"name\": \"b\", \"elf\": \"b.elf\"}],\n \"scenarios\": [{\"name\": \"s\", \"trigger\": {\"irq\": [\"21\"]}}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kbad := filepath.Join(dir, "kbad.txt")
	if err := os.WriteFile(kbad, []byte("# c\ngcc-* * exidx no colon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"matrix", "--format", "xml", spec}, 2, "--format"},
		{[]string{"matrix", "-j", "0", spec}, 2, "--jobs"},
		{[]string{"matrix", "--max-frames", "0", spec}, 2, "--max-frames"},
		{[]string{"matrix", "--build", "[", spec}, 2, "pattern"},
		{[]string{"matrix", "--build", "x*", spec}, 2, "no case"},
		{[]string{"matrix", "--build", "gcc*", "--update-readme", "README.md", spec}, 2, "whole matrix"},
		{[]string{"matrix", spec, "extra"}, 2, "matrix takes at most one SPEC, got 2 arguments"},
		{[]string{"matrix", bad}, 1, bad + `:3: scenario "s": trigger: --irq "21"`},
		{[]string{"matrix", filepath.Join(dir, "none.json")}, 1, "none.json"},
		{[]string{"matrix", "--known", filepath.Join(dir, "none.txt"), spec}, 1, "none.txt"},
		{[]string{"matrix", "--known", kbad, spec}, 1, kbad + ":2: want BUILD-GLOB SCENARIO-GLOB STRATEGY: reason"},
	} {
		_, stderr, code := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args[1:], code, stderr, tc.code, tc.want)
		}
	}
}
