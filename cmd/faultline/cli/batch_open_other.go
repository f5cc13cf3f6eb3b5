//go:build !unix

package cli

import "os"

// openRead is the flag readSmall opens files with (batch_open_unix.go).
const openRead = os.O_RDONLY
