package emu

import (
	"reflect"
	"testing"
)

// Asynchronous exceptions raised by the firmware itself (testdata/irq.c,
// built as irq-m3.elf): SysTick from its own registers, BASEPRI masking,
// preemption and waiting between NVIC interrupts. Addresses and variables
// from `arm-none-eabi-nm` and `arm-none-eabi-objdump -d` of irq-m3.elf.
//
// Oracle: irq-m3.elf runs unchanged on QEMU 7.2's mps2-an385 (Cortex-M3,
// flash at 0, RAM at 0x20000000). Under GDB with crash_scenario set at main
// (the commands of testdata/pmsav8-qemu.sh with -M mps2-an385), scenarios
// 3-5 stop in HardFault_Handler with the variables, NVIC read-backs,
// interrupted PCs and backtraces these tests expect (GDB adds the inlined
// barrier()/set_basepri() frames). QEMU's SysTick counts time, not
// instructions, so scenarios 1-2 are checked against the harness's
// definition (one count per instruction) only.
const (
	irqCrashLeaf   = 0xcc // crash_leaf: str r0, [r3] (0x70000000)
	irqCrashStore  = 0xd0
	irqBasepriMSR  = 0x212 // basepri_test: msr basepri, r2 (lowers it to 0)
	irqBasepriISB  = 0x216 // the isb after it
	irqIRQ2Ret     = 0xbe  // IRQ2_Handler: after pending IRQ 3 and "dsb; isb"
	irqPreemptRet  = 0x252 // preempt_test: after pending IRQ 2 and "dsb; isb"
	irqNorder      = 0x20000000
	irqOrder       = 0x20000004
	irqPhase       = 0x20000024
	irqIRQ1Phase   = 0x20000028
	irqEarly       = 0x2000002c
	irqIRQ0Phase   = 0x20000030
	irqISPRInIRQ3  = 0x20000034
	irqIABRInIRQ3  = 0x20000038
	irqTicks       = 0x20000044
	irqTickCVR     = 0x20000048
	irqPolls       = 0x2000006c
	irqPendMasked  = 0x20000070
	irqExcReturnHF = 0xFFFFFFF1 // HardFault taken from a handler
	irqExcReturnTh = 0xFFFFFFF9 // taken from Thread mode on MSP
)

func runIRQ(t *testing.T, scenario uint64, reload uint64) *Result {
	t.Helper()
	return run(t, "irq-m3.elf", scenario, func(c *Config) {
		c.Sets = map[string]uint64{"crash_scenario": scenario, "reload": reload}
	})
}

func word(t *testing.T, res *Result, addr uint32) uint32 {
	t.Helper()
	v, ok := wordAt(res, addr)
	if !ok {
		t.Fatalf("%#x is not in the result's memory", addr)
	}
	return v
}

// exceptionLevels returns the exception numbers and EXC_RETURN values of
// the truth's exception pseudo-frames, innermost first.
func exceptionLevels(res *Result) (exc []int, ret []uint32) {
	for _, f := range res.Truth {
		if f.Kind == FrameException {
			exc = append(exc, f.Exception)
			ret = append(ret, f.ExcReturn)
		}
	}
	return exc, ret
}

// TestSysTickFirmware: the firmware enables SysTick (SYST_RVR = reload,
// TICKINT, ENABLE); its handler counts and crashes on the fifth tick. The
// harness's SysTick clock is the instruction count, so the fifth tick
// comes 5*(reload+1) instructions after the counter started: halving the
// period must take exactly 5*500 instructions off the run (up to the
// 4-instruction block in which the tick is noticed), and each handler must
// read SYST_CVR within a few instructions of the reload.
func TestSysTickFirmware(t *testing.T) {
	var insns [2]uint64
	for i, reload := range []uint64{999, 499} {
		res := runIRQ(t, 1, reload)
		wantCause(t, res, "BusFault", irqCrashStore, "PRECISERR", "BFARVALID", "FORCED")
		if n := word(t, res, irqTicks); n != 5 {
			t.Errorf("reload %d: %d SysTick handler entries, want 5", reload, n)
		}
		for k := uint32(0); k < 5; k++ {
			cvr := word(t, res, irqTickCVR+4*k)
			if cvr > uint32(reload) || uint32(reload)-cvr > 8 {
				t.Errorf("reload %d: tick %d read SYST_CVR = %d, want within 8 counts below the reload", reload, k, cvr)
			}
		}
		wantTruth(t, res, "HardFault_Handler", "<exception>", "crash_leaf", "tick_crash", "SysTick_Handler", "<exception>", "idle", "main", "Reset_Handler")
		if exc, ret := exceptionLevels(res); !reflect.DeepEqual(exc, []int{excHardFault, excSysTick}) ||
			!reflect.DeepEqual(ret, []uint32{irqExcReturnHF, irqExcReturnTh}) {
			t.Errorf("reload %d: exception levels %v EXC_RETURN %#x", reload, exc, ret)
		}
		if res.Fault.SHCSR&(1<<11) == 0 {
			t.Errorf("reload %d: SHCSR %#x: SysTick should be active", reload, res.Fault.SHCSR)
		}
		period := 5 * (reload + 1)
		if res.Insns < period || res.Insns > period+400 {
			t.Errorf("reload %d: crashed after %d instructions, want %d plus the startup and handler code", reload, res.Insns, period)
		}
		insns[i] = res.Insns
	}
	if d := int64(insns[0]) - int64(insns[1]); d < 2500-3 || d > 2500+3 {
		t.Errorf("the fifth tick came %d instructions earlier with half the period, want 2500 (+-3)", d)
	}
}

// TestSysTickPolled: SysTick enabled without TICKINT: COUNTFLAG is set at
// each wrap and cleared by reading SYST_CSR, no exception is taken.
func TestSysTickPolled(t *testing.T) {
	res := runIRQ(t, 2, 299)
	wantCause(t, res, "BusFault", irqCrashStore, "PRECISERR", "BFARVALID", "FORCED")
	if p, n := word(t, res, irqPolls), word(t, res, irqTicks); p != 3 || n != 0 {
		t.Errorf("COUNTFLAG seen %d times (want 3), SysTick handler entered %d times (want 0)", p, n)
	}
	if res.Insns < 3*300 || res.Insns > 4*300+200 {
		t.Errorf("%d instructions: three wraps of a 300-count period need at least 900", res.Insns)
	}
	if res.Fault.ICSR&icsrPENDSTSET != 0 {
		t.Errorf("ICSR %#x: SysTick pending without TICKINT", res.Fault.ICSR)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "crash_leaf", "poll_systick", "main", "Reset_Handler")
}

// TestBASEPRIMasking: with BASEPRI = 0x40, IRQ 0 (priority 0x80) pended by
// the firmware stays pending through 50 loop iterations and the return
// from IRQ 1 (priority 0x20, taken at once: BASEPRI does not mask it); it
// is taken right after "msr basepri" lowers BASEPRI to 0, and crashes.
func TestBASEPRIMasking(t *testing.T) {
	res := runIRQ(t, 3, 0)
	wantCause(t, res, "BusFault", irqCrashStore, "PRECISERR", "BFARVALID", "FORCED")
	if v := word(t, res, irqPendMasked); v != 1 {
		t.Errorf("NVIC_ISPR0 bit 0 read %d under BASEPRI, want 1 (pending, not taken)", v)
	}
	if p1, p0 := word(t, res, irqIRQ1Phase), word(t, res, irqIRQ0Phase); p1 != 1 || p0 != 2 {
		t.Errorf("IRQ 1 ran in phase %d (want 1: not masked), IRQ 0 in phase %d (want 2: only once BASEPRI is 0)", p1, p0)
	}
	if ph := word(t, res, irqPhase); ph != 2 {
		t.Errorf("phase %d at the crash, want 2", ph)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "crash_leaf", "IRQ0_Handler", "<exception>", "basepri_test", "main", "Reset_Handler")
	if exc, _ := exceptionLevels(res); !reflect.DeepEqual(exc, []int{excHardFault, excIRQ0}) {
		t.Errorf("exception levels %v", exc)
	}
	// Taken at the first instruction boundary after the MSR, before the
	// ISB, as on QEMU (0x216). The architecture guarantees the change only
	// after a context synchronization event (the ISB), so the boundary
	// after the ISB would be correct too.
	if pc := res.Truth[5].PC; pc != irqBasepriISB && pc != irqBasepriISB+4 {
		t.Errorf("IRQ 0 interrupted %#x, want the boundary after the msr at %#x (%#x or %#x)", pc, irqBasepriMSR, irqBasepriISB, irqBasepriISB+4)
	}
	if res.Registers.BASEPRI != 0 {
		t.Errorf("BASEPRI %#x at the fault, want 0", res.Registers.BASEPRI)
	}
}

// TestPreemptionNested: IRQ 2 (priority 0x80) pends IRQ 4 (0x80) and IRQ 5
// (0xC0): neither preempts it; then IRQ 3 (0x40), which does, and crashes.
// The HardFault is nested three levels deep and the truth shows every
// level with its EXC_RETURN.
func TestPreemptionNested(t *testing.T) {
	res := runIRQ(t, 4, 0)
	wantCause(t, res, "BusFault", irqCrashStore, "PRECISERR", "BFARVALID", "FORCED")
	if n, e := word(t, res, irqNorder), word(t, res, irqEarly); n != 2 || e != 0 {
		t.Errorf("%d handler records, %d handlers ran before IRQ 3 was pended; want 2 and 0", n, e)
	}
	if o := [2]uint32{word(t, res, irqOrder), word(t, res, irqOrder+4)}; o != [2]uint32{2, 3} {
		t.Errorf("order %v, want IRQ 2 then IRQ 3", o)
	}
	if p, a := word(t, res, irqISPRInIRQ3), word(t, res, irqIABRInIRQ3); p != 1<<4|1<<5 || a != 1<<2|1<<3 {
		t.Errorf("in IRQ 3: NVIC_ISPR0 %#x (want IRQ 4 and 5 pending), NVIC_IABR0 %#x (want IRQ 2 and 3 active)", p, a)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "crash_leaf", "IRQ3_Handler", "<exception>",
		"IRQ2_Handler", "<exception>", "preempt_test", "main", "Reset_Handler")
	exc, ret := exceptionLevels(res)
	if !reflect.DeepEqual(exc, []int{excHardFault, excIRQ0 + 3, excIRQ0 + 2}) ||
		!reflect.DeepEqual(ret, []uint32{irqExcReturnHF, irqExcReturnHF, irqExcReturnTh}) {
		t.Errorf("exception levels %v EXC_RETURN %#x", exc, ret)
	}
	if res.Truth[5].PC != irqIRQ2Ret || res.Truth[7].PC != irqPreemptRet {
		t.Errorf("interrupted PCs %#x, %#x; want %#x in IRQ2_Handler, %#x in preempt_test", res.Truth[5].PC, res.Truth[7].PC, irqIRQ2Ret, irqPreemptRet)
	}
	if res.Registers.LR != irqExcReturnHF {
		t.Errorf("LR %#x", res.Registers.LR)
	}
}

// TestPreemptionWaits: the same without the crash in IRQ 3: IRQ 3 returns
// into IRQ 2, which finishes; then the waiting interrupts run by priority,
// IRQ 4 (0x80) before IRQ 5 (0xC0), each taken from Thread mode with no
// thread instruction in between (tail-chaining), and IRQ 5 crashes.
func TestPreemptionWaits(t *testing.T) {
	res := runIRQ(t, 5, 0)
	wantCause(t, res, "BusFault", irqCrashStore, "PRECISERR", "BFARVALID", "FORCED")
	var order []uint32
	for i := uint32(0); i < word(t, res, irqNorder) && i < 8; i++ {
		order = append(order, word(t, res, irqOrder+4*i))
	}
	if want := []uint32{2, 3, 0x33, 0x22, 4, 5}; !reflect.DeepEqual(order, want) {
		t.Errorf("handler order %#x, want %#x", order, want)
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "crash_leaf", "IRQ5_Handler", "<exception>", "preempt_test", "main", "Reset_Handler")
	if exc, _ := exceptionLevels(res); !reflect.DeepEqual(exc, []int{excHardFault, excIRQ0 + 5}) {
		t.Errorf("exception levels %v", exc)
	}
	if res.Truth[5].PC != irqPreemptRet {
		t.Errorf("IRQ 5 interrupted %#x, want %#x", res.Truth[5].PC, irqPreemptRet)
	}
}
