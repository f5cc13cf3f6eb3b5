package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/unwinders"
)

func init() { extraCommands = append(extraCommands, newEmulate) }

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
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			cfg.Stdout, cfg.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			res, err := emu.Run(cmd.Context(), cfg)
			var nf *emu.NoFaultError
			switch {
			case errors.Is(err, uc.ErrUnavailable):
				return fmt.Errorf("emulate: %w", err)
			case errors.As(err, &nf):
				return exitError{code: ExitNoFault, err: fmt.Errorf("emulate: %s: the firmware did not fault: %s (after %d instructions, pc=0x%08x)", f.elf, nf.Reason, nf.Insns, nf.PC)}
			case err != nil:
				return err
			}
			d := dumpFromResult(res)
			if err := d.Write(f.out); err != nil {
				return err
			}
			writeEmulateSummary(cmd.OutOrStdout(), res, f.out)
			if h := res.Handler; h != nil && h.Exited && h.ExitCode != 0 {
				// The firmware's own exit status (semihosting) is passed through.
				return exitError{code: h.ExitCode & 0xff, err: fmt.Errorf("emulate: the fault handler exited with status %d (semihosting)", h.ExitCode)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.elf, "elf", "", "firmware ELF file (required)")
	fl.StringVarP(&f.out, "output", "o", "", "dump to write (faultline.dump/1 JSON; required)")
	fl.StringVar(&f.cpu, "cpu", "", "cortex-m0|m0plus|m3|m4|m7|m33 (default: from the ELF attributes, else m4)")
	fl.StringArrayVar(&f.sets, "set", nil, "SYMBOL=VALUE: write a global before running (repeatable)")
	fl.StringVar(&f.call, "call", "", "start at FUNCTION instead of the reset vector")
	fl.Uint64Var(&f.maxInsns, "max-insns", emu.DefaultMaxInsns, "stop after this many guest instructions")
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
	return f.emuConfig()
}

// emuConfig turns the run flags (everything but -o) into an emu.Config.
func (f *emulateFlags) emuConfig() (emu.Config, error) {
	cfg := emu.Config{ELF: f.elf, CPU: f.cpu, Call: f.call, MaxInsns: f.maxInsns, Timeout: f.timeout, RunHandler: f.runHandler, ImpreciseStores: f.imprecise}
	if f.cpu != "" && !emu.ValidCPU(f.cpu) {
		return cfg, usagef("--cpu %q: want one of cortex-m0, m0plus, m3, m4, m7, m33", f.cpu)
	}
	if f.maxInsns == 0 {
		return cfg, usagef("--max-insns must be at least 1")
	}
	if f.timeout <= 0 {
		return cfg, usagef("--timeout %v: want a positive duration", f.timeout)
	}
	for _, s := range f.sets {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return cfg, usagef("--set %q: want SYMBOL=VALUE", s)
		}
		v, err := parseNumber(val, 64)
		if err != nil {
			return cfg, usagef("--set %s: value %q: %v", name, val, err)
		}
		if cfg.Sets == nil {
			cfg.Sets = map[string]uint64{}
		}
		cfg.Sets[name] = v
	}
	for _, s := range f.irqs {
		n, at, ok := strings.Cut(s, "@")
		if !ok {
			return cfg, usagef("--irq %q: want N@INSN (exception number @ instruction count)", s)
		}
		exc, err := parseNumber(n, 32)
		if err != nil || exc < 2 || exc >= 512 || exc == 3 {
			return cfg, usagef("--irq %q: exception number %q: want 2 (NMI), 4-15, or 16+n for external interrupt n", s, n)
		}
		insn, err := parseNumber(at, 64)
		if err != nil {
			return cfg, usagef("--irq %q: instruction count %q: %v", s, at, err)
		}
		cfg.IRQs = append(cfg.IRQs, emu.IRQ{Exception: int(exc), At: insn})
	}
	for _, s := range f.maps {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return cfg, usagef("--map %q: want ADDR:SIZE[:rw|rx|zero]", s)
		}
		addr, err := parseNumber(parts[0], 32)
		if err != nil {
			return cfg, usagef("--map %q: address: %v", s, err)
		}
		size, err := parseNumber(parts[1], 33)
		if err != nil || size == 0 || addr+size > 1<<32 {
			return cfg, usagef("--map %q: size %q: want 1..4G within the 32-bit address space", s, parts[1])
		}
		r := emu.Region{Addr: uint32(addr), Size: uint32(size), Perm: uc.PermRead | uc.PermWrite}
		if len(parts) == 3 {
			switch parts[2] {
			case "rw":
			case "rx":
				r.Perm = uc.PermRead | uc.PermExec
			case "zero":
				r.Zero = true
			default:
				return cfg, usagef("--map %q: kind %q: want rw, rx or zero", s, parts[2])
			}
		}
		cfg.Maps = append(cfg.Maps, r)
	}
	return cfg, nil
}

// parseNumber parses a decimal, 0x hex, 0o octal or 0b binary number that
// fits in bits bits; k/K, m/M suffixes multiply by 1024, 1024*1024 (for
// --map sizes).
func parseNumber(s string, bits int) (uint64, error) {
	s = strings.TrimSpace(s)
	mul := uint64(1)
	if n := len(s); n > 1 && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		switch s[n-1] {
		case 'k', 'K':
			mul, s = 1<<10, s[:n-1]
		case 'm', 'M':
			mul, s = 1<<20, s[:n-1]
		}
	}
	v, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number")
	}
	if v != 0 && v*mul/mul != v {
		return 0, fmt.Errorf("out of range")
	}
	v *= mul
	if bits < 64 && v >= 1<<bits {
		return 0, fmt.Errorf("out of range")
	}
	return v, nil
}

// dumpFromResult builds the faultline.dump/1 content of an emulated fault.
func dumpFromResult(res *emu.Result) *crashdump.Dump {
	d := &crashdump.Dump{Format: crashdump.FormatNative, CPU: res.CPU}
	g := res.Registers
	for i := 0; i < 13; i++ {
		d.Regs.Set(unwinders.R0+unwinders.Reg(i), g.R[i])
	}
	for _, r := range []struct {
		reg unwinders.Reg
		v   uint32
	}{
		{unwinders.SP, g.SP}, {unwinders.LR, g.LR}, {unwinders.PC, g.PC}, {unwinders.XPSR, g.XPSR},
		{unwinders.MSP, g.MSP}, {unwinders.PSP, g.PSP}, {unwinders.CONTROL, g.CONTROL},
		{unwinders.PRIMASK, g.PRIMASK}, {unwinders.BASEPRI, g.BASEPRI}, {unwinders.FAULTMASK, g.FAULTMASK},
	} {
		d.Regs.Set(r.reg, r.v)
	}
	if g.FP != nil {
		for i, v := range g.FP.S {
			d.Regs.Set(unwinders.S(i), v)
		}
		d.Regs.Set(unwinders.FPSCR, g.FP.FPSCR)
	}
	fr := res.Fault
	d.Fault = fault.SCB{
		CFSR: fault.Known(fr.CFSR), HFSR: fault.Known(fr.HFSR), MMFAR: fault.Known(fr.MMFAR),
		BFAR: fault.Known(fr.BFAR), SHCSR: fault.Known(fr.SHCSR), CCR: fault.Known(fr.CCR),
		ICSR: fault.Known(fr.ICSR), VTOR: fault.Known(fr.VTOR),
	}
	if g.FP != nil {
		d.Fault.CPACR = fault.Known(fr.CPACR)
		d.Fault.FPCCR = fault.Known(fr.FPCCR)
		d.Fault.FPCAR = fault.Known(fr.FPCAR)
	}
	sps := []uint32{g.SP, g.MSP, g.PSP}
	for _, m := range res.Memory {
		if data, addr, ok := usedPart(m, sps); ok {
			d.Memory = append(d.Memory, unwinders.Region{Name: m.Name, Addr: addr, Data: data})
		}
	}
	for _, m := range res.SCS {
		d.Memory = append(d.Memory, unwinders.Region{Name: "scs", Addr: m.Addr, Data: m.Data})
	}
	if res.Truth != nil {
		t := &crashdump.Truth{Source: "emulator-shadow-stack"}
		for _, f := range res.Truth {
			tf := crashdump.TruthFrame{PC: f.PC, HasPC: true, Function: f.Function}
			if f.Kind == emu.FrameException {
				tf = crashdump.TruthFrame{Kind: "exception", PC: f.ExcReturn, HasPC: f.ExcReturn != 0}
			}
			t.Frames = append(t.Frames, tf)
		}
		if res.TruthTruncated {
			t.Stop = "the shadow call stack overflowed: outer frames are missing"
		}
		d.Truth = t
	}
	return d
}

// usedPart trims a RAM copy to the part the firmware used: from the lowest
// non-zero byte (or the lowest stack pointer in the region, if lower) to
// the highest non-zero byte (or the region's end when a stack pointer lies
// in it: the stack grows down from there), rounded to 16 bytes. RAM starts
// zeroed, so what is left out was never written with anything but zero.
func usedPart(m emu.Memory, sps []uint32) ([]byte, uint32, bool) {
	n := len(m.Data)
	lo, hi := n, 0
	for i, b := range m.Data {
		if b != 0 {
			lo = i
			break
		}
	}
	for i := n - 1; i >= 0; i-- {
		if m.Data[i] != 0 {
			hi = i + 1
			break
		}
	}
	for _, sp := range sps {
		if sp >= m.Addr && uint64(sp) <= uint64(m.Addr)+uint64(n) && sp != 0 {
			off := int(sp - m.Addr)
			lo = min(lo, off)
			hi = n
		}
	}
	if lo >= hi {
		return nil, 0, false
	}
	lo &^= 15
	hi = min(n, (hi+15)&^15)
	return m.Data[lo:hi], m.Addr + uint32(lo), true
}

// writeEmulateSummary prints one paragraph: the fault, where, and the file.
func writeEmulateSummary(w io.Writer, res *emu.Result, path string) {
	c := res.Cause
	var b strings.Builder
	exc := excName(res.Exception)
	if res.Lockup {
		fmt.Fprintf(&b, "The core locked up: %s", c.Fault)
	} else if c.Forced && c.Fault != "HardFault" {
		fmt.Fprintf(&b, "%s (escalated from %s)", exc, c.Fault)
	} else {
		b.WriteString(exc)
	}
	if len(c.Bits) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(c.Bits, " "))
	}
	// The faulting frame is the one right after the first exception
	// pseudo-frame (the handler's own frame comes first).
	fn := ""
	for i, f := range res.Truth {
		if f.Kind == emu.FrameException && i+1 < len(res.Truth) {
			fn = res.Truth[i+1].Function
			break
		}
	}
	fmt.Fprintf(&b, " at pc 0x%08x", c.PC)
	if fn != "" {
		fmt.Fprintf(&b, " in %s", fn)
	}
	fmt.Fprintf(&b, " after %d instructions: %s.", res.Insns, c.Detail)
	if c.HasAddress {
		fmt.Fprintf(&b, " Fault address 0x%08x.", c.Address)
	}
	if !res.Lockup {
		fmt.Fprintf(&b, " Stopped at the first instruction of the handler (pc 0x%08x, lr 0x%08x).", res.Registers.PC, res.Registers.LR)
	}
	if n := len(res.Truth); n > 0 {
		fmt.Fprintf(&b, " True call stack: %d frames.", n)
	}
	if h := res.Handler; h != nil {
		fmt.Fprintf(&b, " The handler then ran %d instructions and %s.", h.Insns, h.Reason)
	}
	fmt.Fprintf(&b, " Wrote %s.\n", path)
	io.WriteString(w, b.String())
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
