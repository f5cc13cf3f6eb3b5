package score

import (
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/unwinders"
)

// ThreadScore is one RTOS thread's backtrace scored against its truth
// (design.md, "Scoring against a truth": the same three numbers).
type ThreadScore struct {
	Thread  string `json:"thread"`
	ID      string `json:"id"`
	Current bool   `json:"current,omitempty"`
	Score
	// Frames is the thread's function list as compared with Truth, and
	// Truth the truth's, both only when the thread is not exact.
	Frames []string `json:"frames,omitempty"`
	Truth  []string `json:"truth,omitempty"`
}

// ThreadScores scores every thread of r that has a truth: the current
// thread against tr.Frames (its score is the crash's, ScoreReport), every
// other one against the tr.Threads entry whose SP is the SP the thread's
// saved context restores. It also returns the names of the threads with no
// truth entry (a thread that never ran has none). When the truth holds no
// threads at all (tr.Threads is nil: a truth that says nothing about the
// other threads) both are nil.
func ThreadScores(r *report.Report, tr *crashdump.Truth) (scores []ThreadScore, noTruth []string) {
	if tr == nil || tr.Threads == nil || len(r.Threads) == 0 {
		return nil, nil
	}
	bySP := make(map[uint32]*crashdump.ThreadTruth, len(tr.Threads))
	for i := range tr.Threads {
		if th := &tr.Threads[i]; th.HasSP {
			bySP[th.SP] = th
		}
	}
	inlined := TruthHasInlined(tr)
	for _, th := range r.Threads {
		s := ThreadScore{Thread: th.Name, ID: th.ID, Current: th.Current}
		var want, got []string
		switch {
		case th.Current:
			want, got = TruthNames(tr), ReportNames(r, tr)
		default:
			sp, ok := th.Raw.Regs.Get(unwinders.SP)
			t := bySP[sp]
			if !ok || th.Raw.Err != nil || t == nil {
				noTruth = append(noTruth, th.Name)
				continue
			}
			for _, f := range t.Frames {
				if f.Kind != "exception" {
					want = append(want, f.Function)
				}
			}
			got = threadNames(th.Frames, inlined)
		}
		s.Score = ScoreNames(want, got)
		if !s.Exact {
			s.Frames, s.Truth = nonNil(got), nonNil(want)
		}
		scores = append(scores, s)
	}
	return scores, noTruth
}

// threadNames is a thread walk's function list in the truth's terms
// (ReportNames): readable names with inlined frames against a truth that
// lists them, else the raw ELF symbols of the real frames. Gap frames name
// no function.
func threadNames(frames []report.FrameJSON, inlined bool) []string {
	if inlined {
		return namesOf(frames, true)
	}
	exc, inl, gap := unwinders.KindException.String(), unwinders.KindInlined.String(), unwinders.KindGap.String()
	var names []string
	for _, f := range frames {
		if f.Kind == exc || f.Kind == inl || f.Kind == gap {
			continue
		}
		name := f.Symbol
		if f.Gap {
			name = ""
		}
		names = append(names, name)
	}
	return names
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ThreadTotals sums thread scores: how many threads were scored, how many
// are exact, the mean frame accuracy and the bogus frames.
type ThreadTotals struct {
	Threads       int     `json:"threads"`
	Exact         int     `json:"exact"`
	FrameAccuracy float64 `json:"frame_accuracy"`
	Bogus         int     `json:"bogus"`
}

// Add counts one more thread score.
func (t *ThreadTotals) Add(s Score) {
	sum := t.FrameAccuracy * float64(t.Threads)
	t.Threads++
	if s.Exact {
		t.Exact++
	}
	t.FrameAccuracy = (sum + s.FrameAccuracy) / float64(t.Threads)
	t.Bogus += s.Bogus
}

// Merge adds the threads counted in o.
func (t *ThreadTotals) Merge(o ThreadTotals) {
	if o.Threads == 0 {
		return
	}
	sum := t.FrameAccuracy*float64(t.Threads) + o.FrameAccuracy*float64(o.Threads)
	t.Threads += o.Threads
	t.Exact += o.Exact
	t.FrameAccuracy = sum / float64(t.Threads)
	t.Bogus += o.Bogus
}

// TotalOf sums a list of thread scores.
func TotalOf(scores []ThreadScore) ThreadTotals {
	var t ThreadTotals
	for _, s := range scores {
		t.Add(s.Score)
	}
	return t
}
