package frame

import (
	"math"
	"math/bits"
)

// MaxRememberDepth bounds the DW_CFA_remember_state stack. GCC's
// shrink-wrapped code nests it once or twice; a deeper stack is taken for
// hostile input.
const MaxRememberDepth = 64

// Call frame instructions (DWARF 5 section 7.24, table 7.29, and the GNU
// extensions).
const (
	cfaAdvanceLoc         = 0x40 // high 2 bits; delta in the low 6
	cfaOffset             = 0x80 // high 2 bits; register in the low 6
	cfaRestore            = 0xc0 // high 2 bits; register in the low 6
	cfaNop                = 0x00
	cfaSetLoc             = 0x01
	cfaAdvanceLoc1        = 0x02
	cfaAdvanceLoc2        = 0x03
	cfaAdvanceLoc4        = 0x04
	cfaOffsetExtended     = 0x05
	cfaRestoreExtended    = 0x06
	cfaUndefined          = 0x07
	cfaSameValue          = 0x08
	cfaRegister           = 0x09
	cfaRememberState      = 0x0a
	cfaRestoreState       = 0x0b
	cfaDefCFA             = 0x0c
	cfaDefCFARegister     = 0x0d
	cfaDefCFAOffset       = 0x0e
	cfaDefCFAExpression   = 0x0f
	cfaExpression         = 0x10
	cfaOffsetExtendedSF   = 0x11
	cfaDefCFASF           = 0x12
	cfaDefCFAOffsetSF     = 0x13
	cfaValOffset          = 0x14
	cfaValOffsetSF        = 0x15
	cfaValExpression      = 0x16
	cfaGNUWindowSave      = 0x2d
	cfaGNUArgsSize        = 0x2e
	cfaGNUNegOffsetExt    = 0x2f
	maxCFAOffsetMagnitude = math.MaxInt32
)

// InitialRow returns the row the CIE's initial instructions build: the
// rules every FDE of the CIE starts from. Its Loc and End are 0.
func (c *CIE) InitialRow() (Row, error) {
	m := machine{cie: c, kind: c.kind}
	if err := m.run(c.Instructions, c.instOff, true, nil); err != nil {
		return Row{}, err
	}
	return m.row, nil
}

// Rows returns the FDE's whole table: one Row per range of addresses over
// which the rules do not change, in address order, the last ending at End.
// Rows that cover no address (two advances to the same location) are left
// out; an FDE with an empty range has no rows. Cost: linear in the instructions; each row is a copy.
func (f *FDE) Rows() ([]Row, error) {
	var rows []Row
	m := machine{cie: f.CIE, fde: f, kind: f.kind, loc: f.Start}
	if err := m.run(f.CIE.Instructions, f.CIE.instOff, true, nil); err != nil {
		return nil, err
	}
	m.initial = m.row
	emit := func(end uint64) bool {
		if end > m.loc {
			r := m.row
			r.Loc, r.End = m.loc, end
			rows = append(rows, r)
		}
		return false
	}
	if err := m.run(f.Instructions, f.instOff, false, emit); err != nil {
		return rows, err
	}
	if m.loc < f.End {
		r := m.row
		r.Loc, r.End = m.loc, f.End
		rows = append(rows, r)
	}
	return rows, nil
}

// RowAt returns the row that holds at pc, which must lie in [Start, End).
// It runs the instructions only as far as pc: a malformed instruction
// after the row that holds at pc is not seen. Cost: linear in the
// instructions before pc.
func (f *FDE) RowAt(pc uint64) (Row, error) {
	if !f.Contains(pc) {
		return Row{}, decodeErr(f.kind, f.Offset, ErrFormat, "FDE [0x%x, 0x%x) does not cover 0x%x", f.Start, f.End, pc)
	}
	m := machine{cie: f.CIE, fde: f, kind: f.kind, loc: f.Start}
	if err := m.run(f.CIE.Instructions, f.CIE.instOff, true, nil); err != nil {
		return Row{}, err
	}
	m.initial = m.row
	var end uint64
	stop := func(next uint64) bool {
		if pc < next {
			end = next
			return true
		}
		return false
	}
	if err := m.run(f.Instructions, f.instOff, false, stop); err != nil {
		return Row{}, err
	}
	if end == 0 {
		end = f.End
	}
	m.row.Loc, m.row.End = m.loc, end
	return m.row, nil
}

// machine runs call frame instructions (DWARF 5 6.4.2).
type machine struct {
	cie     *CIE
	fde     *FDE // nil while only the CIE runs
	kind    Kind
	row     Row
	initial Row // the row after the CIE's instructions, for DW_CFA_restore
	stack   []Row
	loc     uint64
}

// run executes code, whose first byte is at section offset base. inCIE
// forbids what only an FDE may do (advance the location, restore). advance
// is called before the location moves to next; when it returns true, run
// stops there without error.
func (m *machine) run(code []byte, base uint64, inCIE bool, advance func(next uint64) bool) error {
	r := reader{data: code, base: base}
	c := m.cie
	for r.left() > 0 {
		at := r.pos()
		op := r.u8()
		fail := func(sentinel error, format string, args ...any) error {
			return decodeErr(m.kind, at, sentinel, format, args...)
		}
		trunc := func(name string) error {
			return fail(ErrTruncated, "%s runs past the end of the entry", name)
		}
		// uleb and sleb operands; an operand that runs past the end or
		// does not fit in 64 bits is reported by check.
		var bad bool
		uleb := func() uint64 {
			v, ok := r.uleb()
			bad = bad || !ok
			return v
		}
		sleb := func() int64 {
			v, ok := r.sleb()
			bad = bad || !ok
			return v
		}
		check := func(name string) error {
			if !r.ok() {
				return trunc(name)
			}
			if bad {
				return fail(ErrFormat, "%s: an operand does not fit in 64 bits", name)
			}
			return nil
		}
		col := func(name string, reg uint64) (int, error) {
			cl, ok := Column(reg)
			if !ok {
				return 0, fail(ErrUnsupported, "%s: register %d is not an ARM core, VFP single or double register", name, reg)
			}
			return cl, nil
		}
		setRule := func(name string, reg uint64, rule Rule) error {
			cl, err := col(name, reg)
			if err != nil {
				return err
			}
			m.row.Regs[cl] = rule
			return nil
		}
		factored := func(name string, v int64) (int32, error) {
			p, ok := mulFits(v, c.DataAlign)
			if !ok {
				return 0, fail(ErrLimit, "%s: offset %d x data alignment factor %d does not fit in 32 bits", name, v, c.DataAlign)
			}
			return p, nil
		}
		uOffset := func(name string, v uint64) (int32, error) {
			if v > math.MaxInt32 {
				return 0, fail(ErrLimit, "%s: offset %d does not fit in 32 bits", name, v)
			}
			return factored(name, int64(v))
		}
		advanceBy := func(name string, delta uint64) (bool, error) {
			hi, d := bits.Mul64(delta, c.CodeAlign)
			if hi != 0 {
				return false, fail(ErrLimit, "%s: delta 0x%x x code alignment factor %d overflows", name, delta, c.CodeAlign)
			}
			next, carry := bits.Add64(m.loc, d, 0)
			if carry != 0 {
				return false, fail(ErrLimit, "%s: location 0x%x + 0x%x overflows", name, m.loc, d)
			}
			return m.moveTo(name, at, next, inCIE, advance)
		}
		var err error
		stop := false
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			stop, err = advanceBy("DW_CFA_advance_loc", uint64(op&0x3f))
		case cfaOffset:
			v := uleb()
			if err = check("DW_CFA_offset"); err == nil {
				var o int32
				if o, err = uOffset("DW_CFA_offset", v); err == nil {
					err = setRule("DW_CFA_offset", uint64(op&0x3f), Rule{Kind: Offset, Offset: o})
				}
			}
		case cfaRestore:
			err = m.restore("DW_CFA_restore", uint64(op&0x3f), inCIE, col)
		default:
			switch op {
			case cfaNop:
			case cfaSetLoc:
				var next uint64
				if m.kind == EHFrame {
					next, err = readEncoded(&r, c.FDEEncoding, int(c.AddressSize), m.fdeSecAddr())
				} else {
					next = r.uint(int(c.AddressSize))
				}
				switch {
				case !r.ok():
					err = trunc("DW_CFA_set_loc")
				case err != nil:
					err = fail(ErrUnsupported, "DW_CFA_set_loc: %v", err)
				default:
					if next < m.loc {
						err = fail(ErrFormat, "DW_CFA_set_loc moves the location backwards, from 0x%x to 0x%x", m.loc, next)
						break
					}
					stop, err = m.moveTo("DW_CFA_set_loc", at, next, inCIE, advance)
				}
			case cfaAdvanceLoc1:
				d := uint64(r.u8())
				if err = check("DW_CFA_advance_loc1"); err == nil {
					stop, err = advanceBy("DW_CFA_advance_loc1", d)
				}
			case cfaAdvanceLoc2:
				d := uint64(r.u16())
				if err = check("DW_CFA_advance_loc2"); err == nil {
					stop, err = advanceBy("DW_CFA_advance_loc2", d)
				}
			case cfaAdvanceLoc4:
				d := uint64(r.u32())
				if err = check("DW_CFA_advance_loc4"); err == nil {
					stop, err = advanceBy("DW_CFA_advance_loc4", d)
				}
			case cfaOffsetExtended, cfaOffsetExtendedSF, cfaValOffset, cfaValOffsetSF, cfaGNUNegOffsetExt:
				name := map[byte]string{cfaOffsetExtended: "DW_CFA_offset_extended", cfaOffsetExtendedSF: "DW_CFA_offset_extended_sf",
					cfaValOffset: "DW_CFA_val_offset", cfaValOffsetSF: "DW_CFA_val_offset_sf", cfaGNUNegOffsetExt: "DW_CFA_GNU_negative_offset_extended"}[op]
				reg := uleb()
				var o int32
				switch op {
				case cfaOffsetExtendedSF, cfaValOffsetSF:
					v := sleb()
					if err = check(name); err == nil {
						o, err = factored(name, v)
					}
				default:
					v := uleb()
					if err = check(name); err == nil {
						o, err = uOffset(name, v)
						if op == cfaGNUNegOffsetExt {
							o = -o
						}
					}
				}
				if err == nil {
					kind := Offset
					if op == cfaValOffset || op == cfaValOffsetSF {
						kind = ValOffset
					}
					err = setRule(name, reg, Rule{Kind: kind, Offset: o})
				}
			case cfaRestoreExtended:
				reg := uleb()
				if err = check("DW_CFA_restore_extended"); err == nil {
					err = m.restore("DW_CFA_restore_extended", reg, inCIE, col)
				}
			case cfaUndefined, cfaSameValue:
				name, kind := "DW_CFA_undefined", Undefined
				if op == cfaSameValue {
					name, kind = "DW_CFA_same_value", SameValue
				}
				reg := uleb()
				if err = check(name); err == nil {
					err = setRule(name, reg, Rule{Kind: kind})
				}
			case cfaRegister:
				reg, src := uleb(), uleb()
				if err = check("DW_CFA_register"); err == nil {
					if _, err = col("DW_CFA_register", src); err == nil {
						err = setRule("DW_CFA_register", reg, Rule{Kind: Register, Reg: uint16(src)})
					}
				}
			case cfaRememberState:
				if len(m.stack) >= MaxRememberDepth {
					err = fail(ErrLimit, "DW_CFA_remember_state nested deeper than %d", MaxRememberDepth)
					break
				}
				m.stack = append(m.stack, m.row)
			case cfaRestoreState:
				if len(m.stack) == 0 {
					err = fail(ErrFormat, "DW_CFA_restore_state without a remembered state")
					break
				}
				m.row = m.stack[len(m.stack)-1]
				m.stack = m.stack[:len(m.stack)-1]
			case cfaDefCFA, cfaDefCFASF:
				name := "DW_CFA_def_cfa"
				reg := uleb()
				var o int64
				if op == cfaDefCFASF {
					name = "DW_CFA_def_cfa_sf"
					v := sleb()
					if err = check(name); err == nil {
						var o32 int32
						o32, err = factored(name, v)
						o = int64(o32)
					}
				} else {
					v := uleb()
					if err = check(name); err == nil {
						if v > maxCFAOffsetMagnitude {
							err = fail(ErrLimit, "%s: offset %d does not fit in 32 bits", name, v)
						}
						o = int64(v)
					}
				}
				if err == nil {
					if _, err = col(name, reg); err == nil {
						m.row.CFA = CFARule{Reg: uint16(reg), Offset: o}
					}
				}
			case cfaDefCFARegister:
				reg := uleb()
				if err = check("DW_CFA_def_cfa_register"); err == nil {
					if m.row.CFA.IsExpression() {
						err = fail(ErrFormat, "DW_CFA_def_cfa_register while the CFA is defined by an expression")
					} else if _, err = col("DW_CFA_def_cfa_register", reg); err == nil {
						m.row.CFA.Reg = uint16(reg)
					}
				}
			case cfaDefCFAOffset, cfaDefCFAOffsetSF:
				name := "DW_CFA_def_cfa_offset"
				var o int64
				if op == cfaDefCFAOffsetSF {
					name = "DW_CFA_def_cfa_offset_sf"
					v := sleb()
					if err = check(name); err == nil {
						var o32 int32
						o32, err = factored(name, v)
						o = int64(o32)
					}
				} else {
					v := uleb()
					if err = check(name); err == nil {
						if v > maxCFAOffsetMagnitude {
							err = fail(ErrLimit, "%s: offset %d does not fit in 32 bits", name, v)
						}
						o = int64(v)
					}
				}
				if err == nil {
					if m.row.CFA.IsExpression() {
						err = fail(ErrFormat, "%s while the CFA is defined by an expression", name)
					} else {
						m.row.CFA.Offset = o
					}
				}
			case cfaDefCFAExpression:
				n := uleb()
				b := r.bytes(n)
				if err = check("DW_CFA_def_cfa_expression"); err == nil {
					m.row.CFA = CFARule{Expr: append([]byte{}, b...)}
				}
			case cfaExpression, cfaValExpression:
				name, kind := "DW_CFA_expression", Expression
				if op == cfaValExpression {
					name, kind = "DW_CFA_val_expression", ValExpression
				}
				reg := uleb()
				n := uleb()
				r.bytes(n)
				if err = check(name); err == nil {
					err = setRule(name, reg, Rule{Kind: kind})
				}
			case cfaGNUArgsSize:
				uleb()
				err = check("DW_CFA_GNU_args_size")
			case cfaGNUWindowSave:
				err = fail(ErrUnsupported, "DW_CFA_GNU_window_save (SPARC, AArch64 pointer authentication) on ARM")
			default:
				err = fail(ErrUnsupported, "unknown call frame instruction 0x%02x", op)
			}
		}
		if err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	return nil
}

// moveTo moves the location to next after reporting the row that ends
// there.
func (m *machine) moveTo(name string, at, next uint64, inCIE bool, advance func(uint64) bool) (bool, error) {
	if inCIE {
		return false, decodeErr(m.kind, at, ErrFormat, "%s in a CIE's initial instructions", name)
	}
	if next > math.MaxUint32 && m.cie.AddressSize == 4 {
		return false, decodeErr(m.kind, at, ErrLimit, "%s to 0x%x: past the 32-bit address space", name, next)
	}
	if m.fde != nil && next > m.fde.End {
		return false, decodeErr(m.kind, at, ErrFormat, "%s to 0x%x: past the end of the FDE's range [0x%x, 0x%x)", name, next, m.fde.Start, m.fde.End)
	}
	if advance != nil && advance(next) {
		return true, nil
	}
	m.loc = next
	return false, nil
}

// restore implements DW_CFA_restore and DW_CFA_restore_extended: the rule
// the CIE's initial instructions gave the register (unspecified while they
// run).
func (m *machine) restore(name string, reg uint64, inCIE bool, col func(string, uint64) (int, error)) error {
	cl, err := col(name, reg)
	if err != nil {
		return err
	}
	if inCIE {
		m.row.Regs[cl] = Rule{}
		return nil
	}
	m.row.Regs[cl] = m.initial.Regs[cl]
	return nil
}

func (m *machine) fdeSecAddr() uint64 {
	if m.fde != nil {
		return m.fde.secAddr
	}
	return 0
}

// mulFits returns v*f if it fits in an int32.
func mulFits(v, f int64) (int32, bool) {
	const lim = 1 << 31
	if v > lim || v < -lim || f > lim || f < -lim {
		return 0, false
	}
	p := v * f
	if p > math.MaxInt32 || p < math.MinInt32 {
		return 0, false
	}
	return int32(p), true
}
