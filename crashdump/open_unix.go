//go:build unix

package crashdump

import (
	"os"
	"strings"
	"syscall"
)

// openRead is the flag dump files are opened with. O_NONBLOCK: a FIFO put
// in a file's place after readLimited's stat cannot block the open (the
// check after it rejects the FIFO), and package os, given a non-blocking
// descriptor, skips switching it to non-blocking mode and back around
// offering it to the poller, four fcntl calls per file. Reads of regular
// files ignore the flag.
const openRead = os.O_RDONLY | syscall.O_NONBLOCK

// readRegionFast reads (or maps) the region file name of the directory
// dir the short way: open with O_NOFOLLOW, fstat, one read of the size
// fstat gave, close; four system calls where the os.Root path takes ten
// (opening the root and its stat, a stat of the name, the open, the
// poller's registration, a second stat, a read to see the end, two
// closes). It handles only the plain case: name one path element, a
// regular file (not a symbolic link) of at most MaxRegionSize bytes that
// fits in left or is mapped. Anything else (an error of any kind, a link,
// a subdirectory, a file too large) gives ok false and no side effect, and
// the caller takes the os.Root path, which gives the same bytes for the
// plain case and the errors for the others. A file that grows meanwhile is
// read as it was at the fstat. The bytes are read into a buffer of bufs
// (which may be nil): the caller gives it back when done.
func readRegionFast(dir, name string, left int64, bufs *Buffers) (data []byte, unmap func() error, ok bool) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, nil, false
	}
	p := name
	if dir != "." {
		p = dir + "/" + name
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, false
	}
	size := st.Size
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || size < 0 || size > MaxRegionSize || int64(int(size)) != size {
		return nil, nil, false
	}
	if size >= MapThreshold {
		if b, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
			return b, func() error { return syscall.Munmap(b) }, true
		}
	}
	if size > left {
		return nil, nil, false
	}
	b := bufs.get(int(size))
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			bufs.put(b)
			return nil, nil, false
		}
		if m <= 0 {
			break // the file shrank since the fstat
		}
		n += m
	}
	return b[:n], nil, true
}
