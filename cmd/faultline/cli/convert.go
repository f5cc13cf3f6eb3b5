package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/internal/outfile"
)

// Output formats of faultline convert.
const (
	convertNative       = "native"
	convertCrashCatcher = "crashcatcher"
	convertELFCore      = "elfcore"
)

func newConvert() *cobra.Command {
	var (
		to, out, elfPath, maxMemory string
		raw                         rawFlags
	)
	cmd := &cobra.Command{
		Use:   "convert --to native|crashcatcher|elfcore DUMP... -o OUT",
		Short: "Convert a crash dump (any format faultline reads) to the native format, to CrashCatcher for CrashDebug, or to an ELF core for GDB",
		Long: `convert reads a dump in any format faultline detects (faultline.dump/1,
CrashCatcher binary or hex, Zephyr coredump binary or #CD: log, Memfault
CORE, an ARM ELF core file, a probe-rs coredump), or memory images plus register text with --regs, and writes it as
a faultline.dump/1 manifest (--to native; regions over 1 KiB go to
OUT-BASE.ADDRESS.bin files next to OUT, all written atomically; with -o -
one self-contained manifest with every region as hex goes to stdout) or as a CrashCatcher 3.0 binary (--to crashcatcher), which
CrashDebug loads, or as an ARM ELF core file (--to elfcore) that GDB opens
with the firmware: gdb-multiarch FW.elf core.elf; with --elf, the RTOS
threads found in the dump become threads of the core (one NT_PRSTATUS
each, the crashing one first), which GDB lists with info threads and
walks with thread apply all bt. For CrashCatcher, a dump
taken at the fault handler's first instruction is unstacked to the state
before the exception that CrashCatcher holds.

OUT must be a file name, not a directory, and never one of the inputs
(the dump and its region files, --regs, the images, --elf; compared by
file identity, so a hard or symbolic link to an input is refused too).
A symbolic link's target is replaced (the link stays); a FIFO or a
device (/dev/null) is written through, never replaced, and a native
manifest written there is self-contained. A self-contained manifest over
64 MiB, which faultline would not read back, is refused.`,
		Args: minArgs(1, "one DUMP (or memory images with --regs)"),
		RunE: func(cmd *cobra.Command, a []string) error {
			switch {
			case to != convertNative && to != convertCrashCatcher && to != convertELFCore:
				return usagef("--to %q: want %s, %s or %s", to, convertNative, convertCrashCatcher, convertELFCore)
			case out == "":
				return usagef("-o OUT is required")
			case raw.regs == "" && len(a) != 1:
				return usagef("convert takes one DUMP (or, with --regs, memory images), got %d", len(a))
			case elfPath != "" && to != convertELFCore:
				return usagef("--elf is used with --to %s only (it finds the RTOS threads the core lists)", convertELFCore)
			}
			if err := checkOutputPath(out); err != nil {
				return err
			}
			opt, err := raw.options()
			if err != nil {
				return err
			}
			if maxMemory != "" {
				v, err := parseSize(maxMemory)
				if err != nil {
					return usagef("--max-memory %v", err)
				}
				if v < minBudget {
					return usagef("--max-memory %s: want at least %s", maxMemory, crashdump.FormatBytes(minBudget))
				}
				raw.maxMemory = v
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
			if elfPath != "" {
				if err := rtosThreadsOf(cmd, elfPath, d); err != nil {
					return err
				}
			}
			inputs := d.InputFiles()
			if raw.regs != "" {
				inputs = append([]string{raw.regs}, a...)
			}
			inputs = append(inputs, a...)
			inputs = append(inputs, elfPath)
			return writeDump(cmd, d, to, out, inputs)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "output format: native|crashcatcher|elfcore (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (required); - for standard output (a native manifest then holds every region inline as hex)")
	cmd.Flags().StringVar(&maxMemory, "max-memory", "", "bound what reading the dump may hold in memory (512MiB, 4G, 25%); the output is streamed, large region files are mapped")
	cmd.Flags().StringVar(&elfPath, "elf", "", "with --to elfcore: the firmware ELF, to write the RTOS threads found in the dump as threads of the core")
	raw.register(cmd)
	return cmd
}

// rtosThreadsOf finds the RTOS threads of d with the firmware at elfPath
// and sets d.Threads to them, the crashing thread first with the crash's
// registers. Threads whose context was not recovered are left out, with
// a warning; without an RTOS, d is unchanged.
func rtosThreadsOf(cmd *cobra.Command, elfPath string, d *crashdump.Dump) error {
	elf, err := openFirmware(elfPath)
	if err != nil {
		return err
	}
	defer elf.Close()
	r, err := analysis.Analyze(elf, d, analysis.Options{})
	if err != nil {
		return err
	}
	if r.RTOS == nil || len(r.Threads) == 0 || !r.Threads[0].Current {
		return nil
	}
	var ts []crashdump.Thread
	for _, th := range r.Threads {
		switch {
		case th.Current:
			ts = append(ts, crashdump.Thread{ID: th.Raw.ID, Name: th.Name, Regs: d.Regs})
		case th.Raw.Err != nil:
			fmt.Fprintf(cmd.ErrOrStderr(), "faultline: warning: %s: thread %s left out of the core: %v\n", d.Path, th.Name, th.Raw.Err)
		default:
			ts = append(ts, crashdump.Thread{ID: th.Raw.ID, Name: th.Name, Regs: th.Raw.Regs})
		}
	}
	if len(ts) > 1 {
		d.Threads = ts
	}
	return nil
}

// checkOutputPath refuses an -o that names an existing directory (a
// dump is written to a file name, its region files next to it) or that
// cannot be written (outfile.Resolve), before any work.
func checkOutputPath(out string) error {
	if out == "-" {
		return nil
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return usagef("-o %s is a directory: give the output's file name, such as %s (or - for stdout)", out, filepath.Join(out, "crash.json"))
	}
	if _, err := outfile.Resolve(out); err != nil {
		if errors.Is(err, outfile.ErrRefused) {
			return usagef("-o %v", err)
		}
		return err
	}
	return nil
}
