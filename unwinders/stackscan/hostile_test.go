package stackscan_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/stackscan"
)

// xorshift is a small deterministic generator for the hostile stacks.
type xorshift uint32

func (x *xorshift) next() uint32 {
	v := uint32(*x)
	v ^= v << 13
	v ^= v >> 17
	v ^= v << 5
	*x = xorshift(v)
	return v
}

func walkSynth(s *synth, regs unwinders.Registers) unwinders.Result {
	chain := []unwinders.Unwinder{stackscan.New(stackscan.Options{}), unwinders.LinkRegister{}}
	return unwinders.Walk(s.target(), regs, chain, unwinders.Options{})
}

// checkSane checks what every walk must give: a stop reason, at most the
// frame limit, and stack pointers that never go down.
func checkSane(t *testing.T, res unwinders.Result) {
	t.Helper()
	if res.Stop.Kind == unwinders.StopNone || len(res.Frames) == 0 || len(res.Frames) > 64 {
		t.Fatalf("stop %v with %d frames", res.Stop, len(res.Frames))
	}
	for i := 1; i < len(res.Frames); i++ {
		if res.Frames[i].SP < res.Frames[i-1].SP {
			t.Fatalf("frame %d: SP 0x%08x below the callee's 0x%08x", i, res.Frames[i].SP, res.Frames[i-1].SP)
		}
	}
}

func TestHostileAllOnes(t *testing.T) {
	s := newSynth()
	for i := range s.ram {
		s.ram[i] = 0xFF
	}
	res := walkSynth(s, frame0(fnG+6, ramBase, 0).Regs)
	checkSane(t, res)
	if len(res.Frames) != 1 || res.Stop.Kind != unwinders.StopNoUnwinder || !strings.Contains(res.Stop.Detail, "no return address in 1024 words") {
		t.Fatalf("%d frames, stop %v", len(res.Frames), res.Stop)
	}
}

func TestHostileRandom(t *testing.T) {
	rets := []uint32{retMainBLf | 1, retMainBLXr3 | 1, retMainBXr3 | 1, retFBLg | 1, retHBLg | 1, retKBLveneer | 1, retKBLfar | 1, 0xFFFFFFF9, 0xFFFFFFFF, 0xFFFFFFE9}
	for seed := uint32(1); seed <= 200; seed++ {
		s := newSynth()
		x := xorshift(seed * 2654435761)
		for i := 0; i < len(s.ram); i += 4 {
			w := x.next()
			if w%4 == 0 { // a quarter of the words are real return addresses or EXC_RETURN values
				w = rets[x.next()%uint32(len(rets))]
			}
			binary.LittleEndian.PutUint32(s.ram[i:], w)
		}
		sp := ramBase + x.next()%ramSize&^3
		res := walkSynth(s, frame0(fnG+6, sp, retFBLg|1).Regs)
		checkSane(t, res)
	}
}

// Cyclic and repeated return addresses end the walk quickly: an unverified
// candidate that repeats an earlier frame's return address is a cycle.
func TestHostileCycle(t *testing.T) {
	s := newSynth()
	for a := uint32(ramBase); a < stackTop; a += 8 {
		s.stack(a, retMainBLXr3|1, retFBLg|1)
	}
	res := walkSynth(s, frame0(fnG+6, sp0, 0).Regs)
	checkSane(t, res)
	if len(res.Frames) > 4 || res.Stop.Kind != unwinders.StopNoUnwinder {
		t.Fatalf("%d frames, stop %v", len(res.Frames), res.Stop)
	}
	s = newSynth()
	for a := uint32(ramBase); a < stackTop; a += 4 {
		s.stack(a, retMainBLf|1)
	}
	res = walkSynth(s, frame0(fnF+6, sp0, 0).Regs)
	checkSane(t, res)
	if len(res.Frames) != 2 || res.Stop.Kind != unwinders.StopNoUnwinder {
		t.Fatalf("%d frames, stop %v", len(res.Frames), res.Stop)
	}
}

func TestHostileSPAtTop(t *testing.T) {
	s := newSynth()
	_, err := step(t, s, stackscan.Options{}, frame0(fnG+6, stackTop, 0))
	if !errors.Is(err, stackscan.ErrEmptyStack) || !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Fatalf("got %v", err)
	}
	res := walkSynth(s, frame0(fnG+6, stackTop, 0).Regs)
	checkSane(t, res)
	if res.Stop.Kind != unwinders.StopNoUnwinder || !strings.Contains(res.Stop.Detail, "nothing above SP") {
		t.Fatalf("stop %v", res.Stop)
	}
}

func TestHostileSPUnmapped(t *testing.T) {
	s := newSynth()
	for _, sp := range []uint32{0x30000000, stackTop + 0x10} {
		_, err := step(t, s, stackscan.Options{}, frame0(fnG+6, sp, 0))
		if !errors.Is(err, unwinders.ErrUnmapped) || !errors.Is(err, unwinders.ErrNotApplicable) {
			t.Fatalf("SP 0x%x: got %v", sp, err)
		}
		res := walkSynth(s, frame0(fnG+6, sp, 0).Regs)
		checkSane(t, res)
		if res.Stop.Kind != unwinders.StopMemory || len(res.Frames) != 1 {
			t.Fatalf("SP 0x%x: stop %v", sp, res.Stop)
		}
	}
}

// SP at the end of the address space, and an unaligned SP.
func TestHostileEdges(t *testing.T) {
	s := newSynth()
	tg := s.target()
	high := make([]byte, 0x100)
	for i := range high {
		high[i] = 0xFF
	}
	binary.LittleEndian.PutUint32(high[0xF8:], retFBLg|1)
	im := tg.Mem.(*unwinders.Image)
	if err := im.AddLayer(unwinders.Region{Name: "top", Addr: 0xFFFFFF00, Data: high}); err != nil {
		t.Fatal(err)
	}
	tg.Stack = unwinders.Range{}
	f, err := stackscan.New(stackscan.Options{}).Step(tg, []unwinders.Frame{frame0(fnG+6, 0xFFFFFF00, 0)})
	if err != nil || f.PC != retFBLg|1 || f.SP != 0xFFFFFFFC {
		t.Fatalf("got %+v %v", f, err)
	}
	if _, err := stackscan.New(stackscan.Options{}).Step(tg, []unwinders.Frame{frame0(fnG+6, 0xFFFFFFFE, 0)}); err == nil {
		t.Fatal("SP 0xFFFFFFFE: want an error")
	}
	s.stack(sp0+4, retFBLg|1)
	f = mustStep(t, s, stackscan.Options{}, frame0(fnG+6, sp0+2, 0))
	checkFrame(t, f, retFBLg|1, sp0+8, unwinders.ConfidenceMedium)
}
