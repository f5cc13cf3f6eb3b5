package score_test

import (
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// The definitions of design.md "Scoring against truth" on small lists:
// exact equality, the common prefix over the truth's length, and the
// candidate frames that differ from the truth at their place.
func TestScoreNames(t *testing.T) {
	truth := []string{"f", "g", "main"}
	for _, c := range []struct {
		cand  []string
		exact bool
		acc   float64
		bogus int
	}{
		{[]string{"f", "g", "main"}, true, 1, 0},
		{[]string{"f", "g"}, false, 2.0 / 3, 0},
		{[]string{"f", "x", "main"}, false, 1.0 / 3, 1},
		{[]string{"f", "g", "main", "Reset_Handler"}, false, 1, 1},
		{[]string{"x", "y"}, false, 0, 2},
		{nil, false, 0, 0},
	} {
		s := score.ScoreNames(truth, c.cand)
		if s.Exact != c.exact || s.FrameAccuracy != c.acc || s.Bogus != c.bogus {
			t.Errorf("%q: got %+v, want exact %v, accuracy %.3f, bogus %d", c.cand, s, c.exact, c.acc, c.bogus)
		}
	}
	if s := score.ScoreNames(nil, nil); !s.Exact || s.FrameAccuracy != 1 {
		t.Errorf("empty truth and candidate: %+v", s)
	}
}

func analyze(t *testing.T, elf *elfsym.File, scenario string) (*report.Report, *crashdump.Dump) {
	t.Helper()
	d, err := crashdump.Load("../../fixtures/qemu/gcc-m3-O2-" + scenario + ".json")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r, err := analysis.Analyze(elf, d, analysis.Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// Reports of QEMU oracle dumps score exact against GDB's stack (the
// crash in an interrupt handler has a second exception frame in both),
// and one frame renamed, dropped or added is seen.
func TestScoreReportOracle(t *testing.T) {
	elf, err := elfsym.Open("../../firmware-samples/build/gcc-m3-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	for _, scenario := range []string{"irq_crash", "psp_thread", "udf"} {
		r, d := analyze(t, elf, scenario)
		if s := score.ScoreReport(r, d.Truth); !s.Exact || s.Bogus != 0 {
			t.Errorf("%s: score %+v against GDB: want exact", scenario, s)
		}
	}
	r, d := analyze(t, elf, "null_write_deep")
	if s := score.ScoreReport(r, d.Truth); !s.Exact || s.Bogus != 0 {
		t.Fatalf("score %+v against GDB: want exact", s)
	}
	fi := report.FaultingFrame(r)
	frames := r.Frames
	renamed := append([]report.FrameJSON(nil), frames...)
	renamed[fi+2].Function = "not_" + renamed[fi+2].Function
	r.Frames = renamed
	if s := score.ScoreReport(r, d.Truth); s.Exact || s.Bogus != 1 || s.FrameAccuracy >= 1 {
		t.Errorf("a renamed frame scores %+v", s)
	}
	r.Frames = frames[:len(frames)-1]
	if s := score.ScoreReport(r, d.Truth); s.Exact || s.Bogus != 0 || s.FrameAccuracy >= 1 {
		t.Errorf("a dropped outermost frame scores %+v", s)
	}
	r.Frames = append(append([]report.FrameJSON(nil), frames...), report.FrameJSON{Function: "stale", Kind: "normal"})
	if s := score.ScoreReport(r, d.Truth); s.Exact || s.Bogus != 1 || s.FrameAccuracy != 1 {
		t.Errorf("an added frame scores %+v", s)
	}
}
