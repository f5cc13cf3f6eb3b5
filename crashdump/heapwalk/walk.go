// Package heapwalk walks a firmware's heap in the RAM of a crash dump: the
// chunks of newlib's malloc (the dlmalloc-derived mallocr of newlib's
// libc.a) and the blocks of FreeRTOS's heap_4, and reports what was used
// and free at crash time, the largest free block and the fragmentation.
// Heap structures that do not hold together are reported as corruption: a
// common cause of the crash itself.
//
// Layouts (facts of the allocators' public sources and documentation):
//
//   - newlib mallocr: a chunk is {prev_size, size} (4 bytes each) followed
//     by the user data; the low bit of size (PREV_INUSE) says whether the
//     chunk before is in use, so a chunk is in use when the next chunk's
//     PREV_INUSE is set; sizes are multiples of 8 and at least 16. The
//     chunks run from the 8-aligned start of the memory sbrk returned
//     (__malloc_sbrk_base) to the top chunk, top = __malloc_av_[2] (the
//     forward link of bin 0), whose size covers the rest of the arena
//     (__malloc_current_mallinfo.arena bytes from the start).
//     The free chunks other than top are kept in 127 circular doubly
//     linked bins: bin i's head is the pseudo-chunk at __malloc_av_ + 8*i
//     (its fd and bk are __malloc_av_[2i+2] and [2i+3]), a free chunk's fd
//     and bk are the two words after its size; an empty bin points at
//     itself both ways.
//   - heap_4: ucHeap holds blocks that start with a BlockLink_t
//     {pxNextFreeBlock, xBlockSize}; the top bit of xBlockSize marks an
//     allocated block; the blocks run from the 8-aligned start of ucHeap
//     to the end marker pxEnd; the free blocks are listed by address from
//     xStart; xFreeBytesRemaining holds their total.
package heapwalk

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/faultline-dev/faultline/unwinders"
)

// Symbols looks a symbol's address up by name.
type Symbols func(name string) (uint32, bool)

// Block is one chunk or block of the heap.
type Block struct {
	Addr uint32 `json:"-"`
	// Ptr is what the allocator returned for it (the user data).
	Ptr  uint32 `json:"-"`
	Size uint32 `json:"size"` // including the header
	Used bool   `json:"used"`
}

// Walk is the heap at crash time.
type Walk struct {
	Allocator   string `json:"allocator"` // "newlib" or "freertos-heap_4"
	Start       uint32 `json:"-"`
	End         uint32 `json:"-"`
	UsedBytes   uint64 `json:"used_bytes"`
	UsedBlocks  int    `json:"used_blocks"`
	FreeBytes   uint64 `json:"free_bytes"`
	FreeBlocks  int    `json:"free_blocks"`
	LargestFree uint32 `json:"largest_free"`
	// Fragmentation is 1 - LargestFree/FreeBytes: 0 when all free memory
	// is one block.
	Fragmentation float64 `json:"fragmentation"`
	Blocks        []Block `json:"-"`
	// Corrupt says where the structures stop making sense; the counts
	// cover what was walked before.
	Corrupt string `json:"corrupt,omitempty"`
	// Unreadable says which part of the heap the dump does not hold: the
	// walk stopped there (not a corruption).
	Unreadable string `json:"unreadable,omitempty"`
	// Notes are smaller inconsistencies (a statistic that disagrees).
	Notes []string `json:"notes,omitempty"`
}

func (w *Walk) unreadable(format string, args ...any) *Walk {
	w.Unreadable = fmt.Sprintf(format, args...) + ": the dump does not hold that memory, so the heap was not walked to its end"
	w.finish()
	return w
}

// ErrNoHeap means the firmware has none of the heaps the walker knows.
var ErrNoHeap = errors.New("no heap the walker knows (newlib malloc or FreeRTOS heap_4)")

// maxBlocks bounds every walk.
const maxBlocks = 1 << 20

// Find walks the heaps the firmware has: heap_4 when it has ucHeap and
// pxEnd, newlib when it has __malloc_av_ and __malloc_sbrk_base.
func Find(mem unwinders.Memory, sym Symbols) ([]*Walk, error) {
	var out []*Walk
	if _, ok := sym("ucHeap"); ok {
		if _, ok := sym("pxEnd"); ok {
			out = append(out, Heap4(mem, sym))
		}
	}
	if _, ok := sym("__malloc_av_"); ok {
		if _, ok := sym("__malloc_sbrk_base"); ok {
			w := Newlib(mem, sym)
			if w != nil {
				out = append(out, w)
			}
		}
	}
	if len(out) == 0 {
		return nil, ErrNoHeap
	}
	return out, nil
}

func word(mem unwinders.Memory, addr uint32) (uint32, error) { return unwinders.ReadU32(mem, addr) }

func (w *Walk) add(b Block) {
	w.Blocks = append(w.Blocks, b)
	if b.Used {
		w.UsedBytes += uint64(b.Size)
		w.UsedBlocks++
		return
	}
	w.FreeBytes += uint64(b.Size)
	w.FreeBlocks++
	if b.Size > w.LargestFree {
		w.LargestFree = b.Size
	}
}

func (w *Walk) finish() {
	if w.FreeBytes > 0 {
		w.Fragmentation = math.Round((1-float64(w.LargestFree)/float64(w.FreeBytes))*1000) / 1000
	}
}

func (w *Walk) corrupt(format string, args ...any) *Walk {
	w.Corrupt = fmt.Sprintf(format, args...) + ": the heap is corrupt (a write past a block's end, a double free or a use after free damaged its bookkeeping), a common cause of the crash"
	w.finish()
	return w
}

// Newlib walks newlib's malloc arena. It returns nil when malloc never ran
// (__malloc_sbrk_base is still -1).
func Newlib(mem unwinders.Memory, sym Symbols) *Walk {
	w := &Walk{Allocator: "newlib"}
	av, _ := sym("__malloc_av_")
	sb, _ := sym("__malloc_sbrk_base")
	base, err := word(mem, sb)
	if err != nil {
		return w.unreadable("__malloc_sbrk_base at 0x%08x (%v)", sb, err)
	}
	if base == 0xffffffff {
		return nil
	}
	top, err := word(mem, av+8)
	if err != nil {
		return w.unreadable("__malloc_av_ at 0x%08x (%v)", av, err)
	}
	start := (base + 7) &^ 7
	w.Start = start
	topSize, err := word(mem, top+4)
	if err != nil {
		return w.unreadable("the top chunk at 0x%08x (__malloc_av_[2]) (%v)", top, err)
	}
	topSize &^= 3
	if top < start || uint64(top)+uint64(topSize) > 1<<32 || topSize&7 != 0 {
		return w.corrupt("the top chunk at 0x%08x (size %d) is not after the arena start 0x%08x", top, topSize, start)
	}
	w.End = top + topSize
	c := start
	for n := 0; c < top; n++ {
		if n == maxBlocks {
			return w.corrupt("more than %d chunks before the top chunk", maxBlocks)
		}
		sz, err := word(mem, c+4)
		if err != nil {
			return w.unreadable("chunk at 0x%08x: its header (%v)", c, err)
		}
		size := sz &^ 3
		if size < 16 || size&7 != 0 || uint64(c)+uint64(size) > uint64(top) {
			return w.corrupt("chunk at 0x%08x has size field 0x%08x: not a multiple of 8 of at least 16 that ends by the top chunk at 0x%08x", c, sz, top)
		}
		next := c + size
		nsz, err := word(mem, next+4)
		if err != nil {
			return w.unreadable("chunk at 0x%08x: its header (%v)", next, err)
		}
		w.add(Block{Addr: c, Ptr: c + 8, Size: size, Used: nsz&1 != 0})
		c = next
	}
	if c != top {
		return w.corrupt("the chunks end at 0x%08x, not at the top chunk 0x%08x", c, top)
	}
	w.add(Block{Addr: top, Ptr: top + 8, Size: topSize})
	if bad := newlibBins(mem, av, w); bad != nil {
		return bad
	}
	if mi, ok := sym("__malloc_current_mallinfo"); ok {
		if arena, err := word(mem, mi); err == nil && arena != 0 && arena != w.End-base {
			w.Notes = append(w.Notes, fmt.Sprintf("mallinfo.arena is %d bytes, the chunks cover %d", arena, w.End-base))
		}
	}
	w.finish()
	return w
}

// Heap4 walks a FreeRTOS heap_4 heap.
func Heap4(mem unwinders.Memory, sym Symbols) *Walk {
	w := &Walk{Allocator: "freertos-heap_4"}
	heap, _ := sym("ucHeap")
	pe, _ := sym("pxEnd")
	end, err := word(mem, pe)
	if err != nil {
		return w.unreadable("pxEnd at 0x%08x (%v)", pe, err)
	}
	if end == 0 {
		w.Notes = append(w.Notes, "the heap was never used (pxEnd is NULL)")
		return w
	}
	start := (heap + 7) &^ 7
	w.Start, w.End = start, end
	if end < start || end-start > 1<<30 {
		return w.corrupt("pxEnd 0x%08x is not within 1 GiB after the start of ucHeap 0x%08x", end, start)
	}
	const used = uint32(1) << 31
	var free []uint32
	b := start
	for n := 0; b < end; n++ {
		if n == maxBlocks {
			return w.corrupt("more than %d blocks before pxEnd", maxBlocks)
		}
		raw, err := word(mem, b+4)
		if err != nil {
			return w.unreadable("block at 0x%08x: its BlockLink_t (%v)", b, err)
		}
		size := raw &^ used
		if size < 8 || size&7 != 0 || uint64(b)+uint64(size) > uint64(end) {
			return w.corrupt("block at 0x%08x has xBlockSize 0x%08x: not a multiple of 8 of at least 8 that ends by pxEnd 0x%08x", b, raw, end)
		}
		blk := Block{Addr: b, Ptr: b + 8, Size: size, Used: raw&used != 0}
		if !blk.Used {
			free = append(free, b)
		}
		w.add(blk)
		b += size
	}
	if b != end {
		return w.corrupt("the blocks end at 0x%08x, not at pxEnd 0x%08x", b, end)
	}
	// The free list must name exactly the free blocks, in address order.
	if xs, ok := sym("xStart"); ok {
		at, err := word(mem, xs)
		for i := 0; err == nil && at != end; i++ {
			if i >= len(free) || at != free[i] {
				if slices.Contains(free[:min(i, len(free))], at) {
					return w.corrupt("the free list from xStart comes back to 0x%08x (a cycle)", at)
				}
				return w.corrupt("the free list from xStart reaches 0x%08x, which is not the next free block", at)
			}
			at, err = word(mem, at)
		}
		if err != nil {
			return w.unreadable("the free list from xStart leaves the dump (%v)", err)
		}
	}
	if fb, ok := sym("xFreeBytesRemaining"); ok {
		if v, err := word(mem, fb); err == nil && uint64(v) != w.FreeBytes {
			w.Notes = append(w.Notes, fmt.Sprintf("xFreeBytesRemaining is %d, the free blocks hold %d", v, w.FreeBytes))
		}
	}
	w.finish()
	return w
}

// newlibBins follows the free lists of bins 1..127 and checks that they
// link exactly the free chunks the walk found (top excluded), each once,
// with consistent back links. Bounded: a chunk met twice stops the check,
// so it reads at most the free chunks plus the 127 heads.
func newlibBins(mem unwinders.Memory, av uint32, w *Walk) *Walk {
	free := map[uint32]bool{}
	for _, b := range w.Blocks[:len(w.Blocks)-1] { // top is last
		if !b.Used {
			free[b.Addr] = true
		}
	}
	linked := map[uint32]bool{}
	for i := uint32(1); i < 128; i++ {
		head := av + 8*i
		p, err := word(mem, head+8)
		if err != nil {
			return w.unreadable("the head of free list %d at 0x%08x (%v)", i, head, err)
		}
		prev := head
		for p != head {
			switch {
			case linked[p]:
				return w.corrupt("free chunk 0x%08x is linked twice in the free lists (bin %d reaches it again: a cycle, or a chunk freed twice)", p, i)
			case !free[p]:
				what := "which is not a free chunk of the walk"
				if p < w.Start || p >= w.End {
					what = "outside the heap"
				}
				return w.corrupt("free list %d (head 0x%08x) links to 0x%08x, %s", i, head, p, what)
			}
			linked[p] = true
			bk, err := word(mem, p+12)
			if err != nil {
				return w.unreadable("free chunk 0x%08x: its links (%v)", p, err)
			}
			if bk != prev {
				return w.corrupt("free chunk 0x%08x in list %d: its back link is 0x%08x, not the chunk before it 0x%08x", p, i, bk, prev)
			}
			prev = p
			if p, err = word(mem, p+8); err != nil {
				return w.unreadable("free chunk 0x%08x: its links (%v)", prev, err)
			}
		}
		if bk, err := word(mem, head+12); err == nil && bk != prev {
			return w.corrupt("free list %d (head 0x%08x) ends at 0x%08x, but the head's back link is 0x%08x", i, head, prev, bk)
		}
	}
	for _, b := range w.Blocks {
		if !b.Used && b.Addr != w.Blocks[len(w.Blocks)-1].Addr && !linked[b.Addr] {
			w.Notes = append(w.Notes, fmt.Sprintf("free chunk 0x%08x (%d bytes) is in no free list", b.Addr, b.Size))
			if len(w.Notes) > 8 {
				w.Notes = append(w.Notes, "(more free chunks outside the free lists not listed)")
				break
			}
		}
	}
	return nil
}
