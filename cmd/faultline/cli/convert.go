package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// Output formats of faultline convert.
const (
	convertNative       = "native"
	convertCrashCatcher = "crashcatcher"
)

func newConvert() *cobra.Command {
	var (
		to, out string
		raw     rawFlags
	)
	cmd := &cobra.Command{
		Use:   "convert --to native|crashcatcher DUMP... -o OUT",
		Short: "Convert a crash dump (any format faultline reads) to the native format or to CrashCatcher for CrashDebug",
		Long: `convert reads a dump in any format faultline detects (faultline.dump/1,
CrashCatcher binary or hex, Zephyr coredump binary or #CD: log, Memfault
CORE), or memory images plus register text with --regs, and writes it as
a faultline.dump/1 manifest (--to native; large regions go to .bin files
next to OUT) or as a CrashCatcher 3.0 binary (--to crashcatcher), which
CrashDebug loads. A dump taken at the fault handler's first instruction is
unstacked to the state before the exception that CrashCatcher holds.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			switch {
			case to != convertNative && to != convertCrashCatcher:
				return usagef("--to %q: want %s or %s", to, convertNative, convertCrashCatcher)
			case out == "":
				return usagef("-o OUT is required")
			case raw.regs == "" && len(a) != 1:
				return usagef("convert takes one DUMP (or, with --regs, memory images), got %d", len(a))
			}
			opt, err := raw.options()
			if err != nil {
				return err
			}
			var loadErr error
			ds := raw.loadDumps(a, opt, func(err error) { loadErr = err })
			if loadErr != nil {
				return loadErr
			}
			d := ds[0]
			for _, w := range d.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: warning: %s: %s\n", d.Path, w)
			}
			if to == convertNative {
				return d.Write(out)
			}
			var b bytes.Buffer
			if err := d.WriteCrashCatcher(&b); err != nil {
				return err
			}
			return writeFileAtomic(out, b.Bytes())
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "output format: native|crashcatcher (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (required)")
	raw.register(cmd)
	return cmd
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
