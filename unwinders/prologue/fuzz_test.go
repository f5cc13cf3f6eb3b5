package prologue_test

import (
	"errors"
	"os"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/prologue"
)

// FuzzStep runs the strategy on arbitrary code and stack contents at an
// arbitrary PC, as frame 0 and as a return address. It must never panic
// or hang, every error must wrap ErrNotApplicable, and a caller's SP is
// never below the frame's.
func FuzzStep(f *testing.F) {
	code, err := os.ReadFile("testdata/frames.bin")
	if err != nil {
		f.Fatal(err)
	}
	for off := 0; off+16 <= len(code); off += 16 {
		f.Add(code[off:], uint16(0), uint16(8), uint32(0x20000100), false)
		f.Add(code[off:], uint16(0), uint16(12), uint32(0x20000100), true)
	}
	f.Add(code, uint16(0x10), uint16(0x1c), uint32(0x20000100), false)
	f.Add([]byte{0xfe, 0xe7}, uint16(0), uint16(0), uint32(0x20000000), false)
	f.Add(make([]byte, 64), uint16(0), uint16(2), uint32(0x20000ffc), true)
	f.Fuzz(func(t *testing.T, data []byte, start, pc uint16, sp uint32, ret bool) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		const base = 0x1000
		ram := make([]byte, 0x1000)
		copy(ram, data)
		var im unwinders.Image
		_ = im.AddLayer(unwinders.Region{Name: "code", Addr: base, Data: data},
			unwinders.Region{Name: "ram", Addr: 0x20000000, Data: ram})
		end := uint32(base + len(data))
		fstart := base + uint32(start)&^1
		p := &prog{code: unwinders.Range{Lo: base, Hi: end}, funcs: []unwinders.Function{
			{Name: "f", Start: fstart, End: end, Thumb: true},
			{Name: "sizeless", Start: end, End: end, Thumb: true},
		}}
		tg := &unwinders.Target{Mem: &im, Prog: p, Stack: unwinders.Range{Lo: 0x20000000, Hi: 0x20001000}}
		var r unwinders.Registers
		for i := unwinders.R0; i <= unwinders.R12; i++ {
			r.Set(i, 0x20000000+uint32(i)*0x40)
		}
		r.Set(unwinders.LR, 0x1001)
		r.Set(unwinders.XPSR, 0x01000000)
		fr := unwinders.Frame{PC: (fstart + uint32(pc)) &^ 1, SP: 0x20000000 + sp%0x1000&^3, Regs: r, ReturnAddress: ret}
		u := &prologue.Unwinder{MaxInsns: 256}
		c, err := u.Step(tg, []unwinders.Frame{fr})
		if err != nil {
			if !errors.Is(err, unwinders.ErrNotApplicable) {
				t.Fatalf("error does not wrap ErrNotApplicable: %v", err)
			}
			return
		}
		if c.SP < fr.SP {
			t.Fatalf("caller SP 0x%08x below frame SP 0x%08x", c.SP, fr.SP)
		}
		if c.Method != prologue.Name || c.Confidence == 0 {
			t.Fatalf("caller %+v", c)
		}
	})
}
