package regress

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// okELF accepts every ELF path (the parser tests need no firmware).
func okELF(string) error { return nil }

const minimal = `{
  "schema": "faultline.regress/1",
  "elf": "fw.elf",
  "scenarios": [
    {"name": "a", "trigger": {"set": ["crash_scenario=1"]},
     "expect": {"frames": ["f", {"function": "g", "file": "main.c", "line": 7}, {"function": "*"}]}}
  ]
}`

func TestRegressParseMinimal(t *testing.T) {
	s, err := Parse([]byte(minimal), filepath.Join("specs", "ci.json"), okELF)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "ci" {
		t.Errorf("Name = %q, want the file's base name", s.Name)
	}
	sc := s.Scenarios[0]
	if sc.ELFPath != filepath.Join("specs", "fw.elf") {
		t.Errorf("ELFPath = %q: want it relative to the spec's directory", sc.ELFPath)
	}
	if sc.Expect.Match != MatchPrefix {
		t.Errorf("Match = %q, want the default prefix", sc.Expect.Match)
	}
	want := []FrameExpect{{Function: "f"}, {Function: "g", File: "main.c", Line: 7}, {Function: "*"}}
	if len(sc.Frames) != len(want) {
		t.Fatalf("Frames = %+v", sc.Frames)
	}
	for i := range want {
		if !reflect.DeepEqual(sc.Frames[i], want[i]) {
			t.Errorf("frame %d = %+v, want %+v", i, sc.Frames[i], want[i])
		}
	}
}

// TestParseErrors: every malformed spec gives an error that names the
// file, where (line:column for JSON errors, the field otherwise) and what
// is wrong.
func TestRegressParseErrors(t *testing.T) {
	scen := func(body string) string {
		return `{"schema": "faultline.regress/1", "elf": "fw.elf", "scenarios": [` + body + `]}`
	}
	ok := `{"name": "a", "expect": {"frames": ["f"]}}`
	for _, c := range []struct{ name, spec, want string }{
		{"empty", ``, "spec.json: empty file"},
		{"syntax", "{\n  \"schema\": \"faultline.regress/1\",\n  \"scenarios\": [,]\n}", "spec.json:3:17: invalid JSON"},
		{"truncated", `{"schema": "faultline.regress/1", "scenarios": [`, "spec.json:1:49: unexpected end of file"},
		{"not an object", `[1, 2]`, "want an object"},
		{"trailing data", minimal + ` {}`, "more data after the spec's JSON object"},
		{"scenarios type", `{"schema": "faultline.regress/1", "scenarios": {}}`, "spec.json:1:48: scenarios: got a JSON object, want an array"},
		{"trigger type", scen(`{"name": "a", "trigger": {"set": "x=1"}, "expect": {"frames": ["f"]}}`), "scenarios.trigger.set: got a JSON string, want an array of strings"},
		{"max_insns type", scen(`{"name": "a", "trigger": {"max_insns": -5}, "expect": {"frames": ["f"]}}`), "want a non-negative whole number"},
		{"unknown field", "{\"schema\": \"faultline.regress/1\", \"elf\": \"fw.elf\",\n \"scenarios\": [{\"name\": \"a\", \"exepct\": {}}]}", `spec.json:2:30: unknown field "exepct"`},
		{"no schema", `{"scenarios": []}`, `schema: missing: want "faultline.regress/1"`},
		{"other schema", `{"schema": "faultline.regress/2", "scenarios": []}`, `schema: "faultline.regress/2" is not supported`},
		{"no scenarios", `{"schema": "faultline.regress/1", "scenarios": []}`, "scenarios: no scenarios"},
		{"no name", scen(`{"expect": {"frames": ["f"]}}`), "scenarios[0]: the scenario has no name"},
		{"control name", scen(`{"name": "a\u0007", "expect": {"frames": ["f"]}}`), "name: control characters"},
		{"duplicate", scen(ok + `, ` + ok), `scenarios[1] "a": name: the same name as scenarios[0]`},
		{"no elf", `{"schema": "faultline.regress/1", "scenarios": [` + ok + `]}`, `scenarios[0] "a": no firmware`},
		{"bad unwinder", `{"schema": "faultline.regress/1", "elf": "fw.elf", "unwinder": "magic", "scenarios": [` + ok + `]}`, `unwinder: unknown strategy "magic": want one of auto, cfi`},
		{"bad scenario unwinder", scen(`{"name": "a", "unwinder": "x", "expect": {"frames": ["f"]}}`), `scenarios[0] "a": unwinder: unknown strategy "x"`},
		{"max_frames", `{"schema": "faultline.regress/1", "elf": "fw.elf", "max_frames": 99999, "scenarios": [` + ok + `]}`, "max_frames: 99999"},
		{"bad irq", scen(`{"name": "a", "trigger": {"irq": ["21"]}, "expect": {"frames": ["f"]}}`), `scenarios[0] "a": trigger: --irq "21": want N@INSN`},
		{"bad set", scen(`{"name": "a", "trigger": {"set": ["crash_scenario"]}, "expect": {"frames": ["f"]}}`), `trigger: --set "crash_scenario": want SYMBOL=VALUE`},
		{"bad match", scen(`{"name": "a", "expect": {"frames": ["f"], "match": "suffix"}}`), `expect.match: "suffix": want "prefix" or "exact"`},
		{"match without frames", scen(`{"name": "a", "expect": {"match": "exact", "fault": {"exception": "HardFault"}}}`), `expect.match: "match" without "frames"`},
		{"frame number", scen(`{"name": "a", "expect": {"frames": ["f", 5]}}`), `expect.frames[1]: got 5: want a function name or an object`},
		{"frame field", scen(`{"name": "a", "expect": {"frames": [{"fn": "f"}]}}`), `expect.frames[0]: unknown field "fn"`},
		{"frame line type", scen(`{"name": "a", "expect": {"frames": [{"function": "f", "line": "7"}]}}`), `expect.frames[0]: line: got a JSON string, want a whole number`},
		{"frame no function", scen(`{"name": "a", "expect": {"frames": [{"file": "main.c"}]}}`), `expect.frames[0]: no function name`},
		{"frame empty", scen(`{"name": "a", "expect": {"frames": [""]}}`), `expect.frames[0]: no function name`},
		{"bad cause", scen(`{"name": "a", "expect": {"fault": {"causes": ["DACCVIOL"]}}}`), `expect.fault.causes[0]: "DACCVIOL": want REGISTER.BIT`},
		{"bad exception", scen(`{"name": "a", "expect": {"fault": {"exception": "Hardfault"}}}`), `"Hardfault" is not an exception name (did you mean "HardFault"?)`},
		{"bad address", scen(`{"name": "a", "expect": {"fault": {"address": "0x1_0000_0000"}}}`), `expect.fault.address: "0x1_0000_0000": out of range`},
		{"empty fault", scen(`{"name": "a", "expect": {"fault": {}}}`), `expect.fault: empty`},
		{"nothing to check", scen(`{"name": "a", "trigger": {"set": ["x=1"]}}`), `scenarios[0] "a": nothing to check`},
		{"bad output", scen(`{"name": "a", "handler": {"check": true, "output": "uart"}}`), `handler.output: "uart": want "auto", "stdout" or "stderr"`},
		{"output without check", scen(`{"name": "a", "expect": {"frames": ["f"]}, "handler": {"output": "stdout"}}`), `"output" without "check": true`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.spec), "spec.json", okELF)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			var se *SpecError
			if !errors.As(err, &se) || !errors.Is(err, ErrSpec) {
				t.Errorf("error %v (%T) is not a *SpecError wrapping ErrSpec", err, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "spec.json") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q\nwant it to name spec.json and contain %q", msg, c.want)
			}
		})
	}
}

func TestRegressLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil || !strings.Contains(err.Error(), "nope.json: cannot read: no such file") {
		t.Errorf("missing spec: %v", err)
	}
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+`: elf: "fw.elf" (`+filepath.Join(dir, "fw.elf")+`, relative to the spec's directory): no such file`) {
		t.Errorf("missing ELF: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestRegressFrameExpectMatch(t *testing.T) {
	f := Frame{Function: "ns::run(int)", Symbol: "_ZN2ns3runEi", File: "./src/main.c", Line: 56, PC: "0x000001ae"}
	for _, c := range []struct {
		e    FrameExpect
		want bool
	}{
		{FrameExpect{Function: "ns::run(int)"}, true},
		{FrameExpect{Function: "_ZN2ns3runEi"}, true},
		{FrameExpect{Function: "*"}, true},
		{FrameExpect{Function: "run"}, false},
		{FrameExpect{Function: "*", File: "main.c"}, true},
		{FrameExpect{Function: "*", File: "src/main.c", Line: 56}, true},
		{FrameExpect{Function: "*", File: "./src/main.c"}, true},
		{FrameExpect{Function: "*", File: "ain.c"}, false},
		{FrameExpect{Function: "*", File: "main.c", Line: 57}, false},
		{FrameExpect{Function: "*", Line: 56}, true},
	} {
		if got := c.e.Match(f); got != c.want {
			t.Errorf("%+v.Match = %v, want %v", c.e, got, c.want)
		}
	}
	if (FrameExpect{Function: "*"}).Match(Frame{Exception: true}) {
		t.Error("an exception pseudo-frame matched")
	}
}
