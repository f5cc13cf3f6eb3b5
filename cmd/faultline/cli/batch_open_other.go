//go:build !unix

package cli

import (
	"fmt"
	"io"
	"os"
)

// openRead is the flag readSmall opens files with.
const openRead = os.O_RDONLY

// readSmall reads a regular file of at most limit bytes.
func readSmall(p string, limit int64) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", p, limit)
	}
	// os.ReadFile, with the flags of openRead and a buffer sized from
	// the stat above: one byte more, so that the read that sees the end
	// needs no growing.
	f, err := os.OpenFile(p, openRead, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, st.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
