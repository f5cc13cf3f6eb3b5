package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"
)

// Addresses below are from `arm-none-eabi-objdump -d testdata/fw-m4.elf`
// and `arm-none-eabi-nm` (see testdata/Makefile for how it was built).
const (
	m4HardFault  = 0x42 // HardFault_Handler
	m4UsageFault = 0x48 // UsageFault_Handler
	m4StoreLeaf  = 0x4a // store_leaf: str r1, [r0]
	m4Udiv       = 0xa8 // do_div: udiv r0, r0, r1
	m4Udf        = 0x98 // do_udf: udf #42
	ramTop       = 0x20010000
)

func run(t *testing.T, elf string, scenario uint64, extra ...func(*Config)) *Result {
	t.Helper()
	skipWithoutCgo(t)
	cfg := Config{ELF: "testdata/" + elf, Sets: map[string]uint64{"crash_scenario": scenario},
		MaxInsns: 10_000_000, Timeout: 2 * time.Minute}
	for _, f := range extra {
		f(&cfg)
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%s scenario %d: %v", elf, scenario, err)
	}
	return res
}

// stacked reads the exception frame the harness pushed at SP.
func stacked(t *testing.T, res *Result) (frame [8]uint32) {
	t.Helper()
	sp := res.Registers.SP
	for _, m := range res.Memory {
		if sp >= m.Addr && int(sp-m.Addr)+32 <= len(m.Data) {
			for i := range frame {
				frame[i] = binary.LittleEndian.Uint32(m.Data[int(sp-m.Addr)+4*i:])
			}
			return frame
		}
	}
	t.Fatalf("SP %#x is not in a captured region", sp)
	return
}

func functions(res *Result) []string {
	var out []string
	for _, f := range res.Truth {
		if f.Kind == FrameException {
			out = append(out, "<exception>")
			continue
		}
		out = append(out, f.Function)
	}
	return out
}

func TestPreciseBusFaultDeep(t *testing.T) {
	res := run(t, "fw-m4.elf", 1)
	r := res.Registers
	if res.Exception != 3 || r.PC != m4HardFault || r.LR != 0xFFFFFFF9 {
		t.Errorf("exception %d pc %#x lr %#x; want HardFault at %#x with EXC_RETURN 0xfffffff9", res.Exception, r.PC, r.LR, m4HardFault)
	}
	if res.Fault.CFSR != 0x8200 || res.Fault.HFSR != 0x40000000 || res.Fault.BFAR != 0x70000000 {
		t.Errorf("CFSR %#x HFSR %#x BFAR %#x; want 0x8200 0x40000000 0x70000000", res.Fault.CFSR, res.Fault.HFSR, res.Fault.BFAR)
	}
	f := stacked(t, res)
	// store_mid calls store_leaf(0x70000000, 42) with bl at 0x60.
	if f[0] != 0x70000000 || f[1] != 42 || f[5] != 0x65 || f[6] != m4StoreLeaf || f[7]&(1<<24) == 0 {
		t.Errorf("stacked frame % x; want r0=0x70000000 r1=42 lr=0x65 pc=%#x xPSR.T", f, m4StoreLeaf)
	}
	if r.MSP != r.SP || r.SP%8 != 0 {
		t.Errorf("sp %#x msp %#x", r.SP, r.MSP)
	}
	want := []string{"HardFault_Handler", "<exception>", "store_leaf", "store_mid", "store_top", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
	if res.Truth[2].PC != m4StoreLeaf {
		t.Errorf("truth frame 2 pc %#x, want the faulting PC %#x", res.Truth[2].PC, m4StoreLeaf)
	}
}

func TestNullFunctionPointer(t *testing.T) {
	res := run(t, "fw-m4.elf", 2)
	f := stacked(t, res)
	if res.Fault.CFSR != 1<<17 || res.Fault.HFSR != 1<<30 {
		t.Errorf("CFSR %#x HFSR %#x; want INVSTATE, FORCED", res.Fault.CFSR, res.Fault.HFSR)
	}
	// blx r3 at 0x8a in call_null: return address 0x8c.
	if f[6] != 0 || f[7]&(1<<24) != 0 || f[5] != 0x8d {
		t.Errorf("stacked pc %#x xpsr %#x lr %#x; want pc 0 with T clear, lr 0x8d", f[6], f[7], f[5])
	}
	want := []string{"HardFault_Handler", "<exception>", "", "call_null", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}

func TestUndefinedInstruction(t *testing.T) {
	res := run(t, "fw-m4.elf", 3)
	if f := stacked(t, res); f[6] != m4Udf || res.Fault.CFSR != 1<<16 {
		t.Errorf("stacked pc %#x CFSR %#x; want %#x UNDEFINSTR", f[6], res.Fault.CFSR, m4Udf)
	}
}

func TestDivideByZeroTrap(t *testing.T) {
	res := run(t, "fw-m4.elf", 4)
	f := stacked(t, res)
	if f[6] != m4Udiv || res.Fault.CFSR != 1<<25 || res.Fault.CCR&(1<<4) == 0 {
		t.Errorf("stacked pc %#x CFSR %#x CCR %#x; want the udiv at %#x, DIVBYZERO", f[6], res.Fault.CFSR, res.Fault.CCR, m4Udiv)
	}
	if f[0] != 10 || f[1] != 0 {
		t.Errorf("stacked r0 %d r1 %d; the divide must not have executed", f[0], f[1])
	}
}

func TestProcessStack(t *testing.T) {
	res := run(t, "fw-m4.elf", 6)
	r := res.Registers
	if r.LR != 0xFFFFFFFD {
		t.Errorf("lr %#x, want 0xfffffffd (thread mode, PSP)", r.LR)
	}
	if r.SP != r.MSP || r.PSP >= ramTop || r.MSP >= ramTop || r.CONTROL&2 != 0 {
		t.Errorf("sp %#x msp %#x psp %#x control %#x", r.SP, r.MSP, r.PSP, r.CONTROL)
	}
	// The frame is on the process stack.
	res.Registers.SP = r.PSP
	if f := stacked(t, res); f[6] != m4StoreLeaf || f[0] != 0x70000020 {
		t.Errorf("PSP frame % x", f)
	}
	want := []string{"HardFault_Handler", "<exception>", "store_leaf", "psp_leaf", "psp_thread", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}

func TestFPExtendedFrame(t *testing.T) {
	res := run(t, "fw-m4.elf", 7)
	r := res.Registers
	if r.LR != 0xFFFFFFE9 || r.CONTROL&4 != 0 {
		t.Errorf("lr %#x control %#x; want 0xffffffe9 (FP frame) and FPCA cleared", r.LR, r.CONTROL)
	}
	// Lazy stacking (FPCCR.LSPEN is 1 out of reset): space reserved, LSPACT
	// set, FPCAR at S0's slot.
	if res.Fault.FPCCR&1 == 0 || res.Fault.FPCAR != r.SP+0x20 {
		t.Errorf("FPCCR %#x FPCAR %#x sp %#x", res.Fault.FPCCR, res.Fault.FPCAR, r.SP)
	}
	if r.FP == nil {
		t.Fatal("no FP registers in the result")
	}
}

func TestUsageFaultEnabled(t *testing.T) {
	res := run(t, "fw-m4.elf", 8)
	if res.Exception != 6 || res.Registers.PC != m4UsageFault || res.Fault.HFSR != 0 || res.Fault.SHCSR&(1<<3) == 0 {
		t.Errorf("exception %d pc %#x HFSR %#x SHCSR %#x; want UsageFault, not escalated, active", res.Exception, res.Registers.PC, res.Fault.HFSR, res.Fault.SHCSR)
	}
}

func TestShadowStackRecursion(t *testing.T) {
	res := run(t, "fw-m4.elf", 9)
	want := []string{"HardFault_Handler", "<exception>", "store_leaf", "recurse", "recurse", "recurse",
		"recurse", "recurse", "recurse", "main", "Reset_Handler"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}

func TestMisalignedStackPad(t *testing.T) {
	res := run(t, "fw-m4.elf", 13)
	f := stacked(t, res)
	if f[7]&(1<<9) == 0 || res.Registers.SP%8 != 0 {
		t.Errorf("stacked xPSR %#x sp %#x; want bit 9 set and an 8-aligned frame", f[7], res.Registers.SP)
	}
}

func TestFetchAndFlashFaults(t *testing.T) {
	res := run(t, "fw-m4.elf", 11)
	if f := stacked(t, res); f[6] != 0x70000000 || res.Fault.CFSR != 1<<8 {
		t.Errorf("jump to unmapped: stacked pc %#x CFSR %#x; want 0x70000000 IBUSERR", f[6], res.Fault.CFSR)
	}
	res = run(t, "fw-m4.elf", 14)
	if res.Fault.CFSR != 0x8200 || res.Fault.BFAR != 0x100 {
		t.Errorf("write to flash: CFSR %#x BFAR %#x", res.Fault.CFSR, res.Fault.BFAR)
	}
}

func TestArmv6MHardFaultOnly(t *testing.T) {
	res := run(t, "fw-m0.elf", 1)
	if res.Exception != 3 || res.Fault.CFSR != 0 || res.Fault.HFSR != 0 || !res.Cause.Forced {
		t.Errorf("exception %d CFSR %#x HFSR %#x cause %+v", res.Exception, res.Fault.CFSR, res.Fault.HFSR, res.Cause)
	}
	if f := stacked(t, res); f[6] != m4StoreLeaf { // same layout on M0
		t.Errorf("stacked pc %#x", f[6])
	}
}

func TestNoFault(t *testing.T) {
	skipWithoutCgo(t)
	_, err := Run(context.Background(), Config{ELF: "testdata/fw-m4.elf",
		Sets: map[string]uint64{"crash_scenario": 12}, MaxInsns: 100_000})
	var nf *NoFaultError
	if !errors.Is(err, ErrNoFault) || !errors.As(err, &nf) || nf.Insns < 100_000 {
		t.Fatalf("err %v; want ErrNoFault after 100000 instructions", err)
	}
	_, err = Run(context.Background(), Config{ELF: "testdata/fw-m4.elf", Call: "mix"})
	if !errors.Is(err, ErrNoFault) {
		t.Fatalf("--call mix: %v; want ErrNoFault (it returns)", err)
	}
}

func TestCall(t *testing.T) {
	res := run(t, "fw-m4.elf", 0, func(c *Config) { c.Call = "store_top"; c.Sets = nil })
	want := []string{"HardFault_Handler", "<exception>", "store_leaf", "store_mid", "store_top"}
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}

func TestBadConfig(t *testing.T) {
	skipWithoutCgo(t)
	for _, cfg := range []Config{
		{ELF: "testdata/fw-m4.elf", Sets: map[string]uint64{"no_such_symbol": 1}},
		{ELF: "testdata/fw-m4.elf", Call: "no_such_function"},
		{ELF: "testdata/fw-m4.elf", CPU: "cortex-a9"},
		{ELF: "testdata/fw.c"},
	} {
		if _, err := Run(context.Background(), cfg); err == nil || errors.Is(err, ErrNoFault) {
			t.Errorf("%+v: err %v, want a configuration error", cfg, err)
		}
	}
}
