package stackscan

import (
	"encoding/binary"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// TestVeneerForms decodes each veneer shape; the encodings were checked
// with arm-none-eabi-objdump -D -b binary -marm -Mforce-thumb (binutils
// 2.40): b.n, b.w 0x1008 at 0x2004, ldr.w pc, [pc, #4], movw/movt ip, bx ip.
func TestVeneerForms(t *testing.T) {
	const base = 0x2000
	mem := func(hws ...uint16) unwinders.Memory {
		b := make([]byte, 0x40)
		for i, h := range hws {
			binary.LittleEndian.PutUint16(b[2*i:], h)
		}
		im := &unwinders.Image{}
		_ = im.AddLayer(unwinders.Region{Name: "code", Addr: base, Data: b})
		return im
	}
	for _, tc := range []struct {
		name string
		m    unwinders.Memory
		want uint32
		ok   bool
	}{
		// b.n .+0x10: imm11 = (0x10-4)/2 = 6.
		{"B T2", mem(0xE006), base + 0x10, true},
		// b.w .-0x1000 (T4, negative).
		{"B.W T4", mem(0xF7FF, 0xB800), base + 4 - 0x1000, true},
		// ldr.w pc, [pc, #4]: literal at Align(base+4,4)+4 = base+8.
		{"LDR.W PC", mem(0xF8DF, 0xF004, 0, 0, 0x1235, 0x0001), 0x00011234, true},
		// movw ip, #0x5679; movt ip, #0x0001; bx ip.
		{"MOVW/MOVT/BX ip", mem(0xF245, 0x6C79, 0xF2C0, 0x0C01, 0x4760), 0x00015678, true},
		// A literal without the Thumb bit is not a Thumb veneer.
		{"LDR.W PC even", mem(0xF8DF, 0xF004, 0, 0, 0x1234, 0x0001), 0, false},
		{"BL is not a veneer", mem(0xF000, 0xF800), 0, false},
		{"push", mem(0xB580), 0, false},
	} {
		got, ok := veneerStep(tc.m, base)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: got 0x%08x %v, want 0x%08x %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := veneerStep(mem(), 0x9000); ok {
		t.Error("unmapped: ok")
	}
}
