package unwinders

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// Image.Read, ReadU32 and ReadU16 against a byte-by-byte model of the
// layering (the topmost region covering a byte wins), on random images of
// up to three layers of small regions, reads of every size near and across
// region edges.
func TestImageReadMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for trial := range 300 {
		var im Image
		// model[a] is the byte at a, -1 unmapped; addresses 0..255 near base.
		base := uint32(0x1000)
		if trial%5 == 0 {
			base = 0xffffff00 // regions ending at the top of the address space
		}
		var model [256]int
		for i := range model {
			model[i] = -1
		}
		for range 1 + rng.IntN(3) {
			var layer []Region
			used := [256]bool{}
			for range rng.IntN(4) {
				off, n := rng.IntN(250), 1+rng.IntN(40)
				if off+n > 256 {
					n = 256 - off
				}
				clash := false
				for i := off; i < off+n; i++ {
					clash = clash || used[i]
				}
				if clash {
					continue
				}
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(rng.IntN(256))
					used[off+i] = true
				}
				layer = append(layer, Region{Addr: base + uint32(off), Data: data})
			}
			if err := im.AddLayer(layer...); err != nil {
				t.Fatal(err)
			}
			for _, r := range layer {
				for i, b := range r.Data {
					model[int(r.Addr-base)+i] = int(b)
				}
			}
		}
		for range 200 {
			off, n := rng.IntN(256), rng.IntN(9)
			if off+n > 256 {
				n = 256 - off
			}
			want := make([]byte, n)
			mapped := true
			for i := range n {
				if model[off+i] < 0 {
					mapped = false
				}
				want[i] = byte(model[off+i])
			}
			got := make([]byte, n)
			err := im.Read(base+uint32(off), got)
			if mapped != (err == nil) || (mapped && !bytes.Equal(got, want)) {
				t.Fatalf("trial %d: read %d at +%d: got % x, %v; want % x (mapped %v)", trial, n, off, got, err, want, mapped)
			}
			if n == 4 {
				v, err := ReadU32(&im, base+uint32(off))
				if mapped != (err == nil) || (mapped && v != binary.LittleEndian.Uint32(want)) {
					t.Fatalf("trial %d: ReadU32 at +%d: 0x%x, %v", trial, off, v, err)
				}
			}
			if n == 2 {
				v, err := ReadU16(&im, base+uint32(off))
				if mapped != (err == nil) || (mapped && v != binary.LittleEndian.Uint16(want)) {
					t.Fatalf("trial %d: ReadU16 at +%d: 0x%x, %v", trial, off, v, err)
				}
			}
		}
	}
}

// ParseReg accepts s0..s31 spelled canonically only.
func TestParseRegSingles(t *testing.T) {
	for k := range 32 {
		for _, n := range []string{S(k).String(), " " + S(k).String() + " ", "S" + S(k).String()[1:]} {
			if r, ok := ParseReg(n); !ok || r != S(k) {
				t.Errorf("ParseReg(%q) = %v, %v; want s%d", n, r, ok, k)
			}
		}
	}
	for _, n := range []string{"s", "s32", "s99", "s00", "s01", "s-1", "s+1", "s1x", "s 1", "s１", "s100", "sp0"} {
		if r, ok := ParseReg(n); ok {
			t.Errorf("ParseReg(%q) = %v; want no register", n, r)
		}
	}
}

// TestUnmappedErrorNamesMissingByte: a read that starts in the dump and
// runs past its end names the first address that is missing, not the
// start of the read (which is in the dump).
func TestUnmappedErrorNamesMissingByte(t *testing.T) {
	im := &Image{}
	if err := im.AddLayer(Region{Addr: 0x1000, Data: make([]byte, 0x10)}); err != nil {
		t.Fatal(err)
	}
	err := im.Read(0x1008, make([]byte, 0x68))
	var ue *UnmappedError
	if !errors.As(err, &ue) || ue.Addr != 0x1008 || ue.Missing != 0x1010 || !strings.Contains(err.Error(), "memory at 0x00001010: address not mapped") {
		t.Errorf("got %v (%+v)", err, ue)
	}
	err = im.Read(0x2000, make([]byte, 4))
	if !errors.As(err, &ue) || ue.Missing != 0x2000 || strings.Contains(err.Error(), "memory at") {
		t.Errorf("wholly missing: %v", err)
	}
}
