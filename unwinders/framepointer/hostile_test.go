package framepointer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/framepointer"
)

// TestHostileFramePointer: r7 = 0, outside RAM, misaligned, below SP,
// or a record whose slots leave the stack: each ends the step with a clear
// error, never a frame.
func TestHostileFramePointer(t *testing.T) {
	e := newEnv(t)
	pc := e.sym("clang_simple_ret")
	for _, c := range []struct {
		name string
		r7   uint32
		sp   uint32
		err  error
		msg  string
	}{
		{"zero", 0, entrySP - 8, framepointer.ErrChainEnd, "r7 is 0"},
		{"outside RAM", 0x30000000, entrySP - 8, framepointer.ErrBadChain, "outside the stack"},
		{"misaligned", entrySP - 7, entrySP - 8, framepointer.ErrBadChain, "not 4-aligned"},
		{"below SP", entrySP - 16, entrySP - 8, framepointer.ErrBadChain, "below SP"},
		{"top of the stack", stackHi - 4, stackHi - 8, framepointer.ErrBadChain, "outside the stack"},
		{"end of address space", 0xFFFFFFFC, entrySP - 8, framepointer.ErrBadChain, ""},
	} {
		f := frame(pc, c.sp, true, map[unwinders.Reg]uint32{unwinders.R7: c.r7})
		_, err := framepointer.New().Step(e.t, []unwinders.Frame{f})
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %v containing %q", c.name, err, c.err, c.msg)
		}
	}
}

// TestCyclicChain: records whose saved r7 points back at themselves (or
// below) stop the walk with an error naming the cycle, after two frames.
func TestCyclicChain(t *testing.T) {
	e := newEnv(t)
	rec := uint32(entrySP - 8)
	e.put(rec, rec) // saved r7 = the record itself
	e.put(rec+4, retAddr)
	f := frame(e.sym("clang_simple_ret"), rec, false, map[unwinders.Reg]uint32{unwinders.R7: rec})
	start := time.Now()
	res := unwinders.Walk(e.t, f.Regs, []unwinders.Unwinder{framepointer.New()}, unwinders.Options{})
	if codeFrames(res.Frames) != 2 || !strings.Contains(res.Stop.Detail, "cyclic") {
		t.Errorf("walk: %d frames, stop %q; want 2 frames and a cycle", len(res.Frames), res.Stop)
	}
	// A chain that goes down: the second record lies below SP.
	e.put(rec, rec-64)
	res = unwinders.Walk(e.t, f.Regs, []unwinders.Unwinder{framepointer.New()}, unwinders.Options{})
	if codeFrames(res.Frames) != 2 || !strings.Contains(res.Stop.Detail, "below SP") {
		t.Errorf("walk: %d frames, stop %q; want 2 frames and a record below SP", len(res.Frames), res.Stop)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hostile walks took %v", d)
	}
}

// codeFrames counts the frames that are not gaps (retAddr's call does not
// target clang_simple_ret, so the walk puts a gap before it).
func codeFrames(fs []unwinders.Frame) int {
	n := 0
	for _, f := range fs {
		if f.Kind != unwinders.KindGap {
			n++
		}
	}
	return n
}

// TestGarbageStack: a stack full of plausible-looking garbage ends the
// walk within the frame limit, never with a high-confidence frame built on
// an unproven layout.
func TestGarbageStack(t *testing.T) {
	e := newEnv(t)
	x := uint32(12345)
	for a := uint32(stackLo); a < stackHi; a += 4 {
		x = x*1664525 + 1013904223
		v := x
		switch x >> 30 {
		case 0:
			v = stackLo + x%(stackHi-stackLo)&^3 // a stack address
		case 1:
			v = retAddr
		}
		e.put(a, v)
	}
	for _, r7 := range []uint32{entrySP - 8, entrySP - 256, stackLo + 4} {
		f := frame(e.sym("clang_simple_ret"), r7, false, map[unwinders.Reg]uint32{unwinders.R7: r7})
		res := unwinders.Walk(e.t, f.Regs, []unwinders.Unwinder{framepointer.New()}, unwinders.Options{MaxFrames: 64})
		if res.Stop.Kind == unwinders.StopNone {
			t.Errorf("r7 0x%08x: walk without a stop reason", r7)
		}
		prev := 0
		for i := 1; i < len(res.Frames); i++ {
			if res.Frames[i].Kind == unwinders.KindGap {
				continue // frames are missing there: it has no SP of its own
			}
			if res.Frames[i].SP <= res.Frames[prev].SP {
				t.Errorf("r7 0x%08x: frame %d SP 0x%08x not above 0x%08x", r7, i, res.Frames[i].SP, res.Frames[prev].SP)
			}
			prev = i
		}
	}
}
