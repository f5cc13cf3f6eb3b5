package regress

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
)

// compareThreads checks expect.threads (each named RTOS thread found, in
// its state, with its backtrace) and expect.threads_truth (every thread
// with a true stack unwound exactly as that stack).
func compareThreads(ex Expect, rep *report.Report, truth *crashdump.Truth, unwinder string) []Problem {
	if len(ex.Threads) == 0 && !ex.ThreadsTruth {
		return nil
	}
	if rep.RTOS == nil || len(rep.Threads) == 0 {
		return []Problem{{Kind: "threads", Summary: "threads: the spec expects RTOS threads, but analyze found no RTOS kernel in the firmware"}}
	}
	var out []Problem
	byName := map[string]*report.ThreadJSON{}
	var names []string
	for i := range rep.Threads {
		byName[rep.Threads[i].Name] = &rep.Threads[i]
		names = append(names, rep.Threads[i].Name)
	}
	for _, te := range ex.Threads {
		th, ok := byName[te.Name]
		if !ok {
			out = append(out, Problem{Kind: "threads", Summary: fmt.Sprintf("thread %s: not found (%s threads: %s)", te.Name, rep.RTOS.Kind, strings.Join(names, ", "))})
			continue
		}
		if te.State != "" && th.State != te.State {
			out = append(out, Problem{Kind: "threads", Summary: fmt.Sprintf("thread %s: state %s, the spec expects %s", te.Name, th.State, te.State)})
		}
		if len(te.Frames) == 0 {
			continue
		}
		got := withoutExceptions(threadFrames(th.Frames, th.Current))
		if p, ok := compareFrames(te.Frames, got, te.Match, unwinder); !ok {
			p.Kind = "threads"
			p.Summary = "thread " + te.Name + ": " + p.Summary
			out = append(out, p)
		}
	}
	if ex.ThreadsTruth {
		scores, _ := score.ThreadScores(rep, truth)
		if scores == nil {
			out = append(out, Problem{Kind: "threads", Summary: "threads: the spec expects every thread to match its true stack, but the emulator's truth holds no threads"})
		}
		for _, s := range scores {
			if s.Exact {
				continue
			}
			out = append(out, Problem{Kind: "threads",
				Summary: fmt.Sprintf("thread %s: the backtrace differs from the thread's true stack (frame accuracy %.0f%%, %d bogus)", s.Thread, 100*s.FrameAccuracy, s.Bogus),
				Detail:  fmt.Sprintf("  got (unwinder %s): %s\n  truth:           %s\n", unwinder, joinNames(s.Frames), joinNames(s.Truth))})
		}
	}
	return out
}

// threadFrames is a thread's backtrace as Frames: the crashing thread's
// frames are the crash's, from the faulting frame on (the fault handler
// and its exception pseudo-frame left out); another thread's start at its
// saved context.
func threadFrames(fs []report.FrameJSON, current bool) []Frame {
	r := &report.Report{Frames: fs}
	return framesOf(r, current)
}

func joinNames(n []string) string {
	out := make([]string, len(n))
	for i, s := range n {
		if s == "" {
			s = "??"
		}
		out[i] = s
	}
	return strings.Join(out, " < ")
}
