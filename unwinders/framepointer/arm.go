package framepointer

import (
	"fmt"
	"math/bits"

	"github.com/faultline-dev/faultline/unwinders"
)

// The ARM-state (A32) APCS frame prologue (cortex-m.md 4; APCS-R "the
// stack backtrace structure"; ARM ARM DDI 0406C A8.8.103 MOV (register),
// A8.8.199 PUSH / STMDB, A8.8.222 SUB (immediate)):
//
//	mov  ip, sp                      e1a0c00d
//	push {..., fp, ip, lr, pc}       e92dxxxx, fp ip lr pc the top four
//	sub  fp, ip, #4                  e24cb004
//
// fp then points at the saved pc: [fp-4] lr, [fp-8] the caller's sp,
// [fp-12] the caller's fp, lower registers of the list below.
const (
	armMovIPSP   = 0xE1A0C00D
	armPushMask  = 0xFFFF0000
	armPush      = 0xE92D0000
	armSubFPIP4  = 0xE24CB004
	armFrameRegs = 1<<11 | 1<<12 | 1<<14 | 1<<15
)

// analyzeARM matches the APCS prologue at the start of the ARM function fn
// and checks that pc lies after it and that no instruction between the
// set-up and pc changes fp (an epilogue in progress), the way the Thumb
// analysis does, but linearly: code after an unconditional return is taken
// to be reached from the body.
func analyzeARM(m unwinders.Memory, fn unwinders.Function, pc uint32, returnAddress bool) (Layout, error) {
	name := funcName(fn)
	start := fn.Start &^ 3
	var w [3]uint32
	for i := range w {
		v, err := unwinders.ReadU32(m, start+4*uint32(i))
		if err != nil {
			return Layout{}, fmt.Errorf("%w: the code of %s: %v", ErrNotDecodable, name, err)
		}
		w[i] = v
	}
	list := w[1] & 0xFFFF
	if w[0] != armMovIPSP || w[1]&armPushMask != armPush || list&0xF800 != armFrameRegs || w[2] != armSubFPIP4 {
		return Layout{}, fmt.Errorf("%w: ARM function %s does not start with the APCS frame prologue (mov ip, sp; push {..., fp, ip, lr, pc}; sub fp, ip, #4)", ErrNoFramePointer, name)
	}
	setUp := start + 12
	if pc < setUp {
		return Layout{}, fmt.Errorf("%w: 0x%08x in %s is before the frame pointer is set up (at 0x%08x)", ErrNotSetUp, pc, name, setUp)
	}
	end := pc
	if returnAddress {
		end = max(pc-4, setUp) // the call itself does not write fp
	}
	if end-setUp > maxFuncBytes {
		return Layout{}, fmt.Errorf("%w: %s is too long to check its body up to 0x%08x", ErrNotDecodable, name, pc)
	}
	for a := setUp; a < end; a += 4 {
		x, err := unwinders.ReadU32(m, a)
		if err != nil {
			return Layout{}, fmt.Errorf("%w: the code of %s: %v", ErrNotDecodable, name, err)
		}
		writes, ret := armWritesFP(x)
		cond := x >> 28
		switch {
		case ret && cond == 0xE:
			// An unconditional return: what follows is reached by a branch
			// from the body.
		case ret:
			// A conditional return falls through unexecuted.
		case writes:
			return Layout{}, fmt.Errorf("%w: fp may change at 0x%08x in %s, before the PC (an epilogue)", ErrNotSetUp, a, name)
		}
	}
	n := int32(bits.OnesCount32(list))
	l := Layout{Kind: LayoutAPCS, FP: unwinders.R11, CFA: 4, SavedFP: -12, LRSaved: true, SavedLR: -4, Proven: true}
	i := int32(0)
	for r := 0; r < 11; r++ {
		if list&(1<<r) != 0 {
			l.Saved[r] = 4 - 4*n + 4*i
			l.SavedMask |= 1 << r
			i++
		}
	}
	return l, nil
}

// armWritesFP reports whether the A32 instruction x may write fp (r11),
// and whether it is a return (it loads or moves into pc). It errs on the
// side of yes for the encoding classes it does not pick apart (ARM ARM DDI
// 0406C A5.1).
func armWritesFP(x uint32) (writes, ret bool) {
	const fp = 11
	rd := x >> 12 & 0xF
	rn := x >> 16 & 0xF
	load := x&(1<<20) != 0
	if x>>28 == 0xF { // unconditional space: PLD, BLX (immediate), CPS, ...
		return false, false
	}
	switch {
	case x>>25&7 == 0b101: // B, BL
		return false, false
	case x>>25&7 == 0b100: // LDM, STM
		list := x & 0xFFFF
		wb := x&(1<<21) != 0
		return load && list&(1<<fp) != 0 || wb && rn == fp, load && list&(1<<15) != 0
	case x>>26&3 == 0b01: // LDR, STR, LDRB, STRB
		wb := x&(1<<21) != 0 || x&(1<<24) == 0
		return load && rd == fp || wb && rn == fp, load && rd == 15
	case x&0x0FFFFFF0 == 0x012FFF10: // BX Rm
		return false, x&0xF == 14
	case x>>26&3 == 0b00 && x&0x0F0000F0 == 0x00000090: // multiply: Rd in 19:16, RdLo in 15:12
		return rn == fp || rd == fp, false
	case x>>26&3 == 0b00:
		op := x >> 21 & 0xF
		if x&(1<<25) == 0 && x&0x90 == 0x90 { // extra loads and stores
			wb := x&(1<<21) != 0 || x&(1<<24) == 0
			return load && rd == fp || wb && rn == fp, false
		}
		if op >= 8 && op <= 11 && load { // TST, TEQ, CMP, CMN
			return false, false
		}
		return rd == fp, rd == 15
	}
	// Coprocessor, media and the rest: Rt / Rd fields.
	return rd == fp || rn == fp, false
}
