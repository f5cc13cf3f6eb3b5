package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/heapwalk"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/heap"
	"github.com/faultline-dev/faultline/unwinders"
)

// TestHeapWalkAgreesWithEmulator: at the crash of scenario 6 (leaks, a
// freed block between live ones, then a NULL write) the walk of the heap in
// the crash's RAM finds exactly the blocks the emulator's allocator hooks
// hold live, each with the chunk size the allocator gives that request,
// and the same used bytes; the rest of the heap is free.
func TestHeapWalkAgreesWithEmulator(t *testing.T) {
	skipWithoutEmulator(t)
	for _, c := range []struct {
		elf   string
		chunk func(req uint32) uint32 // the allocator's block size for a request
	}{
		{"heap-c", func(req uint32) uint32 { return max(16, (req+4+7)&^7) }},
		{"heap-rtos", func(req uint32) uint32 { return (req + 8 + 7) &^ 7 }},
	} {
		path := filepath.Join(repo, "firmware-samples/heap/build", c.elf+".elf")
		tr := heap.New(heap.Options{Funcs: heap.KnownFuncs()})
		res, err := emu.Run(context.Background(), emu.Config{ELF: path, Sets: map[string]uint64{"heap_scenario": 6}, Probe: tr})
		if err != nil {
			t.Fatalf("%s: %v", c.elf, err)
		}
		rep, err := tr.Report()
		if err != nil {
			t.Fatal(err)
		}
		sym, err := elfsym.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer sym.Close()
		im := new(unwinders.Image)
		for _, m := range res.Memory {
			if err := im.AddLayer(unwinders.Region{Name: m.Name, Addr: m.Addr, Data: m.Data}); err != nil {
				t.Fatal(err)
			}
		}
		walks, err := heapwalk.Find(im, sym.Symbol)
		if err != nil || len(walks) != 1 {
			t.Fatalf("%s: walks %v, %v", c.elf, walks, err)
		}
		w := walks[0]
		if w.Corrupt != "" || len(w.Notes) != 0 {
			t.Errorf("%s: corrupt %q, notes %q", c.elf, w.Corrupt, w.Notes)
		}
		var walked, live []uint32
		sizes := map[uint32]uint32{}
		for _, b := range w.Blocks {
			if b.Used {
				walked = append(walked, b.Ptr)
				sizes[b.Ptr] = b.Size
			}
		}
		var used uint64
		for _, b := range rep.Live {
			live = append(live, b.Addr)
			if sizes[b.Addr] != c.chunk(b.Size) {
				t.Errorf("%s: block 0x%08x of %d bytes: the walk says size %d, want %d", c.elf, b.Addr, b.Size, sizes[b.Addr], c.chunk(b.Size))
			}
			used += uint64(c.chunk(b.Size))
		}
		if !slices.Equal(walked, live) || len(live) == 0 {
			t.Errorf("%s: the walk finds blocks %#x in use, the emulator %#x", c.elf, walked, live)
		}
		if w.UsedBytes != used || w.FreeBytes != uint64(w.End-w.Start)-used || w.FreeBlocks < 2 {
			t.Errorf("%s: walk used %d free %d in %d free blocks over [0x%08x, 0x%08x); emulator used %d", c.elf, w.UsedBytes, w.FreeBytes, w.FreeBlocks, w.Start, w.End, used)
		}
		// A write past the end of the first live block into the next
		// block's size field: the walk says the heap is corrupt, and where.
		if len(rep.Live) > 1 {
			next := rep.Live[1].Addr
			for _, r := range res.Memory {
				if next-4 >= r.Addr && next-r.Addr <= uint32(len(r.Data)) {
					r.Data[next-4-r.Addr] ^= 0x44
				}
			}
			im := new(unwinders.Image)
			for _, m := range res.Memory {
				im.AddLayer(unwinders.Region{Name: m.Name, Addr: m.Addr, Data: m.Data})
			}
			walks, err := heapwalk.Find(im, sym.Symbol)
			if err != nil || len(walks) != 1 || !strings.Contains(walks[0].Corrupt, "the heap is corrupt") {
				t.Errorf("%s: after damaging a size field: %+v, %v", c.elf, walks, err)
			} else {
				t.Logf("%s: %s", c.elf, walks[0].Corrupt)
			}
		}
		t.Logf("%s: %d used bytes in %d blocks, %d free in %d, largest free %d, fragmentation %.2f", c.elf, w.UsedBytes, w.UsedBlocks, w.FreeBytes, w.FreeBlocks, w.LargestFree, w.Fragmentation)
	}
}
