package fault

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Cause is one status bit that is set, with what it means.
type Cause struct {
	Register string `json:"register"` // "CFSR", "HFSR", "SFSR", "DFSR"
	Bit      string `json:"bit"`      // the bit's mnemonic: "PRECISERR"
	Text     string `json:"text"`     // plain language: "precise data bus error"
}

// Report is the decoded fault: the "fault" object of faultline.analysis/1
// (see design.md) plus plain-language notes.
type Report struct {
	// Exception names the exception the core took: "HardFault",
	// "MemManage", "BusFault", "UsageFault", "SecureFault", "NMI",
	// "SVCall", "PendSV", "SysTick", "IRQ 5", "Lockup" when the dump
	// records that the core locked up, "Thread mode" when no
	// exception was active and none could be inferred, or "unknown".
	Exception string
	// Number is the exception number (IPSR value); 0 when unknown.
	Number int
	// Causes lists the set status bits: CFSR, then SFSR, HFSR and, for a
	// debug event, DFSR, each in bit order.
	Causes []Cause
	// Address is the faulting data address when the core recorded a valid
	// one (MMFAR with MMARVALID, BFAR with BFARVALID, SFAR with SFARVALID).
	Address *uint32
	// Notes are plain-language explanations that are not causes: how the
	// exception was found, what a cause implies for the backtrace, what is
	// missing from the dump. They are not part of the JSON object; a caller
	// prints them or reports them as warnings.
	Notes []string
}

// Input is everything DecodeInput can use. Only Profile and SCB are
// needed; the registers make the notes more specific.
type Input struct {
	Profile unwinders.Profile
	// Regs are the registers as the dump captured them: either the state
	// at the fault handler's first instruction (IPSR = exception number,
	// LR = EXC_RETURN) or a pre-exception state a crash handler
	// reconstructed (PC = faulting PC). May be nil.
	Regs *unwinders.Registers
	SCB  SCB
	// Faulting are the registers of the frame that faulted, when the
	// caller has unstacked them from the exception frame: PC = stacked
	// return address, LR = stacked LR, xPSR = stacked xPSR. Nil when not
	// known; DecodeInput then uses Regs when they are the pre-exception
	// state (IPSR 0 or unknown, or not a fault handler while the status
	// registers record a fault, and LR not an EXC_RETURN value).
	Faulting *unwinders.Registers
	// Lockup is set when the dump records that the core locked up (a
	// fault that could not be taken); the registers are then the state at
	// the faulting instruction. Nil otherwise.
	Lockup *LockupInfo
}

// LockupInfo is what a dump records about a lockup (ARMv7-M B1.5.15, ARMv6-M
// B1.5.14): the core met a fault it could not take (in HardFault or NMI,
// with FAULTMASK set, or when the HardFault entry itself faulted) and
// stopped executing.
type LockupInfo struct {
	Fault  string // the fault that could not be taken ("BusFault"), "" if not said
	PC     uint32 // the faulting instruction's address (when HasPC)
	HasPC  bool
	Detail string // what happened, in words; "" if not said
}

// Decode explains a fault from the registers as the dump captured them and
// the SCB fault registers. It is DecodeInput with no unstacked frame.
func Decode(profile unwinders.Profile, regs *unwinders.Registers, scb SCB) Report {
	return DecodeInput(Input{Profile: profile, Regs: regs, SCB: scb})
}

// Lockup reports whether pc is one of the addresses a locked-up core shows
// (ARMv7-M B1.5.15): 0xEFFFFFFE, 0xFFFFFFFE or 0xFFFFFFFF.
func Lockup(pc uint32) bool {
	return pc == 0xEFFFFFFE || pc == 0xFFFFFFFE || pc == 0xFFFFFFFF
}

// decoder holds the state of one DecodeInput call.
type decoder struct {
	in      Input
	prof    unwinders.Profile
	regs    *unwinders.Registers // never nil
	fault   *unwinders.Registers // the faulting frame, nil when unknown
	cfsr    uint32               // 0 when unknown or ARMv6-M
	hfsr    uint32
	sfsr    uint32
	hasCFSR bool // known and meaningful on this profile
	hasHFSR bool
	hasSFSR bool
	rep     Report
}

// DecodeInput explains a fault. It never fails: what the input lacks is
// said in the notes. The exception comes from IPSR (xPSR bits 8:0); when
// IPSR is 0 or unknown it comes from ICSR.VECTACTIVE, else it is inferred
// from HFSR and CFSR. On ARMv6-M, which has no fault status registers, the
// CFSR, HFSR, MMFAR, BFAR, SHCSR and SFSR values are ignored.
func DecodeInput(in Input) Report {
	d := &decoder{in: in, prof: in.Profile, regs: in.Regs}
	if d.regs == nil {
		d.regs = new(unwinders.Registers)
	}
	s := in.SCB
	if d.prof != unwinders.V6M {
		d.cfsr, d.hasCFSR = s.CFSR.V, s.CFSR.OK
		d.hfsr, d.hasHFSR = s.HFSR.V, s.HFSR.OK
		if d.prof != unwinders.V7M {
			d.sfsr, d.hasSFSR = s.SFSR.V, s.SFSR.OK
		}
	}
	d.exception()
	d.causes()
	d.address()
	d.explain()
	if d.rep.Causes == nil {
		d.rep.Causes = []Cause{}
	}
	return d.rep
}

func (d *decoder) note(format string, args ...any) {
	d.rep.Notes = append(d.rep.Notes, fmt.Sprintf(format, args...))
}

func (d *decoder) cfsrBit(b uint) bool { return d.cfsr&(1<<b) != 0 }
func (d *decoder) hfsrBit(b uint) bool { return d.hfsr&(1<<b) != 0 }
func (d *decoder) sfsrBit(b uint) bool { return d.sfsr&(1<<b) != 0 }

// ufsrMask is the set of UFSR bits the profile defines.
func (d *decoder) ufsrMask() uint32 {
	if d.prof == unwinders.V7M {
		return ufsrV7
	}
	return ufsrV8
}

// recordsFault reports whether the status registers show any fault.
func (d *decoder) recordsFault() bool {
	return d.hfsr&hfsrMask != 0 || d.cfsr&(mmfsrMask|bfsrMask|d.ufsrMask()) != 0 || d.sfsr&sfsrMask != 0
}

// isExcReturn reports whether v looks like an EXC_RETURN or FNC_RETURN
// value (top byte 0xFF or 0xFE, ARMv7-M B1.5.8, ARMv8-M).
func isExcReturn(v uint32) bool { return v>>24 == 0xFF || v>>25 == 0x7F }

// exception finds the exception number, and the faulting frame.
func (d *decoder) exception() {
	prof := d.prof
	ipsr, ipsrOK := d.regs.IPSR()
	if l := d.in.Lockup; l != nil {
		// Named as what it is: the IPSR is that of the code that
		// faulted, not of a handler that was entered.
		d.rep.Exception, d.rep.Number = "Lockup", 0
		if ipsrOK {
			d.rep.Number = int(ipsr)
		}
		what := "a fault"
		if l.Fault != "" {
			what = "a " + l.Fault
		}
		at := ""
		if l.HasPC {
			at = fmt.Sprintf(" at 0x%08x", l.PC)
		}
		detail := ""
		if l.Detail != "" {
			detail = " (" + l.Detail + ")"
		}
		ctx := "in Thread mode"
		if ipsrOK && ipsr != 0 {
			ctx = "in " + ExceptionName(prof, int(ipsr))
		} else if !ipsrOK {
			ctx = "in an unknown mode"
		}
		d.note("The core locked up: %s%s%s, %s, could not be taken as an exception, so no handler ran and the core stopped. The registers are the state at the faulting instruction, not at a handler's entry.", what, at, detail, ctx)
		if d.in.Faulting != nil {
			d.fault = d.in.Faulting
		} else {
			d.fault = d.in.Regs
		}
		return
	}
	lr, lrOK := d.regs.Get(unwinders.LR)
	handlerLR := lrOK && isExcReturn(lr)
	set := func(n int) {
		d.rep.Number = n
		d.rep.Exception = ExceptionName(prof, n)
	}
	preException := false
	switch {
	case ipsrOK && ipsr != 0:
		n := int(ipsr)
		if n >= 3 && n <= 7 || !d.recordsFault() || handlerLR {
			set(n)
			break
		}
		// A handler's IPSR while the status registers record a fault:
		// these are probably the registers of the interrupted context,
		// reconstructed by a crash handler, and the fault happened inside
		// that handler.
		preException = true
		if m, why, ok := d.infer(); ok {
			set(m)
			d.note("IPSR is %d (%s), not a fault exception, yet the fault status registers record a fault: the registers look like the state before the exception, interrupted inside %s; the exception was inferred from %s.",
				n, ExceptionName(prof, n), ExceptionName(prof, n), why)
		}
	default:
		preException = !handlerLR
		what := "unknown"
		if ipsrOK {
			what = "0 (Thread mode)"
		}
		if v, ok := d.in.SCB.ICSR.Get(); ok && v&0x1ff != 0 {
			set(int(v & 0x1ff))
			d.note("IPSR is %s; the exception number %d was taken from ICSR.VECTACTIVE.", what, v&0x1ff)
			break
		}
		if m, why, ok := d.infer(); ok {
			set(m)
			if ipsrOK && !handlerLR {
				d.note("IPSR is 0: the registers are the state before the exception was taken; the exception was inferred from %s.", why)
			} else {
				d.note("IPSR is %s; the exception was inferred from %s.", what, why)
			}
			break
		}
		if ipsrOK {
			d.rep.Exception = ExceptionName(prof, 0)
			if prof == unwinders.V6M {
				d.note("IPSR is 0 (Thread mode): no exception was active when the registers were captured; on ARMv6-M there are no fault status registers to infer a fault from.")
			} else if !d.hasCFSR && !d.hasHFSR {
				d.note("IPSR is 0 (Thread mode): no exception was active when the registers were captured.")
			} else {
				d.note("IPSR is 0 (Thread mode) and the fault status registers record no fault: no exception was active when the registers were captured.")
			}
		} else {
			d.rep.Exception = "unknown"
			d.note("The exception number is unknown: the dump has no xPSR (IPSR) or ICSR, and no fault status bits to infer it from.")
		}
	}
	switch {
	case d.in.Faulting != nil:
		d.fault = d.in.Faulting
	case preException && d.in.Regs != nil:
		d.fault = d.in.Regs
	}
}

// infer derives the exception from HFSR, CFSR and SFSR.
func (d *decoder) infer() (n int, why string, ok bool) {
	if d.prof == unwinders.V6M {
		return 0, "", false
	}
	for _, b := range hfsrBits() {
		if d.hfsrBit(b.bit) {
			return 3, "HFSR." + b.name, true
		}
	}
	var groups []string
	n = 0
	for _, g := range d.groups() {
		groups = append(groups, g.name)
		if n == 0 {
			n, why = g.exc, g.reg+"."+g.bits[0]
		}
	}
	if n == 0 {
		return 0, "", false
	}
	if len(groups) > 1 {
		d.note("Several fault classes are recorded (%s). The status bits are sticky until software clears them, so some may be left from an earlier fault; %s is reported.",
			strings.Join(groups, ", "), ExceptionName(d.prof, n))
	}
	return n, why, true
}

// group is one configurable fault class with bits set in the CFSR or SFSR.
type group struct {
	name   string // "MemManage"
	exc    int    // its exception number
	reg    string // "CFSR" or "SFSR"
	bits   []string
	enable uint // SHCSR enable bit
	active uint // SHCSR active bit
}

// groups returns the fault classes recorded in CFSR and SFSR, in exception
// number order.
func (d *decoder) groups() []group {
	var out []group
	add := func(name string, exc int, reg string, val, mask uint32, defs []bitDef, enable, active uint) {
		if val&mask == 0 {
			return
		}
		g := group{name: name, exc: exc, reg: reg, enable: enable, active: active}
		for _, b := range defs {
			if val&mask&(1<<b.bit) != 0 {
				g.bits = append(g.bits, b.name)
			}
		}
		out = append(out, g)
	}
	if d.hasCFSR {
		bits := cfsrBits() // one table for the three groups
		add("MemManage", 4, "CFSR", d.cfsr, mmfsrMask, bits[:], MEMFAULTENA, MEMFAULTACT)
		add("BusFault", 5, "CFSR", d.cfsr, bfsrMask, bits[:], BUSFAULTENA, BUSFAULTACT)
		add("UsageFault", 6, "CFSR", d.cfsr, d.ufsrMask(), bits[:], USGFAULTENA, USGFAULTACT)
	}
	if d.hasSFSR {
		add("SecureFault", 7, "SFSR", d.sfsr, sfsrMask, sfsrBits(), SECUREFAULTENA, SECUREFAULTACT)
	}
	return out
}

// causes lists every set bit.
func (d *decoder) causes() {
	add := func(reg string, b bitDef, text string) {
		d.rep.Causes = append(d.rep.Causes, Cause{Register: reg, Bit: b.name, Text: text})
	}
	withAddr := func(text, reg string, o Opt) string {
		if o.OK {
			return fmt.Sprintf("%s 0x%08x", text, o.V)
		}
		return text + ", but " + reg + " is not in the dump"
	}
	if d.hasCFSR {
		for _, b := range cfsrBits() {
			if !d.cfsrBit(b.bit) || b.v8 && d.prof == unwinders.V7M {
				continue
			}
			text := b.text
			switch b.bit {
			case MMARVALID:
				text = withAddr(text, "MMFAR", d.in.SCB.MMFAR)
			case BFARVALID:
				text = withAddr(text, "BFAR", d.in.SCB.BFAR)
			}
			add("CFSR", b, text)
		}
	}
	if d.hasSFSR {
		for _, b := range sfsrBits() {
			if !d.sfsrBit(b.bit) {
				continue
			}
			text := b.text
			if b.bit == SFARVALID {
				text = withAddr(text, "SFAR", d.in.SCB.SFAR)
			}
			add("SFSR", b, text)
		}
	}
	if d.hasHFSR {
		for _, b := range hfsrBits() {
			if d.hfsrBit(b.bit) {
				add("HFSR", b, b.text)
			}
		}
		if v, ok := d.in.SCB.DFSR.Get(); ok && d.hfsrBit(DEBUGEVT) {
			for _, b := range dfsrBits() {
				if v&(1<<b.bit) != 0 {
					add("DFSR", b, b.text)
				}
			}
		}
	}
}

// address picks the faulting address: the one that belongs to the
// exception taken, else the first valid one of MMFAR, BFAR, SFAR.
func (d *decoder) address() {
	type cand struct {
		exc int
		ok  bool
		reg Opt
	}
	cands := []cand{
		{4, d.hasCFSR && d.cfsrBit(MMARVALID), d.in.SCB.MMFAR},
		{5, d.hasCFSR && d.cfsrBit(BFARVALID), d.in.SCB.BFAR},
		{7, d.hasSFSR && d.sfsrBit(SFARVALID), d.in.SCB.SFAR},
	}
	var pick *cand
	for i := range cands {
		c := &cands[i]
		if !c.ok || !c.reg.OK {
			continue
		}
		if c.exc == d.rep.Number {
			pick = c
			break
		}
		if pick == nil {
			pick = c
		}
	}
	if pick != nil {
		v := pick.reg.V
		d.rep.Address = &v
	}
}

// faultPC returns the PC of the faulting frame.
func (d *decoder) faultPC() (uint32, bool) {
	if d.fault == nil {
		return 0, false
	}
	return d.fault.Get(unwinders.PC)
}

// atPC is " (0x...)" for the faulting PC, or "".
func (d *decoder) atPC() string {
	if pc, ok := d.faultPC(); ok {
		return fmt.Sprintf(" (0x%08x)", pc)
	}
	return ""
}

// explain adds the notes.
func (d *decoder) explain() {
	s := d.in.SCB
	switch {
	case d.prof == unwinders.V6M:
		ignored := ""
		if s.CFSR.OK || s.HFSR.OK || s.MMFAR.OK || s.BFAR.OK || s.SFSR.OK {
			ignored = " The values the dump holds at their addresses are ignored."
		}
		d.note("ARMv6-M has no configurable faults and no fault status registers (CFSR, HFSR): every fault is a HardFault, and its cause must be read from the faulting instruction.%s", ignored)
		d.lockup()
		return
	case !d.hasCFSR && !d.hasHFSR && (isFaultException(d.rep.Number) || d.rep.Exception == "unknown"):
		d.note("The fault status registers (CFSR, HFSR) are not in the dump, so the cause of the fault is unknown.")
	case !d.hasCFSR && !d.hasHFSR:
		d.note("The fault status registers (CFSR, HFSR) are not in the dump.")
	case !d.hasCFSR:
		d.note("CFSR is not in the dump: which configurable fault happened is unknown.")
	case !d.hasHFSR:
		d.note("HFSR is not in the dump.")
	}
	if what := notAFault(d.rep.Number); what != "" && d.rep.Exception != "" {
		d.note("%s (exception %d) is %s, not a fault: the core was in its handler when the registers were captured.", d.rep.Exception, d.rep.Number, what)
	}
	if d.prof == unwinders.ProfileUnknown {
		d.note("The CPU's architecture profile is unknown; the fault status registers were decoded as ARMv7-M/ARMv8-M.")
	}
	if d.hasCFSR && d.hasHFSR && !d.recordsFault() && d.rep.Number >= 3 && d.rep.Number <= 7 {
		d.note("The fault status registers record no fault although the core is in %s: they may have been cleared by the handler before the dump was taken.", d.rep.Exception)
	}
	if d.hasCFSR {
		d.cfsrNotes()
	}
	if d.hasSFSR && d.sfsrBit(INVEP) {
		d.note("INVEP: Non-secure code branched to a Secure address that is not a valid entry point (no SG instruction in a Non-secure callable region): a missing or wrongly linked veneer, or a bad function pointer.")
	}
	if d.hasHFSR {
		d.hfsrNotes()
	}
	d.shcsrNotes()
	d.nested()
	d.validity()
	d.reserved()
	d.lockup()
}

// nullNote explains an address near 0.
func (d *decoder) nullNote(a uint32) {
	switch {
	case a == 0:
		d.note("The faulting address is 0x00000000: a NULL pointer dereference.")
	case a < 0x1000:
		d.note("The faulting address 0x%08x is near 0: most likely a NULL pointer dereference (offset 0x%x from NULL, e.g. a member of a struct reached through a NULL pointer).", a, a)
	}
}

func (d *decoder) cfsrNotes() {
	s := d.in.SCB
	if d.rep.Address != nil && (d.cfsrBit(DACCVIOL) || d.cfsrBit(PRECISERR)) {
		d.nullNote(*d.rep.Address)
	}
	pc, pcOK := d.faultPC()
	if d.cfsrBit(IACCVIOL) || d.cfsrBit(IBUSERR) {
		what := "IACCVIOL: the core fetched an instruction from an address the MPU does not allow to execute, or from an execute-never region such as the peripheral or system space"
		which := "MMFAR"
		if !d.cfsrBit(IACCVIOL) {
			what = "IBUSERR: an instruction fetch got a bus error: the core jumped or returned to an address with no memory behind it"
			which = "BFAR"
		}
		switch {
		case pcOK && pc < 0x100:
			d.note("%s; the stacked PC is 0x%08x: a call through a NULL function pointer. %s is not written for instruction fetches.", what, pc, which)
		case pcOK:
			d.note("%s; the stacked PC 0x%08x is that address: a corrupted return address or function pointer. %s is not written for instruction fetches.", what, pc, which)
		default:
			d.note("%s (a corrupted return address or function pointer); the address is the stacked PC, %s is not written for instruction fetches.", what, which)
		}
	}
	if d.cfsrBit(IMPRECISERR) {
		d.note("IMPRECISERR: the bus error was reported after the faulting store had retired (write buffering), so the stacked PC%s is after the faulting store, possibly several instructions later: do not blame the stacked PC's line, look at the stores before it. BFAR is not valid for imprecise errors; to make them precise while debugging, disable write buffering (ACTLR.DISDEFWBUF on Cortex-M3/M4/M7).", d.atPC())
	}
	var stk, unstk, lsp []string
	for _, b := range []struct {
		bit  uint
		name string
		list *[]string
	}{{MSTKERR, "MSTKERR", &stk}, {STKERR, "STKERR", &stk}, {MUNSTKERR, "MUNSTKERR", &unstk}, {UNSTKERR, "UNSTKERR", &unstk}, {MLSPERR, "MLSPERR", &lsp}, {LSPERR, "LSPERR", &lsp}} {
		if d.cfsrBit(b.bit) {
			*b.list = append(*b.list, b.name)
		}
	}
	if len(stk) > 0 {
		sp := ""
		if v, ok := d.regs.Get(unwinders.SP); ok {
			sp = fmt.Sprintf(" (SP is 0x%08x)", v)
		}
		d.note("%s: stacking the exception frame on exception entry failed, so the exception frame in memory is incomplete and its stacked registers cannot be trusted. The usual cause is a stack overflow: the stack pointer ran past the end of the stack into unmapped or MPU-protected memory%s.", strings.Join(stk, ", "), sp)
	}
	if len(unstk) > 0 {
		d.note("%s: unstacking the exception frame on exception return failed: the stack pointer was bad at the return or the frame was corrupted (a handler that changed SP or overran its stack); the state of the interrupted code is lost.", strings.Join(unstk, ", "))
	}
	if len(lsp) > 0 {
		where := ""
		if v, ok := s.FPCAR.Get(); ok {
			where = fmt.Sprintf(" at FPCAR 0x%08x", v)
		}
		d.note("%s: lazy floating-point state preservation failed: the FP area reserved in an earlier exception frame%s could not be written; the stack that held it probably overflowed or was released.", strings.Join(lsp, ", "), where)
	}
	if d.cfsrBit(UNDEFINSTR) {
		d.note("UNDEFINSTR: the instruction at the stacked PC%s is not defined for this core: executing data or a corrupted address, or code built for another core (FPU or newer-architecture instructions).", d.atPC())
	}
	if d.cfsrBit(INVSTATE) {
		d.invstate()
	}
	if d.cfsrBit(INVPC) {
		d.note("INVPC: an exception return loaded an illegal EXC_RETURN value or found an inconsistent exception frame; usually a handler overwrote LR or corrupted its stack before returning.")
	}
	if d.cfsrBit(NOCP) {
		cp := ""
		if v, ok := s.CPACR.Get(); ok {
			if v&cpacrFPMask == 0 {
				cp = fmt.Sprintf(" CPACR is 0x%08x: CP10/CP11 access is denied, so the FPU is off.", v)
			} else {
				cp = fmt.Sprintf(" CPACR is 0x%08x and enables CP10/CP11, so the core may have no FPU at all.", v)
			}
		}
		d.note("NOCP: a floating-point (or other coprocessor) instruction ran at the stacked PC%s while the FPU is disabled or absent: enable CP10 and CP11 in CPACR before the first floating-point instruction, or build for a core without an FPU.%s", d.atPC(), cp)
	}
	if d.prof != unwinders.V7M && d.cfsrBit(STKOF) {
		d.note("STKOF: the stack pointer went below its limit (MSPLIM or PSPLIM): a stack overflow, caught before it corrupted memory.")
	}
	if d.cfsrBit(UNALIGNED) {
		why := "either CCR.UNALIGN_TRP is set or the instruction is one that never allows unaligned addresses (LDM, STM, LDRD, STRD, exclusive accesses)."
		if v, ok := s.CCR.Get(); ok {
			if v&(1<<UNALIGNTRP) != 0 {
				why = "CCR.UNALIGN_TRP is set, so every unaligned load or store traps."
			} else {
				why = "CCR.UNALIGN_TRP is clear, so it was an instruction that never allows unaligned addresses: LDM, STM, LDRD, STRD or an exclusive access (often a packed struct or a misaligned pointer cast)."
			}
		}
		d.note("UNALIGNED: the instruction at the stacked PC%s made an unaligned memory access; %s", d.atPC(), why)
	}
	if d.cfsrBit(DIVBYZERO) {
		d.note("DIVBYZERO: an SDIV or UDIV instruction divided by zero while CCR.DIV_0_TRP is set; the stacked PC%s is the division.", d.atPC())
	}
}

// invstate explains INVSTATE: a branch to an address with bit 0 clear.
func (d *decoder) invstate() {
	var b strings.Builder
	b.WriteString("INVSTATE: the core tried to execute in ARM state (EPSR.T clear), which Cortex-M does not have. ")
	pc, pcOK := d.faultPC()
	tClear := false
	if d.fault != nil {
		if x, ok := d.fault.Get(unwinders.XPSR); ok && x&(1<<24) == 0 {
			tClear = true
		}
	}
	switch {
	case pcOK && pc == 0:
		b.WriteString("The PC is 0: a call through a NULL function pointer.")
	case pcOK:
		fmt.Fprintf(&b, "This is a branch to an address with bit 0 clear: a call through a bad or NULL function pointer, or a corrupted return address; 0x%08x is the target.", pc)
	default:
		b.WriteString("This is a branch to an address with bit 0 clear: a call through a bad or NULL function pointer, or a corrupted return address; the target is the stacked PC.")
	}
	if tClear {
		b.WriteString(" The stacked xPSR has T (bit 24) clear.")
	}
	if d.fault != nil {
		if lr, ok := d.fault.Get(unwinders.LR); ok && !isExcReturn(lr) {
			fmt.Fprintf(&b, " LR 0x%08x is the return address of the call that made the branch.", lr)
		}
	}
	d.note("%s", b.String())
}

func (d *decoder) hfsrNotes() {
	if d.hfsrBit(FORCED) {
		switch gs := d.groups(); {
		case !d.hasCFSR:
			d.note("FORCED: a configurable fault (MemManage, BusFault or UsageFault) could not be taken and escalated to HardFault; CFSR is not in the dump, so which one is unknown.")
		case len(gs) == 0:
			d.note("FORCED: a configurable fault escalated to HardFault, but the CFSR records none: it may have been cleared before the dump was taken.")
		default:
			var parts []string
			for _, g := range gs {
				parts = append(parts, fmt.Sprintf("%s (%s)", g.name, strings.Join(g.bits, ", ")))
			}
			d.note("FORCED: a configurable fault escalated to HardFault; the %s says it was %s.", gs[0].reg, strings.Join(parts, " and "))
		}
	}
	if d.hfsrBit(VECTTBL) {
		vt := ""
		if v, ok := d.in.SCB.VTOR.Get(); ok {
			vt = fmt.Sprintf(" (VTOR is 0x%08x)", v)
		}
		d.note("VECTTBL: a bus fault on a vector table read during exception entry%s: the vector table is missing or VTOR is wrong. The stacked PC is the code that was interrupted, not the culprit.", vt)
	}
	if d.hfsrBit(DEBUGEVT) {
		d.note("DEBUGEVT: a debug event, usually a BKPT instruction (a semihosting call or an assert's breakpoint), happened with no debugger attached and escalated to HardFault.")
	}
}

// shcsrNotes says which escalated faults were disabled and which other
// handlers were active.
func (d *decoder) shcsrNotes() {
	v, ok := d.in.SCB.SHCSR.Get()
	if !ok || d.prof == unwinders.V6M {
		return
	}
	if d.hasHFSR && d.hfsrBit(FORCED) {
		for _, g := range d.groups() {
			if g.exc == 7 && d.prof == unwinders.V7M {
				continue
			}
			if v&(1<<g.enable) == 0 {
				d.note("%s is disabled in SHCSR, so it escalated to HardFault.", g.name)
			} else {
				d.note("%s is enabled in SHCSR but still escalated to HardFault: it could not preempt the code running at the time (a fault inside a handler of equal or higher priority, or with PRIMASK, FAULTMASK or BASEPRI raising the execution priority).", g.name)
			}
		}
	}
	type act struct {
		bit uint
		exc int
	}
	acts := []act{{MEMFAULTACT, 4}, {BUSFAULTACT, 5}, {USGFAULTACT, 6}, {SVCALLACT, 11}, {MONITORACT, 12}, {PENDSVACT, 14}, {SYSTICKACT, 15}}
	if d.prof != unwinders.V7M {
		acts = append([]act{{NMIACT, 2}, {HARDFAULTACT, 3}}, acts...)
		acts = append(acts, act{SECUREFAULTACT, 7})
	}
	var names []string
	for _, a := range acts {
		if v&(1<<a.bit) != 0 && a.exc != d.rep.Number {
			names = append(names, ExceptionName(d.prof, a.exc))
		}
	}
	if len(names) > 0 {
		d.note("SHCSR shows other handlers active as well (%s): the fault happened while they were running or preempted (nested exceptions).", strings.Join(names, ", "))
	}
}

// nested says when the faulting code was itself an exception handler, as
// the IPSR of the unstacked xPSR shows.
func (d *decoder) nested() {
	if d.in.Faulting == nil {
		return
	}
	if n, ok := d.in.Faulting.IPSR(); ok && n != 0 {
		d.note("The fault happened inside the %s handler (the stacked xPSR has IPSR %d).", ExceptionName(d.prof, int(n)), n)
	}
}

// validity explains fault address registers that hold a value without
// their VALID bit.
func (d *decoder) validity() {
	s := d.in.SCB
	// A zero is noted only after a data fault, where it could be taken for
	// a NULL pointer: an instruction fault never writes MMFAR or BFAR.
	check := func(reg string, o Opt, valid bool, bitName string, dataFault bool) {
		if !valid && o.OK && (o.V != 0 || dataFault) {
			d.note("%s holds 0x%08x but %s is clear, so it is not the faulting address.", reg, o.V, bitName)
		}
	}
	if d.hasCFSR {
		check("MMFAR", s.MMFAR, d.cfsrBit(MMARVALID), "MMARVALID", d.cfsrBit(DACCVIOL))
		check("BFAR", s.BFAR, d.cfsrBit(BFARVALID), "BFARVALID", d.cfsrBit(PRECISERR))
	}
	if d.hasSFSR {
		check("SFAR", s.SFAR, d.sfsrBit(SFARVALID), "SFARVALID", d.sfsr&(1<<AUVIOL) != 0)
	}
}

// reserved notes set bits that the architecture reserves.
func (d *decoder) reserved() {
	if r := d.cfsr &^ (mmfsrMask | bfsrMask | d.ufsrMask()); d.hasCFSR && r != 0 {
		d.note("CFSR has reserved bits set (0x%08x): the value may be corrupt or from another core.", r)
	}
	if r := d.hfsr &^ hfsrMask; d.hasHFSR && r != 0 {
		d.note("HFSR has reserved bits set (0x%08x): the value may be corrupt.", r)
	}
	if r := d.sfsr &^ sfsrMask; d.hasSFSR && r != 0 {
		d.note("SFSR has reserved bits set (0x%08x): the value may be corrupt.", r)
	}
}

// lockup notes a PC that shows the core locked up.
func (d *decoder) lockup() {
	if d.in.Lockup != nil {
		return // said by exception()
	}
	pcs := []*unwinders.Registers{d.regs}
	if d.fault != nil && d.fault != d.regs {
		pcs = append(pcs, d.fault)
	}
	for _, r := range pcs {
		if pc, ok := r.Get(unwinders.PC); ok && Lockup(pc) {
			d.note("The PC is 0x%08x: the core locked up (a fault inside the HardFault or NMI handler, or a fault that could not be escalated); the registers are the state at lockup and unwinding stops here.", pc)
			return
		}
	}
}

// isFaultException reports whether exception n is a fault: HardFault,
// MemManage, BusFault, UsageFault or SecureFault (ARMv7-M ARM B1.5.2,
// ARMv8-M ARM B3.2).
func isFaultException(n int) bool { return n >= 3 && n <= 7 }

// notAFault says what exception n is when it is an exception other than a
// fault (a supervisor call, an interrupt), "" otherwise.
func notAFault(n int) string {
	switch {
	case n == 2:
		return "the non-maskable interrupt"
	case n == 11:
		return "a supervisor call made by an svc instruction"
	case n == 12:
		return "a debug monitor exception"
	case n == 14:
		return "a software-pended service request (PendSV, commonly the context switch)"
	case n == 15:
		return "the system timer's interrupt (SysTick)"
	case n >= 16 && n <= 511:
		return "a peripheral interrupt"
	}
	return ""
}
