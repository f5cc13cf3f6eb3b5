//go:build !unix

package crashdump

import "os"

// mapFile never maps on this platform: region files are read (mmap_unix.go).
func mapFile(f *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	return nil, nil, false
}
