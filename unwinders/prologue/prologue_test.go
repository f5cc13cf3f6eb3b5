package prologue_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/prologue"
)

// The hand-built functions of testdata/frames.s (listing in
// testdata/frames.lst), loaded at codeBase; see testdata/README.md.
const (
	codeBase = 0x1000
	ramBase  = 0x20000000
	ramSize  = 0x4000
)

// prog is a Program over a symbol list: each function ends where the next
// one starts (or at its explicit end).
type prog struct {
	funcs []unwinders.Function
	code  unwinders.Range
}

func (p *prog) FuncAt(addr uint32) (unwinders.Function, bool) {
	for _, f := range p.funcs {
		if addr >= f.Start && (addr < f.End || f.End == f.Start && addr < f.Start+0x100) {
			return f, true
		}
	}
	return unwinders.Function{}, false
}
func (p *prog) IsCode(addr uint32) bool               { return p.code.Contains(addr) }
func (p *prog) Section(string) (uint32, []byte, bool) { return 0, nil, false }
func (p *prog) Symbol(name string) (uint32, bool)     { return p.addr(name) }
func (p *prog) addr(name string) (uint32, bool) {
	for _, f := range p.funcs {
		if f.Name == name {
			return f.Start, true
		}
	}
	return 0, false
}

// handmade is the hand-built code with a RAM region for the stack.
type handmade struct {
	t   *unwinders.Target
	p   *prog
	ram []byte
}

func loadHandmade(tb testing.TB) *handmade {
	tb.Helper()
	code, err := os.ReadFile("testdata/frames.bin")
	if err != nil {
		tb.Fatal(err)
	}
	syms, err := os.ReadFile("testdata/frames.sym")
	if err != nil {
		tb.Fatal(err)
	}
	p := &prog{code: unwinders.Range{Lo: codeBase, Hi: codeBase + uint32(len(code))}}
	sc := bufio.NewScanner(bytes.NewReader(syms))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 32)
		if err != nil {
			tb.Fatal(err)
		}
		if n := len(p.funcs); n > 0 {
			p.funcs[n-1].End = codeBase + uint32(a)
		}
		p.funcs = append(p.funcs, unwinders.Function{Name: f[2], Start: codeBase + uint32(a), Thumb: true})
	}
	p.funcs[len(p.funcs)-1].End = codeBase + uint32(len(code))
	h := &handmade{p: p, ram: make([]byte, ramSize)}
	im := &unwinders.Image{}
	if err := im.AddLayer(unwinders.Region{Name: "frames.bin", Addr: codeBase, Data: code},
		unwinders.Region{Name: "ram", Addr: ramBase, Data: h.ram}); err != nil {
		tb.Fatal(err)
	}
	h.t = &unwinders.Target{Mem: im, Prog: p, Profile: unwinders.V7M, Stack: unwinders.Range{Lo: ramBase, Hi: ramBase + ramSize}}
	return h
}

// at returns the address of name+off.
func (h *handmade) at(tb testing.TB, name string, off uint32) uint32 {
	tb.Helper()
	a, ok := h.p.addr(name)
	if !ok {
		tb.Fatalf("no function %s", name)
	}
	return a + off
}

// stack writes words at sp, sp+4, ...
func (h *handmade) stack(sp uint32, words ...uint32) {
	for i, w := range words {
		binary.LittleEndian.PutUint32(h.ram[sp-ramBase+uint32(4*i):], w)
	}
}

// frame builds an interrupted frame (frame 0) or a return-address frame.
func frame(pc, sp uint32, ret bool, regs map[unwinders.Reg]uint32) unwinders.Frame {
	var r unwinders.Registers
	for k, v := range regs {
		r.Set(k, v)
	}
	r.Set(unwinders.PC, pc)
	r.Set(unwinders.SP, sp)
	return unwinders.Frame{PC: pc, SP: sp, Regs: r, ReturnAddress: ret, Kind: unwinders.KindNormal}
}

func step(tb testing.TB, h *handmade, f unwinders.Frame) (unwinders.Frame, *prologue.Analysis, error) {
	tb.Helper()
	a, err := prologue.New().Analyze(h.t, &f)
	if err != nil {
		return unwinders.Frame{}, nil, err
	}
	c, err := prologue.New().Step(h.t, []unwinders.Frame{f})
	if err != nil {
		tb.Fatalf("Analyze succeeded but Step failed: %v", err)
	}
	return c, a, nil
}

type want struct {
	pc, sp uint32
	mode   prologue.Mode
	conf   unwinders.Confidence
	regs   map[unwinders.Reg]uint32
	forget []unwinders.Reg
}

func check(t *testing.T, h *handmade, f unwinders.Frame, w want) {
	t.Helper()
	c, a, err := step(t, h, f)
	if err != nil {
		t.Fatalf("step: %v", err)
	}
	if c.PC != w.pc || c.SP != w.sp {
		t.Errorf("caller pc=0x%08x sp=0x%08x, want pc=0x%08x sp=0x%08x (analysis %+v)", c.PC, c.SP, w.pc, w.sp, a)
	}
	if a.Mode != w.mode {
		t.Errorf("mode %v, want %v", a.Mode, w.mode)
	}
	if c.Confidence != w.conf {
		t.Errorf("confidence %v, want %v (notes %q)", c.Confidence, w.conf, c.Note)
	}
	if c.Method != prologue.Name {
		t.Errorf("method %q", c.Method)
	}
	for r, v := range w.regs {
		if got, ok := c.Regs.Get(r); !ok || got != v {
			t.Errorf("%v = 0x%x (known %v), want 0x%x", r, got, ok, v)
		}
	}
	for _, r := range append(w.forget, unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR) {
		if c.Regs.Known(r) {
			t.Errorf("%v is known in the caller, want unknown", r)
		}
	}
}

const (
	sp0 uint32 = ramBase + 0x1000
	ret uint32 = 0x00002345 // a return address (Thumb bit set)
)

func TestMidPrologue(t *testing.T) {
	h := loadHandmade(t)
	// f_mid: push {r4, r5, lr}; sub sp, #16; ...
	h.stack(sp0, 0x44, 0x55, ret)
	// PC after the push, before "sub sp, #16": only the push counts.
	check(t, h, frame(h.at(t, "f_mid", 2), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: 0xdead, unwinders.R4: 1, unwinders.R5: 2}), want{
		pc: ret, sp: sp0 + 12, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
	// PC at the first instruction: nothing has run, LR is the caller.
	check(t, h, frame(h.at(t, "f_mid", 0), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: ret, unwinders.R4: 1}), want{
		pc: ret, sp: sp0, mode: prologue.ModeLeaf, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 1},
	})
	// A return address after the call: the whole prologue counts.
	h.stack(sp0+16, 0x44, 0x55, ret)
	check(t, h, frame(h.at(t, "f_mid", 0xa), sp0, true, map[unwinders.Reg]uint32{unwinders.R4: 9}), want{
		pc: ret, sp: sp0 + 28, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
}

func TestMidEpilogue(t *testing.T) {
	h := loadHandmade(t)
	// f_epi: push {r4-r7, lr}; sub sp, #8; bl; mov r0, r4; add sp, #8; pop {r4-r7, pc}
	h.stack(sp0, 0x44, 0x55, 0x66, 0x77, ret)
	regs := map[unwinders.Reg]uint32{unwinders.LR: 0xdead, unwinders.R4: 1, unwinders.R7: 2}
	// After "add sp, #8", before the pop.
	check(t, h, frame(h.at(t, "f_epi", 0xc), sp0, false, regs), want{
		pc: ret, sp: sp0 + 20, mode: prologue.ModeEpilogue, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55, unwinders.R6: 0x66, unwinders.R7: 0x77},
	})
	// Before "mov r0, r4; add sp, #8".
	h.stack(sp0-8, 0, 0, 0x44, 0x55, 0x66, 0x77, ret)
	check(t, h, frame(h.at(t, "f_epi", 0x8), sp0-8, false, regs), want{
		pc: ret, sp: sp0 + 20, mode: prologue.ModeEpilogue, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R7: 0x77},
	})
	// f_strd's epilogue: ldr lr, [sp], #4; ldrd r4, r5, [sp], #8; bx lr.
	h.stack(sp0, ret, 0x44, 0x55)
	check(t, h, frame(h.at(t, "f_strd", 0x10), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: 0xdead}), want{
		pc: ret, sp: sp0 + 12, mode: prologue.ModeEpilogue, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
	// f_gccfp's epilogue after "adds r7, #8": mov sp, r7; pop {r7, pc}.
	h.stack(sp0, 0x77, ret)
	check(t, h, frame(h.at(t, "f_gccfp", 0xc), sp0-8, false, map[unwinders.Reg]uint32{unwinders.R7: sp0}), want{
		pc: ret, sp: sp0 + 8, mode: prologue.ModeEpilogue, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R7: 0x77},
	})
}

func TestLeaf(t *testing.T) {
	h := loadHandmade(t)
	// f_leaf: push {r4}; sub sp, #8; ldr r0, [r1]  <- PC
	h.stack(sp0+8, 0x44)
	check(t, h, frame(h.at(t, "f_leaf", 4), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: ret, unwinders.R4: 1}), want{
		pc: ret, sp: sp0 + 12, mode: prologue.ModeLeaf, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44},
	})
	// The same PC as a return address: a leaf cannot have made a call.
	if _, _, err := step(t, h, frame(h.at(t, "f_leaf", 4), sp0, true, nil)); !errors.Is(err, prologue.ErrOutOfStep) {
		t.Errorf("return address not after a call: %v", err)
	}
	// LR unknown (a caller frame): not applicable.
	if _, _, err := step(t, h, frame(h.at(t, "f_leaf", 4), sp0, false, nil)); !errors.Is(err, prologue.ErrNoReturnAddress) || !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("LR unknown: %v", err)
	}
	// f_lrclob: mov lr, r0 before the PC: LR is not the return address.
	_, _, err := step(t, h, frame(h.at(t, "f_lrclob", 2), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: ret}))
	if !errors.Is(err, prologue.ErrNoReturnAddress) {
		t.Errorf("LR clobbered: %v", err)
	}
}

func TestSubSPByRegister(t *testing.T) {
	h := loadHandmade(t)
	// f_movw: push {r7, lr}; movw r3, #4104; sub sp, r3; bl
	h.stack(sp0+4104, 0x77, ret)
	check(t, h, frame(h.at(t, "f_movw", 0xe), sp0, true, nil), want{
		pc: ret, sp: sp0 + 4112, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R7: 0x77},
	})
	// f_lit: ldr r4, =-100012; add sp, r4 (a literal pool constant).
	big := uint32(ramBase + 100012 + 0x100)
	lit := &handmade{}
	*lit = *h
	lit.ram = make([]byte, 100012+0x200)
	im := &unwinders.Image{}
	code, _ := os.ReadFile("testdata/frames.bin")
	_ = im.AddLayer(unwinders.Region{Addr: codeBase, Data: code}, unwinders.Region{Addr: ramBase, Data: lit.ram})
	lit.t = &unwinders.Target{Mem: im, Prog: h.p}
	lit.stack(big, 0x44, 0x55, ret)
	check(t, lit, frame(h.at(t, "f_lit", 0xa), big-100012, true, nil), want{
		pc: ret, sp: big + 12, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
}

func TestVPUSH(t *testing.T) {
	h := loadHandmade(t)
	// f_vpush: push {r4, lr}; vpush {d8-d9}; sub sp, #8; bl
	h.stack(sp0+8, 0x516, 0x517, 0x518, 0x519, 0x44, ret)
	check(t, h, frame(h.at(t, "f_vpush", 0xc), sp0, true, map[unwinders.Reg]uint32{unwinders.S(20): 20, unwinders.S(16): 1}), want{
		pc: ret, sp: sp0 + 32, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.S(16): 0x516, unwinders.S(17): 0x517, unwinders.S(18): 0x518, unwinders.S(19): 0x519, unwinders.S(20): 20, unwinders.R4: 0x44},
	})
	// f_vpushs: vpush {s16-s18} (S registers).
	h.stack(sp0+4, 0x516, 0x517, 0x518, 0x44, ret)
	check(t, h, frame(h.at(t, "f_vpushs", 0xc), sp0, true, nil), want{
		pc: ret, sp: sp0 + 24, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.S(16): 0x516, unwinders.S(18): 0x518, unwinders.R4: 0x44},
	})
}

func TestSTRDPreIndex(t *testing.T) {
	h := loadHandmade(t)
	// f_strd: strd r4, r5, [sp, #-8]!; str.w lr, [sp, #-4]!; sub sp, #4; bl
	h.stack(sp0+4, ret, 0x44, 0x55)
	check(t, h, frame(h.at(t, "f_strd", 0xe), sp0, true, nil), want{
		pc: ret, sp: sp0 + 16, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
	// Mid-prologue, after the STRD only: a leaf so far.
	h.stack(sp0, 0x44, 0x55)
	check(t, h, frame(h.at(t, "f_strd", 4), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: ret}), want{
		pc: ret, sp: sp0 + 8, mode: prologue.ModeLeaf, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R5: 0x55},
	})
}

func TestAllocaThroughFramePointer(t *testing.T) {
	h := loadHandmade(t)
	// f_alloca: push {r4, r7, lr}; add r7, sp, #4; sub sp, #12; ldr r0, [r0];
	// sub sp, r0; bl. r7 = CFA - 8.
	cfa := sp0 + 0x100
	h.stack(cfa-12, 0x44, 0x77, ret)
	check(t, h, frame(h.at(t, "f_alloca", 0x10), sp0, true, map[unwinders.Reg]uint32{unwinders.R7: cfa - 8}), want{
		pc: ret, sp: cfa, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44, unwinders.R7: 0x77},
	})
	// Without r7 the size is unknown.
	_, _, err := step(t, h, frame(h.at(t, "f_alloca", 0x10), sp0, true, nil))
	if !errors.Is(err, prologue.ErrFrameSize) {
		t.Errorf("alloca without r7: %v", err)
	}
	// f_unknown: sub sp, r0 with r0 unknown and no frame register.
	_, _, err = step(t, h, frame(h.at(t, "f_unknown", 0xc), sp0, true, map[unwinders.Reg]uint32{unwinders.R7: 1}))
	if !errors.Is(err, prologue.ErrFrameSize) || !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("unknown SP change: %v", err)
	}
	// GCC -O0: push {r7, lr}; sub sp, #8; add r7, sp, #0 (r7 = CFA - 16).
	h.stack(sp0+8, 0x77, ret)
	check(t, h, frame(h.at(t, "f_gccfp", 0xa), sp0, true, map[unwinders.Reg]uint32{unwinders.R7: sp0}), want{
		pc: ret, sp: sp0 + 16, mode: prologue.ModeFrame, conf: unwinders.ConfidenceHigh,
		regs: map[unwinders.Reg]uint32{unwinders.R7: 0x77},
	})
}

func TestBranches(t *testing.T) {
	h := loadHandmade(t)
	// Shrink-wrapping: cbz r0, .Lsw; push {r4, lr}; ...; .Lsw: ldr <- PC.
	// The state recorded at the CBZ holds: nothing pushed, LR intact.
	check(t, h, frame(h.at(t, "f_shrink", 0xa), sp0, false, map[unwinders.Reg]uint32{unwinders.LR: ret, unwinders.R4: 4}), want{
		pc: ret, sp: sp0, mode: prologue.ModeLeaf, conf: unwinders.ConfidenceMedium,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 4},
	})
	// Inside the shrink-wrapped body: a return address after the push.
	h.stack(sp0, 0x44, ret)
	check(t, h, frame(h.at(t, "f_shrink", 8), sp0, true, nil), want{
		pc: ret, sp: sp0 + 8, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44},
	})
	// A mid-function "pop {r4, pc}" does not leak into the code after it.
	check(t, h, frame(h.at(t, "f_midret", 0x10), sp0, true, nil), want{
		pc: ret, sp: sp0 + 8, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
		regs: map[unwinders.Reg]uint32{unwinders.R4: 0x44},
	})
	// TBB: case 2 allocates 8 more bytes after the table.
	h.stack(sp0+8, 0x44, ret)
	check(t, h, frame(h.at(t, "f_tbb", 0x22), sp0, true, nil), want{
		pc: ret, sp: sp0 + 16, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
	})
	// Case 1, after "movs r0, #3": the table's bytes are skipped.
	h.stack(sp0, 0x44, ret)
	check(t, h, frame(h.at(t, "f_tbb", 0x1a), sp0, true, nil), want{
		pc: ret, sp: sp0 + 8, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
	})
	// A loop entered by a forward branch: the call in the loop body is
	// reached only by the backward branch.
	h.stack(sp0, 0x44, 0x55, 0x66, ret)
	check(t, h, frame(h.at(t, "f_loop", 0xa), sp0, true, nil), want{
		pc: ret, sp: sp0 + 16, mode: prologue.ModeFrame, conf: unwinders.ConfidenceMedium,
		regs: map[unwinders.Reg]uint32{unwinders.R6: 0x66},
	})
}

func TestHostile(t *testing.T) {
	h := loadHandmade(t)
	cases := []struct {
		name string
		f    unwinders.Frame
		err  error
	}{
		{"PC outside any function", frame(0x9000, sp0, false, nil), prologue.ErrNoFunction},
		{"return address not after a call", frame(h.at(t, "f_mid", 4), sp0, true, nil), prologue.ErrOutOfStep},
		{"PC inside a 32-bit instruction", frame(h.at(t, "f_movw", 4), sp0, false, nil), prologue.ErrOutOfStep},
		{"endless loop, LR unknown", frame(h.at(t, "f_spin", 0), sp0, true, nil), prologue.ErrOutOfStep},
	}
	for _, c := range cases {
		_, _, err := step(t, h, c.f)
		if !errors.Is(err, c.err) || !errors.Is(err, unwinders.ErrNotApplicable) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	// An exception pseudo-frame is not for strategies.
	ex := frame(0xfffffff9, sp0, false, nil)
	ex.Kind = unwinders.KindException
	if _, err := prologue.New().Step(h.t, []unwinders.Frame{ex}); !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("exception frame: %v", err)
	}
	if _, err := prologue.New().Step(h.t, nil); !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("no frames: %v", err)
	}
	// No program.
	noProg := *h.t
	noProg.Prog = nil
	if _, err := prologue.New().Step(&noProg, []unwinders.Frame{frame(h.at(t, "f_mid", 2), sp0, false, nil)}); !errors.Is(err, prologue.ErrNoFunction) {
		t.Errorf("no program: %v", err)
	}
	// A bound smaller than the distance to the PC.
	u := &prologue.Unwinder{MaxInsns: 2}
	f := frame(h.at(t, "f_mid", 0xa), sp0, true, nil)
	if _, err := u.Step(h.t, []unwinders.Frame{f}); !errors.Is(err, prologue.ErrTooFar) {
		t.Errorf("bound: %v", err)
	}
	// Garbage: a function of 0xFFFF halfwords ("udf"-free random bits) and
	// a sizeless function; every PC must give an answer or a clean error.
	garbage := make([]byte, 4096)
	x := uint32(12345)
	for i := range garbage {
		x = x*1103515245 + 12345
		garbage[i] = byte(x >> 16)
	}
	im := &unwinders.Image{}
	_ = im.AddLayer(unwinders.Region{Addr: 0x4000, Data: garbage}, unwinders.Region{Addr: ramBase, Data: make([]byte, ramSize)})
	p := &prog{funcs: []unwinders.Function{
		{Name: "garbage", Start: 0x4000, End: 0x4800, Thumb: true},
		{Name: "sizeless", Start: 0x4800, End: 0x4800, Thumb: true},
		{Name: "arm", Start: 0x4900, End: 0x4a00},
	}, code: unwinders.Range{Lo: 0x4000, Hi: 0x5000}}
	tg := &unwinders.Target{Mem: im, Prog: p, Stack: unwinders.Range{Lo: ramBase, Hi: ramBase + ramSize}}
	for pc := uint32(0x4000); pc < 0x4a10; pc += 2 {
		for _, r := range []bool{false, true} {
			f := frame(pc, ramBase+0x800, r, map[unwinders.Reg]uint32{unwinders.LR: 0x4001, unwinders.R7: ramBase + 0x900})
			c, err := prologue.New().Step(tg, []unwinders.Frame{f})
			if err != nil {
				if !errors.Is(err, unwinders.ErrNotApplicable) {
					t.Fatalf("0x%x: error does not wrap ErrNotApplicable: %v", pc, err)
				}
				continue
			}
			if c.SP < f.SP {
				t.Fatalf("0x%x: caller SP 0x%x below SP 0x%x", pc, c.SP, f.SP)
			}
		}
	}
}

// TestWalkHandmade runs the whole walk through two hand-built frames:
// f_mid called from f_epi's call site. That call targets `callee`, not
// f_mid: the walk puts a gap frame between them and the caller is at most
// medium confidence.
func TestWalkHandmade(t *testing.T) {
	h := loadHandmade(t)
	callSite := h.at(t, "f_epi", 8) | 1 // return address after f_epi's bl
	// f_mid interrupted after "sub sp, #16".
	sp := sp0
	h.stack(sp+16, 0x44, 0x55, callSite)
	// f_epi's frame: sub sp, #8 below push {r4-r7, lr}; its LR slot holds
	// the reset value of LR, which ends the walk.
	h.stack(sp+28+8, 0x1, 0x2, 0x3, 0x4, 0xFFFFFFFF)
	var r unwinders.Registers
	r.Set(unwinders.PC, h.at(t, "f_mid", 4))
	r.Set(unwinders.SP, sp)
	r.Set(unwinders.LR, 0xdead)
	res := unwinders.Walk(h.t, r, []unwinders.Unwinder{prologue.New()}, unwinders.Options{})
	if res.Stop.Kind != unwinders.StopEndOfStack || len(res.Frames) != 3 || res.Frames[1].Kind != unwinders.KindGap {
		t.Fatalf("stop %v, %d frames", res.Stop, len(res.Frames))
	}
	if res.Frames[2].Confidence > unwinders.ConfidenceMedium {
		t.Errorf("frame after the gap: %v", res.Frames[2].Confidence)
	}
	if got := res.Frames[2]; got.PC != callSite&^1 || got.SP != sp+28 || got.Regs.Value(unwinders.R4) != 0x44 {
		t.Errorf("frame 1: %+v", got)
	}
}
