//go:build unix

package cli

import (
	"os"
	"syscall"
)

// openRead is the flag readSmall opens files with: O_NONBLOCK, so that a
// FIFO put in a file's place after the stat check cannot block the open,
// and so that package os skips switching the descriptor to non-blocking
// mode and back around offering it to the poller (four fcntl calls per
// file). Reads of regular files ignore the flag.
const openRead = os.O_RDONLY | syscall.O_NONBLOCK
