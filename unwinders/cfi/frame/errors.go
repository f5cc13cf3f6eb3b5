package frame

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error of this package wraps one of them.
var (
	// ErrFormat: the bytes do not follow the DWARF call frame format
	// (a CIE pointer to nowhere, a location moving backwards, a
	// restore_state without remember_state, ...).
	ErrFormat = errors.New("malformed call frame information")
	// ErrTruncated: an entry or an instruction runs past the end of its
	// section or entry.
	ErrTruncated = errors.New("truncated")
	// ErrUnsupported: valid DWARF that this package does not handle
	// (DWARF expressions, an unknown augmentation, a pointer encoding
	// relative to a base a static reader cannot know, a register outside
	// the ARM register set).
	ErrUnsupported = errors.New("not supported")
	// ErrLimit: the input exceeds a bound the package sets against
	// hostile data (MaxRememberDepth, the 32-bit address space).
	ErrLimit = errors.New("limit exceeded")
)

// DecodeError says where call frame information is wrong: the section, the
// byte offset in it (of the entry, or of the instruction when one is at
// fault) and what was expected.
type DecodeError struct {
	Section string // ".debug_frame" or ".eh_frame"
	Offset  uint64 // byte offset in the section
	Msg     string // what is wrong
	Err     error  // one of the package's sentinels
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s offset 0x%x: %s", e.Section, e.Offset, e.Msg)
}

// Unwrap returns the sentinel.
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(k Kind, off uint64, sentinel error, format string, args ...any) *DecodeError {
	msg := fmt.Sprintf(format, args...)
	if sentinel != nil && sentinel != ErrFormat {
		msg += " (" + sentinel.Error() + ")"
	}
	return &DecodeError{Section: k.String(), Offset: off, Msg: msg, Err: sentinel}
}
