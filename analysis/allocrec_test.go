package analysis

import (
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

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
		r := &report.Report{}
		r.Heap = walkHeaps(elf, tgt, r)
		if a := recordedAllocations(elf, tgt, r); a == nil || a.LiveBlocks != 6 {
			b.Fatalf("%+v", a)
		}
	}
}
