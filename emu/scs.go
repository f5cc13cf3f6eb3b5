package emu

// System Control Space register addresses (ARMv7-M ARM B3.2.2, B3.3.2,
// B3.4.3, B3.5.3; docs/cortex-m.md section 2).
const (
	scsBase = 0xE000E000
	scsSize = 0x1000

	addrSysTickCSR = 0xE000E010
	addrSysTickRVR = 0xE000E014
	addrSysTickCVR = 0xE000E018
	addrNVICISER   = 0xE000E100
	addrNVICICER   = 0xE000E180
	addrNVICISPR   = 0xE000E200
	addrNVICICPR   = 0xE000E280
	addrNVICIABR   = 0xE000E300
	addrNVICIPR    = 0xE000E400
	addrCPUID      = 0xE000ED00
	addrICSR       = 0xE000ED04
	addrVTOR       = 0xE000ED08
	addrAIRCR      = 0xE000ED0C
	addrSCR        = 0xE000ED10
	addrCCR        = 0xE000ED14
	addrSHPR1      = 0xE000ED18
	addrSHCSR      = 0xE000ED24
	addrCFSR       = 0xE000ED28
	addrHFSR       = 0xE000ED2C
	addrDFSR       = 0xE000ED30
	addrMMFAR      = 0xE000ED34
	addrBFAR       = 0xE000ED38
	addrAFSR       = 0xE000ED3C
	addrCPACR      = 0xE000ED88
	addrMPUType    = 0xE000ED90
	addrMPUCtrl    = 0xE000ED94
	addrMPURNR     = 0xE000ED98
	addrMPURBAR    = 0xE000ED9C
	addrMPURASR    = 0xE000EDA0 // MPU_RLAR on ARMv8-M
	addrMPUAliases = 0xE000EDB8 // the last alias, MPU_RASR_A3 / MPU_RLAR_A3
	addrMPUMAIR0   = 0xE000EDC0 // ARMv8-M
	addrMPUMAIR1   = 0xE000EDC4
	addrSTIR       = 0xE000EF00
	addrFPCCR      = 0xE000EF34
	addrFPCAR      = 0xE000EF38
	addrFPDSCR     = 0xE000EF3C
)

// CFSR bits (B3.2.15).
const (
	cfsrIACCVIOL    = 1 << 0
	cfsrDACCVIOL    = 1 << 1
	cfsrMUNSTKERR   = 1 << 3
	cfsrMSTKERR     = 1 << 4
	cfsrMLSPERR     = 1 << 5
	cfsrMMARVALID   = 1 << 7
	cfsrIBUSERR     = 1 << 8
	cfsrPRECISERR   = 1 << 9
	cfsrIMPRECISERR = 1 << 10
	cfsrUNSTKERR    = 1 << 11
	cfsrSTKERR      = 1 << 12
	cfsrLSPERR      = 1 << 13
	cfsrBFARVALID   = 1 << 15
	cfsrUNDEFINSTR  = 1 << 16
	cfsrINVSTATE    = 1 << 17
	cfsrINVPC       = 1 << 18
	cfsrNOCP        = 1 << 19
	cfsrSTKOF       = 1 << 20
	cfsrUNALIGNED   = 1 << 24
	cfsrDIVBYZERO   = 1 << 25

	hfsrVECTTBL  = 1 << 1
	hfsrFORCED   = 1 << 30
	hfsrDEBUGEVT = 1 << 31

	ccrUNALIGNTRP = 1 << 3
	ccrDIV0TRP    = 1 << 4
	ccrSTKALIGN   = 1 << 9

	icsrPENDSTSET  = 1 << 26
	icsrPENDSTCLR  = 1 << 25
	icsrPENDSVSET  = 1 << 28
	icsrPENDSVCLR  = 1 << 27
	icsrNMIPENDSET = 1 << 31

	fpccrLSPACT = 1 << 0
	fpccrLSPEN  = 1 << 30
	fpccrASPEN  = 1 << 31
)

// Exception numbers (B1.5.2).
const (
	excReset      = 1
	excNMI        = 2
	excHardFault  = 3
	excMemManage  = 4
	excBusFault   = 5
	excUsageFault = 6
	excSVCall     = 11
	excPendSV     = 14
	excSysTick    = 15
	excIRQ0       = 16
)

// SHCSR bits (B3.2.13): the enables, and the active bit of each exception.
var shcsrActive = map[int]uint32{
	excMemManage: 1 << 0, excBusFault: 1 << 1, excUsageFault: 1 << 3,
	excSVCall: 1 << 7, 12: 1 << 8, excPendSV: 1 << 10, excSysTick: 1 << 11,
}

var shcsrEnable = map[int]uint32{
	excMemManage: 1 << 16, excBusFault: 1 << 17, excUsageFault: 1 << 18,
}

// SCS is the model of the System Control Space the harness maps at
// 0xE000E000: the SCB, the NVIC, SysTick, the MPU and the FP extension
// registers, with their architectural read/write semantics (write-one-to-
// clear status registers, set/clear register pairs, read-only identifiers).
// Unknown registers read as zero and ignore writes. The zero value is not
// ready; use newSCS. SCS is a plain value: copying it is a checkpoint.
type SCS struct {
	v6m   bool // ARMv6-M: no CFSR/HFSR/MMFAR/BFAR/SHCSR enables, no MPU model
	v8m   bool // ARMv8-M: PMSAv8 MPU registers
	hasFP bool

	CPUID  uint32
	ICSR   uint32 // the writable pending bits; VECTACTIVE comes from the harness
	VTOR   uint32
	AIRCR  uint32
	SCR    uint32
	CCR    uint32
	SHPR   [12]byte // priorities of exceptions 4..15
	SHCSR  uint32
	CFSR   uint32
	HFSR   uint32
	DFSR   uint32
	MMFAR  uint32
	BFAR   uint32
	CPACR  uint32
	FPCCR  uint32
	FPCAR  uint32
	FPDSCR uint32

	SysTickCSR, SysTickRVR uint32

	NVICEnabled [16]uint32
	NVICPending [16]uint32
	NVICActive  [16]uint32
	NVICPrio    [496]byte

	MPUCtrl uint32
	MPURNR  uint32
	MPURBAR [16]uint32
	MPURASR [16]uint32 // MPU_RLAR on ARMv8-M
	MPUMAIR [2]uint32  // ARMv8-M MPU_MAIR0/1: stored, not used

	// VectActive is the exception the core is handling (ICSR.VECTACTIVE),
	// kept by the harness.
	VectActive uint32

	// SysTick: the counter held tickValue at instruction count tickBase.
	tickBase  uint64
	tickValue uint32

	// onCCR is called after a write to CCR (the divide trap lives in C).
	onCCR func(ccr uint32)
	// now returns the instruction count (the SysTick clock); nil: 0.
	now func() uint64
	// onWrite is called after every write (pending state may change).
	onWrite func()
}

func newSCS(cpu cpuInfo) SCS {
	s := SCS{v6m: cpu.v6m, v8m: cpu.v8m, hasFP: cpu.fp, CPUID: cpu.cpuid}
	// Reset values: CCR.STKALIGN is 1 on v6-M and from v7-M r2p0 on
	// (B3.2.8); FPCCR.ASPEN and LSPEN are 1 (B3.2.20).
	s.CCR = ccrSTKALIGN
	if cpu.fp {
		s.FPCCR = fpccrASPEN | fpccrLSPEN
	}
	return s
}

// Read returns the value of the 32-bit register that contains addr,
// shifted and masked to an access of size bytes at addr.
func (s *SCS) Read(addr uint32, size int) uint32 {
	word := s.read32(addr &^ 3)
	shift := (addr & 3) * 8
	v := word >> shift
	if size < 4 {
		v &= 1<<(8*uint(size)) - 1
	}
	return v
}

func (s *SCS) read32(a uint32) uint32 {
	switch {
	case a >= addrNVICIPR && a < addrNVICIPR+496:
		i := a - addrNVICIPR
		return uint32(s.NVICPrio[i]) | uint32(s.NVICPrio[i+1])<<8 | uint32(s.NVICPrio[i+2])<<16 | uint32(s.NVICPrio[i+3])<<24
	case a >= addrNVICISER && a < addrNVICISER+64:
		return s.NVICEnabled[(a-addrNVICISER)/4]
	case a >= addrNVICICER && a < addrNVICICER+64:
		return s.NVICEnabled[(a-addrNVICICER)/4]
	case a >= addrNVICISPR && a < addrNVICISPR+64:
		return s.NVICPending[(a-addrNVICISPR)/4]
	case a >= addrNVICICPR && a < addrNVICICPR+64:
		return s.NVICPending[(a-addrNVICICPR)/4]
	case a >= addrNVICIABR && a < addrNVICIABR+64:
		return s.NVICActive[(a-addrNVICIABR)/4]
	case a >= addrSHPR1 && a < addrSHPR1+12:
		i := a - addrSHPR1
		return uint32(s.SHPR[i]) | uint32(s.SHPR[i+1])<<8 | uint32(s.SHPR[i+2])<<16 | uint32(s.SHPR[i+3])<<24
	}
	if n, rbar, ok := s.mpuRegister(a); ok {
		switch {
		case !rbar:
			return s.MPURASR[n]
		case s.v8m:
			return s.MPURBAR[n]
		}
		return s.MPURBAR[n] | n // REGION reads as the region number
	}
	switch a {
	case addrSysTickCSR:
		if s.sysTickAdvance(s.clock()) {
			s.ICSR |= icsrPENDSTSET
		}
		v := s.SysTickCSR
		s.SysTickCSR &^= 1 << 16 // COUNTFLAG clears on read
		return v
	case addrSysTickRVR:
		return s.SysTickRVR
	case addrSysTickCVR:
		return s.sysTickValue(s.clock())
	case addrCPUID:
		return s.CPUID
	case addrICSR:
		return s.ICSR | s.VectActive&0x1ff
	case addrVTOR:
		return s.VTOR
	case addrAIRCR:
		return 0xFA050000 | s.AIRCR&0x0700
	case addrSCR:
		return s.SCR
	case addrCCR:
		return s.CCR
	case addrSHCSR:
		return s.SHCSR
	case addrCFSR:
		return s.CFSR
	case addrHFSR:
		return s.HFSR
	case addrDFSR:
		return s.DFSR
	case addrMMFAR:
		return s.MMFAR
	case addrBFAR:
		return s.BFAR
	case addrCPACR:
		return s.CPACR
	case addrMPUType:
		if s.v6m {
			return 0
		}
		return 8 << 8 // eight unified regions
	case addrMPUCtrl:
		return s.MPUCtrl
	case addrMPURNR:
		return s.MPURNR
	case addrMPUMAIR0, addrMPUMAIR1:
		if s.v8m {
			return s.MPUMAIR[(a-addrMPUMAIR0)/4]
		}
	case addrFPCCR:
		return s.FPCCR
	case addrFPCAR:
		return s.FPCAR
	case addrFPDSCR:
		return s.FPDSCR
	}
	return 0
}

// clock returns the instruction count.
func (s *SCS) clock() uint64 {
	if s.now == nil {
		return 0
	}
	return s.now()
}

// Write performs a write of size bytes at addr and then calls onWrite.
func (s *SCS) Write(addr uint32, size int, v uint32) {
	s.write(addr, size, v)
	if s.onWrite != nil {
		s.onWrite()
	}
}

func (s *SCS) write(addr uint32, size int, v uint32) {
	a := addr &^ 3
	shift := (addr & 3) * 8
	mask := ^uint32(0)
	if size < 4 {
		mask = (1<<(8*uint(size)) - 1) << shift
	}
	v = (v << shift) & mask
	// Byte-addressable priority arrays.
	switch {
	case a >= addrNVICIPR && a < addrNVICIPR+496:
		for i := uint32(0); i < 4; i++ {
			if mask>>(8*i)&0xff != 0 {
				s.NVICPrio[a-addrNVICIPR+i] = byte(v >> (8 * i))
			}
		}
		return
	case a >= addrSHPR1 && a < addrSHPR1+12:
		for i := uint32(0); i < 4; i++ {
			if mask>>(8*i)&0xff != 0 {
				s.SHPR[a-addrSHPR1+i] = byte(v >> (8 * i))
			}
		}
		return
	case a >= addrNVICISER && a < addrNVICISER+64:
		s.NVICEnabled[(a-addrNVICISER)/4] |= v
		return
	case a >= addrNVICICER && a < addrNVICICER+64:
		s.NVICEnabled[(a-addrNVICICER)/4] &^= v
		return
	case a >= addrNVICISPR && a < addrNVICISPR+64:
		s.NVICPending[(a-addrNVICISPR)/4] |= v
		return
	case a >= addrNVICICPR && a < addrNVICICPR+64:
		s.NVICPending[(a-addrNVICICPR)/4] &^= v
		return
	}
	merge := func(old uint32) uint32 { return old&^mask | v }
	if n, rbar, ok := s.mpuRegister(a); ok {
		switch {
		case !rbar:
			s.MPURASR[n] = merge(s.MPURASR[n])
		case s.v8m:
			// PMSAv8: BASE, SH, AP, XN; no VALID/REGION fields.
			s.MPURBAR[n] = merge(s.MPURBAR[n])
		default:
			r := merge(s.MPURBAR[n] | n)
			if r&(1<<4) != 0 { // VALID: the region number comes with the address
				s.MPURNR, n = r&15, r&15
			}
			s.MPURBAR[n] = r &^ 0x1f
		}
		return
	}
	switch a {
	case addrSysTickCSR:
		now := s.clock()
		s.tickValue, s.tickBase = s.sysTickValue(now), now
		s.SysTickCSR = merge(s.SysTickCSR)&0x7 | s.SysTickCSR&(1<<16)
	case addrSysTickRVR:
		s.SysTickRVR = merge(s.SysTickRVR) & 0xffffff
	case addrSysTickCVR:
		// Any write clears the counter and COUNTFLAG (B3.3.5); it
		// reloads from SYST_RVR on the next tick.
		s.tickValue, s.tickBase = 0, s.clock()
		s.SysTickCSR &^= 1 << 16
	case addrICSR:
		if v&icsrPENDSVSET != 0 {
			s.ICSR |= icsrPENDSVSET
		}
		if v&icsrPENDSVCLR != 0 {
			s.ICSR &^= icsrPENDSVSET
		}
		if v&icsrPENDSTSET != 0 {
			s.ICSR |= icsrPENDSTSET
		}
		if v&icsrPENDSTCLR != 0 {
			s.ICSR &^= icsrPENDSTSET
		}
		if v&icsrNMIPENDSET != 0 {
			s.ICSR |= icsrNMIPENDSET
		}
	case addrVTOR:
		s.VTOR = merge(s.VTOR) &^ 0x7f
	case addrAIRCR:
		if v>>16 == 0x05FA || mask != ^uint32(0) {
			s.AIRCR = merge(s.AIRCR) & 0x0706
		}
	case addrSCR:
		s.SCR = merge(s.SCR) & 0x16
	case addrCCR:
		if !s.v6m {
			s.CCR = merge(s.CCR)&0x31b | ccrSTKALIGN
			if s.onCCR != nil {
				s.onCCR(s.CCR)
			}
		}
	case addrSHCSR:
		if !s.v6m {
			s.SHCSR = merge(s.SHCSR) & 0x7ffff
		}
	case addrCFSR:
		s.CFSR &^= v // write one to clear
	case addrHFSR:
		s.HFSR &^= v
	case addrDFSR:
		s.DFSR &^= v
	case addrMMFAR:
		s.MMFAR = merge(s.MMFAR)
	case addrBFAR:
		s.BFAR = merge(s.BFAR)
	case addrCPACR:
		s.CPACR = merge(s.CPACR) & (0xf << 20)
	case addrMPUCtrl:
		s.MPUCtrl = merge(s.MPUCtrl) & 7
	case addrMPURNR:
		s.MPURNR = merge(s.MPURNR) & 0xff
	case addrMPUMAIR0, addrMPUMAIR1:
		if s.v8m {
			i := (a - addrMPUMAIR0) / 4
			s.MPUMAIR[i] = merge(s.MPUMAIR[i])
		}
	case addrSTIR:
		if n := v & 0x1ff; n < 496 {
			s.NVICPending[n/32] |= 1 << (n % 32)
		}
	case addrFPCCR:
		s.FPCCR = merge(s.FPCCR)
	case addrFPCAR:
		s.FPCAR = merge(s.FPCAR) &^ 7
	case addrFPDSCR:
		s.FPDSCR = merge(s.FPDSCR)
	}
}

// mpuRegister decodes an address in MPU_RBAR..MPU_RASR_A3 (ARMv7-M ARM
// B3.5.3: RBAR_An and RASR_An are aliases of MPU_RBAR and MPU_RASR for the
// region MPU_RNR selects) or MPU_RBAR..MPU_RLAR_A3 (ARMv8-M ARM D1.2:
// RBAR_An and RLAR_An reach region MPU_RNR[7:2]:n, as CMSIS's
// ARM_MPU_Load uses them): the region number and whether a is an RBAR
// (else RASR/RLAR).
func (s *SCS) mpuRegister(a uint32) (n uint32, rbar, ok bool) {
	if a < addrMPURBAR || a > addrMPUAliases {
		return 0, false, false
	}
	off := a - addrMPURBAR
	n = s.MPURNR
	if s.v8m && off >= 8 {
		n = n&^3 + off/8
	}
	return n & 15, off%8 == 0, true
}

// priority returns the configured priority of exception exc (B1.5.4):
// Reset -3, NMI -2, HardFault -1, else the SHPR or NVIC_IPR byte.
func (s *SCS) priority(exc int) int {
	switch {
	case exc == excReset:
		return -3
	case exc == excNMI:
		return -2
	case exc == excHardFault:
		return -1
	case exc >= 4 && exc < 16:
		return int(s.SHPR[exc-4])
	case exc >= excIRQ0 && exc < excIRQ0+496:
		return int(s.NVICPrio[exc-excIRQ0])
	}
	return 256
}
