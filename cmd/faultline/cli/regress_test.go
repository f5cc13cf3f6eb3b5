package cli

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The example specs of `faultline regress` (firmware-samples/regress/):
// sample.json must pass; broken.json runs the capture firmware built with
// a HardFault handler that clobbers LR before the capture reads EXC_RETURN
// (fault_hook.c) and must fail, with a diff naming the wrong frames and a
// JUnit file that CI systems accept.

const regressDir = "firmware-samples/regress"

// regressJUnit is a JUnit file read back.
type regressJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readRegressJUnit parses a JUnit file strictly with encoding/xml and, if
// python3 is installed, with xml.dom.minidom.
func readRegressJUnit(t *testing.T, path string) regressJUnit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("JUnit file: %v", err)
	}
	var j regressJUnit
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	if err := d.Decode(&j); err != nil {
		t.Fatalf("JUnit file does not parse: %v\n%s", err, data)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])", path).CombinedOutput()
		if err != nil {
			t.Errorf("python3 xml.dom.minidom rejects the JUnit file: %v\n%s", err, out)
		}
	}
	if len(j.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(j.Suites))
	}
	return j
}

func TestRegressSampleSpecPasses(t *testing.T) {
	skipWithoutEmulator(t)
	junit := filepath.Join(t.TempDir(), "reports", "sample.xml") // the directory is created
	stdout, stderr, code := run(t, "", "regress", filepath.Join(repo, regressDir, "sample.json"), "--junit", junit)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	passes := regexp.MustCompile(`(?m)^PASS  \S+ \(\d+\.\d\ds\)$`).FindAllString(stdout, -1)
	if len(passes) < 10 || strings.Contains(stdout, "FAIL") || strings.Contains(stdout, "ERROR") {
		t.Errorf("%d PASS lines:\n%s", len(passes), stdout)
	}
	if !regexp.MustCompile(`(?m)^ok    \S+sample\.json: \d+ scenarios passed \(`).MatchString(stdout) {
		t.Errorf("no summary line:\n%s", stdout)
	}
	j := readRegressJUnit(t, junit)
	s := j.Suites[0]
	if s.Name != "sample" || s.Tests != len(passes) || s.Failures != 0 || s.Errors != 0 || j.Tests != s.Tests {
		t.Errorf("JUnit suite %q: %d tests, %d failures, %d errors", s.Name, s.Tests, s.Failures, s.Errors)
	}
	handler := 0
	for _, c := range s.Cases {
		if c.Failure != nil || c.Error != nil {
			t.Errorf("JUnit case %s failed", c.Name)
		}
		if strings.HasPrefix(c.Name, "capture") {
			handler++
		}
	}
	if handler < 3 {
		t.Errorf("only %d handler-check scenarios in sample.json", handler)
	}
}

func TestRegressBrokenBuildFails(t *testing.T) {
	skipWithoutEmulator(t)
	junit := filepath.Join(t.TempDir(), "broken.xml")
	stdout, stderr, code := run(t, "", "regress", filepath.Join(repo, regressDir, "broken.json"), "--junit", junit)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "broken.json: 3 of 4 scenarios failed, 0 could not run") {
		t.Errorf("stderr: %s", stderr)
	}
	flat := collapseSpaces(stdout)
	for _, want := range []string{
		"PASS udf (",
		"FAIL capture/null_write_deep (",
		"FAIL capture/irq_crash (",
		"FAIL capture/psp_thread (",
		// The summary names the frame the device's dump gets wrong and the
		// one the harness saw.
		"handler: the device's crash handler reports frame #0 as ?? at 0x",
		"the harness saw null_store (./src/main.c:56)",
		"the harness saw irq_touch_device (./src/main.c:194)",
		"the harness saw psp_store (./src/main.c:235)",
		// The side-by-side diff: the frames the device's dump lost.
		"# harness (emulator) | # device (crash handler dump)",
		"! 0 0x000001ae null_store ./src/main.c:56 | 0 0x",
		"- 1 0x000001d8 deep5_mixed ./src/main.c:63 |",
		"= 2 0x00000216 deep4_huge_locals ./src/main.c:73 | 1 0x00000216 deep4_huge_locals ./src/main.c:73",
		"- 1 0x00000458 irq_service ./src/main.c:200 |",
		// How to reproduce it by hand.
		"faultline emulate --elf ../../../firmware-samples/regress/build/gcc-m3-O2-clobber-lr.elf -o crash.json --set crash_scenario=1 --run-handler > handler.txt",
		"FAIL ../../../firmware-samples/regress/broken.json: 3 of 4 scenarios failed, 0 could not run (",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	j := readRegressJUnit(t, junit)
	s := j.Suites[0]
	if s.Name != "broken" || s.Tests != 4 || s.Failures != 3 || s.Errors != 0 || j.Failures != 3 {
		t.Errorf("JUnit: suite %q, %d tests, %d failures, %d errors", s.Name, s.Tests, s.Failures, s.Errors)
	}
	for _, c := range s.Cases {
		if c.Classname != "faultline.regress.broken" {
			t.Errorf("%s: classname %q", c.Name, c.Classname)
		}
		if c.Name == "udf" {
			if c.Failure != nil {
				t.Errorf("udf failed: %+v", c.Failure)
			}
			continue
		}
		f := c.Failure
		if f == nil {
			t.Errorf("%s: no <failure>", c.Name)
			continue
		}
		if f.Type != "handler" || !strings.HasPrefix(f.Message, "handler: the device's crash handler reports frame #0 as ?? at 0x") {
			t.Errorf("%s: failure type %q message %q", c.Name, f.Type, f.Message)
		}
		if !strings.Contains(f.Text, "device (crash handler dump)") || !strings.Contains(f.Text, "reproduce:\n  faultline emulate") {
			t.Errorf("%s: failure text:\n%s", c.Name, f.Text)
		}
	}
}

func collapseSpaces(s string) string {
	return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ")
}

// TestRegressMalformedSpec: a spec that cannot be used is exit status 1
// with a message naming the file and the problem (and, with --junit, a
// JUnit file holding that error).
func TestRegressMalformedSpec(t *testing.T) {
	dir := t.TempDir()
	elf, err := filepath.Abs(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, spec, want string }{
		{"syntax", "{\"schema\": \"faultline.regress/1\",\n\"scenarios\": [}", "syntax.json:2:15: invalid JSON"},
		{"yaml", "schema: faultline.regress/1\n", "yaml.json:1:1: invalid JSON"},
		{"typo", `{"schema": "faultline.regress/1", "elf": "` + elf + `", "scenarios": [{"name": "a", "expects": {}}]}`, `typo.json:1:`},
		{"missing elf", `{"schema": "faultline.regress/1", "elf": "nope.elf", "scenarios": [{"name": "a", "expect": {"frames": ["f"]}}]}`,
			`missing elf.json: elf: "nope.elf" (` + filepath.Join(dir, "nope.elf") + `, relative to the spec's directory): no such file or directory`},
		{"bad trigger", `{"schema": "faultline.regress/1", "elf": "` + elf + `", "scenarios": [{"name": "a", "trigger": {"irq": ["x"]}, "expect": {"frames": ["f"]}}]}`,
			`bad trigger.json: scenarios[0] "a": trigger: --irq "x": want N@INSN`},
		{"bad match", `{"schema": "faultline.regress/1", "elf": "` + elf + `", "scenarios": [{"name": "a", "expect": {"frames": ["f"], "match": "all"}}]}`,
			`bad match.json: scenarios[0] "a": expect.match: "all": want "prefix" or "exact"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(p, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			junit := filepath.Join(dir, c.name+".xml")
			stdout, stderr, code := run(t, "", "regress", p, "--junit", junit)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.HasPrefix(stderr, "faultline: "+dir) || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Errorf("stderr %q\nwant it to name the file and contain %q (stdout %q)", stderr, c.want, stdout)
			}
			j := readRegressJUnit(t, junit)
			if j.Errors != 1 || len(j.Suites[0].Cases) != 1 || j.Suites[0].Cases[0].Error == nil ||
				!strings.Contains(j.Suites[0].Cases[0].Error.Message, c.want) {
				t.Errorf("JUnit for a bad spec: %+v", j)
			}
		})
	}
	if _, stderr, code := run(t, "", "regress", filepath.Join(dir, "absent.json")); code != 1 || !strings.Contains(stderr, "absent.json: cannot read: no such file") {
		t.Errorf("absent spec: exit %d, %s", code, stderr)
	}
}

// TestRegressNoFaultIsAnError: a scenario whose firmware never faults is an
// error (ERROR, <error> in JUnit, exit 1), not a pass.
func TestRegressNoFaultIsAnError(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	elf, err := filepath.Abs(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"schema": "faultline.regress/1", "elf": "` + elf + `", "scenarios": [
	  {"name": "idle", "trigger": {"set": ["crash_scenario=0"], "max_insns": 30000}, "expect": {"fault": {"exception": "HardFault"}}}]}`
	p := filepath.Join(dir, "idle.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "idle.xml")
	stdout, stderr, code := run(t, "", "regress", p, "--junit", junit)
	if code != 1 || !strings.Contains(stdout, "ERROR idle (") || !strings.Contains(stdout, "the firmware did not fault: instruction limit of 30000 reached") ||
		!strings.Contains(stderr, "0 of 1 scenarios failed, 1 could not run") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	j := readRegressJUnit(t, junit)
	if c := j.Suites[0].Cases; j.Errors != 1 || j.Failures != 0 || len(c) != 1 || c[0].Error == nil || c[0].Error.Type != "no-fault" {
		t.Errorf("JUnit: %+v", j)
	}
}

func TestRegressUsage(t *testing.T) {
	sample := filepath.Join(repo, regressDir, "sample.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"regress"}, "regress takes exactly one SPEC, got 0 arguments"},
		{[]string{"regress", sample, sample}, "regress takes exactly one SPEC, got 2 arguments"},
		{[]string{"regress", sample, "--unwinder", "magic"}, `--unwinder "magic": want one of auto`},
		{[]string{"regress", sample, "--run", "("}, `--run "(": error parsing regexp`},
		{[]string{"regress", sample, "--run", "^no such scenario$"}, "matches no scenario of"},
		{[]string{"regress", sample, "--max-frames", "-1"}, "--max-frames -1"},
		{[]string{"regress", sample, "--jnuit", "x.xml"}, "unknown flag"},
	} {
		_, stderr, code := run(t, "", c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	stdout, _, code := run(t, "", "regress", "--help")
	if code != 0 || !strings.Contains(stdout, "faultline.regress/1") || !strings.Contains(stdout, "YAML is not read") {
		t.Errorf("--help: exit %d\n%s", code, stdout)
	}
}
