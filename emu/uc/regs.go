package uc

import "fmt"

// Reg is a Unicorn ARM register identifier (enum uc_arm_reg in
// unicorn/arm.h). The values are fixed by the 2.0.x ABI; a cgo build checks
// them against the header at compile time.
type Reg int

// Core, system and floating-point registers.
const (
	RegAPSR     Reg = 1
	RegAPSRNZCV Reg = 2 // writing it rebuilds the translator flags (trap 3)
	RegCPSR     Reg = 3
	RegFPEXC    Reg = 4
	RegFPSCR    Reg = 6
	RegLR       Reg = 10
	RegPC       Reg = 11
	RegSP       Reg = 12
	RegD0       Reg = 14 // D0..D31 are consecutive
	RegQ0       Reg = 50 // Q0..Q15 are consecutive
	RegR0       Reg = 66 // R0..R12 are consecutive
	RegS0       Reg = 79 // S0..S31 are consecutive
	RegIPSR     Reg = 114
	RegMSP      Reg = 115
	RegPSP      Reg = 116
	RegCONTROL  Reg = 117
	RegXPSR     Reg = 120
	RegPRIMASK  Reg = 123
	RegBASEPRI  Reg = 124
	RegFAULTMSK Reg = 126
)

// RegR returns the identifier of core register Rn, n in 0..15 (13 = SP,
// 14 = LR, 15 = PC).
func RegR(n int) Reg {
	switch {
	case n >= 0 && n <= 12:
		return RegR0 + Reg(n)
	case n == 13:
		return RegSP
	case n == 14:
		return RegLR
	case n == 15:
		return RegPC
	}
	panic(fmt.Sprintf("no core register r%d", n))
}

// RegS returns the identifier of single-precision register Sn, n in 0..31.
func RegS(n int) Reg {
	if n < 0 || n > 31 {
		panic(fmt.Sprintf("no register s%d", n))
	}
	return RegS0 + Reg(n)
}

// RegD returns the identifier of double-precision register Dn, n in 0..31.
func RegD(n int) Reg {
	if n < 0 || n > 31 {
		panic(fmt.Sprintf("no register d%d", n))
	}
	return RegD0 + Reg(n)
}
