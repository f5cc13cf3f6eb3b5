package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/internal/outfile"
	"github.com/faultline-dev/faultline/regress"
)

type regressFlags struct {
	junit     string
	unwinder  string
	maxFrames int
	run       string
	verbose   bool
}

func newRegress() *cobra.Command {
	var f regressFlags
	cmd := &cobra.Command{
		Use:   "regress SPEC",
		Short: "Run crash scenarios from a spec in the emulator and fail on any regression (for CI; JUnit XML)",
		Long: `regress runs each scenario of SPEC in the Unicorn emulator (as ` + "`faultline emulate`" + `
would), analyses the dump with the chosen unwinder (as ` + "`faultline analyze`" + ` would)
and compares the fault and the backtrace with what the spec expects. With
"handler": {"check": true} the run continues into the firmware's own crash
handler; the dump it writes over semihosting (stdout or stderr; CrashCatcher
or any format analyze reads) is decoded and must give the same backtrace
and fault as the emulator's own dump of the same crash.

It prints one PASS/FAIL/ERROR line per scenario, a diff and the commands
that reproduce each failure, and a summary; --junit FILE also writes JUnit
XML. Exit status: 0 when every scenario passes, 1 when one fails or cannot
run (no fault, emulator error) or the spec is malformed, 2 on usage errors.

SPEC is JSON (YAML is not read), schema faultline.regress/1. Paths are
relative to the spec's directory:

  {
    "schema": "faultline.regress/1",
    "name": "sample",                    optional: the JUnit suite name
    "elf": "../build/gcc-m3-O2.elf",     the firmware (or per scenario)
    "unwinder": "auto",                  optional (default auto)
    "max_frames": 64,                    optional
    "scenarios": [{
      "name": "null_write_deep",         unique
      "elf": "...", "unwinder": "...",   optional overrides
      "trigger": {                       emulate's flags, all optional:
        "set": ["crash_scenario=1"],     --set (repeatable)
        "call": "FUNCTION",              --call
        "irq": ["23@5000"],              --irq N@INSN
        "map": ["0x60000000:4k"],        --map
        "cpu": "m4", "max_insns": 1000000, "timeout": "10s",
        "run_handler": false, "imprecise_stores": false
      },
      "expect": {
        "fault": {"exception": "HardFault",
                  "causes": ["CFSR.DACCVIOL", "HFSR.FORCED"],
                  "address": "0x0"},     each part optional; causes: a subset
        "frames": ["null_store", "deep5_mixed",
                   {"function": "deep4_huge_locals", "file": "main.c", "line": 73}],
        "match": "prefix",               or "exact"; default prefix
        "threads": [{"name": "IDLE",     RTOS threads (FreeRTOS tasks, Zephyr
                     "state": "ready",   threads) that must be found; state,
                     "frames": ["rtk_port_pend_tick", "prvIdleTask"],
                     "match": "exact"}], frames and match optional
        "threads_truth": true            every thread with a true stack is
                                         unwound exactly as that stack
      },
      "handler": {"check": true, "output": "auto"}   auto|stdout|stderr
    }]
  }

Frames run from the faulting frame outwards, exception pseudo-frames left
out, inlined frames included, as analyze prints them. A frame is a function
name (or "*" for any frame) or an object whose "file" must be the frame's
file or a path suffix of it ("main.c" matches ./src/main.c) and "line" its
line. "prefix": the backtrace starts with these frames; "exact": it is
exactly these frames. A thread's frames start at its saved context (the
crashing thread's at the faulting frame). threads_truth compares each
thread with the emulator's true stack of that thread (the dump's
truth.threads; a thread that never ran has none and is not compared). A
scenario whose firmware does not fault is an error, never a pass.`,
		Args: exactArgs(1, "one SPEC"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRegress(cmd, &f, a[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.junit, "junit", "", "also write JUnit XML to FILE")
	fl.StringVar(&f.unwinder, "unwinder", "", "override the spec's unwinder: "+strings.Join(StrategyNames(), "|"))
	fl.IntVar(&f.maxFrames, "max-frames", 0, "override the spec's frame limit (default: the spec's, else 64)")
	fl.StringVar(&f.run, "run", "", "run only the scenarios whose name matches this regular expression")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "also print the backtrace of passing scenarios")
	return cmd
}

func runRegress(cmd *cobra.Command, f *regressFlags, specPath string) error {
	if f.unwinder != "" && !validStrategy(f.unwinder) {
		return usagef("--unwinder %q: want one of %s", f.unwinder, strings.Join(StrategyNames(), "|"))
	}
	if f.maxFrames < 0 || f.maxFrames > 4096 {
		return usagef("--max-frames %d: want 1..4096", f.maxFrames)
	}
	var sel *regexp.Regexp
	if f.run != "" {
		var err error
		if sel, err = regexp.Compile(f.run); err != nil {
			return usagef("--run %q: %v", f.run, err)
		}
	}
	if f.junit != "" {
		// Before any work: never the spec (nor a directory).
		if err := checkJUnitPath(f.junit, []string{specPath}); err != nil {
			return err
		}
	}
	start := time.Now()
	spec, err := regress.Load(specPath)
	if err == nil && f.junit != "" {
		inputs := []string{specPath}
		for _, sc := range spec.Scenarios {
			inputs = append(inputs, sc.ELFPath)
		}
		if err := checkJUnitPath(f.junit, inputs); err != nil {
			return err
		}
	}
	if err != nil {
		if f.junit != "" {
			if jerr := writeJUnitFile(f.junit, func(w io.Writer) error {
				return regress.WriteJUnitError(w, specPath, err, start)
			}); jerr != nil {
				return errors.Join(err, jerr)
			}
		}
		return err
	}
	if sel != nil {
		n := 0
		for _, sc := range spec.Scenarios {
			if sel.MatchString(sc.Name) {
				n++
			}
		}
		if n == 0 {
			return usagef("--run %q matches no scenario of %s", f.run, specPath)
		}
	}
	out := cmd.OutOrStdout()
	opt := regress.Options{Unwinder: f.unwinder, MaxFrames: f.maxFrames,
		Done: func(r *regress.Result) { io.WriteString(out, r.Text(f.verbose)) }}
	if sel != nil {
		opt.Select = sel.MatchString
	}
	sum := regress.Run(cmd.Context(), spec, opt)
	if err := sum.WriteText(out); err != nil {
		return err
	}
	if f.junit != "" {
		if err := writeJUnitFile(f.junit, sum.WriteJUnit); err != nil {
			return err
		}
	}
	switch {
	case sum.Interrupted:
		return exitError{code: ExitInput, err: fmt.Errorf("regress: %s: interrupted", specPath)}
	case !sum.OK():
		return exitError{code: ExitInput, err: fmt.Errorf("regress: %s: %d of %d scenarios failed, %d could not run",
			specPath, sum.Failed, len(sum.Results), sum.Errors)}
	}
	return nil
}

// checkJUnitPath refuses a --junit path that is a directory or one of the
// inputs.
func checkJUnitPath(path string, inputs []string) error {
	if path == "-" {
		return nil // a file named "-": written as any other
	}
	if _, err := outfile.Resolve(path); err != nil && errors.Is(err, outfile.ErrRefused) {
		return usagef("--junit %v", err)
	}
	return outfile.CheckNotInput("--junit", []string{path}, inputs)
}

// writeJUnitFile writes the report with the shared output rules (a file
// atomically, so that a CI system never reads half a file; a FIFO or a
// device through), creating its directory first, as CI report paths often
// name one that does not exist yet.
func writeJUnitFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	if path == "-" {
		path = "./-"
	}
	if err := outfile.Write(path, nil, write); err != nil {
		return fmt.Errorf("--junit %w", err)
	}
	return nil
}
