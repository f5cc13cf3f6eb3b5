package stackscan_test

import (
	"encoding/binary"
	"sort"

	"github.com/faultline-dev/faultline/unwinders"
)

// A synthetic firmware for the unit tests: Thumb functions in "flash" at
// codeBase, a far function more than 4 MiB away (BL with J1/J2 != 1), a
// vector table at 0, and RAM at ramBase. Instruction encodings follow the
// ARMv7-M ARM (A7.7.12 B, A7.7.18 BL, A7.7.19 BLX, A7.7.20 BX).
const (
	codeBase = 0x1000
	farBase  = 0x00A00000 // 10 MiB above codeBase: needs the full J1/J2 range
	ramBase  = 0x20000000
	ramSize  = 0x1000
	stackTop = ramBase + ramSize
)

// Functions and the call sites inside them.
const (
	fnReset = 0x1000 // [0x1000, 0x1040)
	fnMain  = 0x1040 // [0x1040, 0x1080): BL f, BLX r3, BX r3
	fnF     = 0x1080 // [0x1080, 0x10C0): BL g
	fnG     = 0x10C0 // [0x10C0, 0x1100): leaf
	fnH     = 0x1100 // [0x1100, 0x1140): an exception handler: BL g
	fnVen   = 0x1140 // [0x1140, 0x1150): veneer, B.W g
	fnK     = 0x1150 // [0x1150, 0x11A0): BL veneer, BL far, and a BL noreturn at its very end
	fnNext  = 0x11A0 // [0x11A0, 0x11C0): whatever follows k
	fnFar   = farBase

	retMainBLf     = 0x1050 + 4 // main: BL f at 0x1050
	retMainBLXr3   = 0x1060 + 2 // main: BLX r3 at 0x1060
	retMainBXr3    = 0x1070 + 2 // main: BX r3 at 0x1070 (not a call)
	retFBLg        = 0x1090 + 4 // f: BL g at 0x1090
	retHBLg        = 0x1110 + 4 // h: BL g at 0x1110
	retKBLveneer   = 0x1160 + 4 // k: BL veneer at 0x1160
	retKBLfar      = 0x1170 + 4 // k: BL far at 0x1170
	retKNoreturn   = 0x119C + 4 // k: BL g at 0x119C, the last instruction: returns to fnNext
	retResetBLmain = 0x1010 + 4
)

type synthProg struct {
	funcs []unwinders.Function
	syms  map[string]uint32
	vec   []byte
}

func (p *synthProg) FuncAt(a uint32) (unwinders.Function, bool) {
	for _, f := range p.funcs {
		if a >= f.Start && a < f.End {
			return f, true
		}
	}
	return unwinders.Function{}, false
}

func (p *synthProg) IsCode(a uint32) bool {
	_, ok := p.FuncAt(a)
	return ok
}

func (p *synthProg) Section(name string) (uint32, []byte, bool) {
	if name == ".isr_vector" {
		return 0, p.vec, true
	}
	return 0, nil, false
}

func (p *synthProg) Symbol(name string) (uint32, bool) {
	v, ok := p.syms[name]
	return v, ok
}

// synth is the synthetic device: flash, RAM and the Program.
type synth struct {
	flash []byte // at 0
	far   []byte // at farBase
	ram   []byte // at ramBase
	prog  *synthProg
}

func put16(b []byte, off uint32, h uint16) { binary.LittleEndian.PutUint16(b[off:], h) }
func put32(b []byte, off uint32, w uint32) { binary.LittleEndian.PutUint32(b[off:], w) }

// encodeBranch returns BL (link) or B.W (T4) from addr to target.
func encodeBranch(addr, target uint32, link bool) (uint16, uint16) {
	u := target - (addr + 4)
	s := (u >> 24) & 1
	i1 := (u >> 23) & 1
	i2 := (u >> 22) & 1
	j1 := (^i1 ^ s) & 1
	j2 := (^i2 ^ s) & 1
	h1 := 0xF000 | uint16(s<<10) | uint16((u>>12)&0x3FF)
	h2 := uint16(j1<<13) | uint16(j2<<11) | uint16((u>>1)&0x7FF)
	if link {
		h2 |= 0xD000
	} else {
		h2 |= 0x9000
	}
	return h1, h2
}

func newSynth() *synth {
	s := &synth{flash: make([]byte, 0x1200), far: make([]byte, 0x40), ram: make([]byte, ramSize)}
	for i := codeBase; i < len(s.flash); i += 2 {
		put16(s.flash, uint32(i), 0xBF00) // NOP
	}
	for i := 0; i < len(s.far); i += 2 {
		put16(s.far, uint32(i), 0xBF00)
	}
	bl := func(at, target uint32, link bool) {
		h1, h2 := encodeBranch(at, target, link)
		put16(s.flash, at, h1)
		put16(s.flash, at+2, h2)
	}
	bl(0x1010, fnMain, true)
	bl(0x1050, fnF, true)
	put16(s.flash, 0x1060, 0x4798) // BLX r3
	put16(s.flash, 0x1070, 0x4718) // BX r3
	bl(0x1090, fnG, true)
	bl(0x1110, fnG, true)
	bl(fnVen, fnG, false) // the veneer: B.W g
	bl(0x1160, fnVen, true)
	bl(0x1170, fnFar, true)
	bl(0x119C, fnG, true)
	// Vector table: initial SP, reset, NMI, HardFault = h.
	vec := make([]byte, 16)
	put32(vec, 0, stackTop)
	put32(vec, 4, fnReset|1)
	put32(vec, 8, fnNext|1)
	put32(vec, 12, fnH|1)
	copy(s.flash, vec)
	s.prog = &synthProg{
		funcs: []unwinders.Function{
			{Name: "reset", Start: fnReset, End: fnMain, Thumb: true},
			{Name: "main", Start: fnMain, End: fnF, Thumb: true},
			{Name: "f", Start: fnF, End: fnG, Thumb: true},
			{Name: "g", Start: fnG, End: fnH, Thumb: true},
			{Name: "h", Start: fnH, End: fnVen, Thumb: true},
			{Name: "__g_veneer", Start: fnVen, End: fnK, Thumb: true},
			{Name: "k", Start: fnK, End: fnNext, Thumb: true},
			{Name: "next", Start: fnNext, End: 0x11C0, Thumb: true},
			{Name: "far", Start: fnFar, End: fnFar + 0x40, Thumb: true},
		},
		syms: map[string]uint32{},
		vec:  vec,
	}
	sort.Slice(s.prog.funcs, func(i, j int) bool { return s.prog.funcs[i].Start < s.prog.funcs[j].Start })
	return s
}

// stack writes words at addr in RAM.
func (s *synth) stack(addr uint32, words ...uint32) {
	for i, w := range words {
		put32(s.ram, addr-ramBase+uint32(4*i), w)
	}
}

func (s *synth) target() *unwinders.Target {
	im := &unwinders.Image{}
	_ = im.AddLayer(
		unwinders.Region{Name: "flash", Addr: 0, Data: s.flash},
		unwinders.Region{Name: "far", Addr: farBase, Data: s.far},
	)
	_ = im.AddLayer(unwinders.Region{Name: "ram", Addr: ramBase, Data: s.ram})
	return &unwinders.Target{
		Mem: im, Prog: s.prog, Profile: unwinders.V7M,
		Stack: unwinders.Range{Lo: ramBase, Hi: stackTop}, ResetHandler: fnReset,
	}
}

// frame0 is an interrupted frame at pc with SP sp; lr, when non-zero, is
// known.
func frame0(pc, sp, lr uint32) unwinders.Frame {
	var r unwinders.Registers
	r.Set(unwinders.PC, pc)
	r.Set(unwinders.SP, sp)
	r.Set(unwinders.MSP, sp)
	if lr != 0 {
		r.Set(unwinders.LR, lr)
	}
	return unwinders.Frame{PC: pc, SP: sp, Regs: r, Kind: unwinders.KindNormal, Method: unwinders.MethodRegisters, Confidence: unwinders.ConfidenceHigh}
}

// retFrame is a frame whose PC is a return address.
func retFrame(ret, sp uint32) unwinders.Frame {
	f := frame0(ret&^1, sp, 0)
	f.ReturnAddress = true
	f.Method = "test"
	return f
}
