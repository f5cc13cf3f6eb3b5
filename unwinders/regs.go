package unwinders

import (
	"fmt"
	"strings"
)

// Reg names one register of the Cortex-M register file.
type Reg uint8

// The register file: core registers, special registers, FP registers.
const (
	R0 Reg = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10
	R11
	R12
	SP // r13, the active stack pointer
	LR // r14
	PC // r15
	XPSR
	MSP
	PSP
	CONTROL
	PRIMASK
	BASEPRI
	FAULTMASK
	FPSCR
	S0 // S0..S31 follow
)

// The ARMv8-M Security Extension's banked registers (ARMv8-M ARM B3.11):
// the stack pointers of each security state and the Non-secure CONTROL.
// MSP, PSP and CONTROL name those of the state the dump was taken in.
const (
	MSPS      Reg = S0 + 32 + iota // MSP_S
	PSPS                           // PSP_S
	MSPNS                          // MSP_NS
	PSPNS                          // PSP_NS
	CONTROLNS                      // CONTROL_NS
)

// NumRegs is the number of registers in a Registers value.
const NumRegs = int(CONTROLNS) + 1

// S returns single-precision register Sn.
func S(n int) Reg { return S0 + Reg(n) }

var specialNames = [...]string{
	R0: "r0", R1: "r1", R2: "r2", R3: "r3", R4: "r4", R5: "r5", R6: "r6", R7: "r7",
	R8: "r8", R9: "r9", R10: "r10", R11: "r11", R12: "r12", SP: "sp", LR: "lr", PC: "pc",
	XPSR: "xpsr", MSP: "msp", PSP: "psp", CONTROL: "control", PRIMASK: "primask",
	BASEPRI: "basepri", FAULTMASK: "faultmask", FPSCR: "fpscr",
}

// String returns the register's lower-case name as used in dumps ("r7", "sp",
// "xpsr", "s15").
func (r Reg) String() string {
	if int(r) < len(specialNames) {
		return specialNames[r]
	}
	if r >= MSPS && int(r) < NumRegs {
		return bankedNames[r-MSPS]
	}
	if int(r) < NumRegs {
		return sNames[r-S0]
	}
	return fmt.Sprintf("reg%d", r)
}

// ParseReg maps a register name to a Reg. It accepts the dump names and the
// usual aliases: r13/r14/r15, fp (r11 in ARM state APCS), ip (r12), psr.
func ParseReg(name string) (Reg, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "r13":
		return SP, true
	case "r14":
		return LR, true
	case "r15":
		return PC, true
	case "ip":
		return R12, true
	case "fp":
		return R11, true
	case "psr", "cpsr":
		return XPSR, true
	}
	for i, s := range specialNames {
		if s == n {
			return Reg(i), true
		}
	}
	for i, s := range bankedNames {
		if s == n {
			return MSPS + Reg(i), true
		}
	}
	// s0 .. s31, spelled canonically (no sign, no leading zero).
	if len(n) >= 2 && len(n) <= 3 && n[0] == 's' {
		k := 0
		for _, c := range n[1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
			k = 10*k + int(c-'0')
		}
		if k < 32 && sNames[k] == n {
			return S(k), true
		}
	}
	return 0, false
}

// bankedNames are the names of MSPS .. CONTROLNS.
var bankedNames = [...]string{"msp_s", "psp_s", "msp_ns", "psp_ns", "control_ns"}

// sNames are the names of S0 .. S31.
var sNames = [32]string{
	"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
	"s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31",
}

// Registers is a register file in which every value is either known or
// unknown. Unknown is not zero: an unwinder that cannot recover a register
// leaves it unknown and later steps must not use it.
// The zero value has every register unknown.
type Registers struct {
	val   [NumRegs]uint32
	known uint64
}

// Get returns a register's value and whether it is known.
func (r *Registers) Get(reg Reg) (uint32, bool) {
	if int(reg) >= NumRegs || r.known&(1<<reg) == 0 {
		return 0, false
	}
	return r.val[reg], true
}

// Value returns the register's value, or 0 when unknown. Use it only where
// the caller has already checked Known.
func (r *Registers) Value(reg Reg) uint32 { v, _ := r.Get(reg); return v }

// Known reports whether a register's value is known.
func (r *Registers) Known(reg Reg) bool { _, ok := r.Get(reg); return ok }

// Set records a known value.
func (r *Registers) Set(reg Reg, v uint32) {
	if int(reg) >= NumRegs {
		return
	}
	r.val[reg] = v
	r.known |= 1 << reg
}

// Forget marks a register unknown.
func (r *Registers) Forget(reg Reg) {
	if int(reg) < NumRegs {
		r.known &^= 1 << reg
		r.val[reg] = 0
	}
}

// ForgetCallerSaved marks the registers a call may clobber under the AAPCS
// (r0-r3, r12, and the FP registers s0-s15 and FPSCR) unknown: they cannot be
// recovered for a caller's frame.
func (r *Registers) ForgetCallerSaved() {
	for _, reg := range []Reg{R0, R1, R2, R3, R12, FPSCR} {
		r.Forget(reg)
	}
	for i := 0; i < 16; i++ {
		r.Forget(S(i))
	}
}

// Equal reports whether two register files know the same registers with the
// same values.
func (r *Registers) Equal(o *Registers) bool { return *r == *o }

// Each calls fn for every known register in register order.
func (r *Registers) Each(fn func(Reg, uint32)) {
	for i := 0; i < NumRegs; i++ {
		if r.known&(1<<i) != 0 {
			fn(Reg(i), r.val[i])
		}
	}
}

// IPSR returns the exception number in the xPSR (0 in Thread mode).
func (r *Registers) IPSR() (uint32, bool) {
	x, ok := r.Get(XPSR)
	return x & 0x1ff, ok
}
