package cli

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/cmd/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// rawFlags are analyze's flags for a dump assembled from memory images
// and register text (crashdump.Combine).
type rawFlags struct {
	regs string // register text file; makes every DUMP a memory image
	base string // load address of raw binary images
	cpu  string // the CPU, overriding what a dump says
}

func (f *rawFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.regs, "regs", "", "register text (GDB \"info registers\" or OpenOCD \"reg\" output); every DUMP is then a memory image (raw binary, Intel HEX or S-records) and all of them form one dump")
	cmd.Flags().StringVar(&f.base, "base", "", "load address of raw binary memory images (with --regs)")
	cmd.Flags().StringVar(&f.cpu, "cpu", "", "the crashed CPU (cortex-m0|m0plus|m3|m4|m7|m23|m33...), overriding the dump's")
}

// options checks the flags and returns Combine's options.
func (f *rawFlags) options() (crashdump.CombineOptions, error) {
	var o crashdump.CombineOptions
	if f.cpu != "" && unwinders.ProfileOf(f.cpu) == unwinders.ProfileUnknown {
		return o, usagef("--cpu %q: want a Cortex-M core such as cortex-m0, cortex-m3, cortex-m4, cortex-m7 or cortex-m33", f.cpu)
	}
	o.CPU = f.cpu
	if f.base != "" {
		if f.regs == "" {
			return o, usagef("--base only applies to memory images given with --regs")
		}
		v, err := strconv.ParseUint(f.base, 0, 32)
		if err != nil {
			return o, usagef("--base %q: want a 32-bit address such as 0x20000000", f.base)
		}
		o.Image = crashdump.ImageOptions{Base: uint32(v), HasBase: true}
	}
	return o, nil
}

// loadDumps loads each DUMP, or with --regs combines them all into one.
func (f *rawFlags) loadDumps(paths []string, opt crashdump.CombineOptions, fail func(error)) []*crashdump.Dump {
	if f.regs != "" {
		d, err := crashdump.Combine(f.regs, paths, opt)
		if err != nil {
			fail(err)
			return nil
		}
		return []*crashdump.Dump{d}
	}
	var out []*crashdump.Dump
	for _, p := range paths {
		d, err := crashdump.Load(p)
		if err != nil {
			fail(err)
			continue
		}
		if opt.CPU != "" {
			d.CPU = opt.CPU
		}
		out = append(out, d)
	}
	return out
}

func newAnalyze() *cobra.Command {
	var (
		c   commonFlags
		raw rawFlags
	)
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
			opt, err := raw.options()
			if err != nil {
				return err
			}
			elf, err := elfsym.Open(c.elf)
			if err != nil {
				return err
			}
			defer elf.Close()
			var reports []*analysis.Report
			failed := 0
			fail := func(err error) {
				failed++
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: %v\n", err)
			}
			for _, d := range raw.loadDumps(dumps, opt, fail) {
				r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: c.unwinder, MaxFrames: c.maxFrames})
				if err != nil {
					fail(err)
					continue
				}
				// What the importer noticed comes first.
				r.Warnings = append(append([]string{}, d.Warnings...), r.Warnings...)
				reports = append(reports, r)
			}
			nDumps := len(dumps)
			if raw.regs != "" {
				nDumps = 1 // the images and the registers form one dump
			}
			out := cmd.OutOrStdout()
			switch c.format {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				var v any = reports
				if nDumps == 1 && len(reports) == 1 {
					v = reports[0]
				}
				if len(reports) > 0 || nDumps > 1 {
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
	raw.register(cmd)
	return cmd
}
