//go:build unix

package crashdump

import (
	"os"
	"syscall"
)

// openRead is the flag dump files are opened with. O_NONBLOCK: a FIFO put
// in a file's place after readLimited's stat cannot block the open (the
// check after it rejects the FIFO), and package os, given a non-blocking
// descriptor, skips switching it to non-blocking mode and back around
// offering it to the poller, four fcntl calls per file. Reads of regular
// files ignore the flag.
const openRead = os.O_RDONLY | syscall.O_NONBLOCK
