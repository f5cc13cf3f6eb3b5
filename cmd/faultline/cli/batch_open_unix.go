//go:build unix

package cli

import (
	"fmt"
	"os"
	"syscall"
)

// readSmall reads a regular file of at most limit bytes: open, fstat,
// read, close (the os package would add a stat, a poller registration
// and a read to see the end, for each of the thousands of manifests a
// batch lists). O_NONBLOCK: a FIFO put in a file's place after the
// listing cannot block the open (fstat then refuses it). A file that
// grows meanwhile is read as it was at the fstat.
func readSmall(p string, limit int64) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", p, limit)
	}
	data := make([]byte, st.Size)
	n := 0
	for n < len(data) {
		m, err := syscall.Read(fd, data[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if m <= 0 {
			break
		}
		n += m
	}
	return data[:n], nil
}
