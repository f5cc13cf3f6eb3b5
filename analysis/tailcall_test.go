package analysis

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var tailNote = regexp.MustCompile(`called (\S+) \(returning to 0x[0-9a-f]{8}\), which tail-called (\S+) by the branch before 0x[0-9a-f]{8}`)

// TestTailCallNotes: on every QEMU dump of the assert sample (gcc and
// clang, -O0 to -Os), each function GDB shows that the walk does not (a
// frame a tail call removed: run_scenario tail-calls fill_queue and the
// other scenario functions at -O2 and -Os) is named by a note on the
// caller, between the same two functions as in GDB's backtrace; and no
// note names a function GDB does not show there.
func TestTailCallNotes(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-assert/*.json"))
	if len(paths) < 60 {
		t.Fatalf("%d assert dumps, want the 63 of fixtures/qemu-assert", len(paths))
	}
	notes, lacked := 0, 0
	for _, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		r := assertFixture(t, base, Options{})
		var truth, ours []string
		for _, f := range r.Truth.Frames {
			if f.Kind != "exception" {
				truth = append(truth, f.Function)
			}
		}
		explained := map[string]bool{}
		for _, f := range r.Frames {
			if f.Kind == "exception" {
				continue
			}
			ours = append(ours, f.Function)
			for _, m := range tailNote.FindAllStringSubmatch(f.Note, -1) {
				notes++
				via, callee := m[1], m[2]
				// In GDB's list: callee, then via, then this frame's function.
				ok := false
				for i := 1; i+1 < len(truth); i++ {
					if truth[i] == via && truth[i-1] == callee && truth[i+1] == f.Function {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s: frame %s notes a tail call through %s to %s that GDB's backtrace %q does not show", base, f.Function, via, callee, truth)
				}
				explained[via] = true
			}
		}
		have := map[string]bool{}
		for _, f := range ours {
			have[f] = true
		}
		for _, f := range truth {
			if !have[f] {
				lacked++
				if !explained[f] {
					t.Errorf("%s: GDB shows %s, which the walk lacks and no note names (ours %q, GDB %q)", base, f, ours, truth)
				}
			}
		}
	}
	if notes == 0 || lacked == 0 {
		t.Fatalf("%d tail-call notes, %d GDB frames the walk lacks: the corpus lost its tail calls", notes, lacked)
	}
	t.Logf("%d dumps: %d GDB frames removed by tail calls, %d notes name them", len(paths), lacked, notes)
}
