package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/cmd/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// compareResult is one strategy's entry in faultline.compare/1.
type compareResult struct {
	Unwinder string               `json:"unwinder"`
	Frames   []analysis.FrameJSON `json:"frames"`
	Stop     string               `json:"stop"`
	Error    string               `json:"error,omitempty"`
	report   *analysis.Report
}

type compareJSON struct {
	Schema  string                    `json:"schema"`
	Dump    string                    `json:"dump"`
	Results []compareResult           `json:"results"`
	Truth   *truthJSON                `json:"truth,omitempty"`
	Scores  map[string]analysis.Score `json:"scores,omitempty"`
}

type truthJSON struct {
	Source string           `json:"source"`
	Frames []truthFrameJSON `json:"frames"`
	Stop   string           `json:"stop,omitempty"`
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
		Short: "Run every unwinding strategy on one dump side by side (scored when the dump has a truth)",
		Long: `compare runs every unwinding strategy on each dump and prints their
backtraces side by side; when the dump has a truth (the QEMU+GDB oracle's
or the emulator's shadow call stack), each is scored against it (exact,
frame accuracy, bogus frames). It takes no --unwinder: it runs them all.

Arguments are expanded as analyze's are: dump files, directories
(searched recursively) and quoted glob patterns. With --format json, one
dump gives one faultline.compare/1 object, several (or a directory or a
pattern) a JSON array. A dump that cannot be decoded is reported on
stderr, the others go on, and the exit status is then 1.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := c.check(); err != nil {
				return err
			}
			elf, err := openFirmware(c.elf)
			if err != nil {
				return err
			}
			defer elf.Close()
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
				fmt.Fprintf(stderr, "faultline: %s\n", userMessage(e))
			}
			var all []*compareJSON
			for i, p := range in.paths {
				out, d, err := compareDump(elf, p, c.maxFrames)
				if err != nil {
					if !multi {
						return err
					}
					failed++
					fmt.Fprintf(stderr, "faultline: %s\n", userMessage(err))
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
func compareDump(elf *elfsym.File, path string, maxFrames int) (*compareJSON, *crashdump.Dump, error) {
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
		res := compareResult{Unwinder: s.Name, Frames: []analysis.FrameJSON{}}
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
		out.Truth = &truthJSON{Source: d.Truth.Source, Stop: d.Truth.Stop}
		for _, f := range d.Truth.Frames {
			tf := truthFrameJSON{Function: f.Function, Kind: f.Kind, File: f.File, Line: f.Line}
			if f.HasPC {
				tf.PC = analysis.Hex(f.PC)
			}
			out.Truth.Frames = append(out.Truth.Frames, tf)
		}
		out.Scores = map[string]analysis.Score{}
		for _, r := range out.Results {
			if r.report != nil {
				out.Scores[r.Unwinder] = analysis.ScoreReport(r.report, d.Truth)
			}
		}
	}
	return &out, d, nil
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
		// Every row starts at the faulting frame (analysis.ChainStart),
		// whichever strategy it is.
		names := analysis.ChainNames(r.report, true)
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
		tn := analysis.TruthNames(d.Truth)
		fmt.Fprintf(tw, "truth (%s)\t%d\t\t\t\t%s\t%s\n", out.Truth.Source, len(tn), strings.Join(shortNames(tn), " < "), out.Truth.Stop)
	}
	return tw.Flush()
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
