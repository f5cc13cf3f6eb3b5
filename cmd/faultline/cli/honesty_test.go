package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/matrix"
)

// stripDebug opens an ELF as `objcopy --strip-debug` would leave it for
// faultline: every .debug_* section is renamed in the section-name table,
// so neither DWARF nor .debug_frame is found; code, symbols and
// .ARM.exidx stay.
func stripDebug(t *testing.T, path string) *elfsym.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(b, []byte("\x00.debug_"))
	if n == 0 {
		t.Fatalf("%s: no .debug_ section names to strip", path)
	}
	b = bytes.ReplaceAll(b, []byte("\x00.debug_"), []byte("\x00.nodbg_"))
	f, err := elfsym.NewFile(bytes.NewReader(b), path+" (stripped)")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.Section(".debug_frame"); ok {
		t.Fatalf("%s: .debug_frame still found after stripping", path)
	}
	return f
}

// bareNames drops C++ parameter lists ("f(int) const" -> "f"): GDB's
// backtraces of the C++ corpus name some frames with them and some without.
func bareNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		depth, cut := 0, len(n)
		for j := len(n) - 1; j >= 0; j-- {
			switch n[j] {
			case ')':
				depth++
			case '(':
				depth--
				if depth == 0 {
					cut = j
				}
			}
			if depth == 0 && cut != len(n) {
				break
			}
		}
		out[i] = strings.TrimSpace(n[:cut])
	}
	return out
}

// betterOrEqual reports whether score a is at least as good as b: exact
// first, then frame accuracy.
func betterOrEqual(a, b score.Score) bool {
	if a.Exact != b.Exact {
		return a.Exact
	}
	return a.FrameAccuracy >= b.FrameAccuracy-1e-9
}

// TestAutoNeverWorseAndHonest runs every strategy over every QEMU oracle
// fixture (fixtures/qemu and the C++ corpus, fixtures/qemu-cxx), with its
// ELF as built and stripped of debug info, and checks
// (issue 13, defects 4 and 5):
//   - auto is at least as good as its best single strategy;
//   - no strategy says `high` for a frame after a gap or across a return
//     address whose call targets another function (score.CheckHonesty
//     re-runs the call-target check independently of the walk), and every
//     such return address has a gap before it.
func TestAutoNeverWorseAndHonest(t *testing.T) {
	strategies := matrix.StrategyNames()
	exactAuto, cases := 0, 0
	cxx, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-cxx/*.json"))
	for _, dump := range append(oracleFixtures(t), cxx...) {
		d, err := crashdump.Load(dump)
		if err != nil {
			t.Fatal(err)
		}
		elfPath := fixtureELF(t, dump)
		if strings.Contains(dump, "qemu-cxx") {
			base := strings.TrimSuffix(filepath.Base(dump), ".json")
			elfPath = filepath.Join(repo, "firmware-samples/cxx/build", base[:strings.LastIndex(base, "-")]+".elf")
		}
		full, err := elfsym.Open(elfPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			name string
			elf  *elfsym.File
		}{{"", full}, {" (stripped)", stripDebug(t, elfPath)}} {
			name := filepath.Base(dump) + v.name
			scores := map[string]score.Score{}
			for _, s := range strategies {
				r, err := analysis.Analyze(v.elf, d, analysis.Options{Unwinder: s, MaxFrames: 64})
				if err != nil {
					t.Fatalf("%s %s: %v", name, s, err)
				}
				scores[s] = score.ScoreNames(bareNames(score.TruthNames(d.Truth)), bareNames(score.ReportNames(r, d.Truth)))
				h := score.CheckHonesty(r)
				for _, o := range h.Overclaimed {
					t.Errorf("%s %s: %s", name, s, o)
				}
				for _, u := range h.Unmarked {
					t.Errorf("%s %s: %s: its call targets another function and no gap stands before it", name, s, u)
				}
			}
			cases++
			if scores["auto"].Exact {
				exactAuto++
			}
			for _, s := range strategies {
				if !betterOrEqual(scores["auto"], scores[s]) {
					t.Errorf("%s: auto (exact %v, %.0f%%) is worse than %s (exact %v, %.0f%%)", name,
						scores["auto"].Exact, 100*scores["auto"].FrameAccuracy, s, scores[s].Exact, 100*scores[s].FrameAccuracy)
				}
			}
			v.elf.Close()
		}
	}
	t.Logf("oracle fixtures: auto exact on %d/%d (as built and stripped)", exactAuto, cases)
}

// TestMatrixAutoNeverWorseAndHonest runs every case of the sample matrix
// (firmware-samples/matrix/matrix.json) in the emulator and checks the
// same two promises on every strategy's walk.
func TestMatrixAutoNeverWorseAndHonest(t *testing.T) {
	skipWithoutEmulator(t)
	if testing.Short() {
		t.Skip("the whole matrix: not in -short")
	}
	spec, err := matrix.LoadSpec(filepath.Join(repo, "firmware-samples/matrix/matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := spec.Cases(matrix.Filter{})
	rep := (&matrix.Runner{Jobs: 2}).Run(context.Background(), cases)
	exactAuto := 0
	for _, c := range rep.Cases {
		if c.Error != "" {
			t.Errorf("%s %s: invalid: %s", c.Build, c.Scenario, c.Error)
			continue
		}
		auto := c.Results["auto"]
		if auto.Exact {
			exactAuto++
		}
		for s, r := range c.Results {
			for _, o := range r.Overclaimed {
				t.Errorf("%s %s %s: %s", c.Build, c.Scenario, s, o)
			}
			for _, u := range r.Unmarked {
				t.Errorf("%s %s %s: %s: its call targets another function and no gap stands before it", c.Build, c.Scenario, s, u)
			}
			if !betterOrEqual(auto.Score, r.Score) {
				t.Errorf("%s %s: auto (exact %v, %.0f%%: %s) is worse than %s (exact %v, %.0f%%)", c.Build, c.Scenario,
					auto.Exact, 100*auto.FrameAccuracy, strings.Join(auto.Frames, " < "), s, r.Exact, 100*r.FrameAccuracy)
			}
		}
	}
	t.Log(fmt.Sprintf("matrix: auto exact on %d/%d cases", exactAuto, len(rep.Cases)))
}
