package cli

import (
	"errors"
	"io/fs"
)

// fsReasonText is a file system error without the path the caller's
// message names already.
func fsReasonText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
