package stackscan

import (
	"encoding/binary"

	"github.com/faultline-dev/faultline/unwinders"
)

// chunkBytes is how much stack one read fetches.
const chunkBytes = 512

// window reads the stack words of [lo, hi) through a Memory in chunks. The
// first unmapped word ends the window: hi shrinks to it and err records it.
type window struct {
	m      unwinders.Memory
	lo, hi uint64 // word-aligned; hi exclusive and at most 1<<32
	err    error  // the read that ended the window early, if any

	buf  [chunkBytes]byte
	bLo  uint64 // address of buf[0]
	bLen uint64 // valid bytes in buf
}

func newWindow(m unwinders.Memory, lo uint32, hi uint64) *window {
	w := &window{m: m, lo: (uint64(lo) + 3) &^ 3, hi: hi &^ 3}
	if w.hi < w.lo {
		w.hi = w.lo
	}
	return w
}

// word returns the word at a, false outside the window or once a is past
// the first unmapped word.
func (w *window) word(a uint32) (uint32, bool) {
	x := uint64(a)
	if x < w.lo || x+4 > w.hi {
		return 0, false
	}
	if x < w.bLo || x+4 > w.bLo+w.bLen {
		if !w.fill(x) {
			return 0, false
		}
	}
	off := x - w.bLo
	return binary.LittleEndian.Uint32(w.buf[off : off+4]), true
}

// fill loads the chunk starting at x. On a failed read it loads word by
// word to find the first unmapped word and ends the window there.
func (w *window) fill(x uint64) bool {
	n := min(uint64(chunkBytes), w.hi-x)
	if err := w.m.Read(uint32(x), w.buf[:n]); err == nil {
		w.bLo, w.bLen = x, n
		return true
	}
	var got uint64
	for got < n {
		if err := w.m.Read(uint32(x+got), w.buf[got:got+4]); err != nil {
			w.hi = x + got
			if w.err == nil {
				w.err = err
			}
			break
		}
		got += 4
	}
	w.bLo, w.bLen = x, got
	return got >= 4
}
