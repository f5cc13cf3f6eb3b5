package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Addresses from `arm-none-eabi-nm testdata/checks-m4.elf` and objdump
// (testdata/Makefile, target checks-all).
const (
	ckLoadWord     = 0xb6 // load_word: ldr r0, [r0]
	ckLoadMultiple = 0xc0 // load_multiple: ldmia r0!, {r2, r3}
	ckLoadDouble   = 0xc6 // load_double: ldrd
	ckReadNull     = 0xd0 // read_null: ldr from 0
	ckStoreWord    = 0xd4 // store_word: str r1, [r0]
	ckXNFunction   = 0x440
	ckDeepStore    = 0xf0 // deep: the first store below the guard
	ckSVC          = 0x84 // svc_thread: the instruction after svc #0
	ckBytes        = 0x20000000
	ckROArea       = 0x20000040
	ckPrivArea     = 0x20000060
	ckOvStack      = 0x20000080
)

func wantCause(t *testing.T, res *Result, fault string, pc uint32, bits ...string) {
	t.Helper()
	if res.Cause.Fault != fault || res.Cause.PC != pc || !slices.Equal(res.Cause.Bits, bits) {
		t.Errorf("cause %s %v at %#x, want %s %v at %#x (%s)", res.Cause.Fault, res.Cause.Bits, res.Cause.PC, fault, bits, pc, res.Cause.Detail)
	}
}

func TestUnalignTrap(t *testing.T) {
	res := run(t, "checks-m4.elf", 1)
	wantCause(t, res, "UsageFault", ckLoadWord, "UNALIGNED", "FORCED")
	if res.Exception != 3 || res.Fault.CFSR != 1<<24 || res.Fault.HFSR != 1<<30 || res.Fault.CCR&(1<<3) == 0 {
		t.Errorf("exception %d CFSR %#x HFSR %#x CCR %#x", res.Exception, res.Fault.CFSR, res.Fault.HFSR, res.Fault.CCR)
	}
	// The state is the one before the load: r0 still holds the address.
	if f := stacked(t, res); f[6] != ckLoadWord || f[0] != ckBytes+1 {
		t.Errorf("stacked pc %#x r0 %#x; want %#x, %#x", f[6], f[0], ckLoadWord, ckBytes+1)
	}
	want := []string{"HardFault_Handler", "<exception>", "load_word", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
	// Without the trap an unaligned halfword load is fine on v7-M.
	skipWithoutCgo(t)
	_, err := Run(context.Background(), Config{ELF: "testdata/checks-m4.elf", Sets: map[string]uint64{"crash_scenario": 13}, MaxInsns: 100_000})
	if !errors.Is(err, ErrNoFault) {
		t.Errorf("unaligned LDRH without UNALIGN_TRP: %v, want no fault", err)
	}
}

func TestAlwaysAlignedInstructions(t *testing.T) {
	for _, c := range []struct {
		scenario uint64
		pc, addr uint32
		fn       string
	}{{2, ckLoadMultiple, ckBytes + 2, "load_multiple"}, {3, ckLoadDouble, ckBytes + 6, "load_double"}} {
		res := run(t, "checks-m4.elf", c.scenario)
		wantCause(t, res, "UsageFault", c.pc, "UNALIGNED", "FORCED")
		if f := stacked(t, res); f[6] != c.pc || f[0] != c.addr {
			t.Errorf("scenario %d: stacked pc %#x r0 %#x; want %#x %#x", c.scenario, f[6], f[0], c.pc, c.addr)
		}
		if got := functions(res); len(got) < 3 || got[2] != c.fn {
			t.Errorf("scenario %d: truth %v", c.scenario, got)
		}
	}
	if !uc.AlignedInsn(0xe9d0, 0x2300) { // ldrd r2, r3, [r0]
		t.Error("LDRD not recognised")
	}
	if uc.AlignedInsn(0xe9dd, 0x2300) || uc.AlignedInsn(0xb500, 0) { // ldrd [sp], push
		t.Error("SP-based forms need no check")
	}
}

func TestArmv6MUnalignedAlwaysFaults(t *testing.T) {
	for _, s := range []uint64{1, 2, 13} {
		res := run(t, "checks-m0.elf", s)
		if res.Exception != 3 || !res.Cause.Forced || res.Cause.Fault != "UsageFault" || res.Fault.CFSR != 0 {
			t.Errorf("scenario %d: exception %d cause %+v CFSR %#x", s, res.Exception, res.Cause, res.Fault.CFSR)
		}
	}
}

func TestMPUNullRead(t *testing.T) {
	res := run(t, "checks-m4.elf", 4)
	wantCause(t, res, "MemManage", ckReadNull, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.CFSR != 0x82 || res.Fault.MMFAR != 0 || res.Fault.HFSR != 1<<30 {
		t.Errorf("CFSR %#x MMFAR %#x HFSR %#x", res.Fault.CFSR, res.Fault.MMFAR, res.Fault.HFSR)
	}
	if f := stacked(t, res); f[6] != ckReadNull {
		t.Errorf("stacked pc %#x", f[6])
	}
}

func TestMPUReadOnlyRAM(t *testing.T) {
	res := run(t, "checks-m4.elf", 5)
	wantCause(t, res, "MemManage", ckStoreWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.MMFAR != ckROArea+8 {
		t.Errorf("MMFAR %#x, want %#x", res.Fault.MMFAR, ckROArea+8)
	}
	// The store was not performed.
	if v, _ := wordAt(res, ckROArea+8); v != 0 {
		t.Errorf("the denied store landed: %#x", v)
	}
}

func TestMPUUnprivileged(t *testing.T) {
	res := run(t, "checks-m4.elf", 6)
	if res.Cause.Fault != "MemManage" || res.Fault.CFSR != 0x82 || res.Fault.MMFAR != ckPrivArea {
		t.Errorf("cause %+v CFSR %#x MMFAR %#x; want the unprivileged read of priv_area", res.Cause, res.Fault.CFSR, res.Fault.MMFAR)
	}
	// Privileged, the same region was written.
	if v, _ := wordAt(res, ckPrivArea); v != 1 {
		t.Errorf("priv_area[0] = %d, want 1 (privileged store allowed)", v)
	}
	f := stacked(t, res)
	if f[7]&0x1ff != 0 || res.Registers.LR != 0xFFFFFFF9 {
		t.Errorf("stacked xPSR %#x lr %#x: want Thread mode on MSP", f[7], res.Registers.LR)
	}
}

func TestMPUExecuteNever(t *testing.T) {
	res := run(t, "checks-m4.elf", 7)
	wantCause(t, res, "MemManage", ckXNFunction, "IACCVIOL", "FORCED")
	if res.Fault.CFSR != 1 {
		t.Errorf("CFSR %#x, want IACCVIOL", res.Fault.CFSR)
	}
	want := []string{"HardFault_Handler", "<exception>", "xn_function", "call_xn", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}

// TestStackOverflowIntoGuard: recursion on a PSP thread stack runs into a
// 32-byte no-access MPU region at its bottom. The store into the guard is
// a MemManage DACCVIOL; MemManage is enabled, so its entry stacks a frame
// on the PSP across the guard: r0 and r1 are written, r2 hits the guard
// (MSTKERR), a derived MemManage that cannot preempt MemManage, so HardFault
// (FORCED) is taken on the incomplete frame.
func TestStackOverflowIntoGuard(t *testing.T) {
	res := run(t, "checks-m4.elf", 8)
	wantCause(t, res, "MemManage", ckDeepStore, "DACCVIOL", "MMARVALID", "MSTKERR", "FORCED")
	r := res.Registers
	if res.Exception != 3 || res.Lockup || r.LR != 0xFFFFFFFD || res.Fault.CFSR != 0x92 || res.Fault.HFSR != 1<<30 {
		t.Errorf("exception %d lockup %v lr %#x CFSR %#x HFSR %#x", res.Exception, res.Lockup, r.LR, res.Fault.CFSR, res.Fault.HFSR)
	}
	if res.Fault.SHCSR&(1<<13) == 0 || res.Fault.SHCSR&1 != 0 {
		t.Errorf("SHCSR %#x: want MemManage pending, not active", res.Fault.SHCSR)
	}
	// The store that faulted was at SP+0 (0x20000098); the frame goes 32
	// bytes below: r0 and r1 land below the guard, r2 hits it and the
	// stacking stops there.
	if r.PSP != ckOvStack-8 || res.Fault.MMFAR != ckOvStack+0x18 {
		t.Errorf("PSP %#x MMFAR %#x; want the frame at %#x, MMFAR %#x", r.PSP, res.Fault.MMFAR, ckOvStack-8, ckOvStack+0x18)
	}
	if v, _ := wordAt(res, ckOvStack-8); v == 0 {
		t.Errorf("stacked r0 below the guard is 0: the words before the fault must be written")
	}
	// The rest of the frame was not written: the guard keeps its zeros.
	for a := uint32(ckOvStack); a < ckOvStack+32; a += 4 {
		if v, _ := wordAt(res, a); v != 0 {
			t.Errorf("guard word %#x = %#x: the denied stacking landed", a, v)
		}
	}
	got := functions(res)
	if len(got) < 8 || got[2] != "deep" || got[len(got)-4] != "overflow_thread" {
		t.Errorf("truth %v", got)
	}
}

func TestStackOverflowLockup(t *testing.T) {
	res := run(t, "checks-m4.elf", 9)
	if !res.Lockup || res.Registers.PC != ckDeepStore || res.Fault.CFSR != 0x92 || !res.Cause.Forced {
		t.Errorf("lockup %v pc %#x CFSR %#x cause %+v", res.Lockup, res.Registers.PC, res.Fault.CFSR, res.Cause)
	}
}

// TestPartialFrame: SVCall taken with PSP 16 bytes above a read-only MPU
// region: r0-r3 are stacked, r12 hits the region (MSTKERR), the rest of the
// frame is never written; the derived MemManage escalates.
func TestPartialFrame(t *testing.T) {
	res := run(t, "checks-m4.elf", 10)
	wantCause(t, res, "MemManage", ckSVC, "MSTKERR", "FORCED")
	r := res.Registers
	if res.Exception != 3 || r.PSP != ckROArea-16 || res.Fault.CFSR != 0x10 || res.Fault.SHCSR&(1<<15) == 0 {
		t.Errorf("exception %d PSP %#x CFSR %#x SHCSR %#x; want HardFault, frame at %#x, SVCall pending", res.Exception, r.PSP, res.Fault.CFSR, res.Fault.SHCSR, ckROArea-16)
	}
	for i, a := range []uint32{ckROArea - 16, ckROArea - 12, ckROArea - 8, ckROArea - 4} {
		if v, ok := wordAt(res, a); !ok || (i == 0 && v != 2) {
			t.Errorf("stacked r%d at %#x = %#x", i, a, v)
		}
	}
	for a := uint32(ckROArea); a < ckROArea+16; a += 4 {
		if v, _ := wordAt(res, a); v != 0 {
			t.Errorf("word %#x = %#x in the read-only region: want it unwritten", a, v)
		}
	}
}

// TestThreadShadowStacks: two threads switched by PendSV; thread 2 crashes
// after several switches. Its truth holds its own calls only.
func TestThreadShadowStacks(t *testing.T) {
	res := run(t, "checks-m3.elf", 11)
	want := []string{"HardFault_Handler", "<exception>", "t2_leaf", "t2_mid", "thread2"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
	sw, _ := wordAtSym(t, res, "switches")
	if sw < 8 || res.Registers.LR != 0xFFFFFFFD {
		t.Errorf("%d switches, lr %#x", sw, res.Registers.LR)
	}
}

func TestImpreciseStores(t *testing.T) {
	res := run(t, "fw-m4.elf", 1, func(c *Config) { c.ImpreciseStores = true })
	if res.Fault.CFSR != 1<<10 || res.Fault.HFSR != 1<<30 || res.Cause.HasAddress {
		t.Errorf("CFSR %#x HFSR %#x cause %+v; want IMPRECISERR without BFARVALID", res.Fault.CFSR, res.Fault.HFSR, res.Cause)
	}
	// store_leaf: str r1,[r0] at 0x4a; then ldr r3, =sink; str r1, [r3];
	// the fault is taken ImpreciseDelay instructions after the store.
	f := stacked(t, res)
	if f[6] <= m4StoreLeaf || f[6] > m4StoreLeaf+12 || res.Cause.PC != f[6] {
		t.Errorf("stacked pc %#x, cause pc %#x; want a few instructions after the store at %#x", f[6], res.Cause.PC, m4StoreLeaf)
	}
	// Default: precise, as QEMU.
	res = run(t, "fw-m4.elf", 1)
	if res.Fault.CFSR != 0x8200 {
		t.Errorf("default CFSR %#x, want PRECISERR|BFARVALID", res.Fault.CFSR)
	}
}

func TestUnavailableMessage(t *testing.T) {
	_, err := Run(context.Background(), Config{ELF: "testdata/fw-m4.elf"})
	if errors.Is(err, uc.ErrUnavailable) && strings.HasPrefix(err.Error(), "emu:") {
		t.Errorf("error %q has a prefix; the CLI adds its own", err)
	}
}

func wordAt(res *Result, addr uint32) (uint32, bool) {
	for _, m := range res.Memory {
		if addr >= m.Addr && uint64(addr)+4 <= uint64(m.Addr)+uint64(len(m.Data)) {
			return binary.LittleEndian.Uint32(m.Data[addr-m.Addr:]), true
		}
	}
	return 0, false
}

func wordAtSym(t *testing.T, res *Result, name string) (uint32, bool) {
	t.Helper()
	f, err := os.Open("testdata/checks-m3.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := loadImage("testdata/checks-m3.elf", f)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := img.byName[name]; ok {
		return wordAt(res, s.addr)
	}
	t.Fatalf("no symbol %s", name)
	return 0, false
}
