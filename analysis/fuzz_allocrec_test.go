package analysis

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// FuzzRecorderHeap overwrites bytes anywhere in the RAM of the allocation
// recorder sample's QEMU dump (the recorder's table in .data, newlib's
// bins, the heap's chunks) and decodes the heap walk and the recorder's
// table: no panic, no hang, and a table is either unusable with a reason
// or consistent. The seeds are the edits of fixtures/hostile allocrec and
// heapwalk.
func FuzzRecorderHeap(f *testing.F) {
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/capture/recorder/build/gcc-m3-O2.elf"))
	if err != nil {
		f.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/allocrec/gcc-m3-O2.crashcatcher.hex"))
	if err != nil {
		f.Fatal(err)
	}
	const base = 0x20000000
	ri := -1
	for i, r := range d.Memory {
		if r.Addr == base {
			ri = i
		}
	}
	if ri < 0 {
		f.Fatal("no RAM region at 0x20000000 in the dump")
	}
	ram := d.Memory[ri].Data
	sym := func(name string) uint16 {
		a, ok := elf.Symbol(name)
		if !ok {
			f.Fatalf("no symbol %s", name)
		}
		return uint16(a - base)
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	tab, av := sym("fl_allocrec"), sym("__malloc_av_")
	f.Add(tab, u32(0))                // bad magic
	f.Add(tab+16, u32(0xffffffff))    // count
	f.Add(tab+12, u32(0x7fffffff))    // capacity
	f.Add(tab+8, []byte{28, 0, 5, 0}) // entry size and depth
	f.Add(tab+32, u32(0x1000))        // an entry in flash
	f.Add(tab+40, u32(0xfffffff1))    // a return address
	f.Add(av+8, u32(0x30000000))      // top
	f.Add(av+16, u32(0x30000000))     // bin 1
	f.Add(uint16(0x1214), u32(0x12345))
	f.Fuzz(func(t *testing.T, off uint16, patch []byte) {
		if int(off) >= len(ram) || len(patch) > 256 {
			return
		}
		mem := append([]byte(nil), ram...)
		copy(mem[off:], patch)
		dd := *d
		dd.Memory = append([]unwinders.Region(nil), d.Memory...)
		dd.Memory[ri].Data = mem
		tgt, _, err := NewTarget(elf, &dd)
		if err != nil {
			t.Fatal(err)
		}
		r := &report.Report{}
		r.Heap = walkHeaps(elf, tgt, r)
		a := recordedAllocations(elf, tgt, r)
		if a == nil {
			t.Fatal("no allocations section for an ELF with fl_allocrec")
		}
		if a.Error != "" {
			if len(a.Sites) != 0 || !strings.HasPrefix(a.Error, "fl_allocrec at 0x") {
				t.Fatalf("unusable table with sites or an unplaced error: %+v", a)
			}
			return
		}
		n := 0
		for _, s := range a.Sites {
			n += s.Blocks
			if s.Blocks != len(s.List) || len(s.Stack) > 16*64 {
				t.Fatalf("site %+v", s)
			}
		}
		if n != a.LiveBlocks || a.Count > a.Capacity || a.LiveBlocks > a.Count {
			t.Fatalf("inconsistent: %d blocks in sites, %+v", n, a)
		}
		var b strings.Builder
		r.Allocations = a
		if err := textout.Write(&b, r); err != nil {
			t.Fatal(err)
		}
	})
}
