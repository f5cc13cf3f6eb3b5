package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// accuracyCell accumulates one (build, strategy) cell.
type accuracyCell struct {
	cases, exact   int
	accuracy       float64
	bogus, bogusHi int
}

func (c accuracyCell) String() string {
	if c.cases == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d, %.0f%%, %d", c.exact, c.cases, 100*c.accuracy/float64(c.cases), c.bogus)
}

// TestAccuracyTable runs every available strategy on every QEMU+GDB oracle
// fixture, scores it against GDB's backtrace, and holds the per-build
// table in fixtures/accuracy.md (refresh with -update; README quotes it).
// It enforces what the design promises of auto: no frame reported with
// high confidence is bogus.
func TestAccuracyTable(t *testing.T) {
	strategies := []string{}
	for _, s := range analysis.Strategies() {
		if s.Available {
			strategies = append(strategies, s.Name)
		}
	}
	cells := map[string]map[string]*accuracyCell{}
	total := map[string]*accuracyCell{}
	elfs := map[string]*elfsym.File{}
	var builds []string
	for _, dump := range oracleFixtures(t) {
		elfPath := fixtureELF(t, dump)
		build := strings.TrimSuffix(filepath.Base(elfPath), ".elf")
		elf := elfs[build]
		if elf == nil {
			var err error
			if elf, err = elfsym.Open(elfPath); err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			elfs[build] = elf
			builds = append(builds, build)
			cells[build] = map[string]*accuracyCell{}
		}
		d, err := crashdump.Load(dump)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strategies {
			r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: s, MaxFrames: 64})
			if err != nil {
				t.Fatalf("%s %s: %v", dump, s, err)
			}
			sc := score.ScoreReport(r, d.Truth)
			truth := score.TruthNames(d.Truth)
			bogusHi := 0
			cand := score.CandidateNames(r.Frames, score.TruthHasInlined(d.Truth))
			// Map candidate positions back to frames to read confidences.
			var conf []string
			start := 0
			for i, f := range r.Frames {
				if f.Kind == "exception" {
					start = i + 1
					break
				}
			}
			for _, f := range r.Frames[start:] {
				if f.Kind != "exception" {
					conf = append(conf, f.Confidence)
				}
			}
			for i, c := range cand {
				if (i >= len(truth) || truth[i] != c) && i < len(conf) && conf[i] == "high" {
					bogusHi++
					t.Errorf("%s %s: frame %d %q reported with high confidence is not the truth's %q", filepath.Base(dump), s, i, c, at(truth, i))
				}
			}
			for _, cell := range []*accuracyCell{get(cells[build], s), get(total, s)} {
				cell.cases++
				if sc.Exact {
					cell.exact++
				}
				cell.accuracy += sc.FrameAccuracy
				cell.bogus += sc.Bogus
				cell.bogusHi += bogusHi
			}
		}
	}
	sort.Strings(builds)
	var b strings.Builder
	b.WriteString("Each cell: exact cases / cases, mean frame accuracy, bogus frames; scored against GDB's backtrace\n")
	b.WriteString("on the QEMU oracle fixtures (fixtures/qemu). Regenerate: `make accuracy`.\n\n")
	b.WriteString("| build |")
	for _, s := range strategies {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(strategies)) + "\n")
	for _, build := range append(builds, "all") {
		row := cells[build]
		if build == "all" {
			row = total
		}
		b.WriteString("| " + build + " |")
		for _, s := range strategies {
			b.WriteString(" " + get(row, s).String() + " |")
		}
		b.WriteString("\n")
	}
	table := b.String()
	// The promise of auto (issue: the strategies and the auto chain).
	if a := total["auto"]; a.cases == 0 || float64(a.exact) < 0.95*float64(a.cases) || a.accuracy < 0.98*float64(a.cases) {
		t.Errorf("auto: %s, want at least 95%% exact and 98%% mean frame accuracy", a)
	}
	golden := filepath.Join(repo, "fixtures/accuracy.md")
	if *update {
		if err := os.WriteFile(golden, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != table {
		t.Errorf("accuracy table changed (run make accuracy and review):\n%s", table)
	}
	readmePath := filepath.Join(repo, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- accuracy:begin -->\n", "<!-- accuracy:end -->"
	if *update {
		i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
		if i < 0 || j < i {
			t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
		}
		readme = []byte(string(readme[:i+len(begin)]) + table + string(readme[j:]))
		if err := os.WriteFile(readmePath, readme, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(readme), begin+string(want)+end) {
		t.Errorf("README.md does not quote fixtures/accuracy.md (run make accuracy)")
	}
	t.Logf("\n%s", table)
}

func get(m map[string]*accuracyCell, k string) *accuracyCell {
	if m[k] == nil {
		m[k] = &accuracyCell{}
	}
	return m[k]
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(past the end)"
}
