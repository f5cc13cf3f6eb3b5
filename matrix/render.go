package matrix

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/faultline-dev/faultline/analysis/score"
)

// pct formats a frame accuracy as a whole percentage, rounded down so that
// only a perfect score reads 100%.
func pct(acc float64) string {
	return fmt.Sprintf("%d%%", int(math.Floor(100*acc+1e-9)))
}

// String is "exact/cases, accuracy, bogus", "-" for no case.
func (c *Cell) String() string {
	if c == nil || c.Cases == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d, %s, %d", c.Exact, c.Cases, pct(c.FrameAccuracy), c.Bogus)
}

func joinNames(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = displayName(n)
	}
	if len(out) == 0 {
		return "(no frames)"
	}
	return strings.Join(out, " < ")
}

// plural is "1 case", "2 cases".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// scenarioCount is the number of distinct scenarios among the cases.
func (r *Report) scenarioCount() int {
	seen := map[string]bool{}
	for _, c := range r.Cases {
		seen[c.Scenario] = true
	}
	return len(seen)
}

// failing returns the non-exact strategies of a valid case, in display
// order.
func (r *Report) failing(c *CaseResult) []string {
	var out []string
	for _, s := range r.Strategies {
		if res, ok := c.Results[s]; ok && res.Fails() {
			out = append(out, s)
		}
	}
	return out
}

// threadRows returns the builds whose cases scored RTOS threads, in table
// order.
func threadRows(t *Table) []string {
	var out []string
	for _, b := range t.Builds {
		for _, c := range t.Rows[b] {
			if c.Threads != nil && c.Threads.Threads > 0 {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// threadCell is "exact threads/threads, accuracy, bogus", "-" for none.
func threadCell(c *Cell) string {
	if c == nil || c.Threads == nil || c.Threads.Threads == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d, %s, %d", c.Threads.Exact, c.Threads.Threads, pct(c.Threads.FrameAccuracy), c.Threads.Bogus)
}

// threadTotal sums the thread scores over the builds that have some.
func threadTotal(t *Table, builds []string, s string) *Cell {
	c := &Cell{Threads: &score.ThreadTotals{}}
	for _, b := range builds {
		if th := t.Rows[b][s].Threads; th != nil {
			c.Threads.Merge(*th)
		}
	}
	return c
}

const threadTableIntro = "Thread unwinding (RTOS cases): each cell: exact threads / threads, mean frame accuracy, bogus\nframes, over every thread with a true stack (the crashing one included), each scored against the\nemulator's shadow call stack of that thread (truth.threads)."

// headline is the one-sentence summary shared by the renderers.
func (r *Report) headline(t *Table) string {
	s := fmt.Sprintf("%s (%s, %s), %d invalid", plural(len(r.Cases), "case"), plural(len(t.Builds), "build"), plural(r.scenarioCount(), "scenario"), t.Invalid[""])
	if a := t.Total["auto"]; a != nil && a.Cases > 0 {
		s += fmt.Sprintf("; auto is exact on %d of %d (%s)", a.Exact, a.Cases, pct(float64(a.Exact)/float64(a.Cases)))
	}
	if r.Summary != nil {
		s += fmt.Sprintf("; %s, %s", plural(r.Summary.NewFailures, "new failure"), plural(r.Summary.KnownFailures, "known failure"))
	}
	return s + "."
}

// WriteText writes the per-build table of every strategy, the failing
// cases, the new failures with their backtraces, the invalid cases and
// the stale known-failure entries.
func (r *Report) WriteText(w io.Writer) error {
	if r.Summary == nil {
		r.Summarize()
	}
	t := r.Aggregate()
	fmt.Fprintf(w, "Firmware matrix: %s\n", r.headline(t))
	fmt.Fprintf(w, "Each cell: exact cases/cases, mean frame accuracy, bogus frames.\n\n")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "build\tcases")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "\t%s", s)
	}
	fmt.Fprintln(tw)
	row := func(name string, n, bad int, cells map[string]*Cell) {
		count := fmt.Sprint(n)
		if bad > 0 {
			count += fmt.Sprintf(" (+%d invalid)", bad)
		}
		fmt.Fprintf(tw, "%s\t%s", name, count)
		for _, s := range r.Strategies {
			fmt.Fprintf(tw, "\t%s", cells[s])
		}
		fmt.Fprintln(tw)
	}
	for _, b := range t.Builds {
		row(b, t.Valid[b], t.Invalid[b], t.Rows[b])
	}
	row("all", t.Valid[""], t.Invalid[""], t.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if tb := threadRows(t); len(tb) > 0 {
		fmt.Fprintf(w, "\n%s\n\n", threadTableIntro)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprint(tw, "build")
		for _, s := range r.Strategies {
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
		for _, b := range append(tb, "all") {
			fmt.Fprint(tw, b)
			for _, s := range r.Strategies {
				c := t.Rows[b][s]
				if b == "all" {
					c = threadTotal(t, tb, s)
				}
				fmt.Fprintf(tw, "\t%s", threadCell(c))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	var lines []string
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Invalid() {
			continue
		}
		var parts []string
		for _, s := range r.failing(c) {
			res := c.Results[s]
			p := s + " " + pct(res.FrameAccuracy)
			if n := len(res.ThreadFailures); n > 0 {
				p += fmt.Sprintf(" (%s not exact)", plural(n, "thread"))
			}
			if res.New {
				p += " NEW"
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			lines = append(lines, fmt.Sprintf("  %s %s: %s", c.Build, c.Scenario, strings.Join(parts, ", ")))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nFailing cases (%d): the strategies that are not exact, with their frame accuracy; NEW: not in the known failures\n", len(lines))
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	r.writeTextProblems(w)
	return nil
}

// maxTextDetails bounds the new failures the text output details (truth,
// backtrace, command line); the failing-case list names them all.
const maxTextDetails = 20

// maxThreadDetails bounds the threads detailed per new failure.
const maxThreadDetails = 3

// writeTextProblems lists the new failures, invalid cases and stale
// entries, each with what to do about it.
func (r *Report) writeTextProblems(w io.Writer) {
	s := r.Summary
	if s.NewFailures > 0 {
		fmt.Fprintf(w, "\nNew failures (%d): fix them, or add a line to %s\n", s.NewFailures, r.knownName())
		shown := 0
		for i := range r.Cases {
			c := &r.Cases[i]
			for _, st := range r.Strategies {
				res, ok := c.Results[st]
				if !ok || !res.New {
					continue
				}
				if shown++; shown > maxTextDetails {
					continue
				}
				fmt.Fprintf(w, "  %s %s %s: frame accuracy %s, %d bogus\n", c.Build, c.Scenario, st, pct(res.FrameAccuracy), res.Bogus)
				if res.Error != "" {
					fmt.Fprintf(w, "      error: %s\n", res.Error)
				}
				if !res.Exact {
					fmt.Fprintf(w, "      truth: %s\n      got:   %s\n", joinNames(c.Truth), joinNames(res.Frames))
				}
				for i, th := range res.ThreadFailures {
					if i == maxThreadDetails {
						fmt.Fprintf(w, "      ... and %s more (every one is in --format json)\n", plural(len(res.ThreadFailures)-i, "thread"))
						break
					}
					fmt.Fprintf(w, "      thread %s: truth: %s\n      thread %s: got:   %s\n", th.Thread, joinNames(th.Truth), th.Thread, joinNames(th.Frames))
				}
				if c.Reproduce != "" {
					fmt.Fprintf(w, "      reproduce: %s\n", c.Reproduce)
				}
			}
		}
	}
	if s.NewFailures > maxTextDetails {
		fmt.Fprintf(w, "  ... and %d more (every one is in --format json)\n", s.NewFailures-maxTextDetails)
	}
	if s.Invalid > 0 {
		fmt.Fprintf(w, "\nInvalid cases (%d): the emulated crash is not the scenario's; a harness or firmware error\n", s.Invalid)
		for _, g := range r.InvalidGroups() {
			fmt.Fprintf(w, "  %s: %s\n", g.Name(), g.Error)
			if g.Reproduce != "" && len(g.Scenarios) == 1 {
				fmt.Fprintf(w, "      reproduce: %s\n", g.Reproduce)
			}
		}
	}
	if len(r.Stale) > 0 {
		fmt.Fprintf(w, "\nStale known-failure entries (%d): no failing case matches them any more; remove them\n", len(r.Stale))
		for _, e := range r.Stale {
			fmt.Fprintf(w, "  %s: %s\n", e, e.Reason)
		}
	}
}

func (r *Report) knownName() string {
	if r.Known != nil && r.Known.File != "" {
		return r.Known.File
	}
	return "the known-failures file"
}

// WriteMarkdown writes the per-build table as a markdown table. With brief
// (the README), the cases where auto is not exact follow, with their
// reasons; otherwise every failing case, with a column per strategy.
// Invalid cases, new failures and stale entries are listed in both.
func (r *Report) WriteMarkdown(w io.Writer, brief bool) error {
	if r.Summary == nil {
		r.Summarize()
	}
	t := r.Aggregate()
	fmt.Fprintf(w, "%s\n\nEach cell: exact cases / cases, mean frame accuracy, bogus frames; scored against the\nemulator's shadow call stack.\n\n", r.headline(t))
	fmt.Fprint(w, "| build | cases |")
	for _, s := range r.Strategies {
		fmt.Fprintf(w, " %s |", s)
	}
	fmt.Fprint(w, "\n|---|---|"+strings.Repeat("---|", len(r.Strategies))+"\n")
	row := func(name string, n, bad int, cells map[string]*Cell) {
		count := fmt.Sprint(n)
		if bad > 0 {
			count += fmt.Sprintf(" (+%d invalid)", bad)
		}
		fmt.Fprintf(w, "| %s | %s |", mdEscape(name), count)
		for _, s := range r.Strategies {
			fmt.Fprintf(w, " %s |", cells[s])
		}
		fmt.Fprintln(w)
	}
	for _, b := range t.Builds {
		row(b, t.Valid[b], t.Invalid[b], t.Rows[b])
	}
	row("**all**", t.Valid[""], t.Invalid[""], t.Total)
	if tb := threadRows(t); len(tb) > 0 {
		fmt.Fprintf(w, "\n%s\n\n| build |", threadTableIntro)
		for _, s := range r.Strategies {
			fmt.Fprintf(w, " %s |", s)
		}
		fmt.Fprint(w, "\n|---|"+strings.Repeat("---|", len(r.Strategies))+"\n")
		for _, b := range append(tb, "**all**") {
			fmt.Fprintf(w, "| %s |", mdEscape(b))
			for _, s := range r.Strategies {
				c := t.Rows[b][s]
				if b == "**all**" {
					c = threadTotal(t, tb, s)
				}
				fmt.Fprintf(w, " %s |", threadCell(c))
			}
			fmt.Fprintln(w)
		}
	}

	if brief {
		var rows []string
		for i := range r.Cases {
			c := &r.Cases[i]
			res, ok := c.Results["auto"]
			if c.Invalid() || !ok || !res.Fails() {
				continue
			}
			why := res.Known
			if res.New {
				why = "**new failure**"
			}
			if !res.Exact {
				rows = append(rows, fmt.Sprintf("| %s | %s | %s | %d | %s |", mdEscape(c.Build), mdEscape(c.Scenario), pct(res.FrameAccuracy), res.Bogus, mdEscape(why)))
			}
			for _, th := range res.ThreadFailures {
				rows = append(rows, fmt.Sprintf("| %s | %s (thread %s) | %s | %d | %s |", mdEscape(c.Build), mdEscape(c.Scenario), mdEscape(th.Thread), pct(th.FrameAccuracy), th.Bogus, mdEscape(why)))
			}
		}
		if len(rows) > 0 {
			fmt.Fprintf(w, "\nCases where auto is not exact (%d):\n\n| build | scenario | frame accuracy | bogus | why |\n|---|---|---|---|---|\n%s\n", len(rows), strings.Join(rows, "\n"))
		}
	} else {
		var rows []string
		for i := range r.Cases {
			c := &r.Cases[i]
			if c.Invalid() || len(r.failing(c)) == 0 {
				continue
			}
			line := fmt.Sprintf("| %s | %s |", mdEscape(c.Build), mdEscape(c.Scenario))
			for _, s := range r.Strategies {
				res, ok := c.Results[s]
				switch {
				case !ok || !res.Fails():
					line += " |"
				case res.New:
					line += fmt.Sprintf(" **%s new** |", pct(res.FrameAccuracy))
				default:
					line += fmt.Sprintf(" %s |", pct(res.FrameAccuracy))
				}
			}
			rows = append(rows, line)
		}
		if len(rows) > 0 {
			fmt.Fprintf(w, "\nFailing cases (%d): frame accuracy of each strategy that is not exact; **new**: not in the known failures.\n\n| build | scenario |", len(rows))
			for _, s := range r.Strategies {
				fmt.Fprintf(w, " %s |", s)
			}
			fmt.Fprint(w, "\n|---|---|"+strings.Repeat("---|", len(r.Strategies))+"\n")
			fmt.Fprintln(w, strings.Join(rows, "\n"))
		}
	}
	if r.Summary.Invalid > 0 {
		fmt.Fprintf(w, "\nInvalid cases (%d):\n\n", r.Summary.Invalid)
		for _, g := range r.InvalidGroups() {
			fmt.Fprintf(w, "- %s: %s\n", mdEscape(g.Name()), mdEscape(g.Error))
		}
	}
	if !brief && r.Summary.NewFailures > 0 {
		fmt.Fprintf(w, "\nNew failures (%d):\n\n", r.Summary.NewFailures)
		for i := range r.Cases {
			c := &r.Cases[i]
			for _, s := range r.Strategies {
				if res, ok := c.Results[s]; ok && res.New {
					if !res.Exact {
						fmt.Fprintf(w, "- %s %s %s: got %s; truth %s\n", mdEscape(c.Build), mdEscape(c.Scenario), s, mdEscape(joinNames(res.Frames)), mdEscape(joinNames(c.Truth)))
					}
					for _, th := range res.ThreadFailures {
						fmt.Fprintf(w, "- %s %s %s, thread %s: got %s; truth %s\n", mdEscape(c.Build), mdEscape(c.Scenario), s, mdEscape(th.Thread), mdEscape(joinNames(th.Frames)), mdEscape(joinNames(th.Truth)))
					}
				}
			}
		}
	}
	if len(r.Stale) > 0 {
		fmt.Fprintf(w, "\nStale known-failure entries (%d):\n\n", len(r.Stale))
		for _, e := range r.Stale {
			fmt.Fprintf(w, "- %s\n", mdEscape(e.String()))
		}
	}
	return nil
}

// mdEscape keeps text from breaking a markdown table or being read as
// HTML.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
