package emu

import (
	"encoding/binary"
	"fmt"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Bits of xPSR and CONTROL (B1.4.2, B1.4.4).
const (
	xpsrT       = 1 << 24
	xpsrAlign   = 1 << 9 // stacked xPSR: SP was realigned on entry
	xpsrITMask  = 3<<25 | 0x3f<<10
	controlPriv = 1 << 0 // nPRIV
	controlSP   = 1 << 1 // SPSEL
	controlFPCA = 1 << 2
	controlSFPA = 1 << 3 // ARMv8-M with the FP and Security Extensions
	// retpsrSFPA is CONTROL_S.SFPA in the stacked xPSR (RETPSR) on ARMv8-M.
	retpsrSFPA = 1 << 20

	frameBasic    = 0x20
	frameExtended = 0x68
)

// setSysState makes xpsr, control, msp and psp the core's state. Unicorn
// ignores CONTROL.SPSEL writes in Handler mode on v7-M and MSP/PSP/CONTROL
// writes in unprivileged Thread mode (docs/unicorn.md), so the writes go
// through privileged Thread mode first: enter Handler mode, drop nPRIV,
// switch to Thread mode, write CONTROL and both stack pointers, then set
// the final xPSR and CONTROL. The last write of APSR_NZCV rebuilds the
// translator's cached flags (trap 3).
func (m *machine) setSysState(xpsr, control, msp, psp uint32) error {
	e := m.eng
	flags := xpsr & 0xF80F0000
	steps := []struct {
		r uc.Reg
		v uint32
	}{
		{uc.RegXPSR, flags | xpsrT | excHardFault},
		{uc.RegCONTROL, control &^ controlPriv},
		{uc.RegXPSR, flags | xpsrT},
		{uc.RegCONTROL, control &^ controlPriv},
		{uc.RegMSP, msp},
		{uc.RegPSP, psp},
		{uc.RegXPSR, xpsr},
		{uc.RegCONTROL, control},
		{uc.RegAPSRNZCV, xpsr & 0xF8000000},
	}
	for _, s := range steps {
		if err := e.RegWrite(s.r, uint64(s.v)); err != nil {
			return fmt.Errorf("writing system registers: %w", err)
		}
	}
	return nil
}

// entryFault is a fault of exception entry's own stacking (ARMv7-M ARM
// B1.5.6 PushStack; the derived exception rules of B1.5.12 as QEMU applies
// them): a stack word that the MPU denies is MSTKERR (MemManage), one that
// no writable memory backs is STKERR (BusFault). Stacking writes the words
// in the pseudocode's order (r0, r1, r2, r3, r12, lr, return address,
// xPSR, then the FP part) and stops at the first one that faults, so the
// frame in memory is incomplete: the words before it were written, the rest
// keep their old contents (real Cortex-M3/M4 stack PC and xPSR first, so on
// silicon a different subset may land). SP is moved to the frame anyway.
// The derived exception is then taken instead of the one being entered,
// without stacking again: it must have a higher priority than the exception
// being entered, else it escalates to HardFault (HFSR.FORCED), and when
// that is HardFault or NMI itself the core locks up. The exception being
// entered stays pending.
type entryFault struct {
	during  int    // the exception whose entry stacking faulted
	derived int    // excMemManage or excBusFault
	cfsr    uint32 // cfsrMSTKERR or cfsrSTKERR
	addr    uint32 // the first stack address that faulted
	taken   int    // the exception taken instead; 0 for a lockup
	forced  bool   // escalated to HardFault
	ret     uint32 // the return address of the frame
}

// addTo adds the stacking fault to the cause of the fault whose entry it
// was.
func (ef *entryFault) addTo(c *Cause) {
	c.Bits = append(c.Bits, bitNames(ef.cfsr, 0)...)
	if ef.forced && !c.Forced {
		c.Forced = true
		c.Bits = append(c.Bits, "FORCED")
	}
	c.Detail += "; " + ef.describe()
}

func (ef *entryFault) describe() string {
	what := "the MPU denied it (MSTKERR)"
	if ef.derived == excBusFault {
		what = "no writable memory there (STKERR)"
	}
	s := fmt.Sprintf("stacking the exception frame for %s faulted at %#08x: %s, the frame is incomplete (e.g. a stack overflow)",
		describeException(ef.during), ef.addr, what)
	switch {
	case ef.taken == 0:
		s += "; the derived fault cannot be taken: lockup"
	case ef.forced:
		s += "; the derived fault escalated to HardFault"
	}
	return s
}

// entryFaultResult is the Result for an exception entry (interrupt,
// SVCall) whose stacking faulted inside a hook: the core is at the derived
// exception's handler, or locked up.
func (m *machine) entryFaultResult(ef *entryFault) (*Result, error) {
	c := Cause{Fault: excNames[ef.derived], Bits: bitNames(ef.cfsr, 0), PC: ef.ret, Detail: ef.describe()}
	if ef.forced {
		c.Forced = true
		c.Bits = append(c.Bits, "FORCED")
	}
	res, err := m.result(c)
	if err != nil {
		return nil, err
	}
	res.Lockup = ef.taken == 0
	return res, nil
}

// stackWritable reports whether a stacking write at a reaches writable
// memory.
func (m *machine) stackWritable(a uint32) bool {
	for _, r := range m.regions {
		if r.contains(a) {
			return r.Zero || r.Perm&uc.PermWrite != 0
		}
	}
	return false
}

// activeChanged tells the C checks whether an exception with negative
// priority is active (the MPU is then off unless HFNMIENA).
func (m *machine) activeChanged() {
	neg := false
	for _, a := range m.active {
		if m.scs.priority(a) < 0 {
			neg = true
		}
	}
	m.tr.SetNegativePriority(neg)
}

// enterException performs exception entry for exception exc with return
// address ret (ARMv7-M ARM B1.5.6 PushStack and ExceptionTaken; ARMv6-M
// B1.5.6; docs/unicorn.md "Synthesizing a fault entry"): the basic or
// extended frame goes on the active stack, realigned to 8 bytes with
// stacked xPSR bit 9; LR gets EXC_RETURN (B1.5.8); CONTROL.SPSEL and FPCA
// are cleared; IPSR becomes exc; PC is the vector. The caller has set the
// fault status registers. When the stacking itself faults it returns the
// entryFault (see there): the derived exception was taken instead, or, if
// entryFault.taken is 0, the core locked up and nothing but the stack
// memory changed.
func (m *machine) enterException(exc int, ret uint32) (*entryFault, error) {
	var r [5]uint32 // r0-r3, r12
	for i := 0; i < 4; i++ {
		r[i] = m.reg(uc.RegR(i))
	}
	r[4] = m.reg(uc.RegR(12))
	lr := m.reg(uc.RegLR)
	xpsr := m.reg(uc.RegXPSR)
	control := m.reg(uc.RegCONTROL)
	msp := m.sysReg(uc.RegMSP)
	psp := m.sysReg(uc.RegPSP)
	if m.hookErr != nil {
		return nil, m.hookErr
	}
	thread := xpsr&0x1ff == 0
	onPSP := thread && control&controlSP != 0
	fpca := m.cpu.fp && control&controlFPCA != 0
	priv := !thread || control&controlPriv == 0

	sp := msp
	if onPSP {
		sp = psp
	}
	size := uint32(frameBasic)
	if fpca {
		size = frameExtended
	}
	stacked := xpsr &^ xpsrAlign
	if m.faultITSet {
		// A synchronous fault: the IT bits of the faulting instruction
		// (IT[1:0] in bits 26:25, IT[7:2] in bits 15:10), so that the
		// return re-executes it under its condition (B1.5.6).
		stacked = stacked&^xpsrITMask | uint32(m.faultIT&3)<<25 | uint32(m.faultIT&0xfc)<<8
	}
	if m.cpu.v8m && m.cpu.fp && control&controlSFPA != 0 {
		// ARMv8-M: RETPSR.SFPA (bit 20) keeps CONTROL_S.SFPA, which
		// the entry clears; the return restores it.
		stacked |= retpsrSFPA
	}
	frame := sp - size
	if sp&4 != 0 { // CCR.STKALIGN is 1 (B3.2.8)
		frame &^= 7
		stacked |= xpsrAlign
	}
	buf := make([]byte, size)
	le := binary.LittleEndian
	for i, v := range []uint32{r[0], r[1], r[2], r[3], r[4], lr, ret &^ 1, stacked} {
		le.PutUint32(buf[4*i:], v)
	}
	lazy := false
	if fpca {
		if m.scs.FPCCR&fpccrLSPEN != 0 {
			// Lazy state preservation (B1.5.7): space is reserved, the
			// registers are saved only if the handler uses the FPU.
			lazy = true
		} else {
			var s [16]byte
			for i := 0; i < 16; i++ {
				if err := m.eng.RegReadBytes(uc.RegS(i), &s); err != nil {
					return nil, err
				}
				copy(buf[0x20+4*i:], s[:4])
			}
			le.PutUint32(buf[0x60:], m.reg(uc.RegFPSCR))
		}
	}
	var ef *entryFault
	n := size
	if lazy {
		n = frameBasic
	}
	for off := uint32(0); off < n; off += 4 {
		a := frame + off
		if m.mpuDeniedFor(a, mpuWrite, priv) {
			ef = &entryFault{derived: excMemManage, cfsr: cfsrMSTKERR, addr: a}
			break
		}
		if !m.stackWritable(a) {
			ef = &entryFault{derived: excBusFault, cfsr: cfsrSTKERR, addr: a}
			break
		}
		if err := m.eng.MemWrite(uint64(a), buf[off:off+4]); err != nil {
			return nil, fmt.Errorf("stacking at %#08x: %w", a, err)
		}
	}
	taken := exc
	if ef != nil {
		ef.during, ef.ret = exc, ret
		// The derived exception must preempt the exception being
		// entered (QEMU: armv7m_nvic_set_pending_derived).
		running := m.groupPriority(m.scs.priority(exc))
		ef.taken = ef.derived
		if m.cpu.v6m || m.scs.SHCSR&shcsrEnable[ef.derived] == 0 || m.groupPriority(m.scs.priority(ef.derived)) >= running {
			ef.taken, ef.forced = excHardFault, true
			if running <= -1 {
				ef.taken = 0
			}
		}
		if !m.cpu.v6m {
			m.scs.CFSR |= ef.cfsr
			if ef.forced {
				m.scs.HFSR |= hfsrFORCED
			}
		}
		if ef.taken == 0 {
			return ef, nil
		}
		taken = ef.taken
		if exc != excHardFault && exc != taken {
			m.pend(exc)
		}
		lazy = false
	}
	if lazy {
		m.scs.FPCCR |= fpccrLSPACT
		m.scs.FPCAR = frame + 0x20
		m.lazyFPPush()
	}
	excReturn := uint32(0xFFFFFFE1)
	if !fpca {
		excReturn |= 1 << 4
	}
	if thread {
		excReturn |= 1 << 3
	}
	if onPSP {
		excReturn |= 1 << 2
		psp = frame
	} else {
		msp = frame
	}
	newXPSR := xpsr&0xF80F0000 | xpsrT | uint32(taken)
	newControl := control &^ (controlSP | controlFPCA)
	if m.cpu.v8m {
		// ARMv8-M ExceptionTaken() also clears CONTROL_S.SFPA (the
		// Secure state has no active FP context in the handler).
		newControl &^= controlSFPA
	}
	if err := m.setSysState(newXPSR, newControl, msp, psp); err != nil {
		return nil, err
	}
	var vec [4]byte
	vaddr := m.scs.VTOR + 4*uint32(taken)
	if err := m.eng.MemRead(uint64(vaddr), vec[:]); err != nil {
		return nil, fmt.Errorf("reading vector %d at %#08x: %w", taken, vaddr, err)
	}
	handler := le.Uint32(vec[:])
	if err := m.eng.RegWrite(uc.RegLR, uint64(excReturn)); err != nil {
		return nil, err
	}
	if err := m.eng.RegWrite(uc.RegPC, uint64(handler)); err != nil {
		return nil, err
	}
	m.active = append(m.active, taken)
	m.excReturns = append(m.excReturns, excReturn)
	m.setActive(taken, true)
	m.scs.VectActive = uint32(taken)
	m.activeChanged()
	m.tr.PushException(taken, ret, frame, sp, onPSP)
	return ef, nil
}

// exceptionReturn unstacks the frame named by the EXC_RETURN value the
// handler branched to (B1.5.8 ExceptionReturn, PopStack). Unicorn reports
// the branch as interrupt 8 with PC = EXC_RETURN & ~1 and unstacks nothing.
func (m *machine) exceptionReturn() error {
	excReturn := m.reg(uc.RegPC) | 1
	if excReturn>>24 != 0xFF {
		return fmt.Errorf("exception return to %#08x is not an EXC_RETURN value", excReturn)
	}
	toThread := excReturn&(1<<3) != 0
	onPSP := excReturn&(1<<2) != 0
	ext := excReturn&(1<<4) == 0 && m.cpu.fp
	control := m.reg(uc.RegCONTROL)
	msp := m.reg(uc.RegMSP)
	psp := m.reg(uc.RegPSP)
	if m.hookErr != nil {
		return m.hookErr
	}
	frame := msp
	if onPSP {
		frame = psp
	}
	size := uint32(frameBasic)
	if ext {
		size = frameExtended
	}
	buf := make([]byte, size)
	if err := m.eng.MemRead(uint64(frame), buf); err != nil {
		return fmt.Errorf("unstacking the exception frame at %#08x: %w", frame, err)
	}
	le := binary.LittleEndian
	w := func(i int) uint32 { return le.Uint32(buf[4*i:]) }
	for i := 0; i < 4; i++ {
		if err := m.eng.RegWrite(uc.RegR(i), uint64(w(i))); err != nil {
			return err
		}
	}
	if err := m.eng.RegWrite(uc.RegR(12), uint64(w(4))); err != nil {
		return err
	}
	if err := m.eng.RegWrite(uc.RegLR, uint64(w(5))); err != nil {
		return err
	}
	ret, xpsr := w(6), w(7)
	if ext {
		m.lazyFPPull()
		if m.scs.FPCCR&fpccrLSPACT != 0 {
			m.scs.FPCCR &^= fpccrLSPACT // the registers were never saved
			m.lazyFPPush()
		} else {
			for i := 0; i < 16; i++ {
				var s [16]byte
				copy(s[:4], buf[0x20+4*i:])
				if err := m.eng.RegWriteBytes(uc.RegS(i), &s); err != nil {
					return err
				}
			}
			if err := m.eng.RegWrite(uc.RegFPSCR, uint64(w(0x60/4))); err != nil {
				return err
			}
		}
	}
	sp := frame + size
	if xpsr&xpsrAlign != 0 {
		sp += 4
	}
	if onPSP {
		psp = sp
	} else {
		msp = sp
	}
	if n := len(m.active); n > 0 {
		done := m.active[n-1]
		m.active = m.active[:n-1]
		m.setActive(done, false)
	}
	if n := len(m.excReturns); n > 0 {
		m.excReturns = m.excReturns[:n-1]
	}
	m.scs.VectActive = 0
	if n := len(m.active); n > 0 {
		m.scs.VectActive = uint32(m.active[n-1])
	}
	if toThread {
		xpsr &^= 0x1ff
		control = control&^(controlSP|controlFPCA) | boolBit(onPSP, controlSP)
	}
	control = control&^controlFPCA | boolBit(ext, controlFPCA)
	if m.cpu.v8m && m.cpu.fp {
		control = control&^controlSFPA | boolBit(xpsr&retpsrSFPA != 0, controlSFPA)
	}
	xpsr &^= retpsrSFPA
	if err := m.setSysState(xpsr&^xpsrAlign, control, msp, psp); err != nil {
		return err
	}
	if err := m.eng.RegWrite(uc.RegPC, uint64(ret|1)); err != nil {
		return err
	}
	m.activeChanged()
	m.popException(frame, ret, toThread)
	m.updateEvents()
	return nil
}

// sysReg reads MSP, PSP or a mask register. Unicorn reads them as 0 in
// unprivileged Thread mode (docs/unicorn.md), where the real core's
// registers still hold their values (and the harness needs them for
// exception entry), so they are read from Handler mode there: IPSR is set
// for the read and restored, with the APSR_NZCV write that rebuilds the
// translator's flags (trap 3).
func (m *machine) sysReg(r uc.Reg) uint32 {
	xpsr := m.reg(uc.RegXPSR)
	if xpsr&0x1ff != 0 || m.reg(uc.RegCONTROL)&controlPriv == 0 {
		return m.reg(r)
	}
	e := m.eng
	if err := e.RegWrite(uc.RegXPSR, uint64(xpsr|excHardFault)); err != nil {
		m.fail(err)
		return 0
	}
	v := m.reg(r)
	if err := e.RegWrite(uc.RegXPSR, uint64(xpsr)); err != nil {
		m.fail(err)
	}
	if err := e.RegWrite(uc.RegAPSRNZCV, uint64(xpsr&0xF8000000)); err != nil {
		m.fail(err)
	}
	return v
}

func boolBit(b bool, bit uint32) uint32 {
	if b {
		return bit
	}
	return 0
}

// result reads the final state into a Result.
func (m *machine) result(cause Cause) (*Result, error) {
	res := &Result{CPU: m.cpu.name, BuildID: m.img.buildID, Cause: cause, Insns: m.tr.Insns()}
	g := &res.Registers
	for i := 0; i < 13; i++ {
		g.R[i] = m.reg(uc.RegR(i))
	}
	g.SP = m.reg(uc.RegSP)
	g.LR = m.reg(uc.RegLR)
	g.PC = m.reg(uc.RegPC)
	g.XPSR = m.reg(uc.RegXPSR)
	g.MSP = m.sysReg(uc.RegMSP)
	g.PSP = m.sysReg(uc.RegPSP)
	g.CONTROL = m.reg(uc.RegCONTROL)
	g.PRIMASK = m.sysReg(uc.RegPRIMASK)
	if !m.cpu.v6m {
		g.BASEPRI = m.sysReg(uc.RegBASEPRI)
		g.FAULTMASK = m.sysReg(uc.RegFAULTMSK)
	}
	if m.cpu.fp {
		fp := &FPRegisters{FPSCR: m.reg(uc.RegFPSCR)}
		for i := range fp.S {
			var b [16]byte
			if err := m.eng.RegReadBytes(uc.RegS(i), &b); err != nil {
				return nil, err
			}
			fp.S[i] = binary.LittleEndian.Uint32(b[:])
		}
		g.FP = fp
	}
	if m.hookErr != nil {
		return nil, m.hookErr
	}
	res.Exception = int(g.XPSR & 0x1ff)
	m.lazyFPPull()
	s := &m.scs
	res.Fault = FaultRegisters{
		CFSR: s.CFSR, HFSR: s.HFSR, DFSR: s.DFSR, MMFAR: s.MMFAR, BFAR: s.BFAR,
		ICSR: s.Read(addrICSR, 4), VTOR: s.VTOR, CCR: s.CCR, SHCSR: s.SHCSR,
		CPACR: s.CPACR, FPCCR: s.FPCCR, FPCAR: s.FPCAR,
	}
	for _, r := range m.writableRegions() {
		b := make([]byte, r.Size)
		if err := m.eng.MemRead(uint64(r.Addr), b); err != nil {
			return nil, fmt.Errorf("reading %s at %#08x: %w", r.Name, r.Addr, err)
		}
		res.Memory = append(res.Memory, Memory{Addr: r.Addr, Name: r.Name, Data: b})
	}
	scb := make([]byte, 0x40)
	for a := uint32(0); a < 0x40; a += 4 {
		binary.LittleEndian.PutUint32(scb[a:], s.read32(addrCPUID+a))
	}
	res.SCS = append(res.SCS, Memory{Addr: addrCPUID, Name: "scb", Data: scb})
	if s.MPUCtrl&1 != 0 {
		// The MPU block as a debugger reads it (TYPE, CTRL, RNR, the
		// region RNR selects and its aliases): a guard region the
		// firmware set is evidence of a stack overflow into it.
		mpu := make([]byte, addrMPUAliases+4-addrMPUType)
		for a := uint32(0); a < uint32(len(mpu)); a += 4 {
			binary.LittleEndian.PutUint32(mpu[a:], s.read32(addrMPUType+a))
		}
		res.SCS = append(res.SCS, Memory{Addr: addrMPUType, Name: "mpu", Data: mpu})
	}
	if m.cpu.fp {
		fp := make([]byte, 12)
		for a := uint32(0); a < 12; a += 4 {
			binary.LittleEndian.PutUint32(fp[a:], s.read32(addrFPCCR+a))
		}
		res.SCS = append(res.SCS, Memory{Addr: addrFPCCR, Name: "fp", Data: fp})
	}
	if !m.cfg.NoTruth {
		res.Truth = m.truth(g.PC, g.SP, g.XPSR&0x1ff == 0 && g.CONTROL&controlSP != 0)
		res.TruthTruncated = m.tr.Dropped() > 0
		res.Threads = m.threadTruths()
	}
	return res, nil
}

// truth turns the shadow stack into frames, innermost first. An exception
// pseudo-frame carries the EXC_RETURN of its entry.
//
// Thread stacks: code that switches Thread mode to the process stack and
// jumps (not calls) to a thread's entry function with LR = 0xFFFFFFFF, as
// an RTOS starts its first thread, leaves the call that led to the switch
// on the shadow stack although the thread will never return to it. Such a
// call is recognised by two things together: the next call inside was made
// on the other stack (CONTROL.SPSEL differs), and it was made from a
// function other than the one the outer call entered (a jump got there).
// The thread's stack ends there, as the oracle's does. A function that
// switches stacks and then makes ordinary calls keeps its callers.
//
// Calls abandoned without a return (a C++ throw, longjmp, a helper that
// returns elsewhere) are dropped first, level by level, as the block hook
// drops them at each call (uc.Tracker.Prune): the innermost level as seen
// from pc and sp, each interrupted level from its interrupted PC and SP.
func (m *machine) truth(pc, sp uint32, psp bool) []TruthFrame {
	return m.truthOf(m.tr.Frames(), pc, sp, psp)
}

// truthOf is truth for the shadow stack frames (Tracker.Frames).
func (m *machine) truthOf(frames []uc.ShadowFrame, pc, sp uint32, psp bool) []TruthFrame {
	return m.truthFrames(pc, m.liveFrames(frames, pc, sp, psp), m.excReturns)
}

// truthFrames turns the live shadow stack sh (outermost first) of code at
// pc into frames, innermost first; excReturns are the EXC_RETURN values of
// sh's exception levels, innermost last.
func (m *machine) truthFrames(pc uint32, sh []uc.ShadowFrame, excReturns []uint32) []TruthFrame {
	out := []TruthFrame{{PC: pc, Function: m.img.funcAt(pc)}}
	level := len(excReturns)
	inner := pc // the code of the frame inside the one being looked at
	for i := len(sh) - 1; i >= 0; i-- {
		f := sh[i]
		if f.Exception != 0 {
			ex := TruthFrame{Kind: FrameException, Exception: f.Exception, SP: f.SP}
			if level > 0 {
				ex.ExcReturn = excReturns[level-1]
				level--
			}
			out = append(out, ex, TruthFrame{PC: f.Return, Function: m.img.funcAt(f.Return), SP: f.SP})
			inner = f.Return
			continue
		}
		if i+1 < len(sh) && sh[i+1].Exception == 0 && sh[i+1].PSP != f.PSP &&
			m.img.funcAt(f.Target) != m.img.funcAt(inner) {
			// Skip the rest of this level (down to the next marker).
			for i > 0 && sh[i-1].Exception == 0 {
				i--
			}
			continue
		}
		out = append(out, TruthFrame{PC: f.Return, Function: m.img.funcAt(f.Return - 1), SP: f.SP})
		inner = f.Return - 1
	}
	return out
}

// liveFrames returns the shadow stack sh without the calls each level's code
// has abandoned (uc.Tracker.Prune): the innermost level seen from pc and sp
// (psp: on the process stack), a level below an exception marker from the
// marker's interrupted PC and SP.
func (m *machine) liveFrames(sh []uc.ShadowFrame, pc, sp uint32, psp bool) []uc.ShadowFrame {
	out := make([]uc.ShadowFrame, 0, len(sh))
	start := 0
	for i := 0; i <= len(sh); i++ {
		if i < len(sh) && sh[i].Exception == 0 {
			continue
		}
		// sh[start:i] is one level's calls; sh[i] the marker above it.
		lpc, lsp, lpsp := pc, sp, psp
		if i < len(sh) {
			lpc, lsp, lpsp = sh[i].Return, sh[i].InterruptedSP, sh[i].PSP
		}
		level := sh[start:i]
		out = append(out, level[:m.tr.Prune(level, lpc, lsp, lpsp)]...)
		if i < len(sh) {
			out = append(out, sh[i])
		}
		start = i + 1
	}
	return out
}
