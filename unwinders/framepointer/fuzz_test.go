package framepointer_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/framepointer"
)

const (
	fuzzCode  = 0x1000
	fuzzStack = 0x20000000
)

// fuzzProg describes the fuzzed code as one Thumb (or ARM) function.
type fuzzProg struct{ fn unwinders.Function }

func (p *fuzzProg) FuncAt(a uint32) (unwinders.Function, bool) {
	if a >= p.fn.Start && a < p.fn.End {
		return p.fn, true
	}
	return unwinders.Function{}, false
}
func (p *fuzzProg) IsCode(a uint32) bool                  { _, ok := p.FuncAt(a); return ok }
func (p *fuzzProg) Section(string) (uint32, []byte, bool) { return 0, nil, false }
func (p *fuzzProg) Symbol(string) (addr uint32, ok bool)  { return 0, false }

// FuzzStep runs Step (and a short walk) on random code, a random stack and
// random registers. Input: 4 words pc, sp, r7, lr; a flag byte (bit 0:
// the PC is a return address, bit 1: ARM code, bit 2: no Program); then
// the code and the stack, split in the middle. Step must not panic, must
// end quickly, and a frame it returns must go up the stack.
func FuzzStep(f *testing.F) {
	e := newEnv(f)
	seed := func(pc, sp, r7, lr uint32, flags byte, code []byte, stack []byte) {
		b := make([]byte, 17)
		binary.LittleEndian.PutUint32(b, pc)
		binary.LittleEndian.PutUint32(b[4:], sp)
		binary.LittleEndian.PutUint32(b[8:], r7)
		binary.LittleEndian.PutUint32(b[12:], lr)
		b[16] = flags
		f.Add(append(append(b, code...), stack...))
	}
	// Seeds: each test function of layouts.elf with a plausible frame.
	text := make([]byte, 0x100)
	_ = e.t.Mem.Read(fuzzCode, text)
	stack := make([]byte, 0x100)
	binary.LittleEndian.PutUint32(stack[0xF8:], fuzzStack+0x180)
	binary.LittleEndian.PutUint32(stack[0xFC:], retAddr)
	for _, name := range []string{"clang_frame_ret", "clang_simple_ret", "gcc_frame_ret", "gcc_subw_ret", "gcc_leaf_body", "shrink_ret", "midret_ret2", "switcher_case1_ret", "r7loop_ret", "apcs_frame_ret"} {
		pc := e.sym(name)
		seed(pc, fuzzStack+0xF8, fuzzStack+0xF8, retAddr, 1, text, stack)
		seed(pc, fuzzStack+0xF0, fuzzStack+0xF8, retAddr, 0, text, stack)
	}
	seed(fuzzCode+0x20, fuzzStack+0xF8, fuzzStack+0xF8, retAddr, 5, text, stack)
	seed(fuzzCode+0x20, fuzzStack+0xF8, 0, retAddr, 1, []byte{0xdf, 0xe8, 0x00, 0xf0, 0xff, 0xff}, stack)

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 17 {
			return
		}
		pc := binary.LittleEndian.Uint32(data) &^ 1
		sp := binary.LittleEndian.Uint32(data[4:])
		r7 := binary.LittleEndian.Uint32(data[8:])
		lr := binary.LittleEndian.Uint32(data[12:])
		flags := data[16]
		rest := data[17:]
		code, stk := rest[:len(rest)/2], rest[len(rest)/2:]
		im := &unwinders.Image{}
		_ = im.AddLayer(unwinders.Region{Name: "code", Addr: fuzzCode, Data: code}, unwinders.Region{Name: "stack", Addr: fuzzStack, Data: stk})
		tgt := &unwinders.Target{Mem: im, Profile: unwinders.V7M, Stack: unwinders.Range{Lo: fuzzStack, Hi: fuzzStack + uint32(len(stk))}}
		if flags&4 == 0 {
			tgt.Prog = &fuzzProg{fn: unwinders.Function{Name: "fuzzed", Start: fuzzCode, End: fuzzCode + uint32(len(code)), Thumb: flags&2 == 0}}
		}
		var regs unwinders.Registers
		regs.Set(unwinders.PC, pc)
		regs.Set(unwinders.SP, sp)
		regs.Set(unwinders.R7, r7)
		regs.Set(unwinders.R11, r7)
		regs.Set(unwinders.LR, lr)
		cur := unwinders.Frame{PC: pc, SP: sp, Regs: regs, Kind: unwinders.KindNormal, ReturnAddress: flags&1 != 0, Confidence: unwinders.ConfidenceHigh}
		u := framepointer.New()
		got, err := u.Step(tgt, []unwinders.Frame{cur})
		if err != nil {
			var se *framepointer.StepError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *StepError", err)
			}
			return
		}
		// A record step moves SP up; a leaf step (the return address
		// still in LR) may leave it where it is when the leaf pushed
		// nothing.
		leaf := strings.HasPrefix(got.Note, "a leaf")
		if got.SP < sp || got.SP == sp && !leaf || !tgt.InStack(got.SP) {
			t.Fatalf("caller SP 0x%08x is not above 0x%08x in the stack (note %q)", got.SP, sp, got.Note)
		}
		if got.Confidence == unwinders.ConfidenceHigh {
			if _, err := u.LayoutAt(tgt, &cur); err != nil {
				t.Fatalf("high confidence without a layout: %v", err)
			}
		}
		unwinders.Walk(tgt, regs, []unwinders.Unwinder{u, unwinders.LinkRegister{}}, unwinders.Options{MaxFrames: 16})
	})
}
