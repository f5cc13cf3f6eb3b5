package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

// crashMessage finds the crash's message. So far: the reason a Zephyr
// coredump's header holds (what z_fatal_error was called with).
func crashMessage(d *crashdump.Dump) *report.MessageJSON {
	if d.FatalReason != nil {
		r := *d.FatalReason
		text := crashdump.ZephyrReasonName(r)
		if text == "" {
			text = fmt.Sprintf("reason %d (architecture specific or unknown)", r)
		}
		return &report.MessageJSON{Text: text, Source: "Zephyr coredump reason"}
	}
	return nil
}
