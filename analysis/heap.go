package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump/heapwalk"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// walkHeaps walks the heaps the firmware has in the dump's memory; a
// corrupt heap is also a warning (it may be why the firmware crashed).
func walkHeaps(elf *elfsym.File, t *unwinders.Target, r *report.Report) []*heapwalk.Walk {
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
