package report

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Hex is fmt's 0x%08x, without fmt.
func TestHex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []uint32{0, 1, 0x9, 0xa, 0xf0, 0x20003618, 0xfffffff9, 0xffffffff}
	for range 1000 {
		vals = append(vals, rng.Uint32())
	}
	for _, v := range vals {
		if got, want := Hex(v), fmt.Sprintf("0x%08x", v); got != want || len(got) != HexLen {
			t.Fatalf("Hex(%d) = %q, want %q", v, got, want)
		}
	}
}

// FrameName and FileLine: what the text and HTML reports call a frame.
func TestFrameName(t *testing.T) {
	off := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		f          FrameJSON
		name, file string
	}{
		{FrameJSON{Function: "null_store", Symbol: "null_store", Offset: off(6), Kind: "normal", File: "./src/main.c", Line: 56}, "null_store+0x6", "./src/main.c:56"},
		{FrameJSON{Function: "helper", Symbol: "caller", Offset: off(0x10), Kind: "inlined", File: "/x/build/../../lib/h.h", Line: 3}, "helper (inlined)", "/lib/h.h:3"},
		{FrameJSON{Symbol: "table", Offset: off(0x40), Kind: "normal", Gap: true}, "?? (in the gap after table+0x40)", ""},
		{FrameJSON{Symbol: "_ZN1A1fEv", Offset: off(2), Kind: "normal", File: "a.cc"}, "_ZN1A1fEv+0x2", "a.cc"},
		{FrameJSON{Kind: "normal"}, "??", ""},
	} {
		if got := FrameName(c.f); got != c.name {
			t.Errorf("FrameName(%+v) = %q, want %q", c.f, got, c.name)
		}
		if got := FileLine(c.f); got != c.file {
			t.Errorf("FileLine(%+v) = %q, want %q", c.f, got, c.file)
		}
	}
}
