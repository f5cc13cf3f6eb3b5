package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/internal/outfile"
	"github.com/faultline-dev/faultline/matrix"
)

// DefaultMatrixSpec is the spec `faultline matrix` runs without an
// argument.
const DefaultMatrixSpec = "firmware-samples/matrix/matrix.json"

type matrixFlags struct {
	format       string
	output       string
	known        string
	jobs         int
	maxFrames    int
	maxInsns     uint64
	timeout      time.Duration
	build        string
	scenario     string
	updateReadme string
}

func newMatrix() *cobra.Command {
	var f matrixFlags
	cmd := &cobra.Command{
		Use:   "matrix [SPEC]",
		Short: "Run every (build, scenario) of a firmware matrix in the emulator and score every strategy against the truth",
		Long: `matrix reads a faultline.matrixspec/1 spec (default ` + DefaultMatrixSpec + `),
runs every (build, scenario) case whose build has the features the scenario
requires in the Unicorn emulator, checks that the crash is the one the
scenario expects, runs every unwinding strategy on the dump and scores it
against the emulator's true call stack (exact, frame accuracy, bogus
frames). Cases run in parallel (--jobs); the output is in spec order.

A strategy that is not exact on a case is a known failure when a line of
the known-failures file (--known, default known-failures.txt next to the
spec) matches it:

    BUILD-GLOB SCENARIO-GLOB STRATEGY: reason

and a NEW failure otherwise. Exit status 1 when there is a new failure or
an invalid case (the emulator could not run it, it did not fault, or the
crash is not the expected one), 0 otherwise; 2 for a usage error.`,
		Args: maxArgs(1, "one SPEC"),
		RunE: func(cmd *cobra.Command, a []string) error {
			spec := DefaultMatrixSpec
			if len(a) == 1 {
				spec = a[0]
			}
			return runMatrix(cmd, &f, spec)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text|markdown|json|html")
	fl.StringVarP(&f.output, "output", "o", "", "write the output to FILE instead of stdout")
	fl.StringVar(&f.known, "known", "", "known-failures file (default: known-failures.txt next to the spec, if it exists)")
	fl.IntVarP(&f.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "cases run in parallel")
	fl.IntVar(&f.maxFrames, "max-frames", 64, "stop each walk after this many frames")
	fl.Uint64Var(&f.maxInsns, "max-insns", 0, "instruction bound of a run whose trigger sets none (default: the emulator's)")
	fl.DurationVar(&f.timeout, "timeout", 0, "wall-clock bound of a run whose trigger sets none (default: the emulator's)")
	fl.StringVar(&f.build, "build", "", "run only the builds matching this glob")
	fl.StringVar(&f.scenario, "scenario", "", "run only the scenarios matching this glob")
	fl.StringVar(&f.updateReadme, "update-readme", "", "rewrite the table between <!-- matrix:begin --> and <!-- matrix:end --> in this README")
	return cmd
}

func (f *matrixFlags) check() error {
	switch f.format {
	case "text", "markdown", "json", "html":
	default:
		return usagef("--format %q: want one of text, markdown, json, html", f.format)
	}
	if f.jobs < 1 || f.jobs > 1024 {
		return usagef("--jobs %d: want 1..1024", f.jobs)
	}
	if f.maxFrames <= 0 || f.maxFrames > 4096 {
		return usagef("--max-frames %d: want 1..4096", f.maxFrames)
	}
	if f.timeout < 0 {
		return usagef("--timeout %v: want a positive duration", f.timeout)
	}
	if err := (matrix.Filter{Build: f.build, Scenario: f.scenario}).Check(); err != nil {
		return usagef("--build/--scenario: %v", err)
	}
	if f.updateReadme != "" && (f.build != "" || f.scenario != "") {
		return usagef("--update-readme needs the whole matrix: drop --build and --scenario")
	}
	return nil
}

func runMatrix(cmd *cobra.Command, f *matrixFlags, specPath string) error {
	if err := f.check(); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	spec, err := matrix.LoadSpec(specPath)
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	known, err := loadKnown(f.known, specPath)
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	if err := checkMatrixOutputs(f, spec, known); err != nil {
		return err
	}
	for _, w := range spec.Warnings() {
		fmt.Fprintf(stderr, "faultline: matrix: warning: %s\n", w)
	}
	filter := matrix.Filter{Build: f.build, Scenario: f.scenario}
	partial := filter != (matrix.Filter{})
	cases := spec.Cases(filter)
	if len(cases) == 0 {
		if partial {
			return usagef("--build %q --scenario %q: no case of %s matches", f.build, f.scenario, specPath)
		}
		return fmt.Errorf("matrix: %s: no scenario applies to any build", specPath)
	}

	var prog *progress
	if isTerminal(stderr) {
		prog = newProgress(stderr, len(cases))
	}
	runner := &matrix.Runner{Jobs: f.jobs, MaxFrames: f.maxFrames, MaxInsns: f.maxInsns, Timeout: f.timeout,
		Done: func(c *matrix.CaseResult) {
			if prog != nil {
				if c.Invalid() {
					prog.failed.Add(1)
				}
				prog.tick()
			}
		}}
	rep := runner.Run(cmd.Context(), cases)
	prog.finish()
	for _, c := range rep.Cases {
		if errors.Is(c.Err, uc.ErrUnavailable) {
			return fmt.Errorf("matrix: %w", c.Err)
		}
	}
	rep.ApplyKnown(known, partial)
	rep.Summarize()

	var out bytes.Buffer
	switch f.format {
	case "text":
		err = rep.WriteText(&out)
	case "markdown":
		err = rep.WriteMarkdown(&out, false)
	case "json":
		err = rep.WriteJSON(&out)
	case "html":
		err = rep.WriteHTML(&out)
	}
	if err != nil {
		return err
	}
	if f.output != "" {
		if err := outfile.Write(f.output, cmd.OutOrStdout(), func(w io.Writer) error {
			_, err := w.Write(out.Bytes())
			return err
		}); err != nil {
			return fmt.Errorf("matrix: %w", err)
		}
	} else if _, err := cmd.OutOrStdout().Write(out.Bytes()); err != nil {
		return err
	}
	if f.updateReadme != "" {
		var md bytes.Buffer
		if err := rep.WriteMarkdown(&md, true); err != nil {
			return err
		}
		fmt.Fprintf(&md, "\nThe spec is `%s`", filepath.ToSlash(specPath))
		if rep.Known != nil {
			fmt.Fprintf(&md, "; every failure of a strategy is listed with its reason in `%s`", filepath.ToSlash(rep.Known.File))
		}
		fmt.Fprintf(&md, ". Regenerate: `faultline matrix --update-readme README.md`.\n")
		if err := matrix.UpdateBetweenMarkers(f.updateReadme, "<!-- matrix:begin -->", "<!-- matrix:end -->", md.String()); err != nil {
			return fmt.Errorf("matrix: %w", err)
		}
	}
	if f.format != "text" || f.output != "" {
		writeMatrixProblems(stderr, rep)
	}
	n := len(rep.Cases)
	var busy time.Duration
	for _, c := range rep.Cases {
		busy += c.Duration
	}
	fmt.Fprintf(stderr, "matrix: %s in %v wall time with %s: %v of wall time per case; each case took %v on average (emulation and %d strategies)\n",
		plural(n, "case"), rep.Elapsed.Round(time.Millisecond), plural(min(f.jobs, n), "job"), (rep.Elapsed / time.Duration(n)).Round(100*time.Microsecond),
		(busy / time.Duration(n)).Round(100*time.Microsecond), len(rep.Strategies))
	if rep.Failing() {
		return exitError{code: ExitInput, err: fmt.Errorf("matrix: %d new failures, %d invalid cases", rep.Summary.NewFailures, rep.Summary.Invalid)}
	}
	return nil
}

// checkMatrixOutputs refuses, before any case runs, an -o or
// --update-readme that is a directory or one of the inputs (the spec, its
// builds' ELFs, the known-failures file), and an -o that is the README
// being updated.
func checkMatrixOutputs(f *matrixFlags, spec *matrix.Spec, known *matrix.Known) error {
	inputs := []string{spec.Path}
	for _, b := range spec.Builds {
		inputs = append(inputs, spec.ELFPath(b))
	}
	if known != nil {
		inputs = append(inputs, known.File)
	}
	for _, o := range []struct{ flag, path string }{{"-o", f.output}, {"--update-readme", f.updateReadme}} {
		if o.path == "" || o.path == "-" {
			continue
		}
		if _, err := outfile.Resolve(o.path); err != nil {
			if errors.Is(err, outfile.ErrRefused) {
				return usagef("%s %v", o.flag, err)
			}
			return err
		}
		if err := outfile.CheckNotInput(o.flag, []string{o.path}, inputs); err != nil {
			return err
		}
	}
	if f.output != "" && f.updateReadme != "" {
		if err := outfile.CheckNotInput("-o", []string{f.output}, []string{f.updateReadme}); err != nil {
			return usagef("-o %s is the README --update-readme rewrites: choose another name", f.output)
		}
	}
	return nil
}

// loadKnown reads the known-failures file: the one --known names (it must
// exist), else known-failures.txt next to the spec when there is one.
func loadKnown(flag, specPath string) (*matrix.Known, error) {
	file := flag
	if file == "" {
		file = filepath.Join(filepath.Dir(specPath), "known-failures.txt")
	}
	k, err := matrix.LoadKnown(file, matrix.StrategyNames())
	if flag == "" && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return k, err
}

// writeMatrixProblems lists the new failures, invalid cases and stale
// entries on stderr, one line each, when the main output does not.
func writeMatrixProblems(w io.Writer, rep *matrix.Report) {
	for _, g := range rep.InvalidGroups() {
		fmt.Fprintf(w, "faultline: matrix: invalid case %s: %s\n", g.Name(), g.Error)
	}
	for _, c := range rep.Cases {
		for _, s := range rep.Strategies {
			if r, ok := c.Results[s]; ok && r.New {
				fmt.Fprintf(w, "faultline: matrix: NEW failure %s %s %s: frame accuracy %.0f%%, %d bogus\n", c.Build, c.Scenario, s, 100*r.FrameAccuracy, r.Bogus)
			}
		}
	}
	for _, e := range rep.Stale {
		fmt.Fprintf(w, "faultline: matrix: stale known-failure entry %s: no failing case matches it\n", e)
	}
}
