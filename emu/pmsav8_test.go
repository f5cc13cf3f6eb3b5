package emu

import (
	"reflect"
	"testing"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Addresses from `arm-none-eabi-nm` and `arm-none-eabi-objdump -d` of
// testdata/pmsav8-m33.elf (testdata/Makefile; the region map is in the
// comment at the top of testdata/pmsav8.c).
//
// Oracle: testdata/pmsav8-qemu.sh relinks the same source for QEMU 7.2's
// mps2-an505 (Cortex-M33, code at 0x10000000, RAM at 0x38000000) and
// prints the state at the handler under GDB. For every scenario QEMU shows
// the fault, CFSR, HFSR, MMFAR (at the relinked address), SHCSR, the
// stacked PC and the register read-backs these tests expect, except
// MPU_TYPE: QEMU's M33 has 16 regions (0x1000), the model 8 (0x800); both
// are Cortex-M33 configurations.
const (
	v8MemManage  = 0x44 // MemManage_Handler
	v8LoadWord   = 0x8a // load_word: ldr r0, [r0]
	v8StoreWord  = 0x8e // store_word: str r1, [r0]
	v8Udf        = 0xa4 // do_udf: udf #1
	v8XNFunction = 0x3c0
	v8CallXNRet  = 0x99 // call_xn: return address of bl xn_function
	v8DataWord   = 0x20000000
	v8Readback   = 0x20000024
	v8Progress   = 0x20000044
	v8AreaRO     = 0x20000060 // areas.ro: region 2, read-only
	v8AreaPriv   = 0x20000080 // areas.priv: region 3, privileged only
	v8AreaHole   = 0x200000a0 // areas.hole: no region
)

func runV8(t *testing.T, scenario uint64) *Result {
	t.Helper()
	res := run(t, "pmsav8-m33.elf", scenario)
	if res.CPU != "cortex-m33" {
		t.Fatalf("ran as %s, want cortex-m33 (from the ELF's build attributes)", res.CPU)
	}
	return res
}

// TestPMSAv8Allowed: with seven regions programmed (RBAR/RLAR, MAIR0/1,
// PRIVDEFENA) every access of testdata/pmsav8.c's allowed() is permitted:
// a read of a read-only region, a privileged store to a privileged-only
// region, a privileged access to the background map, code right after an
// XN granule, and, unprivileged, reads of a read-only-for-all region and a
// store to read/write-for-all RAM. The run must get to its UDF. The
// register read-backs check the PMSAv8 register file, including the
// RBAR_An/RLAR_An aliases.
func TestPMSAv8Allowed(t *testing.T) {
	res := runV8(t, 1)
	wantCause(t, res, "UsageFault", v8Udf, "UNDEFINSTR", "FORCED")
	if p, _ := wordAt(res, v8Progress); p != 6 {
		t.Errorf("allowed() got to step %d of 6 before faulting", p)
	}
	want := []uint32{
		0x800,                           // MPU_TYPE: DREGION 8
		0x04aa,                          // MAIR0
		0x44000000,                      // MAIR1
		v8AreaRO | 3<<1 | 1, 0x20000061, // region 2: RO any, XN; LIMIT ro+31, AttrIndx 0, EN
		v8XNFunction | 3<<1 | 1, // MPU_RBAR_A1 with RNR=4: region 5
		0x3e1,                   // MPU_RLAR_A2 with RNR=4: region 6, LIMIT 0x3ff (the image's end)
		5,                       // MPU_CTRL: ENABLE, PRIVDEFENA
	}
	for i, w := range want {
		if got, _ := wordAt(res, v8Readback+4*uint32(i)); got != w {
			t.Errorf("readback[%d] = %#x, want %#x", i, got, w)
		}
	}
	for _, c := range []struct{ addr, want uint32 }{{v8AreaPriv + 4, 0x11}, {v8AreaHole + 8, 0x22}, {v8DataWord, 0x33}} {
		if got, _ := wordAt(res, c.addr); got != c.want {
			t.Errorf("word %#x = %#x, want %#x (an allowed store)", c.addr, got, c.want)
		}
	}
	if res.Registers.CONTROL&1 == 0 || res.Fault.CFSR != cfsrUNDEFINSTR {
		t.Errorf("CONTROL %#x CFSR %#x; want nPRIV still set and only UNDEFINSTR", res.Registers.CONTROL, res.Fault.CFSR)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "do_udf", "allowed", "main", "Reset_Handler")
}

// TestPMSAv8ReadOnly: a privileged store to a read-only region is a
// MemManage DACCVIOL with MMFAR; with SHCSR.MEMFAULTENA clear it escalates
// to HardFault (HFSR.FORCED), with it set MemManage itself is taken.
func TestPMSAv8ReadOnly(t *testing.T) {
	res := runV8(t, 2)
	wantCause(t, res, "MemManage", v8StoreWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Exception != excHardFault || res.Fault.CFSR != 0x82 || res.Fault.MMFAR != v8AreaRO+8 || res.Fault.HFSR != hfsrFORCED {
		t.Errorf("exception %d CFSR %#x MMFAR %#x HFSR %#x; want HardFault, 0x82, %#x, FORCED",
			res.Exception, res.Fault.CFSR, res.Fault.MMFAR, res.Fault.HFSR, v8AreaRO+8)
	}
	if f := stacked(t, res); f[6] != v8StoreWord || f[0] != v8AreaRO+8 || f[1] != 5 {
		t.Errorf("stacked pc %#x r0 %#x r1 %d; want the store at %#x, before it ran", f[6], f[0], f[1], v8StoreWord)
	}
	if v, _ := wordAt(res, v8AreaRO+8); v != 0 {
		t.Errorf("the denied store landed: %#x", v)
	}
	if res.Fault.SHCSR != 1<<2 {
		t.Errorf("SHCSR %#x, want HARDFAULTACT (ARMv8-M bit 2) alone", res.Fault.SHCSR)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "store_word", "main", "Reset_Handler")

	res = runV8(t, 3)
	wantCause(t, res, "MemManage", v8StoreWord, "DACCVIOL", "MMARVALID")
	if res.Exception != excMemManage || res.Registers.PC != v8MemManage || res.Fault.HFSR != 0 ||
		res.Fault.SHCSR != 1<<16|1 || res.Fault.MMFAR != v8AreaRO+8 {
		t.Errorf("exception %d pc %#x HFSR %#x SHCSR %#x MMFAR %#x; want MemManage taken and active, not escalated",
			res.Exception, res.Registers.PC, res.Fault.HFSR, res.Fault.SHCSR, res.Fault.MMFAR)
	}
}

// TestPMSAv8ExecuteNever: a call into a region with RBAR.XN set is a
// MemManage IACCVIOL (no MMFAR) at the function's first instruction.
func TestPMSAv8ExecuteNever(t *testing.T) {
	res := runV8(t, 4)
	wantCause(t, res, "MemManage", v8XNFunction, "IACCVIOL", "FORCED")
	if res.Fault.CFSR != cfsrIACCVIOL || res.Cause.HasAddress {
		t.Errorf("CFSR %#x cause %+v; want IACCVIOL alone, no MMFAR", res.Fault.CFSR, res.Cause)
	}
	if f := stacked(t, res); f[6] != v8XNFunction || f[5] != v8CallXNRet {
		t.Errorf("stacked pc %#x lr %#x; want %#x, %#x", f[6], f[5], v8XNFunction, v8CallXNRet)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "xn_function", "call_xn", "main", "Reset_Handler")
}

// TestPMSAv8Background: without PRIVDEFENA an address no region covers is
// denied even to privileged code; a covered one next to it is not.
func TestPMSAv8Background(t *testing.T) {
	res := runV8(t, 5)
	wantCause(t, res, "MemManage", v8LoadWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.MMFAR != v8AreaHole+12 {
		t.Errorf("MMFAR %#x, want %#x (areas.hole[3])", res.Fault.MMFAR, v8AreaHole+12)
	}
}

// TestPMSAv8Unprivileged: AP=0b00 (read/write, privileged only): the
// privileged store lands, the unprivileged read faults in Thread mode.
func TestPMSAv8Unprivileged(t *testing.T) {
	res := runV8(t, 6)
	wantCause(t, res, "MemManage", v8LoadWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.MMFAR != v8AreaPriv {
		t.Errorf("MMFAR %#x, want %#x", res.Fault.MMFAR, v8AreaPriv)
	}
	if v, _ := wordAt(res, v8AreaPriv); v != 1 {
		t.Errorf("areas.priv[0] = %d, want 1 (privileged store allowed)", v)
	}
	if f := stacked(t, res); f[7]&0x1ff != 0 || f[0] != v8AreaPriv || res.Registers.CONTROL&1 == 0 {
		t.Errorf("stacked xPSR %#x r0 %#x CONTROL %#x: want an unprivileged Thread-mode read of %#x", f[7], f[0], res.Registers.CONTROL, v8AreaPriv)
	}
}

// TestPMSAv8Overlap: two enabled regions that both allow reads overlap on
// data_word; reading it is a MemManage fault (no region priority in
// PMSAv8). The model used to take the lower-numbered region and allow it.
func TestPMSAv8Overlap(t *testing.T) {
	res := runV8(t, 7)
	wantCause(t, res, "MemManage", v8LoadWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.MMFAR != v8DataWord {
		t.Errorf("MMFAR %#x, want %#x", res.Fault.MMFAR, v8DataWord)
	}
}

// TestPMSAv8Aliases: region 7 programmed through MPU_RBAR_A3/MPU_RLAR_A3
// with MPU_RNR=4 (CMSIS ARM_MPU_Load writes regions this way) makes
// areas.hole read-only: the read passes, the store faults. The model used
// to ignore the alias registers.
func TestPMSAv8Aliases(t *testing.T) {
	res := runV8(t, 8)
	wantCause(t, res, "MemManage", v8StoreWord, "DACCVIOL", "MMARVALID", "FORCED")
	if res.Fault.MMFAR != v8AreaHole+16 {
		t.Errorf("MMFAR %#x, want %#x", res.Fault.MMFAR, v8AreaHole+16)
	}
}

// TestPMSAv8Registers checks the register file against ARMv8-M ARM D1.2
// without running code: RNR selects the region of RBAR/RLAR; the aliases
// reach RNR[7:2]:n; PMSAv8 RBAR has no VALID/REGION fields (bit 4 is SH);
// MAIR is stored; on ARMv7-M the aliases reach the region RNR selects.
func TestPMSAv8Registers(t *testing.T) {
	s := newSCS(cpus[5])
	s.Write(addrMPURNR, 4, 6)
	s.Write(addrMPURBAR, 4, 0x20000017) // SH=0b10, AP=0b11, XN: not VALID/REGION
	s.Write(addrMPURASR, 4, 0x2000ffe3)
	s.Write(addrMPURBAR+8*2, 4, 0x1003) // RBAR_A2, RNR=6: region 4+2 = 6 again
	if s.MPURNR != 6 || s.MPURBAR[6] != 0x1003 || s.MPURASR[6] != 0x2000ffe3 {
		t.Errorf("RNR %d RBAR[6] %#x RLAR[6] %#x", s.MPURNR, s.MPURBAR[6], s.MPURASR[6])
	}
	s.Write(addrMPURASR+8*3, 4, 0x3fe1) // RLAR_A3, RNR=6: region 7
	if s.MPURASR[7] != 0x3fe1 || s.Read(addrMPURASR+8*3, 4) != 0x3fe1 || s.Read(addrMPURBAR+8*2, 4) != 0x1003 {
		t.Errorf("RLAR[7] %#x, alias reads %#x %#x", s.MPURASR[7], s.Read(addrMPURASR+8*3, 4), s.Read(addrMPURBAR+8*2, 4))
	}
	s.Write(addrMPUMAIR0, 4, 0x44ff04aa)
	s.Write(addrMPUMAIR1+1, 1, 0x77)
	if s.Read(addrMPUMAIR0, 4) != 0x44ff04aa || s.Read(addrMPUMAIR1, 4) != 0x7700 {
		t.Errorf("MAIR0 %#x MAIR1 %#x", s.Read(addrMPUMAIR0, 4), s.Read(addrMPUMAIR1, 4))
	}

	v7 := newSCS(cpus[3])
	v7.Write(addrMPURNR, 4, 2)
	v7.Write(addrMPURBAR+8, 4, 0x20000000)         // RBAR_A1: region 2 (no VALID)
	v7.Write(addrMPURASR+8, 4, 9<<1|1)             // RASR_A1
	v7.Write(addrMPURBAR+16, 4, 0x20001000|1<<4|5) // RBAR_A2 with VALID: region 5
	if v7.MPURBAR[2] != 0x20000000 || v7.MPURASR[2] != 9<<1|1 || v7.MPURNR != 5 || v7.MPURBAR[5] != 0x20001000 {
		t.Errorf("v7 aliases: RBAR[2] %#x RASR[2] %#x RNR %d RBAR[5] %#x", v7.MPURBAR[2], v7.MPURASR[2], v7.MPURNR, v7.MPURBAR[5])
	}
	if v := v7.Read(addrMPURBAR+24, 4); v != 0x20001005 {
		t.Errorf("v7 RBAR_A3 reads %#x, want the base with REGION=5", v)
	}
	if v := v7.Read(addrMPUMAIR0, 4); v != 0 {
		t.Errorf("MAIR0 on ARMv7-M reads %#x, want 0 (reserved)", v)
	}
}

// TestPMSAv8GoAndCAgree: the MPU decision exists twice, in Go (exception
// stacking, faults Unicorn reports) and in C (the data and fetch checks of
// emu/uc/check.c). For a PMSAv8 map with overlapping, privileged-only,
// read-only, XN and uncovered ranges, both must decide every access alike.
func TestPMSAv8GoAndCAgree(t *testing.T) {
	skipWithoutCgo(t)
	e, err := uc.Open(uc.CortexM33)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tr, err := e.NewTracker(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := newSCS(cpus[5])
	set := func(n int, rbar, rlar uint32) { s.MPURBAR[n], s.MPURASR[n] = rbar, rlar }
	set(0, 0x00000000|3<<1, 0x00000fe1)   // RO any, executable
	set(1, 0x20000000|1<<1|1, 0x200003e1) // RW any, XN
	set(2, 0x20000200|0<<1|1, 0x200002e1) // overlaps region 1: faults
	set(3, 0x20000400|0<<1|1, 0x200004e1) // RW privileged only
	set(4, 0x20000500|2<<1|1, 0x200005e1) // RO privileged only
	set(5, 0x20000600|3<<1|0, 0x200006e0) // EN clear: ignored
	for _, ctrl := range []uint32{mpuEnable, mpuEnable | mpuPRIVDEFENA} {
		s.MPUCtrl = ctrl
		tr.SetChecks(false, true, true, ctrl, &s.MPURBAR, &s.MPURASR)
		for a := uint32(0); a < 0x1000; a += 0x20 {
			for _, addr := range []uint32{a, 0x20000000 + a} {
				for kind := mpuRead; kind <= mpuFetch; kind++ {
					for _, priv := range []bool{true, false} {
						g, c := s.mpuDeniedPriv(addr, kind, priv), tr.MPUDenied(addr, int(kind), priv)
						if g != c {
							t.Errorf("ctrl %d addr %#x kind %d priv %v: Go denied=%v, C denied=%v", ctrl, addr, kind, priv, g, c)
						}
					}
				}
			}
		}
	}
	// Spot checks of the decisions themselves.
	s.MPUCtrl = mpuEnable | mpuPRIVDEFENA
	for _, c := range []struct {
		addr   uint32
		kind   mpuAccess
		priv   bool
		denied bool
	}{
		{0x100, mpuFetch, false, false}, {0x100, mpuWrite, true, true},
		{0x20000100, mpuWrite, false, false}, {0x20000100, mpuFetch, true, true},
		{0x20000210, mpuRead, true, true}, // overlap
		{0x20000410, mpuWrite, true, false}, {0x20000410, mpuRead, false, true},
		{0x20000510, mpuRead, true, false}, {0x20000510, mpuWrite, true, true},
		{0x20000610, mpuRead, true, false}, {0x20000610, mpuRead, false, true}, // background
	} {
		if got := s.mpuDeniedPriv(c.addr, c.kind, c.priv); got != c.denied {
			t.Errorf("%#x kind %d priv %v: denied=%v, want %v", c.addr, c.kind, c.priv, got, c.denied)
		}
	}
}

// wantTruth compares the truth's function list.
func wantTruth(t *testing.T, res *Result, want ...string) {
	t.Helper()
	if got := functions(res); !reflect.DeepEqual(got, want) {
		t.Errorf("truth %v, want %v", got, want)
	}
}
