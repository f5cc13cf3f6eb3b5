package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/elfsym"
)

func newSymbolize() *cobra.Command {
	var elfPath, format string
	var demangle bool
	cmd := &cobra.Command{
		Use:   "symbolize --elf FW.elf [ADDR...]",
		Short: "Addresses to function, file:line and inlined callers (like addr2line -f -i)",
		Long: `symbolize prints, for each address, the function and file:line of every
inline level, innermost first, exactly as arm-none-eabi-addr2line -f -i -e
does. With no ADDR it reads addresses from standard input, one or more per
line. Addresses are hex (with or without 0x).`,
		RunE: func(cmd *cobra.Command, addrs []string) error {
			if elfPath == "" {
				return usagef("--elf is required")
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
			}
			elf, err := elfsym.Open(elfPath)
			if err != nil {
				return err
			}
			defer elf.Close()
			for _, w := range elf.Warnings() {
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: warning: %s\n", w)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			var results []elfsym.AddrLocations
			do := func(s string) error {
				a, err := parseAddr(s)
				if err != nil {
					return usageError{err}
				}
				if format == "json" {
					results = append(results, elf.Describe(a))
					return nil
				}
				locs, err := elf.Symbolize(a)
				if err != nil {
					// addr2line prints what it can and carries on.
					fmt.Fprintf(cmd.ErrOrStderr(), "faultline: 0x%08x: %v\n", a, err)
				}
				return elfsym.WriteAddr2Line(out, locs, demangle)
			}
			if len(addrs) > 0 {
				for _, s := range addrs {
					if err := do(s); err != nil {
						return err
					}
				}
			} else {
				sc := bufio.NewScanner(cmd.InOrStdin())
				sc.Buffer(make([]byte, 64*1024), 1<<20)
				for sc.Scan() {
					for _, s := range strings.Fields(sc.Text()) {
						if err := do(s); err != nil {
							return err
						}
					}
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("reading addresses from standard input: %w", err)
				}
			}
			if format == "json" {
				if results == nil {
					results = []elfsym.AddrLocations{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&elfPath, "elf", "", "firmware ELF file (required)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text|json")
	cmd.Flags().BoolVarP(&demangle, "demangle", "C", false, "demangle C++ names (like addr2line -C)")
	return cmd
}

// parseAddr accepts hex with or without 0x, as addr2line does.
func parseAddr(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("address %q: want a 32-bit hex number", s)
	}
	return uint32(v), nil
}
