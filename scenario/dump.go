package scenario

import (
	"strings"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/unwinders"
)

// Dump builds the faultline.dump/1 content of an emulated fault.
func Dump(res *emu.Result) *crashdump.Dump {
	d := &crashdump.Dump{Format: crashdump.FormatNative, CPU: res.CPU, BuildID: res.BuildID}
	g := res.Registers
	for i := 0; i < 13; i++ {
		d.Regs.Set(unwinders.R0+unwinders.Reg(i), g.R[i])
	}
	for _, r := range []struct {
		reg unwinders.Reg
		v   uint32
	}{
		{unwinders.SP, g.SP}, {unwinders.LR, g.LR}, {unwinders.PC, g.PC}, {unwinders.XPSR, g.XPSR},
		{unwinders.MSP, g.MSP}, {unwinders.PSP, g.PSP}, {unwinders.CONTROL, g.CONTROL},
		{unwinders.PRIMASK, g.PRIMASK}, {unwinders.BASEPRI, g.BASEPRI}, {unwinders.FAULTMASK, g.FAULTMASK},
	} {
		d.Regs.Set(r.reg, r.v)
	}
	if g.FP != nil {
		for i, v := range g.FP.S {
			d.Regs.Set(unwinders.S(i), v)
		}
		d.Regs.Set(unwinders.FPSCR, g.FP.FPSCR)
	}
	fr := res.Fault
	d.Fault = fault.SCB{
		CFSR: fault.Known(fr.CFSR), HFSR: fault.Known(fr.HFSR), MMFAR: fault.Known(fr.MMFAR),
		BFAR: fault.Known(fr.BFAR), SHCSR: fault.Known(fr.SHCSR), CCR: fault.Known(fr.CCR),
		ICSR: fault.Known(fr.ICSR), VTOR: fault.Known(fr.VTOR),
	}
	if g.FP != nil {
		d.Fault.CPACR = fault.Known(fr.CPACR)
		d.Fault.FPCCR = fault.Known(fr.FPCCR)
		d.Fault.FPCAR = fault.Known(fr.FPCAR)
	}
	sps := []uint32{g.SP, g.MSP, g.PSP}
	for _, m := range res.Memory {
		if data, addr, ok := usedPart(m, sps); ok {
			d.Memory = append(d.Memory, unwinders.Region{Name: m.Name, Addr: addr, Data: data})
		}
	}
	for _, m := range res.SCS {
		d.Memory = append(d.Memory, unwinders.Region{Name: "scs", Addr: m.Addr, Data: m.Data})
	}
	if res.Lockup {
		f := res.Cause.Fault
		if strings.HasPrefix(res.CPU, "cortex-m0") {
			// ARMv6-M has no configurable faults: the fault the core
			// could not take was a HardFault (the detail says what
			// ARMv7-M would have called it).
			f = "HardFault"
		}
		d.Lockup = &fault.LockupInfo{Fault: f, PC: res.Cause.PC, HasPC: true, Detail: res.Cause.Detail}
	}
	if res.Truth != nil {
		t := &crashdump.Truth{Source: "emulator-shadow-stack"}
		for _, f := range res.Truth {
			tf := crashdump.TruthFrame{PC: f.PC, HasPC: true, Function: f.Function}
			if f.Kind == emu.FrameException {
				tf = crashdump.TruthFrame{Kind: "exception", PC: f.ExcReturn, HasPC: f.ExcReturn != 0}
			}
			t.Frames = append(t.Frames, tf)
		}
		for _, th := range res.Threads {
			tt := crashdump.ThreadTruth{Frame: th.Frame, SP: th.SP, HasSP: true, Frames: []crashdump.TruthFrame{}}
			for _, f := range th.Frames {
				tt.Frames = append(tt.Frames, crashdump.TruthFrame{PC: f.PC, HasPC: true, Function: f.Function})
			}
			t.Threads = append(t.Threads, tt)
		}
		if res.TruthTruncated {
			t.Stop = "the shadow call stack overflowed: outer frames are missing"
		}
		d.Truth = t
	}
	return d
}

// usedPart trims a RAM copy to the part the firmware used: from the lowest
// non-zero byte (or the lowest stack pointer in the region, if lower) to
// the highest non-zero byte (or the region's end when a stack pointer lies
// in it: the stack grows down from there), rounded to 16 bytes. RAM starts
// zeroed, so what is left out was never written with anything but zero.
func usedPart(m emu.Memory, sps []uint32) ([]byte, uint32, bool) {
	n := len(m.Data)
	lo, hi := n, 0
	for i, b := range m.Data {
		if b != 0 {
			lo = i
			break
		}
	}
	for i := n - 1; i >= 0; i-- {
		if m.Data[i] != 0 {
			hi = i + 1
			break
		}
	}
	for _, sp := range sps {
		if sp >= m.Addr && uint64(sp) <= uint64(m.Addr)+uint64(n) && sp != 0 {
			off := int(sp - m.Addr)
			lo = min(lo, off)
			hi = n
		}
	}
	if lo >= hi {
		return nil, 0, false
	}
	lo &^= 15
	hi = min(n, (hi+15)&^15)
	return m.Data[lo:hi], m.Addr + uint32(lo), true
}
