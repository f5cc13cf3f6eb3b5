// Package report is the model of one analysed crash: the Report and the
// data it holds (frames, threads, variables, messages, logs, heap and
// allocation tables, pairing, verdicts). Its JSON form is
// faultline.analysis/1, given by the struct tags. It has no engine and no
// rendering: package analysis builds a Report, the packages under
// analysis/render print it, analysis/score measures it.
package report

import (
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/crashdump/heapwalk"
	"github.com/faultline-dev/faultline/logs"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/verdict"
)

// Schema is the analysis JSON schema name.
const Schema = "faultline.analysis/1"

// Report is one analysed crash. Its JSON form is faultline.analysis/1.
type Report struct {
	Schema   string      `json:"schema"`
	Dump     string      `json:"dump"`
	Unwinder string      `json:"unwinder"`
	Fault    FaultJSON   `json:"fault"`
	Frames   []FrameJSON `json:"frames"`
	Stop     string      `json:"stop"`
	Warnings []string    `json:"warnings"`
	// Logs: the log text the firmware left in RAM (SEGGER RTT up
	// buffers, --log buffers).
	// Message is the crash's own message (omitted when none is known).
	Message *MessageJSON `json:"message,omitempty"`
	Logs    []logs.Log   `json:"logs,omitempty"`
	// StackVerdict says that a stack overflowed, and whose, on positive
	// evidence only; absent without any (or, with overflow false, names a
	// lockup).
	StackVerdict *verdict.Stack `json:"stack_verdict,omitempty"`
	// RTOS threads (design.md "Threads (RTOS)"): absent without a kernel.
	RTOS    *RTOSJSON    `json:"rtos,omitempty"`
	Threads []ThreadJSON `json:"threads,omitempty"`
	// Heap is the walk of the heaps found in the dump's RAM (newlib
	// malloc, FreeRTOS heap_4): absent when the firmware has neither.
	Heap []*heapwalk.Walk `json:"heap,omitempty"`
	// Allocations is the device-side allocation recorder's table
	// (fl_allocrec): absent when the firmware has none.
	Allocations *AllocationsJSON `json:"allocations,omitempty"`

	// Added fields (design.md, "Threads, gaps, pairing"): the ELF, whether
	// it is the firmware that crashed, the registers and fault status
	// registers as the dump gives them, and the faultline version.
	ELFInfo *ELFJSON `json:"elf,omitempty"`
	// Images: every ELF given, with its own pairing, when more than one
	// was (the first is ELFInfo's).
	Images         []ImageJSON `json:"images,omitempty"`
	Pairing        *Pairing    `json:"pairing,omitempty"`
	Faultline      string      `json:"faultline"`
	Registers      *HexRegs    `json:"registers,omitempty"`
	FaultRegisters *HexRegs    `json:"fault_registers,omitempty"`

	// For the text report and for callers; not part of the JSON.
	CPU       string              `json:"-"`
	ELF       string              `json:"-"`
	Regs      unwinders.Registers `json:"-"`
	FaultInfo fault.Report        `json:"-"`
	SCB       fault.SCB           `json:"-"`
	Walk      unwinders.Result    `json:"-"`
	Truth     *crashdump.Truth    `json:"-"`
	Profile   unwinders.Profile   `json:"-"`
	// Target is the device view the walk ran on (for CheckHonesty).
	Target *unwinders.Target `json:"-"`
}

// ImageJSON is one entry of "images" (an addition to faultline.analysis/1,
// present when more than one ELF was given): an image, in the order given,
// and whether the dump belongs to it.
type ImageJSON struct {
	Path    string   `json:"path"`
	BuildID string   `json:"build_id,omitempty"`
	CPU     string   `json:"cpu,omitempty"`
	Pairing *Pairing `json:"pairing"`
}

// FaultJSON is the "fault" object of faultline.analysis/1.
type FaultJSON struct {
	Exception string        `json:"exception"`
	Number    int           `json:"number"`
	Causes    []fault.Cause `json:"causes"`
	Address   string        `json:"address,omitempty"`
	Notes     []string      `json:"notes,omitempty"`
}

// FrameJSON is one entry of "frames".
type FrameJSON struct {
	Index      int    `json:"index"`
	PC         string `json:"pc,omitempty"`
	Function   string `json:"function,omitempty"`
	Symbol     string `json:"symbol,omitempty"`
	Offset     *int64 `json:"offset,omitempty"`
	File       string `json:"file,omitempty"`
	Line       int    `json:"line,omitempty"`
	Kind       string `json:"kind"`
	Method     string `json:"method"`
	SP         string `json:"sp,omitempty"`
	Confidence string `json:"confidence"`
	// Image is the base name of the ELF that holds the frame's code, when
	// the dump was analysed with more than one (images).
	Image string `json:"image,omitempty"`
	// Exception pseudo-frames: what the core stacked.
	ExcReturn string `json:"exc_return,omitempty"`
	Stack     string `json:"stack,omitempty"`
	Note      string `json:"note,omitempty"`

	// Gap is set when the address lies past the end of Symbol (in the gap
	// after it); Function is then empty.
	Gap bool `json:"gap,omitempty"`

	// Args and Locals: the frame's arguments and (with --locals) locals
	// from DWARF (design.md, "Arguments, locals, messages, logs").
	Args   []VarJSON `json:"args,omitempty"`
	Locals []VarJSON `json:"locals,omitempty"`

	// Phys is the index of the walk's frame this one comes from (an
	// inlined frame shares it with its physical frame); not part of the JSON.
	Phys int `json:"-"`
}

// Hex formats an address the way every faultline JSON does.
// (fmt-free: a report formats several per frame.)
func Hex(v uint32) string {
	var b [HexLen]byte
	return string(AppendHex(b[:0], v))
}

// HexLen is the length of a Hex string.
const HexLen = 10

// AppendHex appends Hex(v) to b.
func AppendHex(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	return append(b, '0', 'x',
		digits[v>>28], digits[v>>24&0xf], digits[v>>20&0xf], digits[v>>16&0xf],
		digits[v>>12&0xf], digits[v>>8&0xf], digits[v>>4&0xf], digits[v&0xf])
}
