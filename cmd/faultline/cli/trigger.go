package cli

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/emu"
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
// field the way the flag would.
func (t Trigger) Config(elf string) (emu.Config, error) {
	f := emulateFlags{elf: elf, cpu: t.CPU, sets: t.Set, call: t.Call, irqs: t.IRQ, maps: t.Map,
		maxInsns: t.MaxInsns, runHandler: t.RunHandler, imprecise: t.ImpreciseStores,
		timeout: emu.DefaultTimeout}
	if f.maxInsns == 0 {
		f.maxInsns = emu.DefaultMaxInsns
	}
	if t.Timeout != "" {
		d, err := time.ParseDuration(t.Timeout)
		if err != nil {
			return emu.Config{}, fmt.Errorf("timeout %q: %v", t.Timeout, err)
		}
		f.timeout = d
	}
	if elf == "" {
		return emu.Config{}, fmt.Errorf("no firmware ELF")
	}
	return f.emuConfig()
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
