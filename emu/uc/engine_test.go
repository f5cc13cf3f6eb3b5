package uc

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

// openOrSkip opens an engine or skips the test when built without cgo.
func openOrSkip(t testing.TB, m CPUModel) *Engine {
	t.Helper()
	e, err := Open(m)
	if errors.Is(err, ErrUnavailable) {
		t.Skip("emulation unavailable (built without cgo): ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// storeFault is, assembled with arm-none-eabi-as 2.40 (-mcpu=cortex-m4):
//
//	0:  2001       movs r0, #1
//	2:  2102       movs r1, #2
//	4:  f04f 42e0  mov.w r2, #0x70000000
//	8:  1840       adds r0, r0, r1
//	a:  6010       str r0, [r2]      @ unmapped
//	c:  2009       movs r0, #9
//	e:  e7fe       b.n .
const storeFault = "012002214ff0e042401810600920fee7"

func load(t testing.TB, e *Engine, hexCode string) {
	t.Helper()
	code, err := hex.DecodeString(hexCode)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MemMap(0, 0x10000, PermRead|PermExec); err != nil {
		t.Fatal(err)
	}
	if err := e.MemMap(0x20000000, 0x10000, PermRead|PermWrite); err != nil {
		t.Fatal(err)
	}
	if err := e.MemWrite(0, code); err != nil {
		t.Fatal(err)
	}
	if err := e.RegWrite(RegSP, 0x20010000); err != nil {
		t.Fatal(err)
	}
}

func TestModelReadBack(t *testing.T) {
	for _, m := range []CPUModel{CortexM0, CortexM3, CortexM4, CortexM7, CortexM33} {
		e := openOrSkip(t, m)
		got, err := e.Model()
		if err != nil {
			t.Fatal(err)
		}
		if got != m {
			t.Errorf("Open(%v): model reads back as %v", m, got)
		}
	}
}

func TestStalePCAfterUnmappedStore(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, storeFault)
	var access MemAccess
	var addr uint64
	if _, err := e.HookMemInvalid(func(a MemAccess, ad uint64, size int, v int64) bool {
		access, addr = a, ad
		return false
	}); err != nil {
		t.Fatal(err)
	}
	err := e.Start(1, 0xe, time.Second, 0)
	if !errors.Is(err, ErrWriteUnmapped) {
		t.Fatalf("Start: %v, want %v", err, ErrWriteUnmapped)
	}
	if access != MemWriteUnmapped || addr != 0x70000000 {
		t.Errorf("hook saw %v at %#x", access, addr)
	}
	pc, _ := e.RegRead(RegPC)
	r0, _ := e.RegRead(RegR0)
	t.Logf("without code hook: pc=%#x r0=%#x", pc, r0)
	if r0 != 3 {
		t.Errorf("r0 = %d, want 3 (state before the store)", r0)
	}
}

func TestTrackerExactPC(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, storeFault)
	tr, err := e.NewTracker(true, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetExactPC(true, 0, 0xffffffff); err != nil {
		t.Fatal(err)
	}
	err = e.Start(1, 0xe, time.Second, 0)
	if !errors.Is(err, ErrWriteUnmapped) {
		t.Fatalf("Start: %v", err)
	}
	pc, _ := e.RegRead(RegPC)
	if tr.LastPC() != 0xa || pc != 0xa {
		t.Errorf("LastPC %#x, PC %#x; want 0xa", tr.LastPC(), pc)
	}
	if a, _ := tr.Block(); a != 0 {
		t.Errorf("block %#x, want 0", a)
	}
}

func TestCallbackPanicStops(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, storeFault)
	if _, err := e.HookCode(4, 4, func(addr uint64, size uint32) { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	err := e.Start(1, 0xe, time.Second, 0)
	var pe *CallbackPanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("Start: %v, want a CallbackPanicError", err)
	}
}

func TestContextRestore(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, storeFault)
	if err := e.RegWrite(RegR(5), 55); err != nil {
		t.Fatal(err)
	}
	c, err := e.SaveContext(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	e.RegWrite(RegR(5), 66)
	if err := e.RestoreContext(c); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.RegRead(RegR(5)); v != 55 {
		t.Errorf("r5 = %d after restore, want 55", v)
	}
}

func TestSystemRegisters(t *testing.T) {
	e := openOrSkip(t, CortexM4)
	load(t, e, storeFault)
	e.RegWrite(RegPC, 1)
	for _, c := range []struct {
		r Reg
		v uint64
	}{{RegMSP, 0x20008000}, {RegPSP, 0x20004000}, {RegPRIMASK, 1}, {RegBASEPRI, 0x40}, {RegFAULTMSK, 1}} {
		if err := e.RegWrite(c.r, c.v); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.RegRead(c.r); got != c.v {
			t.Errorf("reg %d = %#x, want %#x", c.r, got, c.v)
		}
	}
	var s [16]byte
	s[0], s[1], s[2], s[3] = 0x00, 0x00, 0xc0, 0x3f // 1.5f
	if err := e.RegWriteBytes(RegS(3), &s); err != nil {
		t.Fatal(err)
	}
	var got [16]byte
	if err := e.RegReadBytes(RegS(3), &got); err != nil {
		t.Fatal(err)
	}
	if got != s {
		t.Errorf("s3 = % x", got[:4])
	}
}
