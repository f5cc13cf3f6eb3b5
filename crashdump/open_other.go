//go:build !unix

package crashdump

import "os"

// openRead is the flag dump files are opened with (open_unix.go).
const openRead = os.O_RDONLY
