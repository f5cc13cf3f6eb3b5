package matrix

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

var testStrategies = []string{"auto", "cfi", "exidx", "framepointer"}

func TestParseKnown(t *testing.T) {
	k, err := ParseKnown("kf.txt", []byte(`# header comment

gcc-*-O2  *          exidx: no .ARM.exidx without -funwind-tables
   # indented comment
clang-m4f-O0 psp_? framepointer:   clang sets up no r7 in leaves # not a comment
*-unwind [a-m]* * : everything, on purpose: with a colon
`), testStrategies)
	if err != nil {
		t.Fatal(err)
	}
	want := []KnownEntry{
		{Build: "gcc-*-O2", Scenario: "*", Strategy: "exidx", Reason: "no .ARM.exidx without -funwind-tables", File: "kf.txt", Line: 3},
		{Build: "clang-m4f-O0", Scenario: "psp_?", Strategy: "framepointer", Reason: "clang sets up no r7 in leaves # not a comment", File: "kf.txt", Line: 5},
		{Build: "*-unwind", Scenario: "[a-m]*", Strategy: "*", Reason: "everything, on purpose: with a colon", File: "kf.txt", Line: 6},
	}
	if len(k.Entries) != len(want) {
		t.Fatalf("entries %+v", k.Entries)
	}
	for i := range want {
		if k.Entries[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, k.Entries[i], want[i])
		}
	}
	for _, tc := range []struct {
		build, scenario, strategy string
		want                      int
	}{
		{"gcc-m3-O2", "deep_chain", "exidx", 0},
		{"gcc-m3-O2", "deep_chain", "cfi", -1},
		{"gcc-m3-O2-fp", "deep_chain", "exidx", -1}, // * does not match past the end
		{"clang-m4f-O0", "psp_a", "framepointer", 1},
		{"clang-m4f-O0", "psp_ab", "framepointer", -1},
		{"gcc-m4-O0-unwind", "div0", "framepointer", 2},
		{"gcc-m4-O0-unwind", "null_write", "auto", -1}, // n is not in [a-m]
		{"gcc-m4-O2-unwind", "div0", "exidx", 2},
	} {
		if got := k.Match(tc.build, tc.scenario, tc.strategy); got != tc.want {
			t.Errorf("Match(%s, %s, %s) = %d, want %d", tc.build, tc.scenario, tc.strategy, got, tc.want)
		}
	}
	if (*Known)(nil).Match("a", "b", "c") != -1 {
		t.Error("nil Known matched")
	}
	if s := k.Entries[0].String(); s != "kf.txt:3: gcc-*-O2 * exidx" {
		t.Errorf("String %q", s)
	}
}

func TestKnownErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		line int
		want string
	}{
		{"# ok\ngcc-* * exidx\n", 2, "want BUILD-GLOB SCENARIO-GLOB STRATEGY: reason"},
		{"gcc-* exidx: two fields\n", 1, "want BUILD-GLOB"},
		{"gcc-* * * exidx: four fields\n", 1, "want BUILD-GLOB"},
		{"\n\ngcc-* * exidx:   \n", 3, "no reason"},
		{"gcc-[ * exidx: bad glob\n", 1, `pattern "gcc-["`},
		{"gcc-* * framepointr: typo\n", 1, `unknown strategy "framepointr"`},
		{strings.Repeat("x", 2<<20) + "\n", 1, "too long"},
	} {
		_, err := ParseKnown("kf.txt", []byte(tc.text), testStrategies)
		var se *SpecError
		if !errors.As(err, &se) || se.File != "kf.txt" || se.Line != tc.line || !strings.Contains(se.What, tc.want) {
			t.Errorf("%.40q: %v, want line %d and %q", tc.text, err, tc.line, tc.want)
		}
	}
	if _, err := LoadKnown(filepath.Join(t.TempDir(), "none.txt"), nil); err == nil {
		t.Error("missing file: no error")
	}
}
