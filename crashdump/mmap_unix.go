//go:build unix

package crashdump

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only and shared: the pages are read
// from the file only when something touches them, and the kernel can drop
// them again under memory pressure, so a 512 MiB region whose walk reads a
// few kilobytes of stack costs a few pages of memory, not 512 MiB. ok is
// false when the file cannot be mapped (a file system without mmap); the
// caller then reads it.
func mapFile(f *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return b, func() error { return syscall.Munmap(b) }, true
}
