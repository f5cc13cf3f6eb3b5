package textout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
)

// TestWriteAllocationsBounded: the text report lists the first
// maxTextSites sites and sums up the rest.
func TestWriteAllocationsBounded(t *testing.T) {
	a := &report.AllocationsJSON{Symbol: "fl_allocrec", Address: "0x20000000", Version: 1, Layout: "DWARF"}
	for i := range maxTextSites + 5 {
		a.Sites = append(a.Sites, report.AllocSiteJSON{Bytes: uint64(1000 - i), Blocks: 2, Function: fmt.Sprintf("site%d", i)})
	}
	var b strings.Builder
	writeAllocations(&b, &report.Report{Allocations: a})
	out := b.String()
	if strings.Count(out, "allocated in site") != maxTextSites || !strings.Contains(out, "and 5 more sites: 4890 bytes in 10 blocks") {
		t.Errorf("%s", out)
	}
	b.Reset()
	writeAllocations(&b, &report.Report{Allocations: &report.AllocationsJSON{Symbol: "fl_allocrec", Address: "0x20000000", Error: "broken"}})
	if !strings.Contains(b.String(), "unusable: broken") {
		t.Errorf("%s", b.String())
	}
}
