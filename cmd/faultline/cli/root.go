// Package cli holds faultline's cobra commands. Every command only has a
// RunE, writes through the command's writers and returns errors, so tests
// run commands in-process with Run.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/internal/outfile"
)

// Exit statuses (design.md).
const (
	ExitOK      = 0
	ExitInput   = 1 // the input could not be decoded
	ExitUsage   = 2
	ExitNoFault = 3 // emulate: the firmware never faulted within the bounds
)

// usageError marks errors that are the caller's fault (bad flags or
// arguments): exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// silentError is an exit status whose message was already printed.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// commonFlags are shared by the commands that analyse dumps.
type commonFlags struct {
	elfOptional bool     // analyze --symbols DIR stands for --elf
	elf         string   // the first --elf: the primary image
	elfs        []string // every --elf, in the order given
	unwinder    string
	format      string
	maxFrames   int
	formats     []string
}

func (c *commonFlags) register(cmd *cobra.Command, formats ...string) {
	cmd.Flags().StringVar(&c.unwinder, "unwinder", "auto", "unwinding strategy: "+strings.Join(StrategyNames(), "|"))
	c.registerNoUnwinder(cmd, formats...)
}

// registerNoUnwinder registers the common flags but --unwinder, for a
// command that runs every strategy (compare).
func (c *commonFlags) registerNoUnwinder(cmd *cobra.Command, formats ...string) {
	if c.unwinder == "" {
		c.unwinder = "auto"
	}
	cmd.Flags().StringArrayVar(&c.elfs, "elf", nil, "firmware ELF file (required); repeat it for a device of several images (bootloader + application, Secure + Non-secure, a ROM's symbol file): each image claims its own addresses, the first is the primary")
	cmd.Flags().StringVar(&c.format, "format", "text", "output format: "+strings.Join(formats, "|"))
	cmd.Flags().IntVar(&c.maxFrames, "max-frames", 64, "stop after this many frames")
	c.formats = formats
}

func (c *commonFlags) check() error {
	if len(c.elfs) > 0 {
		c.elf = c.elfs[0]
	}
	for _, e := range c.elfs {
		if e == "" {
			return usagef("--elf with an empty path")
		}
	}
	if c.elf == "" && !c.elfOptional {
		return usagef("--elf is required")
	}
	if !validStrategy(c.unwinder) {
		return usagef("--unwinder %q: want one of %s", c.unwinder, strings.Join(StrategyNames(), ", "))
	}
	ok := false
	for _, f := range c.formats {
		ok = ok || f == c.format
	}
	if !ok {
		return usagef("--format %q: want one of %s", c.format, strings.Join(c.formats, ", "))
	}
	if c.maxFrames <= 0 || c.maxFrames > 4096 {
		return usagef("--max-frames %d: want 1..4096", c.maxFrames)
	}
	return nil
}

// NewRoot builds the command tree.
func NewRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Decode ARM Cortex-M crashes into explained, symbolized backtraces",
		Long: `faultline turns a Cortex-M HardFault (registers plus a RAM dump) into a
symbolized backtrace with file:line and inlined frames, explains the fault
status registers in plain words, and says how sure it is of every frame.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// No command: the usage on stderr and exit status 2, as for any
		// other usage error (a script that forgot the command must not
		// succeed).
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Usage()
			cmd.SetOut(stdout)
			return silentError{ExitUsage}
		},
		Version: versionString(),
	}
	root.SetVersionTemplate("faultline {{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().String("color", "auto", "colour the text output: auto (on a terminal, unless NO_COLOR is set), always or never")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{flagError(err)} })
	// The commands, in the order `faultline help` lists them (an explicit
	// list: no init() registration).
	root.AddCommand(newAnalyze(), newCompare(), newEmulate(), newSymbolize(), newInfo(),
		newConvert(), newCapture(), newGDBServer(), newMatrix(), newRegress(), newHeap(), newServe(), newUpload())
	registerCompletions(root)
	return root
}

// Run executes faultline with args and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var se silentError
	if errors.As(err, &se) {
		return se.code
	}
	fmt.Fprintf(stderr, "faultline: %s\n", err.Error())
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), isCobraUsage(err), errors.Is(err, outfile.ErrRefused):
		return ExitUsage
	}
	return ExitInput
}

// isCobraUsage recognises cobra's own argument errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// flagError says what is wrong with a flag's value in a user's words: the
// flag, the value and the kind of value wanted, not the parser's text
// ("strconv.ParseUint: parsing ...").
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	want := "a valid value"
	switch iv.GetFlag().Value.Type() {
	case "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number, 0 or more"
	case "int", "int8", "int16", "int32", "int64":
		want = "a whole number"
	case "float32", "float64":
		want = "a number"
	case "bool":
		want = "true or false"
	case "duration":
		want = "a duration such as 30s or 5m"
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return fmt.Errorf("--%s %q: too large or too small for this flag (want %s)", iv.GetFlag().Name, iv.GetValue(), want)
	}
	return fmt.Errorf("--%s %q: want %s", iv.GetFlag().Name, iv.GetValue(), want)
}

// minArgs, exactArgs and maxArgs check a command's arguments and say what
// is missing or extra in words ("faultline analyze needs at least one
// DUMP"), not cobra's "requires at least 1 arg(s)".
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) < n {
			return usageError{fmt.Errorf("%s needs at least %s (see %s --help)", cmd.Name(), what, cmd.CommandPath())}
		}
		return nil
	}
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return usageError{fmt.Errorf("%s takes exactly %s, got %s (see %s --help)", cmd.Name(), what, plural(len(a), "argument"), cmd.CommandPath())}
		}
		return nil
	}
}

func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) > n {
			return usageError{fmt.Errorf("%s takes at most %s, got %s (see %s --help)", cmd.Name(), what, plural(len(a), "argument"), cmd.CommandPath())}
		}
		return nil
	}
}

// noArgs refuses positional arguments, naming them: "info takes no
// arguments, got "extra"", not cobra's "unknown command".
func noArgs(cmd *cobra.Command, a []string) error {
	if len(a) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q (see %s --help)", cmd.Name(), strings.Join(a, " "), cmd.CommandPath())}
	}
	return nil
}

// versionString is faultline's version, with the Go version and, when the
// binary was built from a git checkout, the commit.
func versionString() string {
	v := report.Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		v += " (" + bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += ", commit " + s.Value[:12]
			}
		}
		v += ")"
	}
	return v
}
