package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// crashMessage finds the crash's message: the reason a Zephyr coredump's
// header holds (what z_fatal_error was called with), else the --message
// symbol when given and readable, else what a known reporting function
// on the crash's stack was told.
func crashMessage(d *crashdump.Dump, elf *elfsym.File, t *unwinders.Target, frames []unwinders.Frame, js []report.FrameJSON, symbol string, hooks []string) (*report.MessageJSON, []string) {
	if d.FatalReason != nil {
		r := *d.FatalReason
		return &report.MessageJSON{Text: zephyrReasonText(r), Source: "Zephyr coredump reason"}, nil
	}
	var warnings []string
	var mem unwinders.Memory
	if t != nil {
		mem = t.Mem
	}
	if symbol != "" {
		m, err := symbolMessage(elf, mem, symbol)
		if err != nil {
			warnings = append(warnings, "--message "+symbol+": "+err.Error())
		} else if m.Text != "" || m.Note == "" {
			return m, warnings
		} else if fm := frameMessage(elf, mem, frames, js, hooks); fm != nil {
			warnings = append(warnings, "--message "+symbol+": "+m.Note)
			return fm, warnings
		} else {
			return m, warnings
		}
	}
	return frameMessage(elf, mem, frames, js, hooks), warnings
}

func zephyrReasonText(r uint32) string {
	if text := crashdump.ZephyrReasonName(r); text != "" {
		return text
	}
	return fmt.Sprintf("reason %d (architecture specific or unknown)", r)
}
