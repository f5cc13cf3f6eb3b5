package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/crashdump"
)

// MessageJSON is the crash's own message (design.md, "Arguments, locals,
// messages, logs"): what the firmware's reporting path was told, and
// where it was read from.
type MessageJSON struct {
	Text     string `json:"text"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Function string `json:"function,omitempty"`
	Source   string `json:"source"`
}

// crashMessage finds the crash's message. So far: the reason a Zephyr
// coredump's header holds (what z_fatal_error was called with).
func crashMessage(d *crashdump.Dump) *MessageJSON {
	if d.FatalReason != nil {
		r := *d.FatalReason
		text := crashdump.ZephyrReasonName(r)
		if text == "" {
			text = fmt.Sprintf("reason %d (architecture specific or unknown)", r)
		}
		return &MessageJSON{Text: text, Source: "Zephyr coredump reason"}
	}
	return nil
}
