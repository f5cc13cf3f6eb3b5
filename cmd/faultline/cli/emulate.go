package cli

import (
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/internal/outfile"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/scenario"
)

// emulateFlags are the flags of `faultline emulate` (design.md).
type emulateFlags struct {
	elf        string
	out        string
	cpu        string
	sets       []string
	call       string
	maxInsns   uint64
	timeout    time.Duration
	runHandler bool
	irqs       []string
	maps       []string
	imprecise  bool
}

func newEmulate() *cobra.Command {
	var f emulateFlags
	cmd := &cobra.Command{
		Use:   "emulate --elf FW.elf -o DUMP.json",
		Short: "Run firmware in the Unicorn emulator until it faults and write a dump with the true call stack",
		Long: `emulate runs the firmware from its reset vector (or --call FUNCTION) in the
Unicorn emulator until it faults, takes the fault the way the core would
(fault status registers, escalation, exception entry) and writes a
faultline.dump/1 at the first instruction of the fault handler. The dump's
truth is the emulator's shadow call stack at the fault.

Exit status 3 when the firmware does not fault within --max-insns and
--timeout.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			fw, err := openFirmware(f.elf)
			if err != nil {
				return err
			}
			fw.Close()
			// The output is checked before the run: not a directory, not
			// the firmware (by file identity).
			if err := checkOutputPath(f.out); err != nil {
				return err
			}
			if err := outfile.CheckNotInput("-o", []string{f.out}, []string{f.elf}); err != nil {
				return err
			}
			cfg.Stdout, cfg.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			res, err := emu.Run(cmd.Context(), cfg)
			var nf *emu.NoFaultError
			switch {
			case errors.Is(err, uc.ErrUnavailable):
				return fmt.Errorf("emulate: %w", err)
			case errors.Is(err, emu.ErrConfig):
				return usageError{err}
			case errors.As(err, &nf):
				return exitError{code: ExitNoFault, err: fmt.Errorf("emulate: %s: the firmware did not fault: %s", f.elf, nf.Detail())}
			case err != nil:
				return err
			}
			d := scenario.Dump(res)
			summary := cmd.OutOrStdout()
			if f.out == "-" {
				// The dump is the output; the summary goes to stderr.
				if err := d.WriteSelfContained(cmd.OutOrStdout()); err != nil {
					return err
				}
				summary = cmd.ErrOrStderr()
			} else if err := outfile.CheckNotInput("-o", d.OutputFiles(f.out), []string{f.elf}); err != nil {
				return err
			} else if err := d.Write(f.out); err != nil {
				return err
			}
			writeEmulateSummary(summary, res, f.out)
			if h := res.Handler; h != nil && h.Exited && h.ExitCode != 0 {
				// The firmware's own exit status (semihosting) is passed through.
				return exitError{code: h.ExitCode & 0xff, err: fmt.Errorf("emulate: the fault handler exited with status %d (semihosting)", h.ExitCode)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.elf, "elf", "", "firmware ELF file (required)")
	fl.StringVarP(&f.out, "output", "o", "", "dump to write (faultline.dump/1 JSON, regions over 1 KiB in OUT-BASE.ADDRESS.bin files next to it; required); - writes one self-contained manifest (regions as hex) to stdout and the summary to stderr")
	fl.StringVar(&f.cpu, "cpu", "", "cortex-m0|m0plus|m3|m4|m7|m33 (default: from the ELF attributes, else m4)")
	fl.StringArrayVar(&f.sets, "set", nil, "SYMBOL=VALUE: write a global before running (repeatable)")
	fl.StringVar(&f.call, "call", "", "start at FUNCTION instead of the reset vector")
	fl.Uint64Var(&f.maxInsns, "max-insns", emu.DefaultMaxInsns, "stop after exactly this many guest instructions")
	fl.DurationVar(&f.timeout, "timeout", emu.DefaultTimeout, "stop after this much wall-clock time")
	fl.BoolVar(&f.runHandler, "run-handler", false, "continue into the firmware's fault handler until it halts or exits via semihosting")
	fl.StringArrayVar(&f.irqs, "irq", nil, "N@INSN: raise exception N after INSN instructions (repeatable)")
	fl.StringArrayVar(&f.maps, "map", nil, "ADDR:SIZE[:rw|rx|zero]: map extra memory (repeatable)")
	fl.BoolVar(&f.imprecise, "imprecise-stores", false, "make a store to unmapped memory an imprecise bus fault (IMPRECISERR, stacked PC past the store, no BFAR), as on Cortex-M3/M4 silicon with the write buffer on; default: precise (PRECISERR+BFAR), as QEMU")
	return cmd
}

// config checks the flags and turns them into an emu.Config.
func (f *emulateFlags) config() (emu.Config, error) {
	if f.elf == "" {
		return emu.Config{}, usagef("--elf is required")
	}
	if f.out == "" {
		return emu.Config{}, usagef("-o DUMP.json is required")
	}
	if err := checkOutputPath(f.out); err != nil {
		return emu.Config{}, err
	}
	return f.emuConfig()
}

// emuConfig turns the run flags (everything but -o) into an emu.Config;
// the checks are scenario.Trigger's, reported as usage errors.
func (f *emulateFlags) emuConfig() (emu.Config, error) {
	t := scenario.Trigger{CPU: f.cpu, Set: f.sets, Call: f.call, IRQ: f.irqs, Map: f.maps,
		MaxInsns: f.maxInsns, RunHandler: f.runHandler, ImpreciseStores: f.imprecise}
	if f.maxInsns == 0 {
		return emu.Config{}, usagef("--max-insns must be at least 1")
	}
	if f.timeout <= 0 {
		return emu.Config{}, usagef("--timeout %v: want a positive duration", f.timeout)
	}
	cfg, err := t.Config(f.elf)
	if err != nil {
		return cfg, usageError{err}
	}
	cfg.Timeout = f.timeout
	return cfg, nil
}

// writeEmulateSummary prints one paragraph: the fault, where, and the file.
func writeEmulateSummary(w io.Writer, res *emu.Result, path string) {
	c := res.Cause
	var b strings.Builder
	exc := excName(res.Exception)
	v6m := strings.HasPrefix(res.CPU, "cortex-m0")
	switch {
	case res.Lockup:
		fmt.Fprintf(&b, "The core locked up: %s", c.Fault)
	case v6m:
		// ARMv6-M has only HardFault and no CFSR/HFSR: the bit names are
		// the harness's diagnosis, not register contents.
		b.WriteString(exc)
	case c.Forced && c.Fault != "HardFault":
		fmt.Fprintf(&b, "%s (escalated from %s)", exc, c.Fault)
	default:
		b.WriteString(exc)
	}
	var bits []string
	for _, bit := range c.Bits {
		if !v6m || bit != "FORCED" {
			bits = append(bits, bit)
		}
	}
	switch {
	case v6m && len(bits) > 0:
		fmt.Fprintf(&b, " [ARMv6-M, no fault status registers; on ARMv7-M: %s]", strings.Join(bits, " "))
	case len(bits) > 0:
		fmt.Fprintf(&b, " [%s]", strings.Join(bits, " "))
	}
	// The faulting frame is the one right after the first exception
	// pseudo-frame (the handler's own frame comes first).
	fn := ""
	for i, f := range res.Truth {
		if f.Kind == emu.FrameException && i+1 < len(res.Truth) {
			fn = readableName(res.Truth[i+1].Function)
			break
		}
	}
	fmt.Fprintf(&b, " at pc 0x%08x", c.PC)
	if fn != "" {
		fmt.Fprintf(&b, " in %s", fn)
	}
	fmt.Fprintf(&b, " after %s: %s.", plural(int(res.Insns), "instruction"), c.Detail)
	if c.HasAddress {
		fmt.Fprintf(&b, " Fault address 0x%08x.", c.Address)
	}
	if !res.Lockup {
		fmt.Fprintf(&b, " Stopped at the first instruction of the handler (pc 0x%08x, lr 0x%08x).", res.Registers.PC, res.Registers.LR)
	}
	if n := len(res.Truth); n > 0 {
		fmt.Fprintf(&b, " True call stack: %s", plural(n, "frame"))
		if t := len(res.Threads); t > 0 {
			fmt.Fprintf(&b, ", and the true stacks of %s an RTOS switched out", plural(t, "thread"))
		}
		b.WriteString(".")
	}
	if h := res.Handler; h != nil {
		fmt.Fprintf(&b, " The handler then ran %s and %s.", plural(int(h.Insns), "instruction"), h.Reason)
	}
	if path == "-" {
		b.WriteString(" Wrote the dump to standard output.\n")
	} else {
		fmt.Fprintf(&b, " Wrote %s.\n", path)
	}
	io.WriteString(w, b.String())
}

// readableName is a symbol name as analyze prints it: C++ and Rust
// (legacy and v0) names demangled.
func readableName(sym string) string { return elfsym.Demangle(sym) }

// plural writes "1 frame", "2 frames".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func excName(n int) string {
	switch n {
	case 2:
		return "NMI"
	case 3:
		return "HardFault"
	case 4:
		return "MemManage"
	case 5:
		return "BusFault"
	case 6:
		return "UsageFault"
	case 11:
		return "SVCall"
	case 14:
		return "PendSV"
	case 15:
		return "SysTick"
	}
	if n >= 16 {
		return "IRQ " + strconv.Itoa(n-16)
	}
	return "exception " + strconv.Itoa(n)
}
