package crashdump

// Buffers are the memory region files are read into, kept from one dump
// to the next: a batch that loads thousands of dumps of the same shape
// then reads each RAM file into memory it has used before, instead of
// fresh memory the collector must reclaim (and the kernel must map in).
//
// A dump loaded with LoadOptions.Buffers takes its buffers from them and
// gives them back when it is closed (Dump.Close), so nothing may use the
// dump's memory after that, not even through a reference kept elsewhere
// (an analysis's unwinders.Target). The zero value is ready to use. A
// Buffers is not safe for concurrent use: one per goroutine, or handed
// from one to the next.
type Buffers struct {
	free [][]byte
}

// Bounds on what a Buffers keeps: a few buffers (a dump has a few region
// files), none larger than the size from which region files are mapped
// rather than read.
const (
	buffersMaxKept = 8
	buffersMaxSize = MapThreshold
)

// get returns a buffer of n bytes, reused when one is large enough. Its
// content is whatever was there: the caller overwrites it.
func (b *Buffers) get(n int) []byte {
	if b != nil {
		best := -1
		for i, f := range b.free {
			if cap(f) >= n && (best < 0 || cap(f) < cap(b.free[best])) {
				best = i
			}
		}
		if best >= 0 {
			f := b.free[best]
			last := len(b.free) - 1
			b.free[best] = b.free[last]
			b.free[last] = nil
			b.free = b.free[:last]
			return f[:n]
		}
	}
	return make([]byte, n)
}

// put keeps buf for a later get.
func (b *Buffers) put(buf []byte) {
	if b == nil || cap(buf) == 0 || cap(buf) > buffersMaxSize || len(b.free) >= buffersMaxKept {
		return
	}
	b.free = append(b.free, buf[:0])
}
