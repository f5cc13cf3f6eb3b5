// Package fault decodes the Cortex-M fault status registers of the System
// Control Block into a plain-language explanation of a crash: which
// exception was taken, which status bits are set and what they mean, and the
// faulting address when the core recorded a valid one.
//
// References: ARMv7-M Architecture Reference Manual (DDI 0403E) B1.5
// (exceptions), B3.2.2 (SCB register map), B3.2.4 (ICSR), B3.2.8 (CCR),
// B3.2.13 (SHCSR), B3.2.15 (CFSR: MMFSR, BFSR, UFSR), B3.2.16 (HFSR), C1.6.1
// (DFSR), B3.2.17-B3.2.18 (MMFAR, BFAR); ARMv8-M Architecture Reference
// Manual (DDI 0553) D1.2 (SFSR, SFAR, UFSR.STKOF); ARMv6-M Architecture
// Reference Manual (DDI 0419), which has no configurable faults and no fault
// status registers.
package fault

import (
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Addresses of the SCB registers that SCB holds (ARMv7-M B3.2.2, ARMv8-M
// D1.2, FP extension B3.2.20-B3.2.22).
const (
	AddrICSR  = 0xE000ED04
	AddrVTOR  = 0xE000ED08
	AddrCCR   = 0xE000ED14
	AddrSHCSR = 0xE000ED24
	AddrCFSR  = 0xE000ED28
	AddrHFSR  = 0xE000ED2C
	AddrDFSR  = 0xE000ED30
	AddrMMFAR = 0xE000ED34
	AddrBFAR  = 0xE000ED38
	AddrAFSR  = 0xE000ED3C
	AddrCPACR = 0xE000ED88
	AddrSFSR  = 0xE000EDE4
	AddrSFAR  = 0xE000EDE8
	AddrFPCCR = 0xE000EF34
	AddrFPCAR = 0xE000EF38
)

// Opt is a register value that may be unknown. The zero Opt is unknown.
type Opt struct {
	V  uint32 // the value; 0 when unknown
	OK bool   // whether the value is known
}

// Known returns a known value.
func Known(v uint32) Opt { return Opt{V: v, OK: true} }

// Get returns the value and whether it is known.
func (o Opt) Get() (uint32, bool) { return o.V, o.OK }

// SCB holds the fault-related registers of the System Control Block as far
// as a dump records them. A register the dump does not hold is unknown, not
// zero. The zero SCB knows nothing.
type SCB struct {
	CFSR  Opt // Configurable Fault Status: MMFSR byte 0, BFSR byte 1, UFSR halfword 1
	HFSR  Opt // HardFault Status
	MMFAR Opt // MemManage Fault Address (valid when CFSR.MMARVALID)
	BFAR  Opt // BusFault Address (valid when CFSR.BFARVALID)
	SHCSR Opt // System Handler Control and State: fault enables, active bits
	DFSR  Opt // Debug Fault Status
	AFSR  Opt // Auxiliary Fault Status (implementation defined)
	SFSR  Opt // Secure Fault Status (ARMv8-M Security Extension)
	SFAR  Opt // Secure Fault Address (valid when SFSR.SFARVALID)
	CCR   Opt // Configuration and Control: DIV_0_TRP, UNALIGN_TRP, STKALIGN
	ICSR  Opt // Interrupt Control and State: VECTACTIVE
	VTOR  Opt // Vector Table Offset
	CPACR Opt // Coprocessor Access Control: CP10/CP11 (FPU) enable
	FPCCR Opt // FP Context Control: lazy stacking state
	FPCAR Opt // FP Context Address: where the lazy FP area was reserved
}

// field is one row of the register table.
type field struct {
	name string // upper-case mnemonic
	addr uint32
	get  func(*SCB) *Opt
}

// fields returns the register table in the order of the SCB struct. It is a
// function, not a package variable, so that nothing global is mutable.
func fields() [15]field {
	return [15]field{
		{"CFSR", AddrCFSR, func(s *SCB) *Opt { return &s.CFSR }},
		{"HFSR", AddrHFSR, func(s *SCB) *Opt { return &s.HFSR }},
		{"MMFAR", AddrMMFAR, func(s *SCB) *Opt { return &s.MMFAR }},
		{"BFAR", AddrBFAR, func(s *SCB) *Opt { return &s.BFAR }},
		{"SHCSR", AddrSHCSR, func(s *SCB) *Opt { return &s.SHCSR }},
		{"DFSR", AddrDFSR, func(s *SCB) *Opt { return &s.DFSR }},
		{"AFSR", AddrAFSR, func(s *SCB) *Opt { return &s.AFSR }},
		{"SFSR", AddrSFSR, func(s *SCB) *Opt { return &s.SFSR }},
		{"SFAR", AddrSFAR, func(s *SCB) *Opt { return &s.SFAR }},
		{"CCR", AddrCCR, func(s *SCB) *Opt { return &s.CCR }},
		{"ICSR", AddrICSR, func(s *SCB) *Opt { return &s.ICSR }},
		{"VTOR", AddrVTOR, func(s *SCB) *Opt { return &s.VTOR }},
		{"CPACR", AddrCPACR, func(s *SCB) *Opt { return &s.CPACR }},
		{"FPCCR", AddrFPCCR, func(s *SCB) *Opt { return &s.FPCCR }},
		{"FPCAR", AddrFPCAR, func(s *SCB) *Opt { return &s.FPCAR }},
	}
}

// Names returns the mnemonics of the registers an SCB holds, in struct
// order: "CFSR", "HFSR", "MMFAR", ...
func Names() []string {
	fs := fields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// Addr returns the memory-mapped address of the register with the given
// mnemonic (case-insensitive).
func Addr(name string) (uint32, bool) {
	for _, f := range fields() {
		if strings.EqualFold(f.name, name) {
			return f.addr, true
		}
	}
	return 0, false
}

// Field returns a pointer to the register with the given mnemonic
// (case-insensitive: "cfsr" and "CFSR" both work), or nil if the SCB has no
// such register.
func (s *SCB) Field(name string) *Opt {
	for _, f := range fields() {
		if strings.EqualFold(f.name, name) {
			return f.get(s)
		}
	}
	return nil
}

// Each calls fn for every known register, in struct order, with its
// upper-case mnemonic.
func (s *SCB) Each(fn func(name string, v uint32)) {
	for _, f := range fields() {
		if o := f.get(s); o.OK {
			fn(f.name, o.V)
		}
	}
}

// FromMemory reads the SCB registers from memory at their architectural
// addresses (0xE000ED04.., 0xE000EDE4.., 0xE000EF34..). A register whose
// four bytes are not all mapped is unknown. A nil m gives an empty SCB.
func FromMemory(m unwinders.Memory) SCB {
	var s SCB
	if m == nil {
		return s
	}
	for _, f := range fields() {
		if v, err := unwinders.ReadU32(m, f.addr); err == nil {
			*f.get(&s) = Known(v)
		}
	}
	return s
}

// Merge returns s with every register that o knows replaced by o's value:
// o wins. Use it as FromMemory(mem).Merge(explicit) so that values a dump
// states explicitly override what its memory holds.
func (s SCB) Merge(o SCB) SCB {
	out := s
	for _, f := range fields() {
		if v := f.get(&o); v.OK {
			*f.get(&out) = *v
		}
	}
	return out
}
