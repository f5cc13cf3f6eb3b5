package logs

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// rttImage builds RAM at 0x20000000 with an RTT control block at 0x100
// (2 up buffers, 1 down buffer) and the buffers' names in "flash".
func rttImage(t *testing.T, up0 []byte, wr0, rd0 uint32) (*unwinders.Image, []unwinders.Range) {
	ram := make([]byte, 0x1000)
	flash := make([]byte, 0x100)
	copy(flash[0x10:], "Terminal\x00")
	copy(flash[0x20:], "Trace\x00")
	cb := ram[0x100:]
	copy(cb, "SEGGER RTT")
	le := binary.LittleEndian
	le.PutUint32(cb[16:], 2)
	le.PutUint32(cb[20:], 1)
	put := func(i int, name, buf, size, wr, rd uint32) {
		d := cb[24+24*i:]
		for k, v := range []uint32{name, buf, size, wr, rd, 0} {
			le.PutUint32(d[4*k:], v)
		}
	}
	put(0, 0x08000010, 0x20000400, uint32(len(up0)), wr0, rd0)
	copy(ram[0x400:], up0)
	trace := []byte("boot ok\x01\n")
	put(1, 0x08000020, 0x20000800, 64, uint32(len(trace)), 0)
	copy(ram[0x800:], trace)
	put(2, 0, 0x20000900, 16, 0, 0) // the down buffer
	regions := []unwinders.Region{{Addr: 0x20000000, Data: ram}}
	im := &unwinders.Image{}
	if err := im.AddLayer(unwinders.Region{Addr: 0x08000000, Data: flash}); err != nil {
		t.Fatal(err)
	}
	if err := im.AddLayer(regions...); err != nil {
		t.Fatal(err)
	}
	// Overlapping ranges (a section inside a region): each block once.
	return im, []unwinders.Range{{Lo: 0x20000000, Hi: 0x20001000}, {Lo: 0x20000100, Hi: 0x20000200}}
}

func TestRTT(t *testing.T) {
	// A 16-byte ring that wrapped: "ghij" was written last at 0..3, the
	// next write at 4; "klmnop" is the older text at 5..15 ("abcdef" lost).
	buf := []byte("ghij\x00lmnopqrstuv")
	im, regs := rttImage(t, buf, 4, 14)
	logs, warns := FindRTT(im, regs)
	if len(warns) != 0 || len(logs) != 2 {
		t.Fatalf("logs %+v warnings %v", logs, warns)
	}
	l := logs[0]
	if l.Name != "Terminal" || l.Text != "lmnopqrstuvghij" || l.Unread != 6 || !strings.Contains(l.Note, "wrapped") || l.Address != "0x20000400" {
		t.Errorf("up 0: %+v", l)
	}
	l = logs[1]
	if l.Name != "Trace" || l.Text != "boot ok\\x01\n" || l.Unread != 12 || l.Note != "" {
		t.Errorf("up 1: %+v", l)
	}
}

func TestRTTBad(t *testing.T) {
	// WrOff past the buffer: reported, never read.
	im, regs := rttImage(t, make([]byte, 16), 16, 0)
	logs, warns := FindRTT(im, regs)
	if len(logs) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "WrOff 16") {
		t.Errorf("logs %+v warnings %v", logs, warns)
	}
	// An ID string without a plausible block (the string in a log).
	ram := make([]byte, 64)
	copy(ram[8:], "SEGGER RTT\x00")
	im2 := &unwinders.Image{}
	if err := im2.AddLayer(unwinders.Region{Addr: 0x20000000, Data: ram}); err != nil {
		t.Fatal(err)
	}
	logs, warns = FindRTT(im2, []unwinders.Range{{Lo: 0x1fff0000, Hi: 0x20000040}})
	if len(logs) != 0 {
		t.Errorf("logs %+v warnings %v", logs, warns)
	}
}

func TestSymbolLog(t *testing.T) {
	im := &unwinders.Image{}
	ram := []byte("x=3\nlast\x00gar")
	if err := im.AddLayer(unwinders.Region{Addr: 0x20000000, Data: ram}); err != nil {
		t.Fatal(err)
	}
	l, err := Symbol(im, "msg", 0x20000000, uint32(len(ram)), 0, false)
	if err != nil || l.Text != "x=3\nlast" {
		t.Errorf("string: %+v %v", l, err)
	}
	// Ring with the next write at 5: "ast\0gar" is older.
	l, err = Symbol(im, "ring", 0x20000000, uint32(len(ram)), 5, true)
	if err != nil || l.Text != "astgarx=3\nl" {
		t.Errorf("ring: %+v %v", l, err)
	}
	if _, err := Symbol(im, "far", 0x30000000, 8, 0, false); err == nil {
		t.Error("uncaptured memory read as a log")
	}
}
