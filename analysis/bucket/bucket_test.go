package bucket

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
)

// Signature version 2 skips wrapper frames and frames of low confidence:
// the same bug reached through abort or through __assert_func, or with a
// stack-scan guess appended, is one bucket.
func TestSignatureV2(t *testing.T) {
	frame := func(fn, conf string) report.FrameJSON {
		return report.FrameJSON{Function: fn, Kind: "normal", Confidence: conf}
	}
	exc := report.FrameJSON{Kind: "exception", Confidence: "high"}
	base := report.Report{Fault: report.FaultJSON{Exception: "HardFault"}}
	a := base
	a.Frames = []report.FrameJSON{frame("HardFault_Handler", "high"), exc, frame("abort", "high"),
		frame("__assert_func", "high"), frame("parse_packet", "high"), frame("rx_task", "medium"),
		frame("guess", "low"), frame("main", "high")}
	b := base
	b.Frames = []report.FrameJSON{frame("HardFault_Handler", "high"), exc, frame("__cxa_throw", "high"),
		frame("std::terminate()", "high"), frame("parse_packet", "high"), frame("rx_task", "medium"), frame("main", "medium")}
	sa, sb := SignatureOf(&a), SignatureOf(&b)
	if sa.Function != "parse_packet" || strings.Join(sa.Frames, ">") != "rx_task>main" {
		t.Errorf("signature %+v: want parse_packet, rx_task>main", sa)
	}
	if sa.Key() != sb.Key() {
		t.Errorf("keys differ: %q and %q", sa.Key(), sb.Key())
	}
	// A mismatched pairing leaves every frame low: nothing names the bucket.
	c := base
	c.Frames = []report.FrameJSON{exc, frame("parse_packet", "low")}
	if s := SignatureOf(&c); s.Function != "??" || len(s.Frames) != 0 {
		t.Errorf("low frames named a bucket: %+v", s)
	}
	for _, w := range []string{"abort", "__assert_func", "vApplicationStackOverflowHook", "__cxa_pure_virtual",
		"std::terminate()", "z_fatal_error", "core::panicking::panic_fmt", "HardFault_Handler", "my_hard_fault_handler_c"} {
		if !IsWrapperFrame(w) {
			t.Errorf("%s is not a wrapper", w)
		}
	}
	for _, w := range []string{"main", "abort_transfer", "parse_packet", "terminate_link"} {
		if IsWrapperFrame(w) {
			t.Errorf("%s is a wrapper", w)
		}
	}
	z := NewSummarizer("fw.elf", "auto", "path")
	z.Add(&a)
	out, _ := json.Marshal(z.Summary())
	if !strings.Contains(string(out), `"signature_version":2`) {
		t.Errorf("summary does not name the signature version: %s", out[:min(len(out), 200)])
	}
}
