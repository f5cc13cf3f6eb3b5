package dwarfexpr

import (
	"errors"
	"strings"
	"testing"
)

func testCtx() *Context {
	mem := map[uint32]byte{0x20000000: 0x78, 0x20000001: 0x56, 0x20000002: 0x34, 0x20000003: 0x12}
	return &Context{
		Reg: func(n int) (uint32, bool) {
			if n == 4 {
				return 0x20000000, true
			}
			if n == 13 {
				return 0x20000100, true
			}
			return 0, false // r0-r3 unknown
		},
		CFA: func() (uint32, bool) { return 0x20000010, true },
		Read: func(a uint32, p []byte) error {
			for i := range p {
				b, ok := mem[a+uint32(i)]
				if !ok {
					return errors.New("not mapped")
				}
				p[i] = b
			}
			return nil
		},
		FrameBase: func() (uint32, error) { return 0x20000008, nil },
	}
}

func TestEval(t *testing.T) {
	ctx := testCtx()
	for _, tc := range []struct {
		name string
		expr []byte
		want Piece
		err  string
	}{
		{"reg4", []byte{0x54}, Piece{Kind: PieceRegister, Reg: 4}, ""},
		{"breg4+0 deref", []byte{0x74, 0x00, 0x06}, Piece{Kind: PieceMemory, Addr: 0x12345678}, ""},
		{"lit7 stack_value", []byte{0x37, 0x9f}, Piece{Kind: PieceValue, Value: 7}, ""},
		{"consts -3 plus_uconst 10 stack", []byte{0x11, 0x7d, 0x23, 10, 0x9f}, Piece{Kind: PieceValue, Value: 7}, ""},
		{"fbreg -8", []byte{0x91, 0x78}, Piece{Kind: PieceMemory, Addr: 0x20000000}, ""},
		{"cfa", []byte{0x9c}, Piece{Kind: PieceMemory, Addr: 0x20000010}, ""},
		{"addr", []byte{0x03, 0x44, 0x33, 0x22, 0x11}, Piece{Kind: PieceMemory, Addr: 0x11223344}, ""},
		{"breg0 unknown", []byte{0x70, 0x00}, Piece{}, "optimized out"},
		{"deref uncaptured", []byte{0x0c, 0, 0, 0, 0x30, 0x06}, Piece{}, "not mapped"},
		{"endless loop", []byte{0x2f, 0xfd, 0xff}, Piece{}, "steps"},
		{"pop empty", []byte{0x22}, Piece{}, "empty"},
		{"truncated", []byte{0x0c, 1}, Piece{}, "truncated"},
		{"entry value, no caller", []byte{0xa3, 1, 0x50, 0x9f}, Piece{}, "optimized out"},
		{"unknown op", []byte{0xe0}, Piece{}, "unsupported"},
	} {
		loc, err := Eval(tc.expr, ctx)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || len(loc.Pieces) != 1 {
			t.Errorf("%s: %v %+v", tc.name, err, loc)
			continue
		}
		p := loc.Pieces[0]
		if p.Kind != tc.want.Kind || p.Addr != tc.want.Addr || p.Reg != tc.want.Reg || p.Value != tc.want.Value {
			t.Errorf("%s: got %+v want %+v", tc.name, p, tc.want)
		}
	}
	// Pieces: r4 (2 bytes), then an implicit value of 2 bytes.
	loc, err := Eval([]byte{0x54, 0x93, 2, 0x9e, 2, 0xaa, 0xbb, 0x93, 2}, ctx)
	if err != nil || len(loc.Pieces) != 2 || loc.Pieces[0].Kind != PieceRegister || loc.Pieces[0].Size != 2 ||
		loc.Pieces[1].Kind != PieceImplicit || string(loc.Pieces[1].Bytes) != "\xaa\xbb" {
		t.Errorf("pieces: %v %+v", err, loc)
	}
	// An entry value the context proves.
	ctx.EntryValue = func(e []byte) (uint32, error) {
		if string(e) == "\x50" {
			return 41, nil
		}
		return 0, ErrOptimizedOut
	}
	loc, err = Eval([]byte{0xa3, 1, 0x50, 0x23, 1, 0x9f}, ctx)
	if err != nil || loc.Pieces[0].Value != 42 || !loc.Entry {
		t.Errorf("entry value: %v %+v", err, loc)
	}
}

func TestLocLists(t *testing.T) {
	// DWARF 5: base_address 0x100, offset_pair [0x0,0x10) reg0,
	// start_length 0x200+8 reg4, end.
	sec := []byte{6, 0, 1, 0, 0, 4, 0x00, 0x10, 1, 0x50, 8, 0, 2, 0, 0, 8, 1, 0x54, 0}
	for _, tc := range []struct {
		pc   uint32
		want string
	}{{0x100, "\x50"}, {0x10f, "\x50"}, {0x110, ""}, {0x204, "\x54"}, {0x208, ""}} {
		e, err := LocList5(sec, 0, 0, tc.pc, nil)
		if tc.want == "" {
			if !errors.Is(err, ErrNoLocation) {
				t.Errorf("v5 pc 0x%x: %q %v, want no location", tc.pc, e, err)
			}
		} else if string(e) != tc.want || err != nil {
			t.Errorf("v5 pc 0x%x: %q %v, want %q", tc.pc, e, err, tc.want)
		}
	}
	if _, err := LocList5(sec[:7], 0, 0, 0x300, nil); err == nil || errors.Is(err, ErrNoLocation) {
		t.Errorf("truncated list: %v", err)
	}
	// DWARF 4: [0x10,0x20) relative to base 0x100: reg1; end.
	sec4 := []byte{0x10, 0, 0, 0, 0x20, 0, 0, 0, 1, 0, 0x51, 0, 0, 0, 0, 0, 0, 0, 0}
	if e, err := LocList4(sec4, 0, 0x100, 0x115); err != nil || string(e) != "\x51" {
		t.Errorf("v4: %q %v", e, err)
	}
	if _, err := LocList4(sec4, 0, 0x100, 0x15); !errors.Is(err, ErrNoLocation) {
		t.Errorf("v4 outside: %v", err)
	}
}

// Random expressions and lists never panic, loop or allocate without
// bound.
func TestEvalHostile(t *testing.T) {
	ctx := testCtx()
	ctx.EntryValue = func(e []byte) (uint32, error) { return EvalValue(e, ctx) }
	seed := uint32(1)
	rnd := func() byte { seed = seed*1664525 + 1013904223; return byte(seed >> 24) }
	for i := 0; i < 20000; i++ {
		n := int(rnd() % 24)
		e := make([]byte, n)
		for k := range e {
			e[k] = rnd()
		}
		Eval(e, ctx)
		EvalValue(e, ctx)
		LocList5(e, 0, 0, 0x100, func(uint64) (uint32, bool) { return 0x100, true })
		LocList4(e, 0, 0, 0x100)
	}
}

// The units' DWARF versions are read from their headers: the sample
// firmware is DWARF 5 (gcc 12, clang 14), elfsym's dwarf4 test ELF is 4.
func TestUnitVersions(t *testing.T) {
	for _, tc := range []struct {
		elf  string
		want int
	}{
		{"../../firmware-samples/build/gcc-m3-O2.elf", 5},
		{"../../firmware-samples/build/clang-m3-O2.elf", 5},
		{"../testdata/clang-inline-O2-dwarf4.elf", 4},
	} {
		p := openProgram(t, tc.elf)
		p.index()
		if len(p.units) == 0 {
			t.Fatalf("%s: no units", tc.elf)
		}
		for off, u := range p.units {
			if u.version != tc.want {
				t.Errorf("%s: unit at 0x%x: version %d, want %d", tc.elf, off, u.version, tc.want)
			}
		}
	}
}
