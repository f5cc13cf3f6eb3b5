package unwinders

import (
	"encoding/binary"
	"testing"
)

// FuzzWalk drives the walk with random stack memory and registers: it must
// never panic and always end with a stop reason within the frame limit.
func FuzzWalk(f *testing.F) {
	f.Add(words(0xFFFFFFF9, 0x20000000, 0x10, 0, 0, 0, 0, 0, 0x65, 0x88, 0x01000000), uint8(0))
	f.Add(words(0xFFFFFFED, 0x20000100, 0x10, 0x20000104, 1, 2, 3, 4, 5, 0xFFFFFFFF, 0x80, 0x01000200), uint8(2))
	f.Add(make([]byte, 64), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, prof uint8) {
		if len(data) < 16 {
			return
		}
		lr := binary.LittleEndian.Uint32(data)
		sp := 0x20000000 + binary.LittleEndian.Uint32(data[4:])%0x800
		pc := binary.LittleEndian.Uint32(data[8:])
		psp := binary.LittleEndian.Uint32(data[12:])
		var im Image
		code := make([]byte, 0x100)
		copy(code, data[16:])
		_ = im.AddLayer(Region{Name: "flash", Addr: 0, Data: code})
		_ = im.AddLayer(Region{Name: "ram", Addr: 0x20000000, Data: append([]byte(nil), data[16:]...)},
			Region{Name: "fp", Addr: AddrFPCCR, Data: data[:8]})
		tg := &Target{Mem: &im, Profile: Profile(prof % 4), Prog: &fakeProg{code: Range{0, 0x100}, funcs: []Function{{Name: "a", Start: 0x10, End: 0x40}}},
			Stack: Range{0x20000000, 0x20000800}, ResetHandler: 0x41}
		var r Registers
		r.Set(PC, pc)
		r.Set(LR, lr)
		r.Set(SP, sp)
		r.Set(MSP, sp)
		r.Set(PSP, psp)
		res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{MaxFrames: 32})
		if res.Stop.Kind == StopNone || len(res.Frames) > 32 {
			t.Fatalf("stop %v with %d frames", res.Stop, len(res.Frames))
		}
	})
}
