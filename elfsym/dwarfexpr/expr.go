// Package dwarfexpr evaluates DWARF location expressions and location
// lists (DWARF 2-5) for a 32-bit little-endian ARM target, and formats the
// values they locate the way GDB prints them.
//
// The evaluator is a bounded stack machine: every expression runs at most
// MaxSteps operations on a stack of at most MaxStack entries, every memory
// read goes through the caller's Context (uncaptured memory is an error,
// never a value), and every register it asks for may be unknown (then the
// value is optimized out, never a guess).
package dwarfexpr

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Limits of one evaluation.
const (
	MaxSteps = 1000
	MaxStack = 64
	maxDepth = 4 // nested DW_OP_entry_value / frame base evaluations
)

// ErrOptimizedOut: the value cannot be known with what the frame has (an
// unknown register, an unprovable entry value, an empty location).
var ErrOptimizedOut = errors.New("optimized out")

// ErrUnsupported: the expression uses an operation this evaluator does not
// implement; the value is then not printed.
var ErrUnsupported = errors.New("unsupported DWARF operation")

// Context is what an expression may read. Any nil function means "not
// available" (the value depending on it is optimized out).
type Context struct {
	// Reg returns DWARF register n (0-15 core, 64-95 s0-s31).
	Reg func(n int) (uint32, bool)
	// FrameBase evaluates the function's DW_AT_frame_base.
	FrameBase func() (uint32, error)
	// CFA is the frame's canonical frame address.
	CFA func() (uint32, bool)
	// Read reads len(p) bytes of target memory.
	Read func(addr uint32, p []byte) error
	// Addr resolves a .debug_addr index (DW_OP_addrx, DW_OP_constx).
	Addr func(index uint64) (uint32, bool)
	// EntryValue evaluates the DWARF expression expr as it stood at the
	// function's entry (DW_OP_entry_value): only when the caller's
	// value can be proven.
	EntryValue func(expr []byte) (uint32, error)
}

// PieceKind says where a piece of a value lives.
type PieceKind uint8

const (
	PieceMemory    PieceKind = iota // at Addr in target memory
	PieceRegister                   // in DWARF register Reg
	PieceValue                      // the computed Value (DW_OP_stack_value)
	PieceImplicit                   // the bytes Bytes (DW_OP_implicit_value)
	PieceOptimized                  // nothing: optimized out
)

// Piece is one part of a located value; Size is 0 for "the whole value"
// (an expression without DW_OP_piece).
type Piece struct {
	Kind  PieceKind
	Addr  uint32
	Reg   int
	Value uint32
	Bytes []byte
	Size  int
}

// Location is the result of evaluating a location expression.
type Location struct {
	Pieces []Piece
	// Entry is set when the value came from DW_OP_entry_value.
	Entry bool
}

// Eval evaluates a location expression.
func Eval(expr []byte, ctx *Context) (Location, error) {
	return eval(expr, ctx, 0, false)
}

// EvalValue evaluates a DWARF expression whose result is the value on top
// of the stack (DW_AT_frame_base as a value, DW_AT_call_value, an entry
// value's register): a register location yields the register's value.
func EvalValue(expr []byte, ctx *Context) (uint32, error) {
	loc, err := eval(expr, ctx, 0, true)
	if err != nil {
		return 0, err
	}
	if len(loc.Pieces) != 1 {
		return 0, ErrUnsupported
	}
	p := loc.Pieces[0]
	switch p.Kind {
	case PieceValue, PieceMemory:
		// A memory location evaluated as a value is its address.
		if p.Kind == PieceMemory {
			return p.Addr, nil
		}
		return p.Value, nil
	case PieceRegister:
		if ctx.Reg == nil {
			return 0, ErrOptimizedOut
		}
		v, ok := ctx.Reg(p.Reg)
		if !ok {
			return 0, ErrOptimizedOut
		}
		return v, nil
	}
	return 0, ErrOptimizedOut
}

type machine struct {
	ctx   *Context
	depth int
	stack []uint32
	entry bool
}

func (m *machine) push(v uint32) error {
	if len(m.stack) >= MaxStack {
		return fmt.Errorf("DWARF expression stack deeper than %d", MaxStack)
	}
	m.stack = append(m.stack, v)
	return nil
}

func (m *machine) pop() (uint32, error) {
	if len(m.stack) == 0 {
		return 0, errors.New("DWARF expression pops an empty stack")
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	return v, nil
}

func (m *machine) reg(n int) (uint32, error) {
	if m.ctx.Reg == nil {
		return 0, ErrOptimizedOut
	}
	v, ok := m.ctx.Reg(n)
	if !ok {
		return 0, ErrOptimizedOut
	}
	return v, nil
}

func (m *machine) read(addr uint32, n int) (uint32, error) {
	if m.ctx.Read == nil {
		return 0, ErrOptimizedOut
	}
	var b [4]byte
	if err := m.ctx.Read(addr, b[:n]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) u8() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("DWARF expression truncated")
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *reader) fixed(n int) uint64 {
	if r.pos+n > len(r.b) {
		r.err = errors.New("DWARF expression truncated")
		r.pos = len(r.b)
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(r.b[r.pos+i])
	}
	r.pos += n
	return v
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 || shift > 70 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := 0
	for {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
		if shift > 70 {
			return v
		}
	}
}

// DWARF operation codes used here.
const (
	opAddr           = 0x03
	opDeref          = 0x06
	opConst1u        = 0x08
	opConst1s        = 0x09
	opConst2u        = 0x0a
	opConst2s        = 0x0b
	opConst4u        = 0x0c
	opConst4s        = 0x0d
	opConst8u        = 0x0e
	opConst8s        = 0x0f
	opConstu         = 0x10
	opConsts         = 0x11
	opDup            = 0x12
	opDrop           = 0x13
	opOver           = 0x14
	opPick           = 0x15
	opSwap           = 0x16
	opRot            = 0x17
	opXderef         = 0x18
	opAbs            = 0x19
	opAnd            = 0x1a
	opDiv            = 0x1b
	opMinus          = 0x1c
	opMod            = 0x1d
	opMul            = 0x1e
	opNeg            = 0x1f
	opNot            = 0x20
	opOr             = 0x21
	opPlus           = 0x22
	opPlusUconst     = 0x23
	opShl            = 0x24
	opShr            = 0x25
	opShra           = 0x26
	opXor            = 0x27
	opBra            = 0x28
	opEq             = 0x29
	opGe             = 0x2a
	opGt             = 0x2b
	opLe             = 0x2c
	opLt             = 0x2d
	opNe             = 0x2e
	opSkip           = 0x2f
	opLit0           = 0x30
	opLit31          = 0x4f
	opReg0           = 0x50
	opReg31          = 0x6f
	opBreg0          = 0x70
	opBreg31         = 0x8f
	opRegx           = 0x90
	opFbreg          = 0x91
	opBregx          = 0x92
	opPiece          = 0x93
	opDerefSize      = 0x94
	opNop            = 0x96
	opCallFrameCFA   = 0x9c
	opImplicitValue  = 0x9e
	opStackValue     = 0x9f
	opImplicitPtr    = 0xa0
	opAddrx          = 0xa1
	opConstx         = 0xa2
	opEntryValue     = 0xa3
	opGNUEntryValue  = 0xf3
	opGNUImplicitPtr = 0xf2
	opGNUAddrIndex   = 0xfb
	opGNUConstIndex  = 0xfc
)

func eval(expr []byte, ctx *Context, depth int, asValue bool) (Location, error) {
	if depth > maxDepth {
		return Location{}, errors.New("DWARF expressions nested too deeply")
	}
	if len(expr) == 0 {
		return Location{Pieces: []Piece{{Kind: PieceOptimized}}}, nil
	}
	m := &machine{ctx: ctx, depth: depth}
	r := &reader{b: expr}
	var loc Location
	// cur is the location the operations so far describe, before a piece
	// (or the end) takes it.
	var cur *Piece
	take := func(size int) {
		var p Piece
		switch {
		case cur != nil:
			p = *cur
		case len(m.stack) > 0:
			p = Piece{Kind: PieceMemory, Addr: m.stack[len(m.stack)-1]}
		default:
			p = Piece{Kind: PieceOptimized}
		}
		p.Size = size
		loc.Pieces = append(loc.Pieces, p)
		cur = nil
		m.stack = m.stack[:0]
	}
	for steps := 0; r.pos < len(r.b); steps++ {
		if steps >= MaxSteps {
			return Location{}, fmt.Errorf("DWARF expression runs more than %d steps", MaxSteps)
		}
		if cur != nil && r.b[r.pos] != opPiece {
			// A register or value location must be followed by a piece or end.
			return Location{}, fmt.Errorf("DWARF operation 0x%02x after a register or value location", r.b[r.pos])
		}
		op := r.u8()
		var err error
		switch {
		case op >= opLit0 && op <= opLit31:
			err = m.push(uint32(op - opLit0))
		case op >= opReg0 && op <= opReg31:
			cur = &Piece{Kind: PieceRegister, Reg: int(op - opReg0)}
		case op >= opBreg0 && op <= opBreg31:
			off := r.sleb()
			var v uint32
			if v, err = m.reg(int(op - opBreg0)); err == nil {
				err = m.push(v + uint32(off))
			}
		default:
			err = m.step(op, r, &cur, &loc)
		}
		if r.err != nil {
			return Location{}, r.err
		}
		if err != nil {
			return Location{}, err
		}
		if op == opPiece {
			size := int(r.uleb())
			if r.err != nil {
				return Location{}, r.err
			}
			take(size)
			if size == 0 || size > 64 {
				return Location{}, fmt.Errorf("DW_OP_piece of %d bytes", size)
			}
		}
	}
	if cur != nil || len(m.stack) > 0 {
		take(0)
	} else if len(loc.Pieces) == 0 {
		loc.Pieces = append(loc.Pieces, Piece{Kind: PieceOptimized})
	}
	loc.Entry = m.entry
	return loc, nil
}

// step runs one operation that is not a literal, register or breg.
func (m *machine) step(op byte, r *reader, cur **Piece, loc *Location) error {
	switch op {
	case opPiece:
		return nil // handled by the caller (after it reads the size)
	case opNop:
		return nil
	case opAddr:
		return m.push(uint32(r.fixed(4)))
	case opAddrx, opConstx, opGNUAddrIndex, opGNUConstIndex:
		i := r.uleb()
		if m.ctx.Addr == nil {
			return ErrUnsupported
		}
		v, ok := m.ctx.Addr(i)
		if !ok {
			return fmt.Errorf(".debug_addr index %d not found", i)
		}
		return m.push(v)
	case opConst1u:
		return m.push(uint32(r.fixed(1)))
	case opConst1s:
		return m.push(uint32(int8(r.fixed(1))))
	case opConst2u:
		return m.push(uint32(r.fixed(2)))
	case opConst2s:
		return m.push(uint32(int16(r.fixed(2))))
	case opConst4u, opConst4s:
		return m.push(uint32(r.fixed(4)))
	case opConst8u, opConst8s:
		return m.push(uint32(r.fixed(8)))
	case opConstu:
		return m.push(uint32(r.uleb()))
	case opConsts:
		return m.push(uint32(r.sleb()))
	case opRegx:
		*cur = &Piece{Kind: PieceRegister, Reg: int(r.uleb())}
		return nil
	case opBregx:
		n := int(r.uleb())
		off := r.sleb()
		v, err := m.reg(n)
		if err != nil {
			return err
		}
		return m.push(v + uint32(off))
	case opFbreg:
		off := r.sleb()
		if m.ctx.FrameBase == nil {
			return ErrOptimizedOut
		}
		fb, err := m.ctx.FrameBase()
		if err != nil {
			return err
		}
		return m.push(fb + uint32(off))
	case opCallFrameCFA:
		if m.ctx.CFA == nil {
			return ErrOptimizedOut
		}
		v, ok := m.ctx.CFA()
		if !ok {
			return ErrOptimizedOut
		}
		return m.push(v)
	case opDup:
		if len(m.stack) == 0 {
			return errors.New("DW_OP_dup on an empty stack")
		}
		return m.push(m.stack[len(m.stack)-1])
	case opDrop:
		_, err := m.pop()
		return err
	case opOver, opPick:
		i := 1
		if op == opPick {
			i = int(r.fixed(1))
		}
		if i >= len(m.stack) {
			return errors.New("DW_OP_pick/over past the stack")
		}
		return m.push(m.stack[len(m.stack)-1-i])
	case opSwap:
		if len(m.stack) < 2 {
			return errors.New("DW_OP_swap with fewer than 2 entries")
		}
		n := len(m.stack)
		m.stack[n-1], m.stack[n-2] = m.stack[n-2], m.stack[n-1]
		return nil
	case opRot:
		if len(m.stack) < 3 {
			return errors.New("DW_OP_rot with fewer than 3 entries")
		}
		n := len(m.stack)
		m.stack[n-1], m.stack[n-2], m.stack[n-3] = m.stack[n-2], m.stack[n-3], m.stack[n-1]
		return nil
	case opDeref, opDerefSize:
		n := 4
		if op == opDerefSize {
			n = int(r.fixed(1))
			if n < 1 || n > 4 {
				return ErrUnsupported
			}
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		v, err := m.read(a, n)
		if err != nil {
			return err
		}
		return m.push(v)
	case opAbs, opNeg, opNot:
		a, err := m.pop()
		if err != nil {
			return err
		}
		switch op {
		case opAbs:
			if int32(a) < 0 {
				a = -a
			}
		case opNeg:
			a = -a
		default:
			a = ^a
		}
		return m.push(a)
	case opPlusUconst:
		a, err := m.pop()
		if err != nil {
			return err
		}
		return m.push(a + uint32(r.uleb()))
	case opAnd, opDiv, opMinus, opMod, opMul, opOr, opPlus, opShl, opShr, opShra, opXor,
		opEq, opGe, opGt, opLe, opLt, opNe:
		b, err := m.pop()
		if err != nil {
			return err
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		var v uint32
		switch op {
		case opAnd:
			v = a & b
		case opDiv:
			if b == 0 {
				return errors.New("DW_OP_div by zero")
			}
			v = uint32(int32(a) / int32(b))
		case opMinus:
			v = a - b
		case opMod:
			if b == 0 {
				return errors.New("DW_OP_mod by zero")
			}
			v = a % b
		case opMul:
			v = a * b
		case opOr:
			v = a | b
		case opPlus:
			v = a + b
		case opShl:
			if b < 32 {
				v = a << b
			}
		case opShr:
			if b < 32 {
				v = a >> b
			}
		case opShra:
			if b > 31 {
				b = 31
			}
			v = uint32(int32(a) >> b)
		case opXor:
			v = a ^ b
		case opEq:
			v = b2u(a == b)
		case opGe:
			v = b2u(int32(a) >= int32(b))
		case opGt:
			v = b2u(int32(a) > int32(b))
		case opLe:
			v = b2u(int32(a) <= int32(b))
		case opLt:
			v = b2u(int32(a) < int32(b))
		case opNe:
			v = b2u(a != b)
		}
		return m.push(v)
	case opSkip, opBra:
		off := int16(r.fixed(2))
		if op == opBra {
			c, err := m.pop()
			if err != nil {
				return err
			}
			if c == 0 {
				return nil
			}
		}
		np := r.pos + int(off)
		if np < 0 || np > len(r.b) {
			return errors.New("DWARF branch outside the expression")
		}
		r.pos = np
		return nil
	case opStackValue:
		v, err := m.pop()
		if err != nil {
			return err
		}
		*cur = &Piece{Kind: PieceValue, Value: v}
		return nil
	case opImplicitValue:
		n := r.uleb()
		if n > 64 || r.pos+int(n) > len(r.b) {
			return errors.New("DW_OP_implicit_value past the expression")
		}
		*cur = &Piece{Kind: PieceImplicit, Bytes: append([]byte(nil), r.b[r.pos:r.pos+int(n)]...)}
		r.pos += int(n)
		return nil
	case opEntryValue, opGNUEntryValue:
		n := r.uleb()
		if n > uint64(len(r.b)-r.pos) {
			return errors.New("DW_OP_entry_value past the expression")
		}
		sub := r.b[r.pos : r.pos+int(n)]
		r.pos += int(n)
		if m.ctx.EntryValue == nil {
			return ErrOptimizedOut
		}
		v, err := m.ctx.EntryValue(sub)
		if err != nil {
			return err
		}
		m.entry = true
		return m.push(v)
	case opImplicitPtr, opGNUImplicitPtr, opXderef:
		return ErrUnsupported
	}
	return fmt.Errorf("%w 0x%02x", ErrUnsupported, op)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
