package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/cmd/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

func newAnalyze() *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "analyze --elf FW.elf DUMP...",
		Short: "Decode crash dumps: the fault explained and a symbolized backtrace",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, dumps []string) error {
			if err := c.check(); err != nil {
				return err
			}
			if _, err := analysis.Lookup(c.unwinder); err != nil {
				return usageError{err}
			}
			elf, err := elfsym.Open(c.elf)
			if err != nil {
				return err
			}
			defer elf.Close()
			var reports []*analysis.Report
			failed := 0
			for _, p := range dumps {
				d, err := crashdump.Load(p)
				if err == nil {
					var r *analysis.Report
					r, err = analysis.Analyze(elf, d, analysis.Options{Unwinder: c.unwinder, MaxFrames: c.maxFrames})
					if err == nil {
						reports = append(reports, r)
						continue
					}
				}
				failed++
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: %v\n", err)
			}
			out := cmd.OutOrStdout()
			switch c.format {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				var v any = reports
				if len(dumps) == 1 && len(reports) == 1 {
					v = reports[0]
				}
				if len(reports) > 0 || len(dumps) > 1 {
					if reports == nil {
						v = []*analysis.Report{}
					}
					if err := enc.Encode(v); err != nil {
						return err
					}
				}
			default:
				for i, r := range reports {
					if i > 0 {
						fmt.Fprintln(out)
					}
					if err := r.WriteText(out); err != nil {
						return err
					}
				}
			}
			if failed > 0 {
				return silentError{ExitInput}
			}
			return nil
		},
	}
	c.register(cmd, "text", "json")
	return cmd
}
