package frame

import "fmt"

// Register columns. A Row has one Rule per column; a column stands for one
// ARM DWARF register number (AADWARF32 4.1).
const (
	NumCore    = 16 // r0-r15: DWARF 0-15
	NumS       = 32 // s0-s31: DWARF 64-95 (the legacy single-precision numbering)
	NumD       = 32 // d0-d31: DWARF 256-287
	NumColumns = NumCore + NumS + NumD

	dwarfS0 = 64
	dwarfD0 = 256
)

// Column returns the column of DWARF register number reg.
func Column(reg uint64) (int, bool) {
	switch {
	case reg < NumCore:
		return int(reg), true
	case reg >= dwarfS0 && reg < dwarfS0+NumS:
		return NumCore + int(reg-dwarfS0), true
	case reg >= dwarfD0 && reg < dwarfD0+NumD:
		return NumCore + NumS + int(reg-dwarfD0), true
	}
	return 0, false
}

// ColumnReg returns the DWARF register number of column col.
func ColumnReg(col int) uint16 {
	switch {
	case col < NumCore:
		return uint16(col)
	case col < NumCore+NumS:
		return uint16(dwarfS0 + col - NumCore)
	}
	return uint16(dwarfD0 + col - NumCore - NumS)
}

// RegName names a DWARF register number: "r7", "s16", "d8", or "reg300".
func RegName(reg uint64) string {
	switch {
	case reg < NumCore:
		return fmt.Sprintf("r%d", reg)
	case reg >= dwarfS0 && reg < dwarfS0+NumS:
		return fmt.Sprintf("s%d", reg-dwarfS0)
	case reg >= dwarfD0 && reg < dwarfD0+NumD:
		return fmt.Sprintf("d%d", reg-dwarfD0)
	}
	return fmt.Sprintf("reg%d", reg)
}

// RuleKind is how a register's value in the caller is found (DWARF 5
// 6.4.1, "register rules").
type RuleKind uint8

const (
	// Unspecified: no instruction mentioned the register. DWARF leaves the
	// meaning to the ABI; for ARM the consumer treats callee-saved
	// registers (AAPCS r4-r11, s16-s31) as unchanged and the others as
	// unknown.
	Unspecified   RuleKind = iota
	Undefined              // DW_CFA_undefined: the value cannot be recovered
	SameValue              // DW_CFA_same_value: unchanged from the callee
	Offset                 // saved at CFA+Offset
	ValOffset              // the value is CFA+Offset
	Register               // saved in register Reg
	Expression             // saved at the address a DWARF expression computes (not evaluated)
	ValExpression          // the value a DWARF expression computes (not evaluated)
)

func (k RuleKind) String() string {
	switch k {
	case Unspecified:
		return "unspecified"
	case Undefined:
		return "undefined"
	case SameValue:
		return "same value"
	case Offset:
		return "offset(N)"
	case ValOffset:
		return "val_offset(N)"
	case Register:
		return "register(R)"
	case Expression:
		return "expression(E)"
	case ValExpression:
		return "val_expression(E)"
	}
	return fmt.Sprintf("rule(%d)", uint8(k))
}

// Rule is one register's rule in a Row.
type Rule struct {
	Kind   RuleKind
	Reg    uint16 // Register: the DWARF register number holding the value
	Offset int32  // Offset, ValOffset: bytes from the CFA
	// An Expression or ValExpression rule keeps no expression: this
	// package never evaluates one, and a Rule stays a small value.
}

// String uses readelf's --debug-dump=frames-interp notation: "u"
// (undefined), "s" (same value), "c-8" (saved at CFA-8), "v+8" (value
// CFA+8), "r4" (in r4), "exp", "vexp"; an unspecified rule prints as "".
func (r Rule) String() string {
	switch r.Kind {
	case Unspecified:
		return ""
	case Undefined:
		return "u"
	case SameValue:
		return "s"
	case Offset:
		return fmt.Sprintf("c%+d", r.Offset)
	case ValOffset:
		return fmt.Sprintf("v%+d", r.Offset)
	case Register:
		return RegName(uint64(r.Reg))
	case Expression:
		return "exp"
	case ValExpression:
		return "vexp"
	}
	return r.Kind.String()
}

// CFARule says how to compute the canonical frame address: register Reg
// plus Offset, or (Expr != nil) a DWARF expression, which this package
// does not evaluate.
type CFARule struct {
	Reg    uint16
	Offset int64
	Expr   []byte
}

// IsExpression reports whether the CFA is defined by a DWARF expression.
func (c CFARule) IsExpression() bool { return c.Expr != nil }

// String prints "r13+8" or "exp", as readelf does.
func (c CFARule) String() string {
	if c.IsExpression() {
		return "exp"
	}
	return fmt.Sprintf("%s%+d", RegName(uint64(c.Reg)), c.Offset)
}

// Row is one row of the call frame table: the rules that hold for the
// addresses [Loc, End).
type Row struct {
	Loc, End uint64
	CFA      CFARule
	Regs     [NumColumns]Rule
}

// Rule returns the rule of DWARF register reg (Unspecified for a register
// without a column).
func (r *Row) Rule(reg uint64) Rule {
	if c, ok := Column(reg); ok {
		return r.Regs[c]
	}
	return Rule{}
}
