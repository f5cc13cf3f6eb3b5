package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver/capture"
	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/internal/outfile"
	"github.com/faultline-dev/faultline/scenario"
)

func newCapture() *cobra.Command {
	var (
		remote, elfPath, out, to string
		regions, sets            []string
		waitFault, resume, an    bool
		noStep                   bool
		timeout                  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "capture --remote HOST:PORT|DEVICE|'|COMMAND' --elf FW.elf -o DUMP",
		Short: "Capture a crash dump from a live target through a GDB server (OpenOCD, pyOCD, J-Link, probe-rs, Black Magic Probe, QEMU)",
		Long: `capture connects to a GDB server (TCP HOST:PORT, a serial device such as a
Black Magic Probe's /dev/ttyACM0, or '|COMMAND' for a server on the
command's standard input and output), halts the target if it runs, and
reads the registers the server's target description offers, the SCB fault
registers (CPUID..AFSR, SFSR/SFAR on ARMv8-M, FPCCR/FPCAR/FPDSCR with an
FPU), every writable section of the ELF, the stack below the initial SP
and each --region. Memory the server refuses to read is left out and
listed in the dump's "capture" object.

Where the server gives no MSP/PSP (QEMU 7.2's gdbstub), capture reads
them, with CONTROL, PRIMASK, BASEPRI and FAULTMASK, from the core: it
saves the registers and the instruction bytes at the PC, writes one MRS
instruction per register there, single-steps them, reads the results,
then writes the bytes and every register back and checks both by reading
them again; a warning says so. --no-step keeps the target untouched: the
SP is then taken as MSP in handler mode (or as CONTROL.SPSEL says in
thread mode) and the other stays unknown.

With --wait-fault, breakpoints are set at the HardFault, MemManage,
BusFault and UsageFault handlers of the ELF's vector table (hardware, else
software), each --set SYMBOL=VALUE is written (a target at its reset
entry is first run to main, so the startup code has copied .data, and the
value is written at the symbol; otherwise at the symbol and, for
initialised data, at its load address), the target runs, and the dump is
taken when it stops at a handler. Exit status 3 when it does not within
--timeout (the target is then interrupted and left halted). The
breakpoints are removed; the target is left halted unless --resume.

The dump is written with the shared output rules (atomically; nothing
under the final name when the capture fails).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case remote == "":
				return usagef("--remote is required")
			case elfPath == "":
				return usagef("--elf is required")
			case out == "":
				return usagef("-o DUMP is required")
			case to != convertNative && to != convertCrashCatcher && to != convertELFCore:
				return usagef("--to %q: want %s, %s or %s", to, convertNative, convertCrashCatcher, convertELFCore)
			case len(sets) > 0 && !waitFault:
				return usagef("--set is used with --wait-fault (values are written before the target runs)")
			case timeout <= 0:
				return usagef("--timeout %v: want a positive duration", timeout)
			case an && out == "-":
				return usagef("--analyze needs -o FILE (the report goes to stdout)")
			}
			if err := checkOutputPath(out); err != nil {
				return err
			}
			if err := outfile.CheckNotInput("-o", []string{out}, []string{elfPath}); err != nil {
				return err
			}
			opt := capture.Options{ELFPath: elfPath, WaitFault: waitFault, Timeout: timeout, Resume: resume, NoStep: noStep}
			for _, s := range regions {
				r, err := parseRegion(s)
				if err != nil {
					return err
				}
				opt.Regions = append(opt.Regions, r)
			}
			for _, s := range sets {
				name, val, ok := strings.Cut(s, "=")
				name = strings.TrimSpace(name)
				if !ok || name == "" {
					return usagef("--set %q: want SYMBOL=VALUE", s)
				}
				v, err := scenario.ParseValue(val)
				if err != nil {
					return usagef("--set %s: value %q: %v", name, val, err)
				}
				opt.Sets = append(opt.Sets, capture.Set{Symbol: name, Value: v})
			}
			fw, err := openFirmware(elfPath)
			if err != nil {
				return err
			}
			defer fw.Close()
			opt.ELF = fw
			if isTerminal(cmd.ErrOrStderr()) {
				opt.Progress = cmd.ErrOrStderr()
			}
			c, err := client.Dial(remote, 10*time.Second)
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			res, err := capture.Capture(c, opt)
			c.Close()
			var nf *capture.NoFaultError
			if errors.As(err, &nf) {
				return exitError{code: ExitNoFault, err: fmt.Errorf("capture: %s: %w", remote, err)}
			}
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: warning: %s: %s\n", remote, w)
			}
			d := res.Dump
			if err := writeDump(cmd, d, to, out, []string{elfPath}); err != nil {
				return err
			}
			if res.Handler != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: the target stopped in %s\n", res.Handler)
			}
			if an {
				root := NewRoot(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
				root.SetArgs([]string{"analyze", "--elf", elfPath, out})
				return root.Execute()
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&remote, "remote", "", "the GDB server: HOST:PORT, a serial device path, or '|COMMAND' (required)")
	fl.StringVar(&elfPath, "elf", "", "firmware ELF file (required)")
	fl.StringVarP(&out, "output", "o", "", "dump to write (required); - for standard output")
	fl.StringVar(&to, "to", convertNative, "output format: native|elfcore|crashcatcher")
	fl.StringArrayVar(&regions, "region", nil, "ADDR:SIZE: also read this memory (repeatable)")
	fl.BoolVar(&waitFault, "wait-fault", false, "break at the fault handlers, run the target and capture when it faults")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "with --wait-fault: how long to wait for the fault")
	fl.StringArrayVar(&sets, "set", nil, "SYMBOL=VALUE: write a global before the target runs (with --wait-fault; repeatable)")
	fl.BoolVar(&resume, "resume", false, "let the target run again after the capture (default: leave it halted)")
	fl.BoolVar(&noStep, "no-step", false, "never execute on the target: where the server gives no MSP/PSP, leave them unknown instead of stepping MRS instructions at the PC")
	fl.BoolVar(&an, "analyze", false, "print the analysis of the captured dump")
	return cmd
}

// parseRegion parses --region ADDR:SIZE.
func parseRegion(s string) (capture.Range, error) {
	a, sz, ok := strings.Cut(s, ":")
	if !ok {
		return capture.Range{}, usagef("--region %q: want ADDR:SIZE", s)
	}
	addr, err := scenario.ParseNumber(a, 32)
	if err != nil {
		return capture.Range{}, usagef("--region %q: address: %v", s, err)
	}
	size, err := scenario.ParseNumber(sz, 33)
	if err != nil || size == 0 || addr+size > 1<<32 || size > capture.MaxRegion {
		return capture.Range{}, usagef("--region %q: size %q: want 1..%d bytes within the 32-bit address space", s, sz, capture.MaxRegion)
	}
	return capture.Range{Addr: uint32(addr), Size: uint32(size), Why: "--region " + s}, nil
}

// writeDump writes d as --to says, with the shared output rules: native
// as a manifest with region files beside it (self-contained on stdout),
// elfcore and crashcatcher as one file, each written whole or not at all;
// never over one of inputs. capture and convert share it.
func writeDump(cmd *cobra.Command, d *crashdump.Dump, to, out string, inputs []string) error {
	if out == "-" {
		if to == convertNative {
			return d.WriteSelfContained(cmd.OutOrStdout())
		}
		var b bytes.Buffer
		write := d.WriteCrashCatcher
		if to == convertELFCore {
			write = d.WriteELFCore
		}
		if err := write(&b); err != nil {
			return err
		}
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	outputs := []string{out}
	if to == convertNative {
		outputs = d.OutputFiles(out)
	}
	if err := outfile.CheckNotInput("-o", outputs, inputs); err != nil {
		return err
	}
	switch to {
	case convertNative:
		return d.Write(out)
	case convertELFCore:
		return outfile.Write(out, nil, d.WriteELFCore)
	}
	return outfile.Write(out, nil, d.WriteCrashCatcher)
}
