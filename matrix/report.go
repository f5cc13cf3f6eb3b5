package matrix

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/analysis/score"
)

// Schema is the schema name of the matrix result (--format json).
const Schema = "faultline.matrix/1"

// Report is the result of a matrix run, faultline.matrix/1 in JSON:
// {"schema", "cases": [{"build", "scenario", "results": {"<strategy>":
// {"exact", "frame_accuracy", "bogus"}}}]} plus the fields documented on
// each type.
type Report struct {
	Schema string `json:"schema"`
	// Strategies are the strategy names in display order (auto first).
	Strategies []string     `json:"strategies"`
	Cases      []CaseResult `json:"cases"`
	// Summary is filled by Summarize.
	Summary *Summary `json:"summary,omitempty"`

	// Builds are the build names in spec order (only builds with a case).
	Builds []string `json:"-"`
	// Known is the known-failures file ApplyKnown used (nil: none).
	Known *Known `json:"-"`
	// Stale are the known-failure entries that match no failing case.
	Stale []KnownEntry `json:"-"`
	// Elapsed is the wall time of the run.
	Elapsed time.Duration `json:"-"`
}

// CaseResult is one (build, scenario) case.
type CaseResult struct {
	Build    string `json:"build"`
	Scenario string `json:"scenario"`
	// Results maps a strategy name to its score; empty for an invalid case.
	Results map[string]Result `json:"results"`
	// Error is set when the case itself is invalid: the emulator could not
	// run it, it did not fault, or the crash is not the one the scenario
	// expects. That is a harness or firmware error, not a strategy failure.
	Error string `json:"error,omitempty"`
	// Truth is the truth's function list, faulting frame first ("" for a
	// frame outside any function).
	Truth []string `json:"truth,omitempty"`
	// Insns is the number of guest instructions the emulator ran.
	Insns uint64 `json:"insns,omitempty"`
	// ThreadsWithoutTruth are the RTOS threads the truth has no stack for
	// (a thread that never ran), not scored.
	ThreadsWithoutTruth []string `json:"threads_without_truth,omitempty"`

	// Reproduce is the `faultline emulate` command line of the case.
	Reproduce string `json:"-"`
	// Duration is the wall time the case took (emulation and analysis).
	Duration time.Duration `json:"-"`
	// Err is the error behind Error.
	Err error `json:"-"`
}

// Invalid reports whether the case itself failed.
func (c *CaseResult) Invalid() bool { return c.Error != "" }

// Result is one strategy on one case: the score (exact, frame_accuracy,
// bogus), and for a non-exact result the frames it found and whether the
// failure is known.
type Result struct {
	score.Score
	// Frames is the strategy's function list when it is not exact.
	Frames []string `json:"frames,omitempty"`
	// Error is set when the strategy could not analyse the dump at all.
	Error string `json:"error,omitempty"`
	// Known is the known-failures reason covering a non-exact result.
	Known string `json:"known,omitempty"`
	// New is set for a non-exact result no known-failures entry covers.
	New bool `json:"new,omitempty"`
	// Gaps, Overclaimed and Unmarked are the independent call-target
	// check of the walk (score.CheckHonesty): a frame said to be high
	// after a gap or across a call to another function is overclaimed, and
	// fails the run.
	score.Honesty
	// Threads sums the scores of the RTOS threads with a true stack (the
	// crashing one included) when the firmware runs an RTOS and the truth
	// has threads; ThreadFailures are the other threads that are not
	// exact (the crashing thread's backtrace is the result's own). A
	// result with a thread that is not exact fails like a crash that is not
	// exact (known or new).
	Threads        *score.ThreadTotals `json:"threads,omitempty"`
	ThreadFailures []score.ThreadScore `json:"thread_failures,omitempty"`
}

// Fails reports whether the result is a failure: the crash's backtrace or
// a thread's is not exact.
func (r Result) Fails() bool {
	return !r.Exact || (r.Threads != nil && r.Threads.Exact < r.Threads.Threads)
}

// Cell accumulates the results of one strategy over several cases.
type Cell struct {
	Cases int `json:"cases"`
	Exact int `json:"exact"`
	// FrameAccuracy is the mean frame accuracy over the cases.
	FrameAccuracy float64 `json:"frame_accuracy"`
	Bogus         int     `json:"bogus"`
	Known         int     `json:"known"`
	New           int     `json:"new"`
	// Gaps counts gap frames; Overclaimed, frames said to be high after a
	// gap or across a call to another function (score.CheckHonesty).
	Gaps        int `json:"gaps"`
	Overclaimed int `json:"overclaimed"`
	// Threads sums the RTOS thread scores of the cases (nil: none).
	Threads *score.ThreadTotals `json:"threads,omitempty"`
	sum     float64
}

func (c *Cell) add(r Result) {
	c.Cases++
	if r.Exact {
		c.Exact++
	}
	c.sum += r.FrameAccuracy
	c.FrameAccuracy = c.sum / float64(c.Cases)
	c.Bogus += r.Bogus
	if r.Known != "" {
		c.Known++
	}
	if r.New {
		c.New++
	}
	c.Gaps += r.Gaps
	c.Overclaimed += len(r.Overclaimed)
	if r.Threads != nil {
		if c.Threads == nil {
			c.Threads = &score.ThreadTotals{}
		}
		c.Threads.Merge(*r.Threads)
	}
}

// Table is the results aggregated per build and strategy.
type Table struct {
	Builds []string
	// Rows maps build -> strategy -> cell; Total maps strategy -> cell.
	Rows  map[string]map[string]*Cell
	Total map[string]*Cell
	// Valid and Invalid count the cases per build ("" for all builds).
	Valid, Invalid map[string]int
}

// Aggregate sums the valid cases per build and strategy. Invalid cases are
// counted apart and score nothing.
func (r *Report) Aggregate() *Table {
	t := &Table{Rows: map[string]map[string]*Cell{}, Total: map[string]*Cell{}, Valid: map[string]int{}, Invalid: map[string]int{}}
	for _, s := range r.Strategies {
		t.Total[s] = &Cell{}
	}
	row := func(b string) map[string]*Cell {
		if t.Rows[b] == nil {
			t.Builds = append(t.Builds, b)
			t.Rows[b] = map[string]*Cell{}
			for _, s := range r.Strategies {
				t.Rows[b][s] = &Cell{}
			}
		}
		return t.Rows[b]
	}
	for _, b := range r.Builds {
		row(b)
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		cells := row(c.Build)
		if c.Invalid() {
			t.Invalid[c.Build]++
			t.Invalid[""]++
			continue
		}
		t.Valid[c.Build]++
		t.Valid[""]++
		for _, s := range r.Strategies {
			res, ok := c.Results[s]
			if !ok {
				continue
			}
			cells[s].add(res)
			t.Total[s].add(res)
		}
	}
	return t
}

// Summary is the "summary" object of faultline.matrix/1.
type Summary struct {
	Cases         int `json:"cases"`
	Invalid       int `json:"invalid"`
	NewFailures   int `json:"new_failures"`
	KnownFailures int `json:"known_failures"`
	// StaleKnown are the known-failure entries no failing case matches
	// ("FILE:LINE: BUILD SCENARIO STRATEGY").
	StaleKnown []string `json:"stale_known"`
	// Strategies holds each strategy's totals over the valid cases.
	Strategies map[string]*Cell `json:"strategies"`
}

// Summarize fills r.Summary from the cases and the known-failure matching.
func (r *Report) Summarize() {
	t := r.Aggregate()
	s := &Summary{Cases: len(r.Cases), Invalid: t.Invalid[""], StaleKnown: []string{}, Strategies: t.Total}
	for _, c := range t.Total {
		s.NewFailures += c.New
		s.KnownFailures += c.Known
	}
	for _, e := range r.Stale {
		s.StaleKnown = append(s.StaleKnown, e.String())
	}
	r.Summary = s
}

// ApplyKnown sorts every non-exact result into known (an entry of k covers
// it; the first one gives the reason) and new, and finds the stale
// entries: those that match no failing result. When partial is set (the
// run was filtered), an entry that matches no case of the run at all is
// not called stale: the run says nothing about it. An entry that matches an
// invalid case is not stale either. k may be nil (no known failures).
func (r *Report) ApplyKnown(k *Known, partial bool) {
	r.Known = k
	var used, touched, undetermined []bool
	if k != nil {
		used = make([]bool, len(k.Entries))
		touched = make([]bool, len(k.Entries))
		undetermined = make([]bool, len(k.Entries))
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Invalid() {
			if k != nil {
				for j, e := range k.Entries {
					if matchAny(e, c, r.Strategies) {
						undetermined[j] = true
					}
				}
			}
			continue
		}
		for _, s := range r.Strategies {
			res, ok := c.Results[s]
			if !ok {
				continue
			}
			res.Known, res.New = "", false
			if res.Fails() {
				first := -1
				if k != nil {
					for j, e := range k.Entries {
						if e.Matches(c.Build, c.Scenario, s) {
							used[j] = true
							if first < 0 {
								first = j
							}
						}
					}
				}
				if first >= 0 {
					res.Known = k.Entries[first].Reason
				} else {
					res.New = true
				}
			} else if k != nil {
				for j, e := range k.Entries {
					if e.Matches(c.Build, c.Scenario, s) {
						touched[j] = true
					}
				}
			}
			c.Results[s] = res
		}
	}
	r.Stale = nil
	if k == nil {
		return
	}
	for j, e := range k.Entries {
		if used[j] || undetermined[j] || (partial && !touched[j]) {
			continue
		}
		r.Stale = append(r.Stale, e)
	}
}

// matchAny reports whether e covers any strategy of the case.
func matchAny(e KnownEntry, c *CaseResult, strategies []string) bool {
	for _, s := range strategies {
		if e.Matches(c.Build, c.Scenario, s) {
			return true
		}
	}
	return false
}

// InvalidGroup is invalid cases of one build that failed the same way
// (typically: the build's ELF cannot be opened), in case order.
type InvalidGroup struct {
	Build     string
	Scenarios []string
	Error     string
	// Reproduce is the first case's command line.
	Reproduce string
}

// Name is "BUILD SCENARIO" for one case, "BUILD (N cases: S1, S2...)" for
// several.
func (g InvalidGroup) Name() string {
	if len(g.Scenarios) == 1 {
		return g.Build + " " + g.Scenarios[0]
	}
	return fmt.Sprintf("%s (%d cases: %s)", g.Build, len(g.Scenarios), strings.Join(g.Scenarios, ", "))
}

// InvalidGroups returns the invalid cases, consecutive cases of one build
// with the same error merged.
func (r *Report) InvalidGroups() []InvalidGroup {
	var out []InvalidGroup
	for i := range r.Cases {
		c := &r.Cases[i]
		if !c.Invalid() {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Build == c.Build && out[n-1].Error == c.Error {
			out[n-1].Scenarios = append(out[n-1].Scenarios, c.Scenario)
			continue
		}
		out = append(out, InvalidGroup{Build: c.Build, Scenarios: []string{c.Scenario}, Error: c.Error, Reproduce: c.Reproduce})
	}
	return out
}

// Failing reports whether the run must fail CI: a new failure or an
// invalid case.
func (r *Report) Failing() bool {
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Invalid() {
			return true
		}
		for _, res := range c.Results {
			if res.New || len(res.Overclaimed) > 0 {
				return true
			}
		}
	}
	return false
}

// WriteJSON writes faultline.matrix/1, indented. It calls Summarize when
// the summary is missing.
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Summary == nil {
		r.Summarize()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
