package report

import (
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// RTOSJSON is the "rtos" object of faultline.analysis/1: which kernel the
// threads come from and where its struct layouts were read.
type RTOSJSON struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`
}

// ThreadJSON is one entry of "threads" (design.md, "Threads (RTOS)").
type ThreadJSON struct {
	Name         string      `json:"name"`
	State        string      `json:"state"`
	Current      bool        `json:"current"`
	Priority     *int        `json:"priority,omitempty"`      // absent when the kernel's data does not say
	BasePriority *int        `json:"base_priority,omitempty"` // only when a mutex raised the priority
	ID           string      `json:"id"`
	WaitingOn    string      `json:"waiting_on,omitempty"`
	Stack        StackJSON   `json:"stack"`
	Diagnosis    []string    `json:"diagnosis,omitempty"`
	Frames       []FrameJSON `json:"frames"`
	Stop         string      `json:"stop"`
	Error        string      `json:"error,omitempty"`

	// For the text and HTML reports; not part of the JSON.
	Walk unwinders.Result `json:"-"`
	Raw  rtos.Thread      `json:"-"`
}

// StackJSON is a thread's "stack" object. Addresses are "" when unknown,
// high_water_bytes -1.
type StackJSON struct {
	Start          string `json:"start,omitempty"`
	End            string `json:"end,omitempty"`
	SP             string `json:"sp,omitempty"`
	HighWaterBytes int    `json:"high_water_bytes"`
	Overflow       bool   `json:"overflow"`
}
