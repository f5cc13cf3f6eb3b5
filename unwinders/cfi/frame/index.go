package frame

import (
	"fmt"
	"sort"
)

// TombstoneMin is the lowest initial location taken for an ld.lld
// tombstone: lld relocates references from debug sections to discarded
// code to -1 (or -2), which in 32 bits is 0xffffffff (0xfffffffe).
const TombstoneMin = 0xfffffff0

// IndexOptions say what the index may assume about the program.
type IndexOptions struct {
	// CodeAtZero is set when a function really starts at address 0. Only
	// then are FDEs whose initial location is 0 kept: otherwise they are
	// the call frame information of functions ld --gc-sections removed,
	// whose addresses were relocated to 0 (cortex-m.md 6.4).
	CodeAtZero bool
	// ZeroEnd is the end of the function at 0, when known: if several
	// FDEs start at 0, the one ending there wins.
	ZeroEnd uint64
}

// Dropped is an FDE the index left out, and why.
type Dropped struct {
	FDE    *FDE
	Reason string
}

// Index finds the FDE that covers an address by binary search. Build it
// once per section with NewIndex; it is immutable and safe for concurrent
// use.
type Index struct {
	fdes    []*FDE // sorted by Start, non-overlapping, non-empty
	dropped []Dropped
}

// NewIndex sorts fdes by address and leaves out those that cannot describe
// live code: empty ranges, FDEs of garbage-collected code (initial location
// 0 without code at 0, or an ld.lld tombstone), and FDEs that overlap an
// FDE kept before them (the earlier start wins; at equal starts the one
// ending at IndexOptions.ZeroEnd, else the longer). Cost: O(n log n).
func NewIndex(fdes []*FDE, opt IndexOptions) *Index {
	ix := &Index{}
	cand := make([]*FDE, 0, len(fdes))
	for _, f := range fdes {
		switch {
		case f.End <= f.Start:
			ix.dropped = append(ix.dropped, Dropped{f, "empty address range"})
		case f.Start == 0 && !opt.CodeAtZero:
			ix.dropped = append(ix.dropped, Dropped{f, "initial location 0 and no function at 0: code removed by --gc-sections"})
		case f.Start >= TombstoneMin && f.CIE.AddressSize == 4 || f.Start >= 1<<64-16:
			ix.dropped = append(ix.dropped, Dropped{f, fmt.Sprintf("initial location 0x%x is a linker tombstone: code removed by --gc-sections", f.Start)})
		default:
			cand = append(cand, f)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool {
		a, b := cand[i], cand[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.Start == 0 && opt.ZeroEnd != 0 && (a.End == opt.ZeroEnd) != (b.End == opt.ZeroEnd) {
			return a.End == opt.ZeroEnd
		}
		return a.End > b.End
	})
	for _, f := range cand {
		if n := len(ix.fdes); n > 0 && f.Start < ix.fdes[n-1].End {
			prev := ix.fdes[n-1]
			ix.dropped = append(ix.dropped, Dropped{f, fmt.Sprintf("overlaps %v", prev)})
			continue
		}
		ix.fdes = append(ix.fdes, f)
	}
	return ix
}

// Lookup returns the FDE whose range holds pc. Cost: O(log n).
func (ix *Index) Lookup(pc uint64) (*FDE, bool) {
	i := sort.Search(len(ix.fdes), func(i int) bool { return ix.fdes[i].End > pc })
	if i < len(ix.fdes) && ix.fdes[i].Start <= pc {
		return ix.fdes[i], true
	}
	return nil, false
}

// Len returns the number of FDEs in the index.
func (ix *Index) Len() int { return len(ix.fdes) }

// FDEs returns the indexed FDEs in address order (the index's slice: do not
// modify).
func (ix *Index) FDEs() []*FDE { return ix.fdes }

// Dropped returns the FDEs left out of the index, and why.
func (ix *Index) Dropped() []Dropped { return ix.dropped }
