package exidx

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// fakeProg is a Program with a few functions and the two EHABI sections.
type fakeProg struct {
	funcs []unwinders.Function
	secs  map[string]elfSec
}

func (p *fakeProg) FuncAt(addr uint32) (unwinders.Function, bool) {
	for _, f := range p.funcs {
		if addr >= f.Start && addr < f.End {
			return f, true
		}
	}
	return unwinders.Function{}, false
}
func (p *fakeProg) IsCode(addr uint32) bool { _, ok := p.FuncAt(addr); return ok }
func (p *fakeProg) Section(name string) (uint32, []byte, bool) {
	s, ok := p.secs[name]
	return s.addr, s.data, ok
}
func (p *fakeProg) Symbol(string) (uint32, bool) { return 0, false }

const (
	exidxAt  = 0x8000
	extabAt  = 0x9000
	stackLo  = 0x20000000
	stackTop = 0x20020000
)

// prel31At encodes target as a prel31 word stored at place.
func prel31At(target, place uint32) uint32 { return (target - place) & 0x7FFFFFFF }

// entrySpec describes one function for buildTable: its inline word (0: use
// extab words) or its .ARM.extab words.
type entrySpec struct {
	start, end uint32
	name       string
	inline     uint32
	extab      []uint32
}

func buildTable(t testing.TB, specs ...entrySpec) (*Table, *fakeProg) {
	t.Helper()
	var exidx, extab []byte
	p := &fakeProg{secs: map[string]elfSec{}}
	for i, s := range specs {
		place := uint32(exidxAt + 8*i)
		w1 := s.inline
		if s.extab != nil {
			w1 = prel31At(extabAt+uint32(len(extab)), place+4)
			for _, w := range s.extab {
				extab = binary.LittleEndian.AppendUint32(extab, w)
			}
		}
		exidx = binary.LittleEndian.AppendUint32(exidx, prel31At(s.start, place))
		exidx = binary.LittleEndian.AppendUint32(exidx, w1)
		p.funcs = append(p.funcs, unwinders.Function{Name: s.name, Start: s.start, End: s.end, Thumb: true})
	}
	p.secs[".ARM.exidx"] = elfSec{exidxAt, exidx}
	p.secs[".ARM.extab"] = elfSec{extabAt, extab}
	tab, err := NewTable(p)
	if err != nil {
		t.Fatal(err)
	}
	return tab, p
}

// stackImage returns memory with words written at SP upwards.
func stackImage(t testing.TB, sp uint32, words ...uint32) *unwinders.Image {
	t.Helper()
	ram := make([]byte, stackTop-stackLo)
	for i, w := range words {
		binary.LittleEndian.PutUint32(ram[sp-stackLo+uint32(4*i):], w)
	}
	im := &unwinders.Image{}
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: stackLo, Data: ram}); err != nil {
		t.Fatal(err)
	}
	return im
}

// callSite is a frame stopped at a return address inside fn at 0x1000.
func callSite(sp uint32, set map[unwinders.Reg]uint32) unwinders.Frame {
	var r unwinders.Registers
	for k, v := range set {
		r.Set(k, v)
	}
	r.Set(unwinders.SP, sp)
	r.Set(unwinders.PC, 0x1010)
	return unwinders.Frame{PC: 0x1010, SP: sp, Regs: r, ReturnAddress: true, Method: "test"}
}

func step(t *testing.T, tab *Table, p unwinders.Program, mem unwinders.Memory, f unwinders.Frame) (unwinders.Frame, error) {
	t.Helper()
	tg := &unwinders.Target{Mem: mem, Prog: p, Profile: unwinders.V7M}
	return New(tab).Step(tg, []unwinders.Frame{f})
}

func wantReg(t *testing.T, f *unwinders.Frame, r unwinders.Reg, want uint32) {
	t.Helper()
	if v, ok := f.Regs.Get(r); !ok || v != want {
		t.Errorf("%v = 0x%x (known %v), want 0x%x", r, v, ok, want)
	}
}

func wantUnknown(t *testing.T, f *unwinders.Frame, regs ...unwinders.Reg) {
	t.Helper()
	for _, r := range regs {
		if f.Regs.Known(r) {
			t.Errorf("%v is known in the caller (0x%x), want unknown", r, f.Regs.Value(r))
		}
	}
}

const fnLo, fnHi = 0x1000, 0x1100

// push {r4-r7, lr}: the inline entry 0x80abb0b0.
func TestStepPushR4R7LR(t *testing.T) {
	tab, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", inline: 0x80abb0b0})
	sp := uint32(0x2000ff00)
	mem := stackImage(t, sp, 0x44, 0x55, 0x66, 0x77, 0x2001)
	f := callSite(sp, map[unwinders.Reg]uint32{unwinders.R0: 1, unwinders.R4: 4, unwinders.R8: 8, unwinders.LR: 0x1011})
	c, err := step(t, tab, p, mem, f)
	if err != nil {
		t.Fatal(err)
	}
	if c.PC != 0x2001 || c.SP != sp+20 || c.Method != Name || c.Confidence != unwinders.ConfidenceHigh {
		t.Errorf("caller PC 0x%x SP 0x%x method %s confidence %v", c.PC, c.SP, c.Method, c.Confidence)
	}
	wantReg(t, &c, unwinders.R4, 0x44)
	wantReg(t, &c, unwinders.R7, 0x77)
	wantReg(t, &c, unwinders.R8, 8) // callee-saved, not popped: kept
	wantReg(t, &c, unwinders.SP, sp+20)
	wantUnknown(t, &c, unwinders.R0, unwinders.LR, unwinders.R12)
}

// push {r4, r8, r9, lr}; vpush {d8-d9}; sub sp, #16 (opcodes 03 c9 81 84 31
// b0, a pr1 entry).
func TestStepVPUSH(t *testing.T) {
	tab, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", extab: []uint32{0x810103c9, 0x818431b0}})
	sp := uint32(0x2000ff00)
	mem := stackImage(t, sp, 0, 0, 0, 0, 0x160, 0x170, 0x180, 0x190, 4, 8, 9, 0x3001)
	c, err := step(t, tab, p, mem, callSite(sp, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.PC != 0x3001 || c.SP != sp+16+16+16 {
		t.Errorf("caller PC 0x%x SP 0x%x", c.PC, c.SP)
	}
	for i, v := range []uint32{0x160, 0x170, 0x180, 0x190} {
		wantReg(t, &c, unwinders.S(16+i), v)
	}
	wantReg(t, &c, unwinders.R9, 9)
	wantUnknown(t, &c, unwinders.S(0), unwinders.FPSCR)
}

// sub sp, #0x10000: 0xb2 0xff 0x7e (vsp += 0x204 + (0x3f7f << 2)), then
// pop {r4, r14}.
func TestStepBigFrame(t *testing.T) {
	tab, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", extab: []uint32{0x8101b2ff, 0x7ea8b0b0}})
	sp := uint32(0x20000100)
	words := make([]uint32, 0x10000/4+2)
	words[0x10000/4] = 0x4444
	words[0x10000/4+1] = 0x5001
	mem := stackImage(t, sp, words...)
	c, err := step(t, tab, p, mem, callSite(sp, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.PC != 0x5001 || c.SP != sp+0x10000+8 {
		t.Errorf("caller PC 0x%x SP 0x%x", c.PC, c.SP)
	}
	wantReg(t, &c, unwinders.R4, 0x4444)
}

// A frame pointer: vsp = r7; vsp += 8; pop {r7, r14} (GCC's push {r7, lr};
// sub sp, #8; add r7, sp, #0). SP itself is far below (alloca): only r7
// matters.
func TestStepFramePointer(t *testing.T) {
	tab, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", extab: []uint32{0x81019701, 0x8408b0b0}})
	sp := uint32(0x2000f000)
	r7 := uint32(0x2000ff00)
	mem := stackImage(t, r7, 0xaa, 0xbb, 0x2000ffe0, 0x6001)
	c, err := step(t, tab, p, mem, callSite(sp, map[unwinders.Reg]uint32{unwinders.R7: r7}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PC != 0x6001 || c.SP != r7+16 {
		t.Errorf("caller PC 0x%x SP 0x%x", c.PC, c.SP)
	}
	wantReg(t, &c, unwinders.R7, 0x2000ffe0)

	// r7 unknown: vsp = r7 cannot run.
	_, err = step(t, tab, p, mem, callSite(sp, nil))
	if !errors.Is(err, ErrRegisterUnknown) {
		t.Errorf("r7 unknown: %v, want ErrRegisterUnknown", err)
	}
}

// Every core-register and special opcode against hand-built stacks.
func TestStepOpcodes(t *testing.T) {
	sp := uint32(0x2000ff00)
	cases := []struct {
		name   string
		extab  []uint32 // pr1 entries
		stack  []uint32
		regs   map[unwinders.Reg]uint32
		pc, sp uint32
		check  func(t *testing.T, c *unwinders.Frame)
		err    error
		reason string
	}{
		{name: "pop pc, not lr", extab: []uint32{0x81008800}, stack: []uint32{0x7001},
			regs: map[unwinders.Reg]uint32{unwinders.LR: 0x1111}, pc: 0x7001, sp: sp + 4},
		{name: "finish uses lr", extab: []uint32{0x810000b0}, regs: map[unwinders.Reg]uint32{unwinders.LR: 0xfffffff9},
			pc: 0xfffffff9, sp: sp + 4},
		// 0x8a 0x01: pop {r4, r13, r15}; SP is reloaded at the end.
		{name: "pop r4 sp pc", extab: []uint32{0x81008a01, 0xb0b0b0b0}, stack: []uint32{0x44, 0x2000ff80, 0x8001},
			pc: 0x8001, sp: 0x2000ff80, check: func(t *testing.T, c *unwinders.Frame) { wantReg(t, c, unwinders.R4, 0x44) }},
		{name: "pop r0-r3", extab: []uint32{0x8101b10f, 0x8400b0b0}, stack: []uint32{10, 11, 12, 13, 0x9001},
			pc: 0x9001, sp: sp + 20, check: func(t *testing.T, c *unwinders.Frame) {
				wantReg(t, c, unwinders.R0, 10)
				wantReg(t, c, unwinders.R3, 13)
			}},
		{name: "fstmfdx pad", extab: []uint32{0x8101b884, 0x00b0b0b0}, stack: []uint32{1, 2, 0xdead, 0xa001},
			pc: 0xa001, sp: sp + 16, check: func(t *testing.T, c *unwinders.Frame) { wantReg(t, c, unwinders.S(16), 1) }},
		{name: "pac word", extab: []uint32{0x8101b4b5, 0x8400b0b0}, stack: []uint32{0x12345678, 0xb001},
			pc: 0xb001, sp: sp + 8},
		{name: "vsp sub then add", extab: []uint32{0x81014102, 0x8400b0b0}, stack: []uint32{0, 0xc001},
			pc: 0xc001, sp: sp + 8},
		{name: "refuse", extab: []uint32{0x81008000}, err: unwinders.ErrNotApplicable, reason: "refuse-to-unwind opcode"},
		{name: "spare", extab: []uint32{0x8100e0b0}, err: ErrBadOpcode, reason: "spare"},
		{name: "reserved r13", extab: []uint32{0x81009db0}, err: ErrBadOpcode, reason: "reserved"},
		{name: "iwmmxt", extab: []uint32{0x8100c0b0}, err: unwinders.ErrNotApplicable, reason: "iWMMXt"},
		{name: "b1 spare", extab: []uint32{0x8100b100}, err: ErrBadOpcode},
		{name: "D range past D31", extab: []uint32{0x8100c82f}, err: ErrBadOpcode, reason: "past D31"},
		{name: "stack not in the dump", extab: []uint32{0x8100abb0}, stack: nil, err: unwinders.ErrUnmapped},
		{name: "lr unknown", extab: []uint32{0x8100a0b0}, stack: []uint32{1}, err: ErrRegisterUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", extab: tc.extab})
			var mem unwinders.Memory = stackImage(t, sp, tc.stack...)
			if tc.name == "stack not in the dump" {
				mem = &unwinders.Image{}
			}
			c, err := step(t, tab, p, mem, callSite(sp, tc.regs))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if tc.reason != "" && !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("err %q does not say %q", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PC != tc.pc || c.SP != tc.sp {
				t.Errorf("caller PC 0x%x SP 0x%x, want 0x%x 0x%x", c.PC, c.SP, tc.pc, tc.sp)
			}
			if tc.check != nil {
				tc.check(t, &c)
			}
		})
	}
}

func TestStepNotApplicable(t *testing.T) {
	tab, p := buildTable(t,
		entrySpec{start: 0x1000, end: 0x1100, name: "foo", inline: 1},
		entrySpec{start: 0x1100, end: 0x1200, name: "bar", inline: 0x80abb0b0},
	)
	mem := stackImage(t, 0x2000ff00)
	f := callSite(0x2000ff00, nil)
	_, err := step(t, tab, p, mem, f)
	if !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, ErrCantUnwind) || !strings.Contains(err.Error(), "EXIDX_CANTUNWIND for foo") {
		t.Errorf("cantunwind: %v", err)
	}
	f.PC = 0x500
	if _, err = step(t, tab, p, mem, f); !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, ErrNoEntry) {
		t.Errorf("below the table: %v", err)
	}
	// Past the end of bar (the last entry, no terminator): not covered.
	f.PC = 0x1300
	if _, err = step(t, tab, p, mem, f); !errors.Is(err, ErrNoEntry) {
		t.Errorf("past the last function: %v", err)
	}
	// Exception pseudo-frames are not ours.
	f = callSite(0x2000ff00, nil)
	f.Kind = unwinders.KindException
	if _, err = step(t, tab, p, mem, f); !errors.Is(err, unwinders.ErrNotApplicable) {
		t.Errorf("exception frame: %v", err)
	}
	// No table at all.
	tg := &unwinders.Target{Mem: mem, Prog: &fakeProg{secs: map[string]elfSec{}}}
	if _, err = (&Unwinder{}).Step(tg, []unwinders.Frame{callSite(0x2000ff00, nil)}); !errors.Is(err, unwinders.ErrNotApplicable) || !errors.Is(err, ErrNoTable) {
		t.Errorf("no table: %v", err)
	}
}

// The zero Unwinder builds the table from the Target's Program.
func TestZeroUnwinder(t *testing.T) {
	_, p := buildTable(t, entrySpec{start: fnLo, end: fnHi, name: "f", inline: 0x80abb0b0})
	sp := uint32(0x2000ff00)
	mem := stackImage(t, sp, 4, 5, 6, 7, 0x2001)
	var u Unwinder
	tg := &unwinders.Target{Mem: mem, Prog: p}
	for i := 0; i < 2; i++ {
		c, err := u.Step(tg, []unwinders.Frame{callSite(sp, nil)})
		if err != nil || c.PC != 0x2001 {
			t.Fatalf("step %d: %v %#x", i, err, c.PC)
		}
	}
	var _ unwinders.Unwinder = &u
}
