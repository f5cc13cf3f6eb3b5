// Package scenario describes how to make firmware crash in the emulator
// (Trigger, the flags of `faultline emulate` as data) and turns an emulator
// result into a faultline.dump/1 (Dump). The emulate, matrix and regress
// commands share it.
package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
)

// Trigger says how to make firmware crash in the emulator: the flags of
// `faultline emulate` as data, for the specs that `matrix` and `regress`
// read. Every field is optional; the zero Trigger runs the firmware from its
// reset vector with the default bounds.
type Trigger struct {
	// CPU is --cpu (cortex-m0|m0plus|m3|m4|m7|m33); empty: from the ELF.
	CPU string `json:"cpu,omitempty"`
	// Set holds --set SYMBOL=VALUE arguments, e.g. "crash_scenario=5".
	Set []string `json:"set,omitempty"`
	// Call is --call FUNCTION.
	Call string `json:"call,omitempty"`
	// IRQ holds --irq N@INSN arguments.
	IRQ []string `json:"irq,omitempty"`
	// Map holds --map ADDR:SIZE[:rw|rx|zero] arguments.
	Map []string `json:"map,omitempty"`
	// MaxInsns is --max-insns (0: the default).
	MaxInsns uint64 `json:"max_insns,omitempty"`
	// Timeout is --timeout as a Go duration ("10s"; empty: the default).
	Timeout string `json:"timeout,omitempty"`
	// RunHandler is --run-handler.
	RunHandler bool `json:"run_handler,omitempty"`
	// ImpreciseStores is --imprecise-stores.
	ImpreciseStores bool `json:"imprecise_stores,omitempty"`
}

// Config checks t exactly as `emulate` checks its flags and returns the
// emulator configuration for the firmware elf. Errors name the offending
// field the way the flag would (--set, --irq...).
func (t Trigger) Config(elf string) (emu.Config, error) {
	if elf == "" {
		return emu.Config{}, fmt.Errorf("no firmware ELF")
	}
	cfg := emu.Config{ELF: elf, CPU: t.CPU, Call: t.Call, MaxInsns: t.MaxInsns, Timeout: emu.DefaultTimeout, RunHandler: t.RunHandler, ImpreciseStores: t.ImpreciseStores}
	if t.CPU != "" && !emu.ValidCPU(t.CPU) {
		return cfg, fmt.Errorf("--cpu %q: want one of cortex-m0, m0plus, m3, m4, m7, m33", t.CPU)
	}
	if cfg.MaxInsns == 0 {
		cfg.MaxInsns = emu.DefaultMaxInsns
	}
	if t.Timeout != "" {
		d, err := time.ParseDuration(t.Timeout)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("--timeout %q: want a positive duration such as 10s", t.Timeout)
		}
		cfg.Timeout = d
	}
	for _, s := range t.Set {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return cfg, fmt.Errorf("--set %q: want SYMBOL=VALUE", s)
		}
		v, err := ParseValue(val)
		if err != nil {
			return cfg, fmt.Errorf("--set %s: value %q: %v", name, val, err)
		}
		if cfg.Sets == nil {
			cfg.Sets = map[string]uint64{}
		}
		cfg.Sets[name] = v
	}
	for _, s := range t.IRQ {
		n, at, ok := strings.Cut(s, "@")
		if !ok {
			return cfg, fmt.Errorf("--irq %q: want N@INSN (exception number @ instruction count)", s)
		}
		exc, err := ParseNumber(n, 32)
		if err != nil || exc < 2 || exc >= 512 || exc == 3 {
			return cfg, fmt.Errorf("--irq %q: exception number %q: want 2 (NMI), 4-15, or 16+n for external interrupt n", s, n)
		}
		insn, err := ParseNumber(at, 64)
		if err != nil {
			return cfg, fmt.Errorf("--irq %q: instruction count %q: %v", s, at, err)
		}
		cfg.IRQs = append(cfg.IRQs, emu.IRQ{Exception: int(exc), At: insn})
	}
	for _, s := range t.Map {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return cfg, fmt.Errorf("--map %q: want ADDR:SIZE[:rw|rx|zero]", s)
		}
		addr, err := ParseNumber(parts[0], 32)
		if err != nil {
			return cfg, fmt.Errorf("--map %q: address: %v", s, err)
		}
		size, err := ParseNumber(parts[1], 33)
		if err != nil || size == 0 || addr+size > 1<<32 {
			return cfg, fmt.Errorf("--map %q: size %q: want 1..4G within the 32-bit address space", s, parts[1])
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
				return cfg, fmt.Errorf("--map %q: kind %q: want rw, rx or zero", s, parts[2])
			}
		}
		cfg.Maps = append(cfg.Maps, r)
	}
	return cfg, nil
}

// Args returns t as `faultline emulate` arguments (without --elf and -o),
// for messages that tell a user how to reproduce a case by hand.
func (t Trigger) Args() []string {
	var a []string
	if t.CPU != "" {
		a = append(a, "--cpu", t.CPU)
	}
	for _, s := range t.Set {
		a = append(a, "--set", s)
	}
	if t.Call != "" {
		a = append(a, "--call", t.Call)
	}
	for _, s := range t.IRQ {
		a = append(a, "--irq", s)
	}
	for _, s := range t.Map {
		a = append(a, "--map", s)
	}
	if t.MaxInsns != 0 {
		a = append(a, "--max-insns", fmt.Sprint(t.MaxInsns))
	}
	if t.Timeout != "" {
		a = append(a, "--timeout", t.Timeout)
	}
	if t.RunHandler {
		a = append(a, "--run-handler")
	}
	if t.ImpreciseStores {
		a = append(a, "--imprecise-stores")
	}
	return a
}
