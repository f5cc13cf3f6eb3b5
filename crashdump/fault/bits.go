package fault

import (
	"strconv"

	"github.com/faultline-dev/faultline/unwinders"
)

// Bit positions of the fault status registers. CFSR: ARMv7-M B3.2.15 (MMFSR
// bits 7:0, BFSR bits 15:8, UFSR bits 31:16); UFSR.STKOF is ARMv8-M only
// (ARMv8-M ARM, CFSR register description).
const (
	IACCVIOL    = 0
	DACCVIOL    = 1
	MUNSTKERR   = 3
	MSTKERR     = 4
	MLSPERR     = 5
	MMARVALID   = 7
	IBUSERR     = 8
	PRECISERR   = 9
	IMPRECISERR = 10
	UNSTKERR    = 11
	STKERR      = 12
	LSPERR      = 13
	BFARVALID   = 15
	UNDEFINSTR  = 16
	INVSTATE    = 17
	INVPC       = 18
	NOCP        = 19
	STKOF       = 20 // ARMv8-M only
	UNALIGNED   = 24
	DIVBYZERO   = 25
)

// HFSR bits (ARMv7-M B3.2.16).
const (
	VECTTBL  = 1
	FORCED   = 30
	DEBUGEVT = 31
)

// SFSR bits (ARMv8-M Security Extension, SFSR).
const (
	INVEP     = 0
	INVIS     = 1
	INVER     = 2
	AUVIOL    = 3
	INVTRAN   = 4
	SLSPERR   = 5 // LSPERR in the SFSR
	SFARVALID = 6
	LSERR     = 7
)

// DFSR bits (ARMv7-M C1.6.1).
const (
	HALTED   = 0
	BKPT     = 1
	DWTTRAP  = 2
	VCATCH   = 3
	EXTERNAL = 4
)

// SHCSR bits (ARMv7-M B3.2.13; ARMv8-M adds HARDFAULTACT, SECUREFAULTACT,
// NMIACT and SECUREFAULTENA).
const (
	MEMFAULTACT    = 0
	BUSFAULTACT    = 1
	HARDFAULTACT   = 2
	USGFAULTACT    = 3
	SECUREFAULTACT = 4
	NMIACT         = 5
	SVCALLACT      = 7
	MONITORACT     = 8
	PENDSVACT      = 10
	SYSTICKACT     = 11
	MEMFAULTENA    = 16
	BUSFAULTENA    = 17
	USGFAULTENA    = 18
	SECUREFAULTENA = 19
)

// CCR bits (ARMv7-M B3.2.8) and the CPACR CP10/CP11 field (B3.2.20).
const (
	UNALIGNTRP  = 3 // UNALIGN_TRP
	DIV0TRP     = 4 // DIV_0_TRP
	STKALIGN    = 9
	cpacrFPMask = 0xF << 20
)

// Masks of the CFSR sub-registers and of the defined bits.
const (
	mmfsrMask = 1<<IACCVIOL | 1<<DACCVIOL | 1<<MUNSTKERR | 1<<MSTKERR | 1<<MLSPERR | 1<<MMARVALID
	bfsrMask  = 1<<IBUSERR | 1<<PRECISERR | 1<<IMPRECISERR | 1<<UNSTKERR | 1<<STKERR | 1<<LSPERR | 1<<BFARVALID
	ufsrV7    = 1<<UNDEFINSTR | 1<<INVSTATE | 1<<INVPC | 1<<NOCP | 1<<UNALIGNED | 1<<DIVBYZERO
	ufsrV8    = ufsrV7 | 1<<STKOF
	hfsrMask  = 1<<VECTTBL | 1<<FORCED | 1<<DEBUGEVT
	sfsrMask  = 0xFF
)

// bitDef describes one status bit: its mnemonic and the text of the Cause.
type bitDef struct {
	bit  uint
	name string
	text string
	v8   bool // defined on ARMv8-M only
}

// cfsrBits is the CFSR bit table in bit order. The *VALID texts are
// completed with the address by the decoder. (An array: every analysis
// decodes the fault, and a slice literal would be allocated each time.)
func cfsrBits() [20]bitDef {
	return [...]bitDef{
		{IACCVIOL, "IACCVIOL", "instruction access violation: execution from a region the MPU or the memory map forbids (execute-never)", false},
		{DACCVIOL, "DACCVIOL", "data access violation: a load or store to an address the MPU does not permit", false},
		{MUNSTKERR, "MUNSTKERR", "MemManage fault while unstacking the exception frame on exception return", false},
		{MSTKERR, "MSTKERR", "MemManage fault while stacking the exception frame on exception entry", false},
		{MLSPERR, "MLSPERR", "MemManage fault during lazy floating-point state preservation", false},
		{MMARVALID, "MMARVALID", "MMFAR holds the faulting data address", false},
		{IBUSERR, "IBUSERR", "instruction bus error: an instruction fetch failed", false},
		{PRECISERR, "PRECISERR", "precise data bus error", false},
		{IMPRECISERR, "IMPRECISERR", "imprecise data bus error", false},
		{UNSTKERR, "UNSTKERR", "bus fault while unstacking the exception frame on exception return", false},
		{STKERR, "STKERR", "bus fault while stacking the exception frame on exception entry", false},
		{LSPERR, "LSPERR", "bus fault during lazy floating-point state preservation", false},
		{BFARVALID, "BFARVALID", "BFAR holds the faulting data address", false},
		{UNDEFINSTR, "UNDEFINSTR", "undefined instruction", false},
		{INVSTATE, "INVSTATE", "invalid state: an instruction executed with EPSR.T clear (ARM state)", false},
		{INVPC, "INVPC", "invalid PC load on exception return: bad EXC_RETURN value or exception frame", false},
		{NOCP, "NOCP", "no coprocessor: a floating-point or coprocessor instruction with the coprocessor disabled or absent", false},
		{STKOF, "STKOF", "stack overflow: the stack pointer went below its limit register (MSPLIM/PSPLIM)", true},
		{UNALIGNED, "UNALIGNED", "unaligned memory access", false},
		{DIVBYZERO, "DIVBYZERO", "integer division by zero", false},
	}
}

// hfsrBits is the HFSR bit table in bit order.
func hfsrBits() []bitDef {
	return []bitDef{
		{VECTTBL, "VECTTBL", "bus fault on a vector table read during exception processing", false},
		{FORCED, "FORCED", "a configurable fault was escalated to HardFault", false},
		{DEBUGEVT, "DEBUGEVT", "debug event (such as a BKPT instruction) with halting debug disabled", false},
	}
}

// sfsrBits is the SFSR bit table in bit order.
func sfsrBits() []bitDef {
	return []bitDef{
		{INVEP, "INVEP", "invalid Secure entry point: Non-secure code called a Secure address without an SG instruction", true},
		{INVIS, "INVIS", "invalid integrity signature in the exception stack frame on exception return", true},
		{INVER, "INVER", "invalid exception return: EXC_RETURN does not match the security state", true},
		{AUVIOL, "AUVIOL", "attribution unit violation: a Non-secure access to Secure memory", true},
		{INVTRAN, "INVTRAN", "invalid transition from Secure to Non-secure state without BXNS/BLXNS", true},
		{SLSPERR, "LSPERR", "SecureFault during lazy floating-point state preservation", true},
		{SFARVALID, "SFARVALID", "SFAR holds the faulting address", true},
		{LSERR, "LSERR", "lazy state error: floating-point context activation or deactivation failed", true},
	}
}

// dfsrBits is the DFSR bit table in bit order.
func dfsrBits() []bitDef {
	return []bitDef{
		{HALTED, "HALTED", "halt request or single step", false},
		{BKPT, "BKPT", "BKPT instruction or breakpoint match", false},
		{DWTTRAP, "DWTTRAP", "DWT watchpoint or trace event", false},
		{VCATCH, "VCATCH", "vector catch", false},
		{EXTERNAL, "EXTERNAL", "external debug request (EDBGRQ)", false},
	}
}

// ExceptionName returns the architectural name of exception number n on
// the given profile: "HardFault", "SVCall", "IRQ 5"; reserved numbers give
// "exception 8". Unknown profile: the ARMv8-M names.
func ExceptionName(p unwinders.Profile, n int) string {
	switch {
	case n < 0 || n > 511:
		return "exception " + itoa(n)
	case n == 0:
		return "Thread mode"
	case n >= 16:
		return "IRQ " + itoa(n-16)
	}
	switch n {
	case 1:
		return "Reset"
	case 2:
		return "NMI"
	case 3:
		return "HardFault"
	case 11:
		return "SVCall"
	case 14:
		return "PendSV"
	case 15:
		return "SysTick"
	}
	if p == unwinders.V6M {
		return "exception " + itoa(n) // 4-10, 12, 13 are reserved on ARMv6-M
	}
	switch n {
	case 4:
		return "MemManage"
	case 5:
		return "BusFault"
	case 6:
		return "UsageFault"
	case 7:
		if p != unwinders.V7M {
			return "SecureFault"
		}
	case 12:
		return "DebugMonitor"
	}
	return "exception " + itoa(n)
}

func itoa(n int) string { return strconv.Itoa(n) }
