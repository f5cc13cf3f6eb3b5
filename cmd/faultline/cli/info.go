package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
)

func newInfo() *cobra.Command {
	var elfPath, format string
	cmd := &cobra.Command{
		Use:   "info --elf FW.elf",
		Short: "What the ELF offers for unwinding (EXIDX coverage, DWARF, stack symbols, vectors)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if elfPath == "" {
				return usagef("--elf is required")
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
			}
			elf, err := openFirmware(elfPath)
			if err != nil {
				return err
			}
			defer elf.Close()
			info := elf.Info()
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			return writeInfo(cmd.OutOrStdout(), info)
		},
	}
	cmd.Flags().StringVar(&elfPath, "elf", "", "firmware ELF file (required)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text|json")
	return cmd
}

// writeInfo prints elfsym.Info for people.
func writeInfo(w io.Writer, in elfsym.Info) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", in.File)
	fmt.Fprintf(&b, "  entry %s, %d sections, %d bytes loaded\n", in.Entry, in.Sections, in.LoadBytes)
	if in.BuildID != "" {
		fmt.Fprintf(&b, "  build-id: %s\n", in.BuildID)
	} else {
		b.WriteString("  build-id: none (linked without --build-id; dumps are paired with it by content)\n")
	}
	if a := in.Attributes; a != nil {
		fmt.Fprintf(&b, "  cpu: %s (%s, profile %s)", orDash(a.CPUName), orDash(a.CPUArch), orDash(a.Profile))
		if a.FPArch != "" {
			fmt.Fprintf(&b, ", FP %s", a.FPArch)
			if a.FPHardABI {
				b.WriteString(" hard-float ABI")
			}
		}
		b.WriteString("\n")
	}
	if in.HasSymtab {
		fmt.Fprintf(&b, "  symbols: %s (%d Thumb, %d ARM)\n", plural(in.Functions, "function"), in.ThumbFuncs, in.ARMFuncs)
	} else {
		b.WriteString("  symbols: none (no symbol table)\n")
	}
	if v := in.Vectors; v != nil {
		fmt.Fprintf(&b, "  vector table: 0x%08x (%s), initial SP 0x%08x, reset 0x%08x", v.Addr, v.Source, v.InitialSP, v.Reset)
		if v.ResetHandler != "" {
			fmt.Fprintf(&b, " (%s)", v.ResetHandler)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("  vector table: not found\n")
	}
	if len(in.Stack) > 0 {
		b.WriteString("  stack symbols:")
		for _, s := range in.Stack {
			fmt.Fprintf(&b, " %s=0x%08x", s.Name, s.Addr)
		}
		b.WriteString("\n")
	}
	b.WriteString("unwinding data\n")
	if e := in.Exidx; e != nil {
		fmt.Fprintf(&b, "  .ARM.exidx: %s (%d inline, %d in .ARM.extab, %d CANTUNWIND)\n", report.Plural(e.Entries, "entry", "entries"), e.Inline, e.Extab, e.CantUnwind)
		fmt.Fprintf(&b, "    functions: %d with their own entry, %d CANTUNWIND, %d only an earlier function's entry, %d not covered\n",
			e.FuncsCovered, e.FuncsCantUnwind, e.FuncsInherited, e.FuncsUncovered)
	} else {
		b.WriteString("  .ARM.exidx: absent (build with -funwind-tables for EHABI unwinding)\n")
	}
	brief := func(name string, s *elfsym.SectionBrief) {
		if s == nil {
			fmt.Fprintf(&b, "  %s: absent\n", name)
			return
		}
		fmt.Fprintf(&b, "  %s: %d bytes\n", name, s.Size)
	}
	brief(".ARM.extab", in.Extab)
	brief(".debug_frame", in.DebugFrame)
	brief(".eh_frame", in.EhFrame)
	if d := in.DWARF; d != nil {
		fmt.Fprintf(&b, "  DWARF: %d units, versions %v, line tables %v (%d bytes .debug_info, %d bytes .debug_line)\n",
			d.Units, d.Versions, d.LineVersions, d.InfoBytes, d.LineBytes)
	} else {
		b.WriteString("  DWARF: absent (no file:line, no inlined frames)\n")
	}
	for _, e := range in.ExidxErrors {
		fmt.Fprintf(&b, "  exidx problem: %s\n", e)
	}
	for _, wr := range in.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", wr)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
