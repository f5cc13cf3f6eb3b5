package dwarfexpr

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"sort"
	"sync"
)

// DWARF tags and attributes debug/dwarf does not name.
const (
	tagCallSite         dwarf.Tag  = 0x48
	tagCallSiteParam    dwarf.Tag  = 0x49
	tagGNUCallSite      dwarf.Tag  = 0x4109
	tagGNUCallSiteParam dwarf.Tag  = 0x410a
	attrCallReturnPC    dwarf.Attr = 0x7d
	attrCallValue       dwarf.Attr = 0x7e
	attrCallOrigin      dwarf.Attr = 0x7f
	attrCallTailCall    dwarf.Attr = 0x82
	attrGNUCallValue    dwarf.Attr = 0x2111
	attrGNUTailCall     dwarf.Attr = 0x2115
	attrLoclistsBase    dwarf.Attr = 0x8c
	attrAddrBase        dwarf.Attr = 0x73
	attrGNUAddrBase     dwarf.Attr = 0x2133
)

// maxScopeEntries bounds the DIEs read below one function.
const maxScopeEntries = 20000

// Program is the debugging information of one ELF, with what values need:
// the location sections and a symbol lookup for pointers.
type Program struct {
	D        *dwarf.Data
	Loc      []byte // .debug_loc
	Loclists []byte // .debug_loclists
	AddrSec  []byte // .debug_addr
	Info     []byte // .debug_info, for the units' versions
	// Symbol names the ELF symbol (function or object) holding addr:
	// name and offset, ok=false when none.
	Symbol func(addr uint32) (name string, off uint32, ok bool)

	once  sync.Once
	funcs []fn
	units map[dwarf.Offset]*cu
	mu    sync.Mutex // guards D.Type and the type caches
	names map[dwarf.Offset]string
}

type cu struct {
	base         uint32
	addrBase     uint64
	loclistsBase uint64
	version      int
}

type fn struct {
	lo, hi uint32
	off    dwarf.Offset
	unit   *cu
}

// Frame is what a frame offers to its variables.
type Frame struct {
	// PC is the frame's lookup PC (the PC, or the call instruction for a
	// return address).
	PC uint32
	// ReturnPC is the return address of a caller frame (0 for frame 0 or
	// a frame an exception interrupted); call sites are matched with it.
	ReturnPC uint32
	Reg      func(n int) (uint32, bool)
	CFA      func() (uint32, bool)
	Read     func(addr uint32, p []byte) error
	// Caller is the frame that called this one (nil when unknown or when
	// an exception interrupted this one): entry values are taken from
	// its call site.
	Caller *Frame
}

// Var is one argument or local.
type Var struct {
	Name         string
	Type         string
	Value        string
	OptimizedOut bool
	// Entry: the current value is unknown and Value is the one the
	// caller passed, proven from its call site (GDB's name@entry).
	Entry bool
	// Err says why a value is missing when it is not optimized out
	// (memory not captured, an unsupported operation).
	Err string
	// Raw is the value's bytes (little-endian, the type's size) when
	// Value is known from a location or an entry value; nil for a
	// DW_AT_const_value and when unknown. A consumer that needs the
	// number (a pointer to follow, a line) reads it here, not from the
	// text.
	Raw []byte
}

// Scope is one function level at a PC: the physical function, or an
// inlined one; innermost first in FrameVars' result.
type Scope struct {
	Function string
	Inlined  bool
	Args     []Var
	Locals   []Var
}

func (p *Program) index() {
	p.once.Do(func() {
		p.units = map[dwarf.Offset]*cu{}
		r := p.D.Reader()
		var u *cu
		for n := 0; n < 5_000_000; n++ {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			switch e.Tag {
			case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
				u = &cu{}
				if v, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
					u.base = uint32(v)
				}
				u.addrBase = attrU64(e, attrAddrBase)
				if u.addrBase == 0 {
					u.addrBase = attrU64(e, attrGNUAddrBase)
				}
				u.loclistsBase = attrU64(e, attrLoclistsBase)
				u.version = p.unitVersion(e.Offset)
				p.units[e.Offset] = u
				continue
			case dwarf.TagSubprogram:
				if u != nil {
					rs, err := p.D.Ranges(e)
					if err == nil {
						for _, rg := range rs {
							if rg[1] > rg[0] && rg[0] != 0 {
								p.funcs = append(p.funcs, fn{uint32(rg[0]), uint32(rg[1]), e.Offset, u})
							}
						}
					}
				}
			}
			if e.Children && e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit && e.Tag != dwarf.TagNamespace {
				r.SkipChildren()
			}
		}
		sort.Slice(p.funcs, func(i, j int) bool { return p.funcs[i].lo < p.funcs[j].lo })
	})
}

// unitVersion reads the DWARF version of the unit whose first DIE is at
// off: the header before it is 12 bytes in DWARF 5 (the version 8 bytes
// before the DIE), 11 in DWARF 2-4 (7 bytes before). 0 when unknown.
func (p *Program) unitVersion(off dwarf.Offset) int {
	v := func(at int64) int {
		if at < 0 || at+2 > int64(len(p.Info)) {
			return 0
		}
		return int(binary.LittleEndian.Uint16(p.Info[at:]))
	}
	if v(int64(off)-8) == 5 {
		return 5
	}
	if n := v(int64(off) - 7); n >= 2 && n <= 4 {
		return n
	}
	return 0
}

func attrU64(e *dwarf.Entry, a dwarf.Attr) uint64 {
	switch v := e.Val(a).(type) {
	case int64:
		return uint64(v)
	case uint64:
		return v
	}
	return 0
}

func (p *Program) funcAt(pc uint32) *fn {
	p.index()
	i := sort.Search(len(p.funcs), func(i int) bool { return p.funcs[i].lo > pc })
	var best *fn
	for j := i - 1; j >= 0 && j >= i-64; j-- {
		f := &p.funcs[j]
		if pc >= f.lo && pc < f.hi && (best == nil || f.hi-f.lo < best.hi-best.lo) {
			best = f
		}
	}
	return best
}

// node is a DIE of a function's subtree.
type node struct {
	e    *dwarf.Entry
	kids []*node
}

func (p *Program) tree(off dwarf.Offset) (*node, error) {
	r := p.D.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil, errors.New("function DIE not readable")
	}
	root := &node{e: e}
	if !e.Children {
		return root, nil
	}
	stack := []*node{root}
	for n := 0; n < maxScopeEntries && len(stack) > 0; n++ {
		c, err := r.Next()
		if err != nil || c == nil {
			break
		}
		if c.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		nd := &node{e: c}
		top := stack[len(stack)-1]
		top.kids = append(top.kids, nd)
		if c.Children {
			if len(stack) > 64 {
				return root, errors.New("DIE tree nested too deeply")
			}
			stack = append(stack, nd)
		}
	}
	return root, nil
}

func (p *Program) contains(e *dwarf.Entry, pc uint32) bool {
	rs, err := p.D.Ranges(e)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if uint64(pc) >= r[0] && uint64(pc) < r[1] {
			return true
		}
	}
	return false
}

// origin follows DW_AT_abstract_origin / DW_AT_specification to the DIE
// holding a name and a type.
func (p *Program) origin(e *dwarf.Entry) *dwarf.Entry {
	for range 4 {
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
		}
		if !ok {
			return e
		}
		r := p.D.Reader()
		r.Seek(off)
		o, err := r.Next()
		if err != nil || o == nil {
			return e
		}
		e = o
	}
	return e
}

func (p *Program) nameOf(e *dwarf.Entry) string {
	if n, ok := e.Val(dwarf.AttrName).(string); ok {
		return n
	}
	if n, ok := p.origin(e).Val(dwarf.AttrName).(string); ok {
		return n
	}
	return ""
}

// FrameVars returns the scopes at f.PC, innermost (deepest inlined) first,
// with their arguments and, when locals is set, their locals (innermost
// block first). It returns nil when no function's DWARF covers the PC.
func (p *Program) FrameVars(f *Frame, locals bool) []Scope {
	fnp := p.funcAt(f.PC)
	if fnp == nil {
		return nil
	}
	root, err := p.tree(fnp.off)
	if err != nil {
		return nil
	}
	ctx := p.context(f, fnp, root.e)
	// Walk down: each inlined subroutine holding PC opens a new scope.
	type level struct {
		n      *node
		blocks []*node // lexical blocks holding PC, outermost first
	}
	levels := []level{{n: root}}
	cur := root
	for depth := 0; depth < 64; depth++ {
		var next *node
		for _, k := range cur.kids {
			switch k.e.Tag {
			case dwarf.TagInlinedSubroutine:
				if p.contains(k.e, f.PC) {
					levels = append(levels, level{n: k})
					next = k
				}
			case dwarf.TagLexDwarfBlock:
				if p.contains(k.e, f.PC) {
					l := &levels[len(levels)-1]
					l.blocks = append(l.blocks, k)
					next = k
				}
			}
			if next != nil {
				break
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	out := make([]Scope, 0, len(levels))
	for i := len(levels) - 1; i >= 0; i-- {
		l := levels[i]
		s := Scope{Function: p.nameOf(l.n.e), Inlined: l.n.e.Tag == dwarf.TagInlinedSubroutine}
		for _, k := range l.n.kids {
			if k.e.Tag == dwarf.TagFormalParameter {
				v := p.variable(k.e, ctx, f.PC, fnp.unit)
				if v.OptimizedOut && !s.Inlined {
					p.atEntry(&v, k.e, ctx, root.e, fnp.unit)
				}
				s.Args = append(s.Args, v)
			}
		}
		if locals {
			for b := len(l.blocks) - 1; b >= -1; b-- {
				blk := l.n
				if b >= 0 {
					blk = l.blocks[b]
				}
				for _, k := range blk.kids {
					if k.e.Tag == dwarf.TagVariable {
						s.Locals = append(s.Locals, p.variable(k.e, ctx, f.PC, fnp.unit))
					}
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// context builds the evaluation context of the physical function fe.
func (p *Program) context(f *Frame, fnp *fn, fe *dwarf.Entry) *Context {
	ctx := &Context{Reg: f.Reg, CFA: f.CFA, Read: f.Read, Addr: p.addrFunc(fnp.unit)}
	fb := p.locExpr(fe, dwarf.AttrFrameBase, f.PC, fnp.unit)
	ctx.FrameBase = func() (uint32, error) {
		if fb == nil {
			return 0, ErrOptimizedOut
		}
		c := *ctx
		c.FrameBase = nil
		return EvalValue(fb, &c)
	}
	ctx.EntryValue = func(expr []byte) (uint32, error) {
		return p.entryValue(f, fe, expr)
	}
	return ctx
}

func (p *Program) addrFunc(u *cu) func(uint64) (uint32, bool) {
	return func(i uint64) (uint32, bool) {
		at := u.addrBase + 4*i
		if u.addrBase == 0 || i > uint64(len(p.AddrSec)) || at+4 > uint64(len(p.AddrSec)) {
			return 0, false
		}
		return binary.LittleEndian.Uint32(p.AddrSec[at:]), true
	}
}

// locExpr returns the expression of attribute a of e at pc: an exprloc,
// or the entry of its location list that covers pc (nil: none).
func (p *Program) locExpr(e *dwarf.Entry, a dwarf.Attr, pc uint32, u *cu) []byte {
	fld := e.AttrField(a)
	if fld == nil {
		return nil
	}
	switch fld.Class {
	case dwarf.ClassExprLoc, dwarf.ClassBlock:
		b, _ := fld.Val.([]byte)
		return b
	case dwarf.ClassLocListPtr, dwarf.ClassLocList:
		var off uint64
		switch v := fld.Val.(type) {
		case int64:
			off = uint64(v)
		case uint64:
			off = v
		}
		if fld.Class == dwarf.ClassLocList && fld.Val != nil {
			if _, isIdx := fld.Val.(uint64); isIdx {
				o, err := LocListx(p.Loclists, u.loclistsBase, off)
				if err != nil {
					return nil
				}
				off = o
			}
		}
		var b []byte
		var err error
		// DWARF 5 units use .debug_loclists, older ones .debug_loc (a
		// firmware may link both: newlib's objects and the application's).
		v5 := u.version >= 5 || (u.version == 0 && (u.loclistsBase != 0 || len(p.Loc) == 0))
		if v5 && len(p.Loclists) > 0 {
			b, err = LocList5(p.Loclists, off, u.base, pc, p.addrFunc(u))
		} else {
			b, err = LocList4(p.Loc, off, u.base, pc)
		}
		if err != nil {
			return nil
		}
		if b == nil {
			b = []byte{}
		}
		return b
	}
	return nil
}

// entryValue proves the value expr (a register) had at the entry of the
// function fe of frame f, from the caller's call site: the call site whose
// return address is the caller frame's, that calls fe, with a parameter
// for that register whose value the caller frame can compute.
func (p *Program) entryValue(f *Frame, fe *dwarf.Entry, expr []byte) (uint32, error) {
	c := f.Caller
	if c == nil || c.ReturnPC == 0 {
		return 0, ErrOptimizedOut
	}
	cfn := p.funcAt(c.PC)
	if cfn == nil {
		return 0, ErrOptimizedOut
	}
	root, err := p.tree(cfn.off)
	if err != nil {
		return 0, ErrOptimizedOut
	}
	callee := p.nameOf(fe)
	var found *node
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if depth > 64 || found != nil {
			return
		}
		for _, k := range n.kids {
			if k.e.Tag == tagCallSite || k.e.Tag == tagGNUCallSite {
				ret, ok := k.e.Val(attrCallReturnPC).(uint64)
				if !ok {
					ret, ok = k.e.Val(dwarf.AttrLowpc).(uint64)
				}
				if ok && uint32(ret) == c.ReturnPC {
					found = k
					return
				}
				continue
			}
			walk(k, depth+1)
		}
	}
	walk(root, 0)
	if found == nil {
		return 0, ErrOptimizedOut
	}
	if tc, _ := found.e.Val(attrCallTailCall).(bool); tc {
		return 0, ErrOptimizedOut
	}
	// The call site must call this very function.
	oo, ok := found.e.Val(attrCallOrigin).(dwarf.Offset)
	if !ok {
		oo, ok = found.e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	}
	if !ok {
		return 0, ErrOptimizedOut
	}
	r := p.D.Reader()
	r.Seek(oo)
	oe, err := r.Next()
	if err != nil || oe == nil || p.nameOf(oe) != callee || callee == "" {
		return 0, ErrOptimizedOut
	}
	for _, k := range found.kids {
		if k.e.Tag != tagCallSiteParam && k.e.Tag != tagGNUCallSiteParam {
			continue
		}
		loc, _ := k.e.Val(dwarf.AttrLocation).([]byte)
		if string(loc) != string(expr) {
			continue
		}
		val, _ := k.e.Val(attrCallValue).([]byte)
		if val == nil {
			val, _ = k.e.Val(attrGNUCallValue).([]byte)
		}
		if val == nil {
			return 0, ErrOptimizedOut
		}
		cctx := p.context(c, cfn, root.e)
		return EvalValue(val, cctx)
	}
	return 0, ErrOptimizedOut
}

func (p *Program) variable(e *dwarf.Entry, ctx *Context, pc uint32, u *cu) Var {
	o := p.origin(e)
	v := Var{Name: p.nameOf(e)}
	toff, hasType := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !hasType {
		toff, hasType = o.Val(dwarf.AttrType).(dwarf.Offset)
	}
	var t dwarf.Type
	if hasType {
		p.mu.Lock()
		t, _ = p.D.Type(toff)
		p.mu.Unlock()
	}
	if t != nil {
		v.Type = TypeName(t)
	}
	if cv := e.AttrField(dwarf.AttrConstValue); cv != nil {
		v.Value = p.formatConst(t, cv.Val)
		return v
	}
	expr := p.locExpr(e, dwarf.AttrLocation, pc, u)
	if len(expr) == 0 || t == nil {
		v.OptimizedOut = true
		return v
	}
	loc, err := Eval(expr, ctx)
	if err != nil {
		if errors.Is(err, ErrOptimizedOut) {
			v.OptimizedOut = true
		} else {
			v.Err = err.Error()
		}
		return v
	}
	// A location that is DW_OP_entry_value(...) is the current value
	// (the compiler says it still equals the entry value): not marked
	// Entry, which means "the current value is unknown, this is what the
	// caller passed".
	b, err := p.bytesOf(loc, ctx, int(t.Size()))
	if err != nil {
		if errors.Is(err, ErrOptimizedOut) {
			v.OptimizedOut = true
		} else {
			v.Err = err.Error()
		}
		return v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v.Value = p.format(t, b, ctx.Read, 0)
	v.Raw = b
	return v
}

// atEntry replaces an optimized-out argument's value by the value its
// caller passed, when the argument lived in a register at the function's
// entry and the caller's call site proves that register's value (GDB's
// name@entry).
func (p *Program) atEntry(v *Var, e *dwarf.Entry, ctx *Context, fe *dwarf.Entry, u *cu) {
	lo, ok := fe.Val(dwarf.AttrLowpc).(uint64)
	if !ok || ctx.EntryValue == nil {
		return
	}
	expr := p.locExpr(e, dwarf.AttrLocation, uint32(lo), u)
	if len(expr) != 1 || expr[0] < opReg0 || expr[0] > opReg31 {
		return
	}
	toff, _ := e.Val(dwarf.AttrType).(dwarf.Offset)
	if toff == 0 {
		toff, _ = p.origin(e).Val(dwarf.AttrType).(dwarf.Offset)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := p.D.Type(toff)
	if err != nil || t == nil || t.Size() <= 0 || t.Size() > 4 {
		return
	}
	// The call site's value for that register.
	p.mu.Unlock()
	val, err := ctx.EntryValue(expr)
	p.mu.Lock()
	if err != nil {
		return
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], val)
	v.Value = p.format(t, b[:t.Size()], ctx.Read, 0)
	v.Raw = append([]byte(nil), b[:t.Size()]...)
	v.OptimizedOut = false
	v.Entry = true
}

// maxValueSize bounds the bytes read for one value.
const maxValueSize = 4096

// bytesOf assembles the bytes of a value of size n from its pieces.
func (p *Program) bytesOf(loc Location, ctx *Context, n int) ([]byte, error) {
	if n <= 0 || n > maxValueSize {
		return nil, errors.New("value too large to show")
	}
	out := make([]byte, 0, n)
	for _, pc := range loc.Pieces {
		size := pc.Size
		if size == 0 {
			size = n - len(out)
		}
		if size <= 0 {
			break
		}
		switch pc.Kind {
		case PieceOptimized:
			return nil, ErrOptimizedOut
		case PieceMemory:
			if ctx.Read == nil {
				return nil, ErrOptimizedOut
			}
			b := make([]byte, size)
			if err := ctx.Read(pc.Addr, b); err != nil {
				return nil, err
			}
			out = append(out, b...)
		case PieceRegister, PieceValue:
			var v uint32
			if pc.Kind == PieceValue {
				v = pc.Value
			} else {
				var ok bool
				if ctx.Reg == nil {
					return nil, ErrOptimizedOut
				}
				v, ok = ctx.Reg(pc.Reg)
				if !ok {
					return nil, ErrOptimizedOut
				}
			}
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], v)
			for i := 0; i < size; i++ {
				if i < 4 {
					out = append(out, b[i])
				} else {
					// A register holds 4 bytes: a wider value needs more pieces.
					return nil, ErrOptimizedOut
				}
			}
		case PieceImplicit:
			if len(pc.Bytes) < size {
				return nil, errors.New("DW_OP_implicit_value shorter than the value")
			}
			out = append(out, pc.Bytes[:size]...)
		}
	}
	if len(out) < n {
		return nil, ErrOptimizedOut
	}
	return out[:n], nil
}
