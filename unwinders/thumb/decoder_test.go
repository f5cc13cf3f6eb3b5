package thumb

import (
	"errors"
	"io"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		code []byte
		addr uint32
		want error
	}{
		{nil, 0, ErrTruncated},
		{[]byte{0xf0}, 0, ErrTruncated},
		{[]byte{0x00, 0xf0}, 0, ErrTruncated},       // BL prefix without its second halfword
		{[]byte{0x00, 0xf0, 0x00}, 0, ErrTruncated}, // ... with one byte of it
		{[]byte{0xf0, 0xb5}, 1, ErrMisaligned},      // a Thumb-bit address
		{[]byte{0x00, 0xe8, 0x00, 0x00}, 0x8000003, ErrMisaligned},
	} {
		if _, err := Decode(tc.code, tc.addr); !errors.Is(err, tc.want) {
			t.Errorf("Decode(%x, %#x) error %v, want %v", tc.code, tc.addr, err, tc.want)
		}
	}
	// A 16-bit instruction needs only its own two bytes.
	if in, err := Decode([]byte{0xf0, 0xb5}, 0); err != nil || in.Op != OpPUSH || in.Len != 2 {
		t.Errorf("Decode(push) = %v, %v", in, err)
	}
}

func TestDecodeAtUnmapped(t *testing.T) {
	var im unwinders.Image
	// A BL whose second halfword lies past the end of the region.
	if err := im.AddLayer(unwinders.Region{Name: "flash", Addr: 0x1000, Data: []byte{0x70, 0x47, 0x00, 0xf0}}); err != nil {
		t.Fatal(err)
	}
	if in, err := DecodeAt(&im, 0x1000); err != nil || !in.IsReturn() {
		t.Errorf("DecodeAt(bx lr) = %v, %v", in, err)
	}
	if _, err := DecodeAt(&im, 0x1002); !errors.Is(err, unwinders.ErrUnmapped) {
		t.Errorf("DecodeAt(truncated bl) error %v, want ErrUnmapped", err)
	}
	if _, err := DecodeAt(&im, 0x2000); !errors.Is(err, unwinders.ErrUnmapped) {
		t.Errorf("DecodeAt(unmapped) error %v, want ErrUnmapped", err)
	}
	if _, err := DecodeAt(&im, 0x1001); !errors.Is(err, ErrMisaligned) {
		t.Errorf("DecodeAt(odd) error %v, want ErrMisaligned", err)
	}
}

// TestDecoder runs the Decoder over a prologue, an IT block with a
// conditional call and return, and the end of the range.
func TestDecoder(t *testing.T) {
	code := []byte{
		0x80, 0xb5, // push {r7, lr}
		0x6f, 0x46, // mov r7, sp
		0x2d, 0xed, 0x02, 0x8b, // vpush {d8}
		0x4f, 0xf6, 0xa0, 0x73, // movw r3, #0xffa0
		0x9d, 0x44, // add sp, r3
		0x1c, 0xbf, // itt ne
		0xff, 0xf7, 0xf2, 0xff, // blne <start>
		0x80, 0xbd, // popne {r7, pc}
		0x00, 0x20, // movs r0, #0
	}
	const base = 0x08000100
	var im unwinders.Image
	if err := im.AddLayer(unwinders.Region{Name: "text", Addr: base, Data: code}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		op    Op
		cond  Cond
		sp    int32
		known bool
	}
	wants := []want{
		{OpPUSH, AL, -8, true},
		{OpMOV, AL, 0, true},
		{OpVPUSH, AL, -8, true},
		{OpMOVW, AL, 0, true},
		{OpADD, AL, 0, false},
		{OpIT, NE, 0, true},
		{OpBL, NE, 0, true},
		{OpPOP, NE, 8, true},
		{OpMOV, AL, 0, true},
	}
	d := NewDecoder(&im, base, base+uint32(len(code)))
	var in Inst
	for k, w := range wants {
		if err := d.Next(&in); err != nil {
			t.Fatalf("inst %d: %v", k, err)
		}
		sp, known := in.SPDelta()
		if in.Op != w.op || in.Cond != w.cond || sp != w.sp || known != w.known {
			t.Errorf("inst %d %q: op %v cond %v sp %d/%v, want %v %v %d/%v", k, in, in.Op, in.Cond, sp, known, w.op, w.cond, w.sp, w.known)
		}
	}
	if in.String() != "movs\tr0, #0" || in.Flags&FlagS == 0 {
		t.Errorf("after the IT block: %q, want flag-setting movs", in)
	}
	if err := d.Next(&in); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
	if err := d.Next(&in); err != io.EOF {
		t.Errorf("after the end: %v, want io.EOF again", err)
	}

	// A range running into unmapped memory reports the read error.
	d = NewDecoder(&im, base+uint32(len(code))-2, base+uint32(len(code))+8)
	if err := d.Next(&in); err != nil {
		t.Fatal(err)
	}
	if err := d.Next(&in); !errors.Is(err, unwinders.ErrUnmapped) {
		t.Errorf("past the region: %v, want ErrUnmapped", err)
	}
}

// TestITState follows the ITSTATE register through a four-instruction block
// (ARMv7-M ARM A7.3.2) and checks that IT's own condition is untouched.
func TestITState(t *testing.T) {
	it, _ := Decode([]byte{0x0b, 0xbf}, 0) // itete eq
	var s ITState
	s.Apply(&it)
	if !s.InBlock() || it.Cond != EQ || it.ITCount() != 4 {
		t.Fatalf("after IT: state %#x, cond %v, count %d", uint8(s), it.Cond, it.ITCount())
	}
	for k, want := range []Cond{EQ, NE, EQ, NE, AL, AL} {
		if s.Cond() != want {
			t.Errorf("instruction %d: cond %v, want %v", k, s.Cond(), want)
		}
		in, _ := Decode([]byte{0x08, 0x30}, 0) // adds r0, #8
		s.Apply(&in)
		if in.Cond != want || (in.Flags&FlagS != 0) != (want == AL) || (in.Flags&FlagInIT != 0) != (want != AL) {
			t.Errorf("instruction %d: %q cond %v flags %#x", k, in, in.Cond, in.Flags)
		}
		if want != AL && !in.IsConditional() {
			t.Errorf("instruction %d: not conditional", k)
		}
	}
}

// TestBXNotCall pins the distinction CmBacktrace gets wrong: BX Rm (0x4700
// family) is not a call, BLX Rm (0x4780) is; the instruction before a
// return address is a call only if it is BL or BLX.
func TestBXNotCall(t *testing.T) {
	for rm := 0; rm < 15; rm++ {
		bx, _ := Decode([]byte{byte(rm << 3), 0x47}, 0)
		blx, _ := Decode([]byte{byte(0x80 | rm<<3), 0x47}, 0)
		if bx.IsCall() || bx.Op != OpBX || !bx.IsBranch() {
			t.Errorf("bx r%d: %v call=%v", rm, bx, bx.IsCall())
		}
		if !blx.IsCall() || blx.Op != OpBLXReg || blx.IsBranch() {
			t.Errorf("blx r%d: %v call=%v", rm, blx, blx.IsCall())
		}
	}
}

// TestBLRange decodes BL with every combination of S, J1 and J2 and checks
// the target against the ARM ARM formula computed independently here.
func TestBLRange(t *testing.T) {
	const addr = 0x08000000
	for s := uint32(0); s < 2; s++ {
		for j1 := uint32(0); j1 < 2; j1++ {
			for j2 := uint32(0); j2 < 2; j2++ {
				h1 := 0xf000 | s<<10 | 0x155           // imm10 = 0x155
				h2 := 0xd000 | j1<<13 | j2<<11 | 0x2aa // imm11 = 0x2aa
				in, err := Decode([]byte{byte(h1), byte(h1 >> 8), byte(h2), byte(h2 >> 8)}, addr)
				if err != nil || in.Op != OpBL {
					t.Fatalf("S=%d J1=%d J2=%d: %v %v", s, j1, j2, in, err)
				}
				i1, i2 := 1^(j1^s), 1^(j2^s)
				off := int64(0x155<<12 | 0x2aa<<1)
				off += int64(i1)<<23 + int64(i2)<<22
				if s == 1 {
					off -= 1 << 24
				}
				if want := uint32(int64(addr) + 4 + off); in.Target != want {
					t.Errorf("S=%d J1=%d J2=%d: target %#x, want %#x", s, j1, j2, in.Target, want)
				}
			}
		}
	}
}
