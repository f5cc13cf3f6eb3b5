package analysis

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/crashdump/heapwalk"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// walkHeaps walks the heaps the firmware has in the dump's memory; a
// corrupt heap is also a warning (it may be why the firmware crashed).
func walkHeaps(elf *elfsym.File, t *unwinders.Target, r *Report) []*heapwalk.Walk {
	ws, err := heapwalk.Find(t.Mem, elf.Symbol)
	if err != nil {
		return nil
	}
	for _, w := range ws {
		if w.Corrupt != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("heap (%s): %s", w.Allocator, w.Corrupt))
		}
	}
	return ws
}

// writeHeap prints the heap walks.
func writeHeap(b *strings.Builder, r *Report) {
	for _, w := range r.Heap {
		fmt.Fprintf(b, "\nHeap (%s)", w.Allocator)
		if w.End > w.Start {
			fmt.Fprintf(b, " 0x%08x-0x%08x", w.Start, w.End)
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "  used %d bytes in %d blocks, free %d bytes in %d blocks, largest free block %d bytes, fragmentation %.0f%%\n",
			w.UsedBytes, w.UsedBlocks, w.FreeBytes, w.FreeBlocks, w.LargestFree, 100*w.Fragmentation)
		if w.Corrupt != "" {
			fmt.Fprintf(b, "  CORRUPT: %s\n", w.Corrupt)
		}
		if w.Unreadable != "" {
			fmt.Fprintf(b, "  incomplete: %s\n", w.Unreadable)
		}
		for _, n := range w.Notes {
			fmt.Fprintf(b, "  note: %s\n", n)
		}
	}
}
