package unwinders

import (
	"strings"
	"testing"
)

// shift proposes, for the frame at depth len(frames)-1, a caller with PC
// ret and SP moved by delta[depth] (the last entry repeats): a scripted
// strategy for the walk's SP rule.
type shift struct {
	name  string
	ret   uint32
	delta []int32
}

func (s shift) Name() string { return s.name }
func (s shift) Step(t *Target, fr []Frame) (Frame, error) {
	cur := fr[len(fr)-1]
	d := s.delta[min(len(fr)-1, len(s.delta)-1)]
	return Frame{PC: s.ret, SP: uint32(int64(cur.SP) + int64(d))}, nil
}

// TestWalkStopsWhenSPGoesDown: a caller whose SP is below its callee's is
// rejected with exactly StopSPDecreasing ("stack pointer went down"),
// whose detail names both SPs, and the frames found before are kept. The
// proposed return address 0x65 follows the BL at 0x60 in f, inside the
// stack range, so no other rule could be the reason.
func TestWalkStopsWhenSPGoesDown(t *testing.T) {
	tg := exceptionTarget(t, 0x20000200, nil)
	var r Registers
	r.Set(PC, 0x84) // in g
	r.Set(SP, 0x20000200)

	// First step goes down.
	res := Walk(tg, r, []Unwinder{shift{"down", 0x65, []int32{-8}}}, Options{})
	if res.Stop.Kind != StopSPDecreasing || len(res.Frames) != 1 {
		t.Fatalf("stop %v after %d frames; want StopSPDecreasing after frame 0", res.Stop, len(res.Frames))
	}
	if got, want := res.Stop.String(), "stack pointer went down: 0x20000200 -> 0x200001f8"; got != want {
		t.Errorf("stop %q, want %q", got, want)
	}

	// One good step up, then down: frame 1 is kept.
	res = Walk(tg, r, []Unwinder{shift{"updown", 0x65, []int32{16, -4}}}, Options{})
	if res.Stop.Kind != StopSPDecreasing || len(res.Frames) != 2 || res.Frames[1].PC != 0x64 || res.Frames[1].SP != 0x20000210 {
		t.Fatalf("stop %v frames %+v; want frame 1 at 0x64 SP 0x20000210, then StopSPDecreasing", res.Stop, res.Frames)
	}
	if res.Stop.Detail != "0x20000210 -> 0x2000020c" {
		t.Errorf("detail %q", res.Stop.Detail)
	}

	// Equal SP is not "down" (a frameless leaf called from a frameless
	// caller keeps SP): frame 1 is accepted (the walk then stops because
	// the same return address repeats with a call to g, not f).
	res = Walk(tg, r, []Unwinder{shift{"flat", 0x65, []int32{0, 4}}}, Options{})
	if res.Stop.Kind == StopSPDecreasing || len(res.Frames) < 2 || res.Frames[1].SP != 0x20000200 {
		t.Errorf("SP unchanged: stop %v after %d frames", res.Stop, len(res.Frames))
	}

	// The rule rejects one strategy's answer, not the walk: a later
	// strategy with a valid caller is used.
	res = Walk(tg, r, []Unwinder{shift{"down", 0x65, []int32{-8}}, shift{"up", 0x65, []int32{8}}}, Options{MaxFrames: 2})
	if len(res.Frames) != 2 || res.Frames[1].Method != "up" || res.Stop.Kind != StopDepth {
		t.Errorf("frames %d (frame 1 by %q), stop %v; want the second strategy's frames up to the limit", len(res.Frames), res.Frames[1].Method, res.Stop)
	}

	// Every strategy goes down: still that kind, with each one's reason.
	res = Walk(tg, r, []Unwinder{shift{"a", 0x65, []int32{-8}}, shift{"b", 0x65, []int32{-16}}}, Options{})
	if res.Stop.Kind != StopSPDecreasing || !strings.Contains(res.Stop.Detail, "a: ") || !strings.Contains(res.Stop.Detail, "b: ") {
		t.Errorf("stop %v; want StopSPDecreasing naming both strategies", res.Stop)
	}

	// An exception return whose frame would lie below the handler's SP on
	// the main stack is the same stop; on the process stack it is not (PSP
	// and MSP are not ordered).
	res = Walk(tg, r, []Unwinder{shift{"excret", 0xFFFFFFF9, []int32{-0x20}}}, Options{})
	if res.Stop.Kind != StopSPDecreasing || len(res.Frames) != 1 {
		t.Errorf("EXC_RETURN on MSP below SP: stop %v after %d frames", res.Stop, len(res.Frames))
	}
	res = Walk(tg, r, []Unwinder{shift{"excret", 0xFFFFFFFD, []int32{-0x20}}}, Options{})
	if res.Stop.Kind == StopSPDecreasing {
		t.Errorf("EXC_RETURN on PSP: stop %v; the PSP frame is not ordered with MSP", res.Stop)
	}
}
