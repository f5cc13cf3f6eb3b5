package emu

import (
	"fmt"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Asynchronous exceptions: the NVIC's external interrupts, PendSV, SysTick
// and NMI (ARMv7-M ARM B1.5.4 priorities, B1.5.6 exception entry, B3.3
// SysTick, B3.4 NVIC; ARMv6-M B1.5, B3.3).
//
// An exception becomes pending by a register write (NVIC_ISPR, NVIC_STIR,
// ICSR.PENDSVSET/PENDSTSET/NMIPENDSET), by SysTick reaching zero with
// TICKINT set, or by Config.IRQs. It is taken at the next block boundary at
// which it is enabled and its group priority is higher than the execution
// priority (PRIMASK, BASEPRI, FAULTMASK and the active exceptions): the C
// block hook calls onEvent before the block runs and the harness performs
// exception entry there, with the block's address as the return address.
// Firmware that pends an interrupt and then executes DSB; ISB takes it
// right after the ISB, as QEMU does (an ISB ends a translated block).
// Exception return re-examines the pending set (tail-chaining).
//
// SysTick counts one tick per guest instruction (the processor clock; the
// instruction count is the harness's clock), whatever CLKSOURCE says.

// pendingException returns the pending exception to take now, if any: the
// enabled one with the highest priority (lowest number, then lowest
// exception number, B1.5.4) whose group priority beats the execution
// priority.
func (m *machine) pendingException() (int, bool) {
	return m.pendingExceptionAt(m.execPriority())
}

// pendingExceptionAt is pendingException for execution priority exec.
func (m *machine) pendingExceptionAt(exec int) (int, bool) {
	s := &m.scs
	best, bestPrio := 0, 1<<16
	consider := func(exc int) {
		p := s.priority(exc)
		if p < bestPrio {
			best, bestPrio = exc, p
		}
	}
	if s.ICSR&icsrNMIPENDSET != 0 {
		consider(excNMI)
	}
	if s.ICSR&icsrPENDSVSET != 0 {
		consider(excPendSV)
	}
	if s.ICSR&icsrPENDSTSET != 0 {
		consider(excSysTick)
	}
	for w := range s.NVICPending {
		bits := s.NVICPending[w] & (s.NVICEnabled[w] | m.forced[w]) &^ s.NVICActive[w]
		for bits != 0 {
			b := 0
			for bits&(1<<b) == 0 {
				b++
			}
			bits &^= 1 << b
			consider(excIRQ0 + 32*w + b)
		}
	}
	if best == 0 {
		return 0, false
	}
	for _, a := range m.active {
		if a == best {
			return 0, false // already active: stays pending until it returns
		}
	}
	if m.groupPriority(bestPrio) >= m.groupPriority(exec) {
		return 0, false
	}
	return best, true
}

// groupPriority drops the subpriority bits (AIRCR.PRIGROUP, B1.5.4): only
// the group priority decides preemption.
func (m *machine) groupPriority(p int) int {
	if p < 0 || p >= 256 || m.cpu.v6m {
		return p
	}
	g := (m.scs.AIRCR >> 8) & 7
	return p &^ (1<<(g+1) - 1)
}

// hasPending reports whether some exception is pending and enabled, so the
// block hook has to look at it (it may still be masked).
func (m *machine) hasPending() bool {
	s := &m.scs
	if s.ICSR&(icsrNMIPENDSET|icsrPENDSVSET|icsrPENDSTSET) != 0 {
		return true
	}
	for w := range s.NVICPending {
		if s.NVICPending[w]&(s.NVICEnabled[w]|m.forced[w])&^s.NVICActive[w] != 0 {
			return true
		}
	}
	return false
}

// updateEvents tells the block hook when to call onEvent next: at once when
// an exception is pending, else at the next instruction-count event (a
// checkpoint, a Config.IRQs entry, a SysTick wrap).
func (m *machine) updateEvents() {
	if m.tr == nil {
		return
	}
	m.tr.SetEvent(m.hasPending() || m.checksChanged())
	at := uint64(0)
	next := func(n uint64) {
		if n != 0 && (at == 0 || n < at) {
			at = n
		}
	}
	if m.chunk != 0 && !m.replaying {
		next(m.nextCheckpoint)
	}
	for _, q := range m.irqs {
		if !q.fired {
			next(max(q.At, 1))
		}
	}
	next(m.scs.sysTickNext())
	m.tr.SetEventAt(at)
}

// pend makes exception exc pending.
func (m *machine) pend(exc int) {
	s := &m.scs
	switch {
	case exc == excNMI:
		s.ICSR |= icsrNMIPENDSET
	case exc == excPendSV:
		s.ICSR |= icsrPENDSVSET
	case exc == excSysTick:
		s.ICSR |= icsrPENDSTSET
	case exc >= excIRQ0 && exc < excIRQ0+496:
		n := exc - excIRQ0
		s.NVICPending[n/32] |= 1 << (n % 32)
	default:
		// A synchronous exception (SVCall, a fault, DebugMonitor) raised
		// from outside: taken as if pending with its own priority is not
		// architectural; treat it like PendSV-style pending via SHCSR.
		if bit, ok := shcsrPended[exc]; ok {
			s.SHCSR |= bit
		}
	}
}

// SHCSR pended bits (B3.2.13) for --irq of a system exception.
var shcsrPended = map[int]uint32{
	excMemManage: 1 << 13, excBusFault: 1 << 14, excUsageFault: 1 << 12, excSVCall: 1 << 15,
}

// clearPending clears exc's pending state as exception entry does.
func (m *machine) clearPending(exc int) {
	s := &m.scs
	switch {
	case exc == excNMI:
		s.ICSR &^= icsrNMIPENDSET
	case exc == excPendSV:
		s.ICSR &^= icsrPENDSVSET
	case exc == excSysTick:
		s.ICSR &^= icsrPENDSTSET
	case exc >= excIRQ0 && exc < excIRQ0+496:
		n := exc - excIRQ0
		s.NVICPending[n/32] &^= 1 << (n % 32)
		m.forced[n/32] &^= 1 << (n % 32)
	}
}

// setActive records exc as active (SHCSR for system handlers, NVIC_IABR
// for interrupts) or not.
func (m *machine) setActive(exc int, on bool) {
	s := &m.scs
	if exc >= excIRQ0 && exc < excIRQ0+496 {
		n := exc - excIRQ0
		if on {
			s.NVICActive[n/32] |= 1 << (n % 32)
		} else {
			s.NVICActive[n/32] &^= 1 << (n % 32)
		}
		return
	}
	bit := shcsrActive[exc]
	if s.v8m {
		// ARMv8-M adds HARDFAULTACT (bit 2) and NMIACT (bit 5) (ARMv8-M
		// ARM D1.2, SHCSR); QEMU's mps2-an505 shows them too.
		switch exc {
		case excHardFault:
			bit = 1 << 2
		case excNMI:
			bit = 1 << 5
		}
	}
	if on {
		s.SHCSR |= bit
	} else {
		s.SHCSR &^= bit
	}
}

// onEvent runs in the C block hook before the block at addr, when an event
// is due. It takes checkpoints, raises Config.IRQs, advances SysTick and
// takes the pending exception if one can preempt, returning true when it
// redirected the core to a handler.
func (m *machine) onEvent(addr uint32) bool {
	if m.checksChanged() {
		// The firmware changed CCR or the MPU: stop before this block
		// runs so that start() can apply the checks (checks.go). Writing
		// PC abandons the block; its shadow-stack step is already made.
		m.resyncStop = true
		m.tr.SkipStep(addr)
		m.eng.Stop()
		return true
	}
	insns := m.tr.Insns()
	if m.chunk != 0 && !m.replaying && insns >= m.nextCheckpoint {
		if err := m.saveCheckpoint(uint64(addr) | 1); err != nil {
			m.fail(err)
			return false
		}
		m.nextCheckpoint = insns + m.chunk
	}
	for i := range m.irqs {
		q := &m.irqs[i]
		if !q.fired && insns >= q.At {
			q.fired = true
			m.pend(q.Exception)
			if n := q.Exception - excIRQ0; n >= 0 && n < 496 {
				m.forced[n/32] |= 1 << (n % 32)
			}
		}
	}
	if m.scs.sysTickAdvance(insns) {
		m.pend(excSysTick)
	}
	redirect := false
	if exc, ok := m.pendingException(); ok {
		m.clearPending(exc)
		ef, err := m.enterException(exc, addr)
		if err != nil {
			m.fail(err)
			return false
		}
		if ef != nil {
			m.entryFault = ef
			if ef.taken == 0 {
				// Lockup: stay before this block.
				if err := m.eng.RegWrite(uc.RegPC, uint64(addr)|1); err != nil {
					m.fail(err)
					return false
				}
			}
			m.eng.Stop()
			return true
		}
		redirect = true
	}
	m.updateEvents()
	return redirect
}

// fail records an error found inside a hook and stops the emulation.
func (m *machine) fail(err error) {
	if m.hookErr == nil {
		m.hookErr = err
	}
	m.eng.Stop()
}

// sysTickNext returns the instruction count at which the counter next
// reaches zero, 0 if it is not counting.
func (s *SCS) sysTickNext() uint64 {
	if s.SysTickCSR&1 == 0 {
		return 0
	}
	first := uint64(s.tickValue)
	if first == 0 {
		if s.SysTickRVR == 0 {
			return 0
		}
		first = uint64(s.SysTickRVR) + 1
	}
	return s.tickBase + first
}

// sysTickAdvance moves the counter to instruction count now and reports
// whether it reached zero with TICKINT set since the last call (B3.3.1):
// COUNTFLAG is set, and the counter reloads from SYST_RVR on the next tick.
func (s *SCS) sysTickAdvance(now uint64) (pend bool) {
	for {
		z := s.sysTickNext()
		if z == 0 || z > now {
			return pend
		}
		s.SysTickCSR |= 1 << 16
		if s.SysTickCSR&2 != 0 {
			pend = true
		}
		if s.SysTickRVR == 0 {
			s.tickBase, s.tickValue = z, 0
			s.SysTickCSR &^= 0 // the counter stays at 0 until written
			return pend
		}
		// At z the counter is 0; one tick later it is RVR.
		s.tickBase, s.tickValue = z+1, s.SysTickRVR
		if now > z+1 && s.tickBase+uint64(s.tickValue) > now {
			return pend
		}
	}
}

// sysTickValue is SYST_CVR at instruction count now.
func (s *SCS) sysTickValue(now uint64) uint32 {
	if s.SysTickCSR&1 == 0 || now <= s.tickBase {
		return s.tickValue
	}
	d := now - s.tickBase
	if d <= uint64(s.tickValue) {
		return s.tickValue - uint32(d)
	}
	if s.SysTickRVR == 0 {
		return 0
	}
	d -= uint64(s.tickValue) + 1
	return s.SysTickRVR - uint32(d%(uint64(s.SysTickRVR)+1))
}

// describeException names an exception number for messages.
func describeException(exc int) string {
	if n, ok := excNames[exc]; ok {
		return n
	}
	if exc >= excIRQ0 {
		return fmt.Sprintf("IRQ %d", exc-excIRQ0)
	}
	return fmt.Sprintf("exception %d", exc)
}
