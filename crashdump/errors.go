package crashdump

import (
	"errors"
	"fmt"
)

// Sentinel errors wrapped by *FormatError; test with errors.Is.
var (
	// ErrUnknownFormat: no known dump format matches the content.
	ErrUnknownFormat = errors.New("unknown dump format")
	// ErrTooLarge: a manifest, region or the whole dump exceeds the size
	// limits (MaxManifestSize, MaxRegionSize, MaxTotalSize).
	ErrTooLarge = errors.New("too large")
)

// A FormatError reports a dump that cannot be read or is malformed. It says
// which file, where in it (a JSON field path and/or a byte offset) and what
// was expected.
type FormatError struct {
	File   string // the dump file, as named to Load or Parse
	Field  string // JSON path of the offending value: "registers.pc", "memory[1].file"; "" for the document as a whole
	Offset int64  // byte offset in File of the offending value; -1 when not known
	Msg    string // what is wrong and what was expected
	Err    error  // the underlying error (ErrTooLarge, an fs error...), or nil
}

// Error formats the error as "FILE: FIELD: MSG"; when there is no field and
// the offset is known, as "FILE: offset N: MSG".
func (e *FormatError) Error() string {
	switch {
	case e.Field != "":
		return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the underlying error.
func (e *FormatError) Unwrap() error { return e.Err }
