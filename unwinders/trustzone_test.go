package unwinders

import (
	"errors"
	"strings"
	"testing"
)

// TestUnstackIntegritySignature: an additional state context whose first
// word is not the integrity signature (ARMv8-M ARM B3.19) is refused with
// the address and the word, not read as r4-r11.
func TestUnstackIntegritySignature(t *testing.T) {
	base := uint32(0x20000100)
	exc := ExcReturn(0xFFFFFFF9&^excDCRS | excSecure) // Secure MSP, DCRS=0: state context
	for _, sig := range []uint32{IntegritySignature, IntegritySignatureFP, 0x12345678, 0} {
		frame := []uint32{sig, 0, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 12, 0x65, 0x88, 0x01000000}
		tg := exceptionTarget(t, base, frame)
		tg.Profile = V8M
		h := Frame{}
		_, next, err := Unstack(tg, &h, exc, base)
		good := sig == IntegritySignature || sig == IntegritySignatureFP
		switch {
		case good && (err != nil || next.PC != 0x88 || next.Regs.Value(R4) != 4):
			t.Errorf("signature 0x%08x: %v %+v", sig, err, next)
		case !good && (!errors.Is(err, ErrBadExceptionFrame) || !strings.Contains(err.Error(), "0x20000100") || !strings.Contains(err.Error(), "integrity signature")):
			t.Errorf("signature 0x%08x: err %v", sig, err)
		}
	}
}

// TestUnstackBankedStack: with the Security Extension the frame is read
// from the stack EXC_RETURN.S and SPSEL name, the handler's MSP only when
// that is the handler's own state; a bank the dump lacks is an error
// naming it.
func TestUnstackBankedStack(t *testing.T) {
	const handlerSP, psNS = 0x20000100, 0x20000200
	frame := make([]uint32, 0x48)
	copy(frame[0:], []uint32{1, 1, 1, 1, 1, 0x41, 0x44, 0x01000000})    // at handlerSP
	copy(frame[0x40:], []uint32{2, 2, 2, 2, 2, 0x61, 0x64, 0x01000000}) // at psNS
	tg := exceptionTarget(t, handlerSP, frame)
	tg.Profile = V8M
	var h Frame
	h.Regs.Set(PSPNS, psNS)
	h.Regs.Set(PSP, 0x20000300)                                       // the Secure PSP: not where the frame is
	_, next, err := Unstack(tg, &h, ExcReturn(0xFFFFFFBD), handlerSP) // Secure handler, NS Thread on PSP
	if err != nil || next.PC != 0x64 || next.SP != psNS+0x20 || next.Regs.Value(PSPNS) != psNS+0x20 || next.Regs.Value(MSPS) != handlerSP {
		t.Fatalf("PSP_NS frame: %v %+v", err, next)
	}
	_, next, err = Unstack(tg, &h, ExcReturn(0xFFFFFFB9), handlerSP) // NS Thread on MSP_NS: not in the dump
	if err == nil || !strings.Contains(err.Error(), "MSP_NS") {
		t.Fatalf("MSP_NS missing: %v %+v", err, next)
	}
	_, next, err = Unstack(tg, &h, ExcReturn(0xFFFFFFF9), handlerSP) // Secure Thread on MSP_S: the handler's stack
	if err != nil || next.PC != 0x44 {
		t.Fatalf("MSP_S frame: %v %+v", err, next)
	}
}

// TestWalkHandlerModePSP: an EXC_RETURN that says Handler mode on the
// process stack contradicts the architecture (Handler mode runs on MSP):
// the walk stops there saying so rather than read a frame at PSP.
func TestWalkHandlerModePSP(t *testing.T) {
	tg := exceptionTarget(t, 0x20000100, []uint32{0, 0, 0, 0, 0, 0x41, 0x44, 0x01000000})
	tg.Profile = V8M
	var r Registers
	r.Set(PC, 0x10)
	r.Set(SP, 0x20000100)
	r.Set(LR, 0xFFFFFFB5)
	r.Set(PSPNS, 0x20000100)
	res := Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if res.Stop.Kind != StopBadException || !strings.Contains(res.Stop.Detail, "Handler mode on the process stack") || len(res.Frames) != 1 {
		t.Fatalf("%v, %d frames", res.Stop, len(res.Frames))
	}
	r.Set(LR, 0xFFFFFFB1) // the same on MSP_NS: unstacked
	r.Set(MSPNS, 0x20000100)
	res = Walk(tg, r, []Unwinder{LinkRegister{}}, Options{})
	if len(res.Frames) < 3 || res.Frames[2].PC != 0x44 {
		t.Fatalf("MSP_NS: %v %+v", res.Stop, res.Frames)
	}
}
