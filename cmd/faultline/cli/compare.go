package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/cmd/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
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
		Use:   "compare --elf FW.elf DUMP",
		Short: "Run every unwinding strategy on one dump side by side (scored when the dump has a truth)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := c.check(); err != nil {
				return err
			}
			elf, err := openFirmware(c.elf)
			if err != nil {
				return err
			}
			defer elf.Close()
			d, err := crashdump.Load(a[0])
			if err != nil {
				return err
			}
			if err := checkDumpRegisters(d); err != nil {
				return err
			}
			out := compareJSON{Schema: "faultline.compare/1", Dump: d.Path}
			for _, s := range analysis.Strategies() {
				res := compareResult{Unwinder: s.Name, Frames: []analysis.FrameJSON{}}
				if !s.Available {
					res.Error = fmt.Sprintf("strategy %q is not available in this build yet", s.Name)
					out.Results = append(out.Results, res)
					continue
				}
				r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: s.Name, MaxFrames: c.maxFrames})
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
			if c.format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return writeCompareText(cmd, &out, d)
		},
	}
	c.register(cmd, "text", "json")
	return cmd
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
		names := analysis.CandidateNames(r.Frames, true)
		bt := strings.Join(shortNames(names), " < ")
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
