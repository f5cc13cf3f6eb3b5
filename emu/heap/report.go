package heap

import (
	"fmt"
	"sort"
)

// Site is the live blocks allocated from one call stack.
type Site struct {
	Bytes  uint64
	Blocks int
	Via    string // the entry point (of the first block)
	Stack  Stack
	// Reach is the reachability its blocks share ("" when not known).
	Reach string
	// Addrs are the blocks' addresses, lowest first.
	Addrs []uint32
}

// Pending is an allocator call that had not returned when the run ended
// (the fault was inside the allocator, or it never returns).
type Pending struct {
	Func  string
	Ptr   uint32
	Size  uint32
	Stack Stack
	Insn  uint64
}

// Report is the heap at the end of a run.
type Report struct {
	Allocator     string
	Hooked        []string
	LiveBytes     uint64
	LiveBlocks    int
	PeakBytes     uint64
	PeakInsn      uint64
	PeakBlock     *Block // the allocation that reached the peak
	Allocs, Frees uint64
	Sites         []Site
	Errors        []Error
	ErrorsDropped int
	Pending       []Pending
	Live          []*Block // every live block, lowest address first
	// Leaks sums the live blocks by reachability (nil when it was not
	// found; ReachNote then says why, or is "" when nothing was live).
	Leaks     map[string]LeakSum
	ReachNote string
}

// LeakSum is the live bytes and blocks of one reachability class.
type LeakSum struct {
	Bytes  uint64
	Blocks int
}

// Report returns the heap as it is now. The error is a failure the
// callbacks met (a watch they could not install).
func (t *Tracker) Report() (*Report, error) {
	s := &t.st
	r := &Report{Allocator: t.Allocator(), LiveBytes: s.liveBytes, LiveBlocks: s.nlive,
		PeakBytes: s.peakBytes, PeakInsn: s.peakInsn,
		Allocs: s.allocs, Frees: s.frees, Errors: append([]Error(nil), s.errors...), ErrorsDropped: s.dropped}
	if s.peakOK {
		r.PeakBlock = t.block(s.peak)
	}
	for _, f := range t.hooked {
		if f.Op != OpInternal {
			r.Hooked = append(r.Hooked, f.Name)
		}
	}
	sort.Strings(r.Hooked)
	bySite := map[string]*Site{}
	var keys []string
	for i := range s.slots {
		if s.slots[i].state == slotLive {
			r.Live = append(r.Live, t.block(s.slots[i].b))
		}
	}
	sort.Slice(r.Live, func(i, j int) bool { return r.Live[i].Addr < r.Live[j].Addr })
	r.ReachNote = t.reachNote
	if t.reach != nil {
		r.Leaks = map[string]LeakSum{}
		for _, b := range r.Live {
			b.Reach = t.reach[b.Addr]
			s := r.Leaks[b.Reach]
			s.Bytes += uint64(b.Size)
			s.Blocks++
			r.Leaks[b.Reach] = s
		}
	}
	for _, b := range r.Live {
		k := fmt.Sprint(b.Alloc.PCs, b.Reach)
		st, ok := bySite[k]
		if !ok {
			st = &Site{Via: b.Via, Stack: b.Alloc, Reach: b.Reach}
			bySite[k] = st
			keys = append(keys, k)
		}
		st.Bytes += uint64(b.Size)
		st.Blocks++
		st.Addrs = append(st.Addrs, b.Addr)
	}
	for _, k := range keys {
		r.Sites = append(r.Sites, *bySite[k])
	}
	sort.SliceStable(r.Sites, func(i, j int) bool {
		a, b := r.Sites[i], r.Sites[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		if a.Blocks != b.Blocks {
			return a.Blocks > b.Blocks
		}
		return a.Addrs[0] < b.Addrs[0]
	})
	for _, c := range s.pending {
		r.Pending = append(r.Pending, Pending{Func: t.via(c.id), Ptr: c.ptr, Size: c.size, Stack: Stack{PCs: c.stack}, Insn: c.insn})
	}
	return r, t.err
}
