package dwarfexpr

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds of a formatted value.
const (
	maxDepthFmt   = 3   // nested structs/arrays
	maxElements   = 200 // array elements and struct members shown (GDB's print elements)
	maxStringRead = 200 // bytes of a C string read from the dump
	maxFmtLen     = 8192
)

// TypeName spells t the way GDB's ptype/info args shows it.
func TypeName(t dwarf.Type) string {
	return typeName(t, 0)
}

func typeName(t dwarf.Type, depth int) string {
	if depth > 8 || t == nil {
		return "?"
	}
	switch t := t.(type) {
	case *dwarf.PtrType:
		if ft, ok := unqual(t.Type).(*dwarf.FuncType); ok {
			return funcName(ft, "(*)", depth)
		}
		in := typeName(t.Type, depth+1)
		if strings.HasSuffix(in, "*") {
			return in + "*"
		}
		return in + " *"
	case *dwarf.QualType:
		in := typeName(t.Type, depth+1)
		if _, isPtr := t.Type.(*dwarf.PtrType); isPtr {
			return in + " " + t.Qual
		}
		return t.Qual + " " + in
	case *dwarf.ArrayType:
		n := t.Count
		if n < 0 {
			return typeName(t.Type, depth+1) + " []"
		}
		return fmt.Sprintf("%s [%d]", typeName(t.Type, depth+1), n)
	case *dwarf.StructType:
		if t.StructName == "" {
			return t.Kind + " {...}"
		}
		return t.Kind + " " + t.StructName
	case *dwarf.EnumType:
		if t.EnumName == "" {
			return "enum {...}"
		}
		return "enum " + t.EnumName
	case *dwarf.TypedefType:
		return t.Name
	case *dwarf.FuncType:
		return funcName(t, "", depth)
	case *dwarf.VoidType:
		return "void"
	}
	if c := t.Common(); c.Name != "" {
		return c.Name
	}
	return t.String()
}

func funcName(ft *dwarf.FuncType, mid string, depth int) string {
	ret := "void"
	if ft.ReturnType != nil {
		ret = typeName(ft.ReturnType, depth+1)
	}
	var ps []string
	for _, p := range ft.ParamType {
		if _, dots := p.(*dwarf.DotDotDotType); dots {
			ps = append(ps, "...")
			continue
		}
		ps = append(ps, typeName(p, depth+1))
	}
	if len(ps) == 0 {
		ps = []string{"void"}
	}
	if mid != "" {
		return ret + " " + mid + "(" + strings.Join(ps, ", ") + ")"
	}
	return ret + " (" + strings.Join(ps, ", ") + ")"
}

// unqual strips typedefs and qualifiers.
func unqual(t dwarf.Type) dwarf.Type {
	for range 16 {
		switch u := t.(type) {
		case *dwarf.TypedefType:
			t = u.Type
		case *dwarf.QualType:
			t = u.Type
		default:
			return t
		}
	}
	return t
}

func (p *Program) formatConst(t dwarf.Type, v any) string {
	var b [8]byte
	switch x := v.(type) {
	case int64:
		binary.LittleEndian.PutUint64(b[:], uint64(x))
	case uint64:
		binary.LittleEndian.PutUint64(b[:], x)
	case []byte:
		if t != nil && int(t.Size()) <= len(x) {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.format(t, x[:t.Size()], nil, 0)
		}
		return "<optimized out>"
	default:
		return "<optimized out>"
	}
	if t == nil {
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(b[:])), 10)
	}
	n := int(t.Size())
	if n <= 0 || n > 8 {
		n = 4
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.format(t, b[:n], nil, 0)
}

func leUint(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func signExtend(v uint64, size int) int64 {
	if size >= 8 {
		return int64(v)
	}
	shift := 64 - 8*uint(size)
	return int64(v<<shift) >> shift
}

// format prints the bytes b of a value of type t as GDB does (p.mu held).
func (p *Program) format(t dwarf.Type, b []byte, read func(uint32, []byte) error, depth int) string {
	u := unqual(t)
	switch t := u.(type) {
	case *dwarf.BoolType:
		switch leUint(b) {
		case 0:
			return "false"
		case 1:
			return "true"
		}
		return strconv.FormatUint(leUint(b), 10)
	case *dwarf.CharType:
		return charText(int64(signExtend(leUint(b), len(b))))
	case *dwarf.UcharType:
		return charText(int64(leUint(b)))
	case *dwarf.IntType:
		if isCharName(t.Name) && len(b) == 1 {
			return charText(signExtend(leUint(b), 1))
		}
		return strconv.FormatInt(signExtend(leUint(b), len(b)), 10)
	case *dwarf.UintType:
		if isCharName(t.Name) && len(b) == 1 {
			return charText(int64(leUint(b)))
		}
		return strconv.FormatUint(leUint(b), 10)
	case *dwarf.FloatType:
		switch len(b) {
		case 4:
			return gdbFloat(float64(math.Float32frombits(uint32(leUint(b)))), 9)
		case 8:
			return gdbFloat(math.Float64frombits(leUint(b)), 17)
		}
	case *dwarf.EnumType:
		v := signExtend(leUint(b), len(b))
		for _, e := range t.Val {
			if e.Val == v {
				return e.Name
			}
		}
		return strconv.FormatInt(v, 10)
	case *dwarf.PtrType:
		return p.pointer(t, uint32(leUint(b)), read)
	case *dwarf.StructType:
		if depth >= maxDepthFmt {
			return "{...}"
		}
		var parts []string
		for i, f := range t.Field {
			if i >= maxElements {
				parts = append(parts, "...")
				break
			}
			sz := int(f.Type.Size())
			if f.ByteOffset < 0 || sz <= 0 || int(f.ByteOffset)+sz > len(b) {
				parts = append(parts, f.Name+" = <unavailable>")
				continue
			}
			fb := b[f.ByteOffset : int(f.ByteOffset)+sz]
			val := ""
			if f.BitSize > 0 {
				val = bitfield(f, fb)
			} else {
				val = p.format(f.Type, fb, read, depth+1)
			}
			if f.Name == "" {
				parts = append(parts, val)
			} else {
				parts = append(parts, f.Name+" = "+val)
			}
		}
		return bounded("{" + strings.Join(parts, ", ") + "}")
	case *dwarf.ArrayType:
		if depth >= maxDepthFmt {
			return "{...}"
		}
		es := int(t.Type.Size())
		if es <= 0 || t.Count <= 0 {
			return "{}"
		}
		if e, ok := unqual(t.Type).(*dwarf.CharType); ok && e != nil && es == 1 {
			return cString(b, int(t.Count))
		}
		if e, ok := unqual(t.Type).(*dwarf.UcharType); ok && e != nil && es == 1 {
			return cString(b, int(t.Count))
		}
		// GDB: runs of 10 or more equal elements as "<repeats N times>",
		// at most 200 elements, then "...".
		var parts []string
		n := int(t.Count)
		if n*es > len(b) {
			n = len(b) / es
		}
		shown := 0
		for i := 0; i < n; {
			if shown >= maxElements {
				parts[len(parts)-1] += "..."
				break
			}
			e := b[i*es : (i+1)*es]
			j := i + 1
			for j < n && string(b[j*es:(j+1)*es]) == string(e) {
				j++
			}
			v := p.format(t.Type, e, read, depth+1)
			if j-i >= 10 {
				parts = append(parts, v+" <repeats "+strconv.Itoa(j-i)+" times>")
				shown += 10
				i = j
				continue
			}
			parts = append(parts, v)
			shown++
			i++
		}
		return bounded("{" + strings.Join(parts, ", ") + "}")
	}
	return "0x" + strconv.FormatUint(leUint(b), 16)
}

func bitfield(f *dwarf.StructField, b []byte) string {
	v := leUint(b)
	off := f.DataBitOffset
	if off == 0 && f.BitOffset != 0 {
		off = f.ByteSize*8 - f.BitOffset - f.BitSize
	} else {
		off -= f.ByteOffset * 8
	}
	if off < 0 || off+f.BitSize > 64 {
		return "?"
	}
	v = (v >> uint(off)) & (1<<uint(f.BitSize) - 1)
	if _, signed := unqual(f.Type).(*dwarf.IntType); signed && v&(1<<uint(f.BitSize-1)) != 0 {
		return strconv.FormatInt(int64(v)-int64(1)<<uint(f.BitSize), 10)
	}
	return strconv.FormatUint(v, 10)
}

func bounded(s string) string {
	if len(s) > maxFmtLen {
		return s[:maxFmtLen] + "...}"
	}
	return s
}

func isCharName(n string) bool {
	return n == "char" || n == "signed char" || n == "unsigned char"
}

// charText is GDB's "65 'A'".
func charText(v int64) string {
	return strconv.FormatInt(v, 10) + " '" + escChar(byte(v), '\'') + "'"
}

func escChar(c byte, quote byte) string {
	switch c {
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\v':
		return `\v`
	case 0x1b:
		return `\033`
	case '\\':
		return `\\`
	case quote:
		return `\` + string(quote)
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("\\%03o", c)
	}
	return string(c)
}

// cString prints a char array (n elements) the way GDB does: up to the
// first NUL, with the rest as repeats GDB would elide (kept simple: the
// text up to the NUL, or all n bytes).
func cString(b []byte, n int) string {
	if n > len(b) {
		n = len(b)
	}
	end := n
	for i := 0; i < n; i++ {
		if b[i] == 0 {
			end = i
			break
		}
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < end && i < maxStringRead; i++ {
		sb.WriteString(escChar(b[i], '"'))
	}
	sb.WriteByte('"')
	if end > maxStringRead {
		sb.WriteString("...")
	} else if end < n-1 {
		// GDB: "abc", '\000' <repeats N times> for the trailing NULs.
		rest := n - end
		allZero := true
		for _, c := range b[end:n] {
			if c != 0 {
				allZero = false
				break
			}
		}
		if allZero {
			sb.WriteString(fmt.Sprintf(", '\\000' <repeats %d times>", rest-1))
		}
	}
	return sb.String()
}

func (p *Program) pointer(t *dwarf.PtrType, v uint32, read func(uint32, []byte) error) string {
	s := "0x" + strconv.FormatUint(uint64(v), 16)
	if v == 0 {
		return s
	}
	if p.Symbol != nil {
		if name, off, ok := p.Symbol(v); ok {
			if off == 0 {
				s += " <" + name + ">"
			} else {
				s += " <" + name + "+" + strconv.FormatUint(uint64(off), 10) + ">"
			}
		}
	}
	// char *: the string it points at, when the dump holds it.
	et := unqual(t.Type)
	_, isChar := et.(*dwarf.CharType)
	_, isUchar := et.(*dwarf.UcharType)
	if it, ok := et.(*dwarf.IntType); ok && it.Name == "char" {
		isChar = true
	}
	if (isChar || isUchar) && read != nil {
		var buf []byte
		var c [1]byte
		for i := 0; i < maxStringRead; i++ {
			if read(v+uint32(i), c[:]) != nil {
				return s + " <error: Cannot access memory at address 0x" + strconv.FormatUint(uint64(v+uint32(i)), 16) + ">"
			}
			if c[0] == 0 {
				break
			}
			buf = append(buf, c[0])
		}
		var sb strings.Builder
		sb.WriteString(s + " \"")
		for _, ch := range buf {
			sb.WriteString(escChar(ch, '"'))
		}
		sb.WriteByte('"')
		if len(buf) == maxStringRead {
			sb.WriteString("...")
		}
		return sb.String()
	}
	return s
}

// gdbFloat prints like C's %g with prec significant digits, which is
// what GDB does for float (9) and double (17).
func gdbFloat(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan(0x" + strconv.FormatUint(math.Float64bits(f)&(1<<52-1), 16) + ")"
	}
	s := strconv.FormatFloat(f, 'g', prec, 64)
	// C's %g drops trailing zeros; Go's 'g' with a precision keeps none
	// either but spells exponents e+06: C too. Nothing to change.
	return s
}
