package cli

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// internalPrefixes are the names of faultline's own packages, which some
// errors carry as a "pkg: " prefix for a Go caller; a user of the command
// line is not told about them.
var internalPrefixes = []string{"analysis", "cfi", "crashdump", "elfsym", "emu", "exidx", "gdbserver", "matrix", "regress", "rtos", "scenario", "thumb", "uc", "unwinders"}

// userMessage is err's message for a user: every "pkg: " segment naming
// one of faultline's packages is dropped (unless a file of that name
// exists: then it is a path), so "emu: uc: mapping ...: UC_ERR_MAP"
// becomes "mapping ...: UC_ERR_MAP".
func userMessage(err error) string {
	msg := err.Error()
	if !strings.Contains(msg, ": ") {
		return msg
	}
	parts := strings.Split(msg, ": ")
	kept := parts[:0]
	for i, p := range parts {
		if i < len(parts)-1 && slices.Contains(internalPrefixes, p) {
			if _, err := os.Stat(p); err != nil {
				continue
			}
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ": ")
}

// fsReasonText is a file system error without the path the caller's
// message names already.
func fsReasonText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
