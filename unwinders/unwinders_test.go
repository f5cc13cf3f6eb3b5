package unwinders

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// fakeProg is a Program with a list of Thumb functions and one code range.
type fakeProg struct {
	funcs []Function
	code  Range
}

func (p *fakeProg) FuncAt(a uint32) (Function, bool) {
	for _, f := range p.funcs {
		if a >= f.Start && a < f.End {
			return f, true
		}
	}
	return Function{}, false
}
func (p *fakeProg) IsCode(a uint32) bool                  { return p.code.Contains(a) }
func (p *fakeProg) Section(string) (uint32, []byte, bool) { return 0, nil, false }
func (p *fakeProg) Symbol(string) (uint32, bool)          { return 0, false }

func words(ws ...uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// encodeBL returns the two halfwords of BL from addr to target (T1).
func encodeBL(addr, target uint32) (uint16, uint16) {
	off := int32(target - (addr + 4))
	u := uint32(off)
	s := (u >> 24) & 1
	i1 := (u >> 23) & 1
	i2 := (u >> 22) & 1
	j1 := (^i1 ^ s) & 1
	j2 := (^i2 ^ s) & 1
	h1 := 0xF000 | uint16(s<<10) | uint16((u>>12)&0x3FF)
	h2 := 0xD000 | uint16(j1<<13) | uint16(j2<<11) | uint16((u>>1)&0x7FF)
	return h1, h2
}

func TestImageLayers(t *testing.T) {
	var im Image
	if err := im.AddLayer(Region{Name: "flash", Addr: 0x100, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
		t.Fatal(err)
	}
	if err := im.AddLayer(Region{Name: "ram", Addr: 0x104, Data: []byte{0xA, 0xB}}); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	if err := im.Read(0x100, p); err != nil {
		t.Fatal(err)
	}
	if want := []byte{1, 2, 3, 4, 0xA, 0xB, 7, 8}; string(p) != string(want) {
		t.Fatalf("got % x, want % x", p, want)
	}
	err := im.Read(0xFE, p[:4])
	var ue *UnmappedError
	if !errors.Is(err, ErrUnmapped) || !errors.As(err, &ue) || ue.Addr != 0xFE {
		t.Fatalf("read across a hole: got %v", err)
	}
	if err := im.Read(0xFFFFFFFE, p[:4]); !errors.Is(err, ErrUnmapped) {
		t.Fatalf("read past 4 GiB: %v", err)
	}
	if err := im.AddLayer(Region{Name: "a", Addr: 0, Data: make([]byte, 8)}, Region{Name: "b", Addr: 4, Data: make([]byte, 8)}); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("overlap in one layer: %v", err)
	}
}

func TestRegisters(t *testing.T) {
	var r Registers
	if r.Known(R7) {
		t.Fatal("zero Registers must be unknown")
	}
	r.Set(R7, 0)
	if v, ok := r.Get(R7); !ok || v != 0 {
		t.Fatal("known zero must be known")
	}
	r.Set(S(31), 5)
	r.ForgetCallerSaved()
	if !r.Known(S(31)) || !r.Known(R7) {
		t.Fatal("callee-saved registers must survive")
	}
	for _, name := range []string{"r0", "sp", "lr", "pc", "xpsr", "msp", "psp", "control", "primask", "basepri", "faultmask", "fpscr", "s0", "s31"} {
		reg, ok := ParseReg(name)
		if !ok || reg.String() != name {
			t.Errorf("ParseReg(%q) = %v, %v", name, reg, ok)
		}
	}
	for _, bad := range []string{"s32", "s01", "r16", "x", ""} {
		if _, ok := ParseReg(bad); ok {
			t.Errorf("ParseReg(%q) accepted", bad)
		}
	}
}

func TestExcReturnValid(t *testing.T) {
	cases := []struct {
		v    uint32
		p    Profile
		want bool
	}{
		{0xFFFFFFF9, V6M, true}, {0xFFFFFFE9, V6M, false}, {0xFFFFFFF1, V6M, true},
		{0xFFFFFFE1, V7M, true}, {0xFFFFFFED, V7M, true}, {0xFFFFFFFD, V7M, true}, {0xFFFFFFF5, V7M, false},
		{0xFFFFFFBC, V8M, true}, {0xFFFFFFA0, V8M, true}, {0xFFFFFFFD, V8M, true}, {0xFFFFFFFF, V8M, false},
		{0xFFFFFF3C, V8M, false}, {0xFEFFFFFF, V8M, false},
	}
	for _, c := range cases {
		if got := ExcReturn(c.v).Valid(c.p); got != c.want {
			t.Errorf("0x%08x on %v: got %v want %v", c.v, c.p, got, c.want)
		}
	}
	e := ExcReturn(0xFFFFFFED)
	if !e.UsesPSP() || !e.ToThread() || !e.Extended() {
		t.Errorf("%v decoded wrong", e)
	}
	if ExcReturn(0xFFFFFFFD).HasStateContext(V8M) || !ExcReturn(0xFFFFFFBC&^excDCRS|excSecure).HasStateContext(V8M) {
		t.Error("state context rule")
	}
}

func TestCallBefore(t *testing.T) {
	for _, c := range []struct{ addr, target uint32 }{
		{0x1000, 0x2000}, {0x2000, 0x1000}, {0x100, 0x00F00000}, {0x00F00000, 0x100}, {0x08000000, 0x08400010},
	} {
		h1, h2 := encodeBL(c.addr, c.target)
		var im Image
		b := make([]byte, 4)
		binary.LittleEndian.PutUint16(b, h1)
		binary.LittleEndian.PutUint16(b[2:], h2)
		im.AddLayer(Region{Addr: c.addr, Data: b})
		cs, ok := CallBefore(&im, c.addr+4+1)
		if !ok || cs.Kind != CallBL || cs.Target != c.target || cs.Addr != c.addr {
			t.Errorf("BL 0x%x->0x%x: got %+v %v", c.addr, c.target, cs, ok)
		}
	}
	var im Image
	im.AddLayer(Region{Addr: 0x200, Data: []byte{0x98, 0x47, 0x18, 0x47}}) // blx r3; bx r3
	if cs, ok := CallBefore(&im, 0x203); !ok || cs.Kind != CallBLXr || cs.Rm != R3 {
		t.Errorf("blx r3: %+v %v", cs, ok)
	}
	if _, ok := CallBefore(&im, 0x205); ok {
		t.Error("bx r3 must not count as a call")
	}
}

// exceptionTarget builds a stack with a basic exception frame at base and
// code for two functions.
func exceptionTarget(t *testing.T, base uint32, frame []uint32, extra ...Region) *Target {
	t.Helper()
	var im Image
	code := make([]byte, 0x100)
	// f at 0x40..0x80; its call site at 0x60 calls g at 0x80.
	h1, h2 := encodeBL(0x60, 0x80)
	binary.LittleEndian.PutUint16(code[0x60:], h1)
	binary.LittleEndian.PutUint16(code[0x62:], h2)
	if err := im.AddLayer(Region{Name: "flash", Addr: 0, Data: code}); err != nil {
		t.Fatal(err)
	}
	ram := make([]byte, 0x400)
	copy(ram[base-0x20000000:], words(frame...))
	if err := im.AddLayer(append([]Region{{Name: "ram", Addr: 0x20000000, Data: ram}}, extra...)...); err != nil {
		t.Fatal(err)
	}
	return &Target{
		Mem:     &im,
		Profile: V7M,
		Prog: &fakeProg{code: Range{0, 0x100}, funcs: []Function{
			{Name: "handler", Start: 0x10, End: 0x40, Thumb: true},
			{Name: "f", Start: 0x40, End: 0x80, Thumb: true},
			{Name: "g", Start: 0x80, End: 0xA0, Thumb: true},
		}},
		Stack: Range{0x20000000, 0x20000400},
	}
}

func TestWalkHandlerEntryMSP(t *testing.T) {
	// Fault in g at 0x88; g was called from f (return address 0x65).
	base := uint32(0x20000300)
	tg := exceptionTarget(t, base, []uint32{1, 2, 3, 4, 12, 0x65, 0x88, 0x01000000})
	var r Registers
	r.Set(PC, 0x10)
	r.Set(LR, 0xFFFFFFF9)
	r.Set(SP, base)
	r.Set(MSP, base)
	r.Set(R7, 0x77)
	res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if len(res.Frames) != 3 {
		t.Fatalf("frames: %+v stop %v", res.Frames, res.Stop)
	}
	ex, g := res.Frames[1], res.Frames[2]
	if ex.Kind != KindException || ex.Exception.Stack != "MSP" || ex.Exception.CallerSP != base+0x20 || ex.Exception.Padded {
		t.Fatalf("exception frame %+v %+v", ex, ex.Exception)
	}
	if g.PC != 0x88 || g.ReturnAddress || g.Method != MethodException || g.Regs.Value(LR) != 0x65 || g.Regs.Value(R7) != 0x77 || g.SP != base+0x20 {
		t.Fatalf("interrupted frame %+v", g)
	}
	// g has run past its entry: LR is not provably its return address.
	if res.Stop.Kind != StopNoUnwinder {
		t.Fatalf("stop %v", res.Stop)
	}
}

func TestWalkPaddedPSPFrame(t *testing.T) {
	base := uint32(0x20000204)
	// Fault at g's first instruction: its caller is provable.
	tg := exceptionTarget(t, base, []uint32{0, 0, 0, 0, 0, 0x65, 0x80, 0x01000200})
	var r Registers
	r.Set(PC, 0x20) // handler, mid-function: the frame is on PSP anyway
	r.Set(LR, 0xFFFFFFFD)
	r.Set(SP, 0x20000380)
	r.Set(MSP, 0x20000380)
	r.Set(PSP, base)
	res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if len(res.Frames) < 4 {
		t.Fatalf("frames %d, stop %v", len(res.Frames), res.Stop)
	}
	ef := res.Frames[1].Exception
	if ef.Stack != "PSP" || !ef.Padded || ef.CallerSP != base+0x24 {
		t.Fatalf("%+v", ef)
	}
	g, f := res.Frames[2], res.Frames[3]
	if g.Regs.Value(PSP) != base+0x24 || g.Regs.Value(MSP) != 0x20000380 {
		t.Errorf("banked SPs: psp 0x%x msp 0x%x", g.Regs.Value(PSP), g.Regs.Value(MSP))
	}
	if f.PC != 0x64 || !f.ReturnAddress || f.Method != MethodLR || f.LookupPC() != 0x62 || f.Confidence != ConfidenceHigh {
		t.Fatalf("caller %+v", f)
	}
}

func TestWalkExtendedAndLazyFrame(t *testing.T) {
	base := uint32(0x20000200)
	frame := make([]uint32, 0x68/4)
	copy(frame, []uint32{0, 0, 0, 0, 0, 0x65, 0x88, 0x01000000})
	for i := 0; i < 16; i++ {
		frame[8+i] = 0x3F800000 + uint32(i)
	}
	frame[24] = 0x03000000
	for _, lazy := range []bool{false, true} {
		fpccr := uint32(0xC0000000)
		if lazy {
			fpccr |= 1
		}
		tg := exceptionTarget(t, base, frame, Region{Name: "fp", Addr: AddrFPCCR, Data: words(fpccr, base+0x20)})
		var r Registers
		r.Set(PC, 0x10)
		r.Set(LR, 0xFFFFFFE9)
		r.Set(SP, base)
		res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
		ef := res.Frames[1].Exception
		g := res.Frames[2]
		if !ef.Extended || ef.Size != 0x68 || g.SP != base+0x68 || ef.LazyFP != lazy {
			t.Fatalf("lazy=%v: %+v", lazy, ef)
		}
		if s1, ok := g.Regs.Get(S(1)); ok == lazy || (!lazy && s1 != 0x3F800001) {
			t.Fatalf("lazy=%v: s1 %x known %v", lazy, s1, ok)
		}
	}
}

func TestWalkStops(t *testing.T) {
	tg := exceptionTarget(t, 0x20000200, []uint32{0, 0, 0, 0, 0, 0xFFFFFFFF, 0x80, 0x01000000})
	var r Registers
	r.Set(PC, 0x10)
	r.Set(LR, 0xFFFFFFF9)
	r.Set(SP, 0x20000200)
	res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if res.Stop.Kind != StopEndOfStack {
		t.Fatalf("reset LR: %v", res.Stop)
	}
	r.Set(PC, 0xFFFFFFFE)
	if res := Walk(tg, r, nil, Options{}); res.Stop.Kind != StopLockup || len(res.Frames) != 1 {
		t.Fatalf("lockup: %v", res.Stop)
	}
	// An invalid EXC_RETURN on v6-M.
	tg.Profile = V6M
	r.Set(PC, 0x10)
	r.Set(LR, 0xFFFFFFE9)
	if res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{}); res.Stop.Kind != StopBadException {
		t.Fatalf("v6-M E9: %v", res.Stop)
	}
	// Exception frame outside the dump.
	tg.Profile = V7M
	r.Set(LR, 0xFFFFFFF9)
	r.Set(SP, 0x30000000)
	if res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{}); res.Stop.Kind != StopSPDecreasing && res.Stop.Kind != StopMemory && res.Stop.Kind != StopSPOutOfStack {
		t.Fatalf("frame outside the dump: %v", res.Stop)
	}
	var empty Registers
	if res := Walk(tg, empty, nil, Options{}); res.Stop.Kind != StopUnknownPC {
		t.Fatalf("unknown PC: %v", res.Stop)
	}
}

func TestWalkNullCall(t *testing.T) {
	// Call through NULL: PC 0 is not in a function; LR follows the BL in f.
	tg := exceptionTarget(t, 0x20000200, []uint32{0, 0, 0, 0, 0, 0x65, 0x0, 0x00000000})
	var r Registers
	r.Set(PC, 0x10)
	r.Set(LR, 0xFFFFFFF9)
	r.Set(SP, 0x20000200)
	res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if len(res.Frames) < 4 || res.Frames[3].PC != 0x64 || res.Frames[3].Confidence != ConfidenceMedium {
		t.Fatalf("frames %+v stop %v", res.Frames, res.Stop)
	}
	if !strings.Contains(res.Frames[2].Note, "Thumb bit clear") {
		t.Errorf("note: %q", res.Frames[2].Note)
	}
}

func TestUnstackStateContextAndFNC(t *testing.T) {
	base := uint32(0x20000100)
	frame := []uint32{0xFEFA125B, 0, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 12, 0x65, 0x88, 0x01000000}
	tg := exceptionTarget(t, base, frame)
	tg.Profile = V8M
	h := Frame{Regs: Registers{}}
	exc := ExcReturn(0xFFFFFFF9&^excDCRS | excSecure) // secure MSP, DCRS=0
	pseudo, next, err := Unstack(tg, &h, exc, base)
	if err != nil {
		t.Fatal(err)
	}
	if !pseudo.Exception.StateCtx || pseudo.Exception.Base != base+0x28 || next.PC != 0x88 || next.Regs.Value(R11) != 11 || next.SP != base+0x48 {
		t.Fatalf("%+v %+v", pseudo.Exception, next)
	}
	tg2 := exceptionTarget(t, base, []uint32{0x65, 0x01000000})
	_, c, err := UnstackFNC(tg2, &h, FNCReturn1, base)
	if err != nil || c.PC != 0x64 || c.SP != base+8 || !c.ReturnAddress {
		t.Fatalf("FNC: %+v %v", c, err)
	}
}

func TestCyclicChainBounded(t *testing.T) {
	// A strategy that returns the same frame forever must be stopped.
	tg := exceptionTarget(t, 0x20000200, []uint32{})
	var r Registers
	r.Set(PC, 0x64)
	r.Set(SP, 0x20000200)
	res := Walk(tg, r, []Unwinder{loop{}}, Options{MaxFrames: 1000})
	if res.Stop.Kind != StopNoProgress {
		t.Fatalf("%v after %d frames", res.Stop, len(res.Frames))
	}
	res = Walk(tg, r, []Unwinder{climb{}}, Options{MaxFrames: 2})
	if res.Stop.Kind != StopDepth || len(res.Frames) != 2 {
		t.Fatalf("%v after %d frames", res.Stop, len(res.Frames))
	}
	// The same return address over and over (its call targets g, the
	// frame below is f): a gap, then a loop, stopped at once instead of at
	// the limit.
	res = Walk(tg, r, []Unwinder{climb{}}, Options{MaxFrames: 1000})
	if res.Stop.Kind != StopLoop || len(res.Frames) != 3 || res.Frames[1].Kind != KindGap || !strings.Contains(res.Stop.Detail, "targets g (0x00000080), not f") {
		t.Fatalf("%v after %d frames", res.Stop, len(res.Frames))
	}
}

type loop struct{}

func (loop) Name() string { return "loop" }
func (loop) Step(t *Target, fr []Frame) (Frame, error) {
	f := fr[len(fr)-1]
	return Frame{PC: f.PC | 1, SP: f.SP}, nil
}

type climb struct{}

func (climb) Name() string { return "climb" }
func (climb) Step(t *Target, fr []Frame) (Frame, error) {
	f := fr[len(fr)-1]
	return Frame{PC: 0x65, SP: f.SP + 4}, nil
}

// TestHandlerRanNothing: a PC in no function with EXC_RETURN in LR is a
// handler that faulted on its first fetch only when the vector of its
// exception (IPSR) holds that PC: then its exception frame is at SP.
// Without that evidence the walk does not guess.
func TestHandlerRanNothing(t *testing.T) {
	const base = 0x20000200
	for _, c := range []struct {
		name   string
		vector uint32
		ipsr   uint32
		frames int
	}{
		{"vector holds the PC", 0x30000001, 25, 3},
		{"vector elsewhere", 0x00000011, 25, 1},
		{"no exception number", 0x30000001, 0, 1},
	} {
		tg := exceptionTarget(t, base, []uint32{0, 0, 0, 0, 0, 0x63, 0x64, 0x01000000})
		var vec [4]byte
		binary.LittleEndian.PutUint32(vec[:], c.vector)
		im := tg.Mem.(*Image)
		if err := im.AddLayer(Region{Name: "vectors", Addr: 4 * 25, Data: vec[:]}); err != nil {
			t.Fatal(err)
		}
		var r Registers
		r.Set(PC, 0x30000000)
		r.Set(LR, 0xFFFFFFF9)
		r.Set(SP, base)
		r.Set(XPSR, 0x01000000|c.ipsr)
		res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{MaxFrames: 4})
		if len(res.Frames) != c.frames {
			t.Errorf("%s: %d frames (%v), want %d", c.name, len(res.Frames), res.Stop, c.frames)
			continue
		}
		if c.frames > 1 {
			f := res.Frames[0]
			if res.Frames[1].Kind != KindException || res.Frames[2].PC != 0x64 || f.Confidence != ConfidenceHigh || !strings.Contains(f.Note, "ran nothing") {
				t.Errorf("%s: frames %+v", c.name, res.Frames)
			}
		}
	}
}

// An FP frame's S0-S15 slots are read only when the dump proves they were
// written: without FPCCR lazy stacking may have left them unwritten (it is
// on after reset), and while lazy stacking is pending the interrupted
// code's values are still the live registers, which frame 0 holds.
func TestWalkFPFrameSlotsNeedProof(t *testing.T) {
	base := uint32(0x20000200)
	frame := make([]uint32, 0x68/4)
	copy(frame, []uint32{0, 0, 0, 0, 0, 0x65, 0x88, 0x01000000})
	for i := 0; i < 16; i++ {
		frame[8+i] = 0x3F800000 + uint32(i)
	}
	for _, tc := range []struct {
		name    string
		fpccr   []Region
		live    bool
		want    uint32
		known   bool
		pending bool
	}{
		{"written", []Region{{Name: "fp", Addr: AddrFPCCR, Data: words(0xC0000000, base+0x20)}}, true, 0x3F800001, true, false},
		{"no FPCCR", nil, true, 0, false, false},
		{"pending, live S1", []Region{{Name: "fp", Addr: AddrFPCCR, Data: words(0xC0000001, base+0x20)}}, true, 0x40000001, true, true},
		{"pending, no live S1", []Region{{Name: "fp", Addr: AddrFPCCR, Data: words(0xC0000001, base+0x20)}}, false, 0, false, true},
	} {
		tg := exceptionTarget(t, base, frame, tc.fpccr...)
		var r Registers
		r.Set(PC, 0x10)
		r.Set(LR, 0xFFFFFFE9)
		r.Set(SP, base)
		if tc.live {
			r.Set(S(1), 0x40000001)
		}
		res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
		if len(res.Frames) < 3 {
			t.Fatalf("%s: frames %d, stop %v", tc.name, len(res.Frames), res.Stop)
		}
		ef, g := res.Frames[1].Exception, res.Frames[2]
		if ef.LazyPending != tc.pending || ef.LazyFP == (tc.name == "written") {
			t.Errorf("%s: %+v", tc.name, ef)
		}
		s1, ok := g.Regs.Get(S(1))
		if ok != tc.known || (ok && s1 != tc.want) {
			t.Errorf("%s: s1 0x%x known %v, want 0x%x known %v", tc.name, s1, ok, tc.want, tc.known)
		}
	}
}
