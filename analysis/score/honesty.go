package score

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/unwinders"
)

// Honesty is what an independent re-check of a walk's call targets finds
// (design.md "Threads, gaps, pairing"): every return address's call is
// checked again against the frame below it, whatever the walk recorded.
type Honesty struct {
	// Gaps counts the gap frames of the walk.
	Gaps int `json:"gaps,omitempty"`
	// Overclaimed lists the frames said to be `high` although a gap stands
	// before them or their return address's call targets another function
	// than the frame below it. It must stay empty.
	Overclaimed []string `json:"overclaimed,omitempty"`
	// Unmarked lists return addresses whose call targets another function
	// with no gap frame before them.
	Unmarked []string `json:"unmarked,omitempty"`
}

// CheckHonesty re-runs the call-target check over the report's walk.
func CheckHonesty(r *report.Report) Honesty {
	var h Honesty
	if r.Target == nil {
		return h
	}
	gap := false
	frames := r.Walk.Frames
	for i := range frames {
		f := &frames[i]
		if f.Kind == unwinders.KindGap {
			h.Gaps++
			gap = true
			continue
		}
		var mismatch bool
		if f.ReturnAddress && i > 0 {
			prev := i - 1
			markedGap := frames[prev].Kind == unwinders.KindGap
			if markedGap && prev > 0 {
				prev--
			}
			if frames[prev].Kind != unwinders.KindException {
				c, _ := r.Target.CheckCall(&frames[prev], f.PC)
				mismatch = c == unwinders.CallMismatch
				if mismatch && !markedGap {
					h.Unmarked = append(h.Unmarked, fmt.Sprintf("frame %d (0x%08x, %s)", i, f.PC, f.Method))
				}
			}
		}
		if f.Confidence == unwinders.ConfidenceHigh && (gap || mismatch) {
			why := "after a gap"
			if mismatch {
				why = "across a call to another function"
			}
			h.Overclaimed = append(h.Overclaimed, fmt.Sprintf("frame %d (0x%08x, %s) is high %s", i, f.PC, f.Method, why))
		}
	}
	return h
}
