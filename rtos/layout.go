package rtos

import (
	"debug/dwarf"
	"errors"
	"fmt"
)

// Types reads struct layouts from DWARF debugging information (DWARF 5
// section 5: type entries): struct sizes, member offsets and sizes, array
// element counts, following typedef, const and volatile qualifiers.
//
// It decodes entries with its own dwarf.Reader and never calls
// dwarf.Data.Type (whose cache is not safe for concurrent use), so several
// Types may share one *dwarf.Data across goroutines. A Types value itself is
// not safe for concurrent use: it memoizes its name index.
type Types struct {
	d     *dwarf.Data
	index map[string][]named // built on first lookup by name
	err   error
}

// named is one top-level entry of a unit: a struct, union, typedef or
// variable with a name.
type named struct {
	off  dwarf.Offset
	tag  dwarf.Tag
	decl bool // a declaration only (no layout / no storage here)
}

// Type is a resolved type: qualifiers and typedefs followed.
type Type struct {
	Off     dwarf.Offset // the entry of the resolved type
	Name    string       // struct tag, base type or typedef name; "" anonymous
	Kind    string       // "struct", "union", "pointer", "array", "base", "enum", "other"
	Size    uint32       // byte size; for an array the whole array
	Count   int          // array element count (all dimensions), -1 unknown; 0 not an array
	Elem    dwarf.Offset // pointer target or array element type entry, 0 none
	Members []Member     // struct or union members, in declaration order
}

// Member is one struct or union member.
type Member struct {
	Name   string
	Offset uint32       // byte offset in the struct
	Size   uint32       // byte size of the member's type
	Count  int          // array element count, 0 when not an array, -1 unknown
	Type   dwarf.Offset // the member's type entry (resolve with Types.At)
}

// ErrNoType is wrapped when a named type or variable is absent.
var ErrNoType = errors.New("not in the debugging information")

// Limits on hostile input: typedef chains, members per struct, array
// dimensions.
const (
	maxTypeChain  = 32
	maxMembers    = 4096
	maxDimensions = 8
)

// NewTypes reads layouts from d; a nil d gives a Types whose lookups all
// fail with ErrNoType.
func NewTypes(d *dwarf.Data) *Types { return &Types{d: d} }

// Member returns the named member.
func (t *Type) Member(name string) (Member, bool) {
	for _, m := range t.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// Has reports whether the struct has the named member.
func (t *Type) Has(name string) bool { _, ok := t.Member(name); return ok }

// buildIndex walks the top-level entries of every unit once.
// Cost: linear in the number of top-level entries (children are skipped).
func (ts *Types) buildIndex() error {
	if ts.index != nil || ts.err != nil {
		return ts.err
	}
	if ts.d == nil {
		ts.err = fmt.Errorf("no DWARF debugging information: %w", ErrNoType)
		return ts.err
	}
	idx := map[string][]named{}
	r := ts.d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			ts.err = fmt.Errorf("reading debugging information: %v", err)
			return ts.err
		}
		if cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		if !cu.Children {
			continue
		}
		for {
			e, err := r.Next()
			if err != nil {
				ts.err = fmt.Errorf("reading debugging information: %v", err)
				return ts.err
			}
			if e == nil || e.Tag == 0 {
				break
			}
			switch e.Tag {
			case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagTypedef, dwarf.TagVariable:
				if name, ok := e.Val(dwarf.AttrName).(string); ok && name != "" {
					decl, _ := e.Val(dwarf.AttrDeclaration).(bool)
					idx[name] = append(idx[name], named{off: e.Offset, tag: e.Tag, decl: decl})
				}
			}
			if e.Children {
				r.SkipChildren()
			}
		}
	}
	ts.index = idx
	return nil
}

// Struct returns the layout of the first struct found under any of names,
// each either a struct tag ("tskTCB") or a typedef name ("TCB_t"). A
// struct definition is preferred over a declaration.
func (ts *Types) Struct(names ...string) (*Type, error) {
	if err := ts.buildIndex(); err != nil {
		return nil, err
	}
	for _, n := range names {
		for _, c := range ts.index[n] {
			if c.tag == dwarf.TagVariable || c.decl {
				continue
			}
			t, err := ts.At(c.off)
			if err != nil {
				return nil, err
			}
			if (t.Kind == "struct" || t.Kind == "union") && len(t.Members) > 0 {
				return t, nil
			}
		}
	}
	return nil, fmt.Errorf("struct %v: %w", names, ErrNoType)
}

// Variable returns the resolved type of a global variable (a definition
// preferred, else a declaration with a type).
func (ts *Types) Variable(name string) (*Type, error) {
	if err := ts.buildIndex(); err != nil {
		return nil, err
	}
	var best *named
	for i, c := range ts.index[name] {
		if c.tag != dwarf.TagVariable {
			continue
		}
		if best == nil || (best.decl && !c.decl) {
			best = &ts.index[name][i]
		}
	}
	if best == nil {
		return nil, fmt.Errorf("variable %s: %w", name, ErrNoType)
	}
	e, err := ts.entry(best.off)
	if err != nil {
		return nil, err
	}
	off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return nil, fmt.Errorf("variable %s has no type: %w", name, ErrNoType)
	}
	return ts.At(off)
}

// entry reads the entry at off.
func (ts *Types) entry(off dwarf.Offset) (*dwarf.Entry, error) {
	if ts.d == nil {
		return nil, fmt.Errorf("no DWARF debugging information: %w", ErrNoType)
	}
	r := ts.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil, fmt.Errorf("debugging information entry at 0x%x: %v", off, err)
	}
	if e == nil || e.Offset != off {
		return nil, fmt.Errorf("no debugging information entry at 0x%x", off)
	}
	return e, nil
}

// At resolves the type entry at off: typedefs and qualifiers are followed,
// a struct or union has its members read, an array its element count.
func (ts *Types) At(off dwarf.Offset) (*Type, error) {
	var name string
	for range maxTypeChain {
		e, err := ts.entry(off)
		if err != nil {
			return nil, err
		}
		switch e.Tag {
		case dwarf.TagTypedef, dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType,
			dwarf.TagAtomicType:
			if n, ok := e.Val(dwarf.AttrName).(string); ok && name == "" {
				name = n
			}
			next, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
			if !ok { // "const void"
				return &Type{Off: off, Name: "void", Kind: "other"}, nil
			}
			off = next
			continue
		}
		return ts.resolved(e, name)
	}
	return nil, fmt.Errorf("type at 0x%x: typedef chain longer than %d", off, maxTypeChain)
}

// resolved fills a Type from a non-qualifier entry.
func (ts *Types) resolved(e *dwarf.Entry, alias string) (*Type, error) {
	t := &Type{Off: e.Offset}
	if n, ok := e.Val(dwarf.AttrName).(string); ok {
		t.Name = n
	} else {
		t.Name = alias
	}
	if sz, ok := e.Val(dwarf.AttrByteSize).(int64); ok && sz >= 0 && sz < 1<<31 {
		t.Size = uint32(sz)
	}
	if el, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
		t.Elem = el
	}
	switch e.Tag {
	case dwarf.TagStructType, dwarf.TagClassType:
		t.Kind = "struct"
	case dwarf.TagUnionType:
		t.Kind = "union"
	case dwarf.TagPointerType, dwarf.TagReferenceType:
		t.Kind = "pointer"
		if t.Size == 0 {
			t.Size = 4
		}
		return t, nil
	case dwarf.TagBaseType:
		t.Kind = "base"
		return t, nil
	case dwarf.TagEnumerationType:
		t.Kind = "enum"
		return t, nil
	case dwarf.TagArrayType:
		t.Kind = "array"
		return ts.array(e, t)
	default:
		t.Kind = "other"
		return t, nil
	}
	if !e.Children {
		return t, nil
	}
	r := ts.d.Reader()
	r.Seek(e.Offset)
	if _, err := r.Next(); err != nil {
		return nil, fmt.Errorf("struct at 0x%x: %v", e.Offset, err)
	}
	for i := 0; ; i++ {
		if i > maxMembers {
			return nil, fmt.Errorf("struct %s at 0x%x: more than %d members", t.Name, e.Offset, maxMembers)
		}
		c, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("struct %s at 0x%x: %v", t.Name, e.Offset, err)
		}
		if c == nil || c.Tag == 0 {
			break
		}
		if c.Children {
			r.SkipChildren()
		}
		if c.Tag != dwarf.TagMember {
			continue
		}
		m := Member{}
		m.Name, _ = c.Val(dwarf.AttrName).(string)
		m.Type, _ = c.Val(dwarf.AttrType).(dwarf.Offset)
		switch v := c.Val(dwarf.AttrDataMemberLoc).(type) {
		case int64:
			m.Offset = uint32(v)
		case []byte: // DWARF 2: DW_OP_plus_uconst <uleb>
			if o, ok := plusUconst(v); ok {
				m.Offset = o
			}
		}
		if m.Type != 0 {
			mt, err := ts.At(m.Type)
			if err != nil {
				return nil, fmt.Errorf("struct %s member %s: %v", t.Name, m.Name, err)
			}
			m.Size, m.Count = mt.Size, mt.Count
		}
		t.Members = append(t.Members, m)
	}
	return t, nil
}

// array reads an array type's element count from its subrange children
// and computes its size.
func (ts *Types) array(e *dwarf.Entry, t *Type) (*Type, error) {
	t.Count = -1
	var elemSize uint32
	if t.Elem != 0 {
		et, err := ts.At(t.Elem)
		if err != nil {
			return nil, err
		}
		elemSize = et.Size
	}
	if !e.Children {
		return t, nil
	}
	r := ts.d.Reader()
	r.Seek(e.Offset)
	if _, err := r.Next(); err != nil {
		return nil, err
	}
	count, dims := 1, 0
	for {
		c, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("array at 0x%x: %v", e.Offset, err)
		}
		if c == nil || c.Tag == 0 {
			break
		}
		if c.Children {
			r.SkipChildren()
		}
		if c.Tag != dwarf.TagSubrangeType {
			continue
		}
		if dims++; dims > maxDimensions {
			return nil, fmt.Errorf("array at 0x%x: more than %d dimensions", e.Offset, maxDimensions)
		}
		n := int64(-1)
		if v, ok := c.Val(dwarf.AttrCount).(int64); ok {
			n = v
		} else if v, ok := c.Val(dwarf.AttrUpperBound).(int64); ok {
			n = v + 1
		}
		if n < 0 || n > 1<<24 {
			return t, nil // flexible or unknown bound
		}
		count *= int(n)
		if count > 1<<24 {
			return t, nil
		}
	}
	if dims == 0 {
		return t, nil
	}
	t.Count = count
	if t.Size == 0 && uint64(elemSize)*uint64(count) < 1<<31 {
		t.Size = elemSize * uint32(count)
	}
	return t, nil
}

// plusUconst decodes a DWARF 2 member location DW_OP_plus_uconst n.
func plusUconst(b []byte) (uint32, bool) {
	if len(b) < 2 || b[0] != 0x23 {
		return 0, false
	}
	var v uint64
	for i, s := 1, uint(0); i < len(b) && s < 35; i, s = i+1, s+7 {
		v |= uint64(b[i]&0x7f) << s
		if b[i]&0x80 == 0 {
			return uint32(v), v < 1<<32
		}
	}
	return 0, false
}
