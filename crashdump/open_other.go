//go:build !unix

package crashdump

import "os"

// openRead is the flag dump files are opened with (open_unix.go).
const openRead = os.O_RDONLY

// readRegionFast has no short way on this platform: region files are read
// through os.Root (open_unix.go).
func readRegionFast(dir, name string, left int64, bufs *Buffers) (data []byte, unmap func() error, ok bool) {
	return nil, nil, false
}
