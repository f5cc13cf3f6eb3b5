package allocrec

import (
	"fmt"
	"sort"

	"github.com/faultline-dev/faultline/crashdump/heapwalk"
)

// Site is the live blocks allocated from one call site: the same exact
// return address ret[0].
type Site struct {
	Return uint32 // ret[0] of its blocks (Thumb bit as stored; 0 if none)
	Bytes  uint64
	// Entries are the site's blocks, biggest first (then by address).
	Entries []Entry
}

// Sites groups the live entries by call site, most bytes first (then
// by return address). Linear in the entries plus the sorts.
func (t *Table) Sites() []Site {
	idx := map[uint32]int{}
	var out []Site
	for _, e := range t.Entries {
		var r uint32
		if len(e.Returns) > 0 {
			r = e.Returns[0]
		}
		i, ok := idx[r]
		if !ok {
			i = len(out)
			idx[r] = i
			out = append(out, Site{Return: r})
		}
		out[i].Bytes += uint64(e.Size)
		out[i].Entries = append(out[i].Entries, e)
	}
	for i := range out {
		es := out[i].Entries
		sort.Slice(es, func(a, b int) bool {
			if es[a].Size != es[b].Size {
				return es[a].Size > es[b].Size
			}
			return es[a].Addr < es[b].Addr
		})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Bytes != out[b].Bytes {
			return out[a].Bytes > out[b].Bytes
		}
		return out[a].Return < out[b].Return
	})
	return out
}

// LiveBytes is the sum of the live entries' sizes.
func (t *Table) LiveBytes() uint64 {
	var n uint64
	for _, e := range t.Entries {
		n += uint64(e.Size)
	}
	return n
}

// Check compares the table with the heap walks of the same dump. A
// recorded block that the walk finds free, or that starts no block of a
// heap the walk covered, is a warning (the table is stale or the heap was
// damaged: a use after free, a double free, an overflow, or a free that
// went around the wrapper). A recorded block bigger than its heap block is
// one too. Blocks the walk finds in use that the table does not hold give
// a note (allocated through an entry point the recorder does not wrap, or
// before the table had room). Walks that are corrupt or incomplete are
// only used for the blocks they reached.
func (t *Table) Check(walks []*heapwalk.Walk) (warnings, notes []string) {
	type at struct {
		w *heapwalk.Walk
		b heapwalk.Block
	}
	blocks := map[uint32]at{}
	for _, w := range walks {
		for _, b := range w.Blocks {
			blocks[b.Ptr] = at{w, b}
		}
	}
	recorded := make(map[uint32]bool, len(t.Entries))
	for _, e := range t.Entries {
		recorded[e.Addr] = true
		if hb, ok := blocks[e.Addr]; ok {
			switch {
			case !hb.b.Used:
				warnings = append(warnings, fmt.Sprintf("the recorder holds block 0x%08x (%d bytes) as live, but the %s heap has it free: a use after free or double free, or a free that bypassed the recorder", e.Addr, e.Size, hb.w.Allocator))
			case uint64(e.Size) > uint64(hb.b.Size):
				warnings = append(warnings, fmt.Sprintf("the recorder says block 0x%08x has %d bytes, but its %s heap block has %d including the header", e.Addr, e.Size, hb.w.Allocator, hb.b.Size))
			}
			continue
		}
		for _, w := range walks {
			if w.Corrupt != "" || w.Unreadable != "" || len(w.Blocks) == 0 {
				continue
			}
			if e.Addr >= w.Start && e.Addr < w.End {
				warnings = append(warnings, fmt.Sprintf("the recorder holds block 0x%08x (%d bytes), which starts no block of the %s heap", e.Addr, e.Size, w.Allocator))
			}
		}
	}
	if t.Dropped != 0 {
		return warnings, notes
	}
	for _, w := range walks {
		n, bytes := 0, uint64(0)
		for _, b := range w.Blocks {
			if b.Used && !recorded[b.Ptr] {
				n++
				bytes += uint64(b.Size)
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%d blocks in use in the %s heap (%d bytes with headers) are not in the table: allocated through a function the recorder does not wrap", n, w.Allocator, bytes))
		}
	}
	return warnings, notes
}
