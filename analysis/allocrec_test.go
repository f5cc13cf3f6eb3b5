package analysis

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestWriteAllocationsBounded: the text report lists the first
// maxTextSites sites and sums up the rest.
func TestWriteAllocationsBounded(t *testing.T) {
	a := &AllocationsJSON{Symbol: "fl_allocrec", Address: "0x20000000", Version: 1, Layout: "DWARF"}
	for i := range maxTextSites + 5 {
		a.Sites = append(a.Sites, AllocSiteJSON{Bytes: uint64(1000 - i), Blocks: 2, Function: fmt.Sprintf("site%d", i)})
	}
	var b strings.Builder
	writeAllocations(&b, &Report{Allocations: a})
	out := b.String()
	if strings.Count(out, "allocated in site") != maxTextSites || !strings.Contains(out, "and 5 more sites: 4890 bytes in 10 blocks") {
		t.Errorf("%s", out)
	}
	b.Reset()
	writeAllocations(&b, &Report{Allocations: &AllocationsJSON{Symbol: "fl_allocrec", Address: "0x20000000", Error: "broken"}})
	if !strings.Contains(b.String(), "unusable: broken") {
		t.Errorf("%s", b.String())
	}
}

// BenchmarkRecordedAllocations decodes the recorder's table of a real
// dump (the QEMU dump of the recorder sample, gcc-m3-O2: 6 live blocks)
// with the heap walk and the cross-check, after the first call has read
// the layout from the DWARF types (cached per ELF).
func BenchmarkRecordedAllocations(b *testing.B) {
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/capture/recorder/build/gcc-m3-O2.elf"))
	if err != nil {
		b.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/allocrec/gcc-m3-O2.crashcatcher.hex"))
	if err != nil {
		b.Fatal(err)
	}
	tgt, _, err := NewTarget(elf, d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := &Report{}
		r.Heap = walkHeaps(elf, tgt, r)
		if a := recordedAllocations(elf, tgt, r); a == nil || a.LiveBlocks != 6 {
			b.Fatalf("%+v", a)
		}
	}
}
