package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// compareResult is one strategy's entry in faultline.compare/1.
type compareResult struct {
	Unwinder string             `json:"unwinder"`
	Frames   []report.FrameJSON `json:"frames"`
	Stop     string             `json:"stop"`
	Error    string             `json:"error,omitempty"`
	report   *report.Report
}

type compareJSON struct {
	Schema  string                 `json:"schema"`
	Dump    string                 `json:"dump"`
	Results []compareResult        `json:"results"`
	Truth   *truthJSON             `json:"truth,omitempty"`
	Scores  map[string]score.Score `json:"scores,omitempty"`
	// ThreadScores are each strategy's RTOS thread walks scored against
	// the truth's threads (truth.threads; the current thread against the
	// top-level truth), and ThreadsWithoutTruth the threads the truth has
	// no stack for (one that never ran). Both only when the truth has
	// threads and the dump's firmware runs an RTOS.
	ThreadScores        map[string][]score.ThreadScore `json:"thread_scores,omitempty"`
	ThreadsWithoutTruth []string                       `json:"threads_without_truth,omitempty"`
}

type truthJSON struct {
	Source  string            `json:"source"`
	Frames  []truthFrameJSON  `json:"frames"`
	Stop    string            `json:"stop,omitempty"`
	Threads []threadTruthJSON `json:"threads,omitempty"`
}

type threadTruthJSON struct {
	Frame  string           `json:"frame"`
	SP     string           `json:"sp,omitempty"`
	Frames []truthFrameJSON `json:"frames"`
}

type truthFrameJSON struct {
	PC       string `json:"pc,omitempty"`
	Function string `json:"function"`
	Kind     string `json:"kind,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}

func newCompare() *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "compare --elf FW.elf DUMP|DIR|GLOB...",
		Short: "Run every unwinding strategy on each dump side by side (scored when a dump has a truth)",
		Long: `compare runs every unwinding strategy on each dump and prints their
backtraces side by side; when the dump has a truth (the QEMU+GDB oracle's
or the emulator's shadow call stack), each is scored against it (exact,
frame accuracy, bogus frames). It takes no --unwinder: it runs them all.

Arguments are expanded as analyze's are: dump files, directories
(searched recursively) and quoted glob patterns. With --format json, one
dump gives one faultline.compare/1 object, several (or a directory or a
pattern) a JSON array. A dump that cannot be decoded is reported on
stderr, the others go on, and the exit status is then 1.`,
		Args: minArgs(1, "one DUMP (a dump file, a directory or a glob)"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := c.check(); err != nil {
				return err
			}
			elf, closeAll, err := openImages(c.elfs)
			if err != nil {
				return err
			}
			defer closeAll()
			in := expandInputs(a)
			multi := in.batch || len(a) > 1
			stderr := cmd.ErrOrStderr()
			failed := 0
			for _, e := range in.problems {
				var ue usageError
				if errors.As(e.err, &ue) {
					return e.err
				}
				failed++
				fmt.Fprintf(stderr, "faultline: %s\n", e.Error())
			}
			var all []*compareJSON
			for i, p := range in.paths {
				out, d, err := compareDump(elf, p, c.maxFrames)
				if err != nil {
					if !multi {
						return err
					}
					failed++
					fmt.Fprintf(stderr, "faultline: %s\n", err.Error())
					continue
				}
				if c.format == "json" {
					all = append(all, out)
				} else {
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					if err := writeCompareText(cmd, out, d); err != nil {
						d.Close()
						return err
					}
				}
				d.Close()
			}
			if c.format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				var v any = all
				if !multi && len(all) == 1 {
					v = all[0]
				} else if all == nil {
					v = []*compareJSON{}
				}
				if err := enc.Encode(v); err != nil {
					return err
				}
			}
			if failed > 0 {
				return silentError{ExitInput}
			}
			return nil
		},
	}
	c.registerNoUnwinder(cmd, "text", "json")
	return cmd
}

// compareDump runs every strategy on the dump at path.
// A panic doing so becomes this dump's error (internalError), so that one
// bad input of several costs one error line.
func compareDump(elf *elfsym.File, path string, maxFrames int) (_ *compareJSON, _ *crashdump.Dump, err error) {
	defer recoverInput(path, &err)
	d, err := crashdump.Load(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDumpRegisters(d); err != nil {
		d.Close()
		return nil, nil, err
	}
	out := compareJSON{Schema: "faultline.compare/1", Dump: d.Path}
	for _, s := range analysis.Strategies() {
		res := compareResult{Unwinder: s.Name, Frames: []report.FrameJSON{}}
		if !s.Available {
			res.Error = fmt.Sprintf("strategy %q is not available in this build yet", s.Name)
			out.Results = append(out.Results, res)
			continue
		}
		r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: s.Name, MaxFrames: maxFrames})
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Frames, res.Stop, res.report = r.Frames, r.Stop, r
		}
		out.Results = append(out.Results, res)
	}
	if d.Truth != nil {
		out.Truth = &truthJSON{Source: d.Truth.Source, Stop: d.Truth.Stop, Frames: compareTruthFrames(d.Truth.Frames)}
		for _, th := range d.Truth.Threads {
			tj := threadTruthJSON{Frame: report.Hex(th.Frame), Frames: compareTruthFrames(th.Frames)}
			if th.HasSP {
				tj.SP = report.Hex(th.SP)
			}
			out.Truth.Threads = append(out.Truth.Threads, tj)
		}
		out.Scores = map[string]score.Score{}
		for _, r := range out.Results {
			if r.report != nil {
				out.Scores[r.Unwinder] = score.ScoreReport(r.report, d.Truth)
				ts, none := score.ThreadScores(r.report, d.Truth)
				if ts != nil {
					if out.ThreadScores == nil {
						out.ThreadScores = map[string][]score.ThreadScore{}
					}
					out.ThreadScores[r.Unwinder] = ts
					out.ThreadsWithoutTruth = none
				}
			}
		}
	}
	return &out, d, nil
}

// compareTruthFrames converts truth frames for faultline.compare/1.
func compareTruthFrames(frames []crashdump.TruthFrame) []truthFrameJSON {
	out := []truthFrameJSON{}
	for _, f := range frames {
		tf := truthFrameJSON{Function: f.Function, Kind: f.Kind, File: f.File, Line: f.Line}
		if f.HasPC {
			tf.PC = report.Hex(f.PC)
		}
		out = append(out, tf)
	}
	return out
}

func writeCompareText(cmd *cobra.Command, out *compareJSON, d *crashdump.Dump) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Crash dump %s\n\n", out.Dump)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if out.Truth != nil {
		fmt.Fprintln(tw, "strategy\tframes\texact\taccuracy\tbogus\tbacktrace\tstop")
	} else {
		fmt.Fprintln(tw, "strategy\tframes\tbacktrace\tstop")
	}
	for _, r := range out.Results {
		if r.Error != "" {
			if out.Truth != nil {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\n", r.Unwinder, r.Error)
			} else {
				fmt.Fprintf(tw, "%s\t-\t-\t%s\n", r.Unwinder, r.Error)
			}
			continue
		}
		// Every row starts at the faulting frame (score.ChainStart),
		// whichever strategy it is.
		names := score.ChainNames(r.report, true)
		bt := strings.Join(shortNames(names), " < ")
		if len(names) == 0 && len(r.Frames) > 0 {
			bt = "(never left the fault handler)"
		}
		if out.Truth != nil {
			s := out.Scores[r.Unwinder]
			fmt.Fprintf(tw, "%s\t%d\t%v\t%.0f%%\t%d\t%s\t%s\n", r.Unwinder, len(names), s.Exact, 100*s.FrameAccuracy, s.Bogus, bt, r.Stop)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Unwinder, len(names), bt, r.Stop)
		}
	}
	if out.Truth != nil {
		tn := score.TruthNames(d.Truth)
		fmt.Fprintf(tw, "truth (%s)\t%d\t\t\t\t%s\t%s\n", out.Truth.Source, len(tn), strings.Join(shortNames(tn), " < "), out.Truth.Stop)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeCompareArgs(w, out)
	if out.ThreadScores == nil {
		return nil
	}
	return writeThreadScoresText(w, out)
}

// writeCompareArgs prints each strategy's frames with their arguments
// (when DWARF gives any frame of any strategy arguments): strategies
// whose frames and values are the same share one block, so a strategy
// that found another caller, or other registers, stands out.
func writeCompareArgs(w io.Writer, out *compareJSON) {
	any := false
	type block struct {
		names []string
		lines []string
	}
	var blocks []*block
	byText := map[string]*block{}
	for _, r := range out.Results {
		if r.Error != "" || len(r.Frames) == 0 {
			continue
		}
		var lines []string
		for _, f := range r.Frames {
			name := f.Function
			switch {
			case f.Kind == "exception":
				name = "<exception frame>"
			case name == "":
				name = "??"
			}
			a := f.ArgsLine()
			if a != "" {
				any = true
				name += " " + a
			}
			lines = append(lines, fmt.Sprintf("    #%-2d %s", f.Index, name))
		}
		key := strings.Join(lines, "\n")
		if b, ok := byText[key]; ok {
			b.names = append(b.names, r.Unwinder)
			continue
		}
		b := &block{names: []string{r.Unwinder}, lines: lines}
		byText[key] = b
		blocks = append(blocks, b)
	}
	if !any {
		return
	}
	fmt.Fprintln(w, "\nArguments (from DWARF; strategies with the same frames and values share a block)")
	for _, b := range blocks {
		fmt.Fprintf(w, "  %s\n", strings.Join(b.names, ", "))
		for _, l := range b.lines {
			fmt.Fprintln(w, l)
		}
	}
}

// writeThreadScoresText prints the RTOS thread scores: per strategy the
// threads exact, the mean frame accuracy and the bogus frames, then each
// thread auto (the default strategy) did not get exactly, with the truth.
func writeThreadScoresText(w io.Writer, out *compareJSON) error {
	n := 0
	for _, ts := range out.ThreadScores {
		n = len(ts)
		break
	}
	fmt.Fprintf(w, "\nThreads: %s with a true stack", plural(n, "thread"))
	if len(out.ThreadsWithoutTruth) > 0 {
		fmt.Fprintf(w, "; not scored (no true stack: never switched out): %s", strings.Join(out.ThreadsWithoutTruth, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "strategy\texact\taccuracy\tbogus\tnot exact")
	var misses []string
	for _, r := range out.Results {
		ts, ok := out.ThreadScores[r.Unwinder]
		if !ok {
			continue
		}
		tot := score.TotalOf(ts)
		var names []string
		for _, s := range ts {
			if s.Exact {
				continue
			}
			names = append(names, s.Thread)
			if r.Unwinder != "auto" {
				continue
			}
			misses = append(misses, fmt.Sprintf("  %s, thread %s: %s\n    truth: %s", r.Unwinder, s.Thread,
				strings.Join(shortNames(s.Frames), " < "), strings.Join(shortNames(s.Truth), " < ")))
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.0f%%\t%d\t%s\n", r.Unwinder, tot.Exact, tot.Threads, 100*tot.FrameAccuracy, tot.Bogus, strings.Join(names, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range misses {
		fmt.Fprintln(w, m)
	}
	return nil
}

func shortNames(n []string) []string {
	out := make([]string, len(n))
	for i, s := range n {
		if s == "" {
			s = "??"
		}
		out[i] = s
	}
	return out
}
