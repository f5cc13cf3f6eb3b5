// Package rustdemangle turns Rust symbol names back into paths, the way
// rustfilt prints them by default: the legacy mangling (an Itanium-like
// `_ZN...E` whose last element is the hash `h` + 16 hex digits, which is
// dropped) and the v0 mangling (`_R...`, RFC 2603, "Rust Symbol Name
// Mangling v0"), printed without the crate disambiguators and without the
// types of constant generic arguments. A suffix such as `.0` after the
// mangled name is kept; an LLVM `.llvm.<hex>` suffix is dropped.
//
// Written from the mangling specifications (the Rust reference's
// "Symbol name mangling" chapter for v0; the legacy escapes of rustc's
// legacy mangler: $SP$ $BP$ $RF$ $LT$ $GT$ $LP$ $RP$ $C$ $u<hex>$ and ".."
// for "::").
package rustdemangle

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Demangle returns the demangled form of a Rust symbol and true, or "" and
// false when name is not a well-formed Rust symbol of either mangling.
// A legacy symbol must end with its hash element (h + 16 hex digits): a
// `_ZN...E` name without one is left to the C++ demangler.
func Demangle(name string) (string, bool) {
	name = stripLLVMSuffix(name)
	if s, ok := demangleV0(name); ok {
		return s, true
	}
	return demangleLegacy(name)
}

// stripLLVMSuffix drops a ".llvm.<hex or @>" suffix that LLVM's LTO adds.
func stripLLVMSuffix(s string) string {
	i := strings.Index(s, ".llvm.")
	if i < 0 {
		return s
	}
	for _, c := range s[i+len(".llvm."):] {
		if !isHex(c) && c != '@' {
			return s
		}
	}
	return s[:i]
}

func isHex(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validSuffix reports whether what follows a mangled name may be printed
// after it: nothing, or "." followed by symbol characters (".0", ".cold").
func validSuffix(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '.' || c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// ---- legacy ----

// demangleLegacy: `_ZN` (or `ZN`, `__ZN`) {<decimal length><bytes>} `E`.
func demangleLegacy(name string) (string, bool) {
	var body string
	switch {
	case strings.HasPrefix(name, "_ZN"):
		body = name[3:]
	case strings.HasPrefix(name, "__ZN"):
		body = name[4:]
	case strings.HasPrefix(name, "ZN"):
		body = name[2:]
	default:
		return "", false
	}
	var elems []string
	for {
		if body == "" {
			return "", false
		}
		if body[0] == 'E' {
			body = body[1:]
			break
		}
		n := 0
		i := 0
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			n = n*10 + int(body[i]-'0')
			if n > len(body) {
				return "", false
			}
			i++
		}
		if i == 0 || i+n > len(body) {
			return "", false
		}
		e := body[i : i+n]
		for j := 0; j < len(e); j++ {
			if e[j] >= 0x80 {
				return "", false
			}
		}
		elems = append(elems, e)
		body = body[i+n:]
	}
	if len(elems) < 2 || !isLegacyHash(elems[len(elems)-1]) || !validSuffix(body) {
		return "", false
	}
	var b strings.Builder
	for k, e := range elems[:len(elems)-1] {
		if k > 0 {
			b.WriteString("::")
		}
		writeLegacyElem(&b, e)
	}
	b.WriteString(body)
	return b.String(), true
}

// isLegacyHash: "h" followed by 16 hex digits.
func isLegacyHash(e string) bool {
	if len(e) != 17 || e[0] != 'h' {
		return false
	}
	for _, c := range e[1:] {
		if !isHex(c) {
			return false
		}
	}
	return true
}

var legacyEscapes = map[string]string{
	"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
}

// writeLegacyElem undoes rustc's legacy escaping of one path element. An
// element that starts with "_$" had the underscore added because an
// identifier may not start with "$"; any other leading underscore is part
// of the name (`__cortex_m_rt_main` stays as is).
func writeLegacyElem(b *strings.Builder, e string) {
	if strings.HasPrefix(e, "_$") {
		e = e[1:]
	}
	for e != "" {
		switch e[0] {
		case '.':
			if strings.HasPrefix(e, "..") {
				b.WriteString("::")
				e = e[2:]
			} else {
				b.WriteByte('.')
				e = e[1:]
			}
			continue
		case '$':
			end := strings.IndexByte(e[1:], '$')
			if end < 0 {
				b.WriteString(e)
				return
			}
			code := e[1 : 1+end]
			if r, ok := legacyEscapes[code]; ok {
				b.WriteString(r)
				e = e[end+2:]
				continue
			}
			if c, ok := legacyUnicode(code); ok {
				b.WriteRune(c)
				e = e[end+2:]
				continue
			}
			// Not an escape: the rest is printed as it is.
			b.WriteString(e)
			return
		}
		i := strings.IndexAny(e, "$.")
		if i < 0 {
			b.WriteString(e)
			return
		}
		b.WriteString(e[:i])
		e = e[i:]
	}
}

// legacyUnicode decodes "u<lower hex>" to a printable character.
func legacyUnicode(code string) (rune, bool) {
	if len(code) < 2 || code[0] != 'u' {
		return 0, false
	}
	for _, c := range code[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(code[1:], 16, 32)
	if err != nil || v > unicode.MaxRune || (v >= 0xd800 && v < 0xe000) || unicode.IsControl(rune(v)) {
		return 0, false
	}
	return rune(v), true
}

// ---- v0 ----

// maxDepth bounds the recursion of the v0 parser (paths, types and
// backreferences nest).
const maxDepth = 300

// v0 is the state of one v0 demangling: the mangled text after "_R", the
// read position, the output (nil while a part is skipped, e.g. the
// implementation path of an impl), and the binder depth of lifetimes.
type v0 struct {
	s        string
	pos      int
	out      *strings.Builder
	depth    int
	lifetime int // lifetimes bound by the enclosing binders
	err      bool
}

func demangleV0(name string) (string, bool) {
	var s string
	switch {
	case strings.HasPrefix(name, "_R"):
		s = name[2:]
	case strings.HasPrefix(name, "__R"):
		s = name[3:]
	case strings.HasPrefix(name, "R"):
		s = name[1:]
	default:
		return "", false
	}
	if s == "" || s[0] >= '0' && s[0] <= '9' || s[0] >= 0x80 {
		return "", false // an encoding version other than v0's
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	var b strings.Builder
	p := &v0{s: s, out: &b}
	p.path(true)
	if !p.err && p.pos < len(p.s) && p.s[p.pos] >= 'A' && p.s[p.pos] <= 'Z' {
		// The instantiating crate: parsed, not printed.
		p.skip(func() { p.path(false) })
	}
	if p.err || !validSuffix(p.s[p.pos:]) {
		return "", false
	}
	b.WriteString(p.s[p.pos:])
	return b.String(), true
}

func (p *v0) fail() { p.err = true }

func (p *v0) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *v0) eat(c byte) bool {
	if !p.err && p.peek() == c {
		p.pos++
		return true
	}
	return false
}

func (p *v0) next() byte {
	if p.err || p.pos >= len(p.s) {
		p.fail()
		return 0
	}
	c := p.s[p.pos]
	p.pos++
	return c
}

func (p *v0) print(s string) {
	if p.out != nil && !p.err {
		p.out.WriteString(s)
	}
}

// skip runs f without printing.
func (p *v0) skip(f func()) {
	out := p.out
	p.out = nil
	f()
	p.out = out
}

// enter guards recursion; every caller defers p.leave().
func (p *v0) enter() bool {
	p.depth++
	if p.depth > maxDepth {
		p.fail()
	}
	return !p.err
}

func (p *v0) leave() { p.depth-- }

// base62 reads <base-62-number>: "_" is 0, digits then "_" are value+1.
func (p *v0) base62() uint64 {
	if p.eat('_') {
		return 0
	}
	var v uint64
	for !p.err {
		c := p.next()
		var d uint64
		switch {
		case c == '_':
			if v == ^uint64(0) {
				p.fail()
			}
			return v + 1
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'z':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = uint64(c-'A') + 36
		default:
			p.fail()
			return 0
		}
		if v > (^uint64(0)-d)/62 {
			p.fail()
			return 0
		}
		v = v*62 + d
	}
	return 0
}

// optBase62 reads tag <base-62-number> as that number + 1, or 0 without
// the tag (disambiguators, binders).
func (p *v0) optBase62(tag byte) uint64 {
	if !p.eat(tag) {
		return 0
	}
	v := p.base62()
	if v == ^uint64(0) {
		p.fail()
	}
	return v + 1
}

// decimal reads <decimal-number>.
func (p *v0) decimal() int {
	c := p.next()
	if c < '0' || c > '9' {
		p.fail()
		return 0
	}
	if c == '0' {
		return 0
	}
	v := int(c - '0')
	for p.peek() >= '0' && p.peek() <= '9' {
		v = v*10 + int(p.next()-'0')
		if v > len(p.s) {
			p.fail()
			return 0
		}
	}
	return v
}

// ident is an <undisambiguated-identifier>: its ASCII part and, for a
// Punycode one, the encoded part.
type ident struct {
	ascii, puny string
}

func (p *v0) ident() ident {
	puny := p.eat('u')
	n := p.decimal()
	p.eat('_')
	if p.err || p.pos+n > len(p.s) {
		p.fail()
		return ident{}
	}
	raw := p.s[p.pos : p.pos+n]
	p.pos += n
	if !puny {
		return ident{ascii: raw}
	}
	// Punycode with '_' in place of '-' as the delimiter.
	if i := strings.LastIndexByte(raw, '_'); i >= 0 {
		return ident{ascii: raw[:i], puny: raw[i+1:]}
	}
	return ident{puny: raw}
}

func (id ident) empty() bool { return id.ascii == "" && id.puny == "" }

// String decodes the identifier (RFC 3492 for the Punycode part); on a
// malformed Punycode part it returns the raw form with ok false.
func (id ident) decode() (string, bool) {
	if id.puny == "" {
		return id.ascii, true
	}
	out := []rune(id.ascii)
	const (
		base, tmin, tmax, skew, damp = 36, 1, 26, 38, 700
	)
	n, bias, i := 128, 72, 0
	in := id.puny
	for len(in) > 0 {
		oldi, w := i, 1
		for k := base; ; k += base {
			if len(in) == 0 {
				return "", false
			}
			c := in[0]
			in = in[1:]
			var d int
			switch {
			case c >= 'a' && c <= 'z':
				d = int(c - 'a')
			case c >= '0' && c <= '9':
				d = int(c-'0') + 26
			default:
				return "", false
			}
			if d > (1<<30-i)/w {
				return "", false
			}
			i += d * w
			t := k - bias
			if t < tmin {
				t = tmin
			} else if t > tmax {
				t = tmax
			}
			if d < t {
				break
			}
			if w > (1<<30)/(base-t) {
				return "", false
			}
			w *= base - t
		}
		// Adapt the bias.
		delta := i - oldi
		if oldi == 0 {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / (len(out) + 1)
		k := 0
		for delta > ((base-tmin)*tmax)/2 {
			delta /= base - tmin
			k += base
		}
		bias = k + (base-tmin+1)*delta/(delta+skew)
		n += i / (len(out) + 1)
		i %= len(out) + 1
		if n > unicode.MaxRune || !utf8.ValidRune(rune(n)) || len(out) > 1000 {
			return "", false
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	return string(out), true
}

func (p *v0) printIdent(id ident) {
	s, ok := id.decode()
	if !ok {
		p.fail()
		return
	}
	p.print(s)
}

// backref reads "B" <base-62-number> (the tag already eaten) and runs f
// at that earlier position (only when printing: a skipped part needs no
// second pass), then returns to where the backreference ended.
func (p *v0) backref(f func()) {
	start := p.pos - 1
	at := p.base62()
	if p.err || at >= uint64(start) {
		p.fail()
		return
	}
	if p.out == nil {
		return
	}
	if !p.enter() {
		return
	}
	defer p.leave()
	saved := p.pos
	p.pos = int(at)
	f()
	p.pos = saved
}

// path prints a <path>; inValue: in an expression, where generic
// arguments are written "::<...>".
func (p *v0) path(inValue bool) {
	if !p.enter() {
		return
	}
	defer p.leave()
	switch p.next() {
	case 'C':
		p.optBase62('s') // the crate's disambiguator, not printed
		p.printIdent(p.ident())
	case 'N':
		ns := p.next()
		p.path(inValue)
		dis := p.optBase62('s')
		id := p.ident()
		switch {
		case ns >= 'A' && ns <= 'Z':
			p.print("::{")
			switch ns {
			case 'C':
				p.print("closure")
			case 'S':
				p.print("shim")
			default:
				p.print(string(rune(ns)))
			}
			if !id.empty() {
				p.print(":")
				p.printIdent(id)
			}
			p.print("#")
			p.print(strconv.FormatUint(dis, 10))
			p.print("}")
		case ns >= 'a' && ns <= 'z':
			if !id.empty() {
				p.print("::")
				p.printIdent(id)
			}
		default:
			p.fail()
		}
	case 'M':
		p.implPath()
		p.print("<")
		p.typ()
		p.print(">")
	case 'X':
		p.implPath()
		p.print("<")
		p.typ()
		p.print(" as ")
		p.path(false)
		p.print(">")
	case 'Y':
		p.print("<")
		p.typ()
		p.print(" as ")
		p.path(false)
		p.print(">")
	case 'I':
		p.path(inValue)
		if inValue {
			p.print("::")
		}
		p.print("<")
		p.list(p.genericArg, ", ")
		p.print(">")
	case 'B':
		p.backref(func() { p.path(inValue) })
	default:
		p.fail()
	}
}

// implPath: [<disambiguator>] <path>, not printed.
func (p *v0) implPath() {
	p.skip(func() {
		p.optBase62('s')
		p.path(false)
	})
}

// list prints items up to the closing "E", separated by sep; it returns
// how many there were.
func (p *v0) list(item func(), sep string) int {
	n := 0
	for !p.err && !p.eat('E') {
		if p.pos >= len(p.s) {
			p.fail()
			break
		}
		if n > 0 {
			p.print(sep)
		}
		item()
		n++
	}
	return n
}

func (p *v0) genericArg() {
	switch {
	case p.eat('L'):
		p.printLifetime(p.base62())
	case p.eat('K'):
		p.constant(false)
	default:
		p.typ()
	}
}

func (p *v0) printLifetime(i uint64) {
	if i == 0 {
		p.print("'_")
		return
	}
	if i > uint64(p.lifetime) {
		p.fail()
		return
	}
	d := uint64(p.lifetime) - i
	if d < 26 {
		p.print("'" + string(rune('a'+d)))
	} else {
		p.print("'_" + strconv.FormatUint(d, 10))
	}
}

// binder reads an optional "G" <base-62-number> and prints "for<...> "
// around f.
func (p *v0) binder(f func()) {
	n := p.optBase62('G')
	if p.err || n > 1000 {
		p.fail()
		return
	}
	if n > 0 {
		p.print("for<")
		for k := uint64(0); k < n; k++ {
			if k > 0 {
				p.print(", ")
			}
			p.lifetime++
			p.printLifetime(1)
		}
		p.print("> ")
	}
	f()
	p.lifetime -= int(n)
}

var basicTypes = map[byte]string{
	'a': "i8", 'b': "bool", 'c': "char", 'd': "f64", 'e': "str", 'f': "f32",
	'h': "u8", 'i': "isize", 'j': "usize", 'l': "i32", 'm': "u32", 'n': "i128",
	'o': "u128", 's': "i16", 't': "u16", 'u': "()", 'v': "...", 'x': "i64",
	'y': "u64", 'z': "!", 'p': "_",
}

func (p *v0) typ() {
	if !p.enter() {
		return
	}
	defer p.leave()
	c := p.next()
	if t, ok := basicTypes[c]; ok {
		p.print(t)
		return
	}
	switch c {
	case 'R', 'Q':
		p.print("&")
		if p.eat('L') {
			if lt := p.base62(); lt != 0 {
				p.printLifetime(lt)
				p.print(" ")
			}
		}
		if c == 'Q' {
			p.print("mut ")
		}
		p.typ()
	case 'P':
		p.print("*const ")
		p.typ()
	case 'O':
		p.print("*mut ")
		p.typ()
	case 'A':
		p.print("[")
		p.typ()
		p.print("; ")
		p.constant(true)
		p.print("]")
	case 'S':
		p.print("[")
		p.typ()
		p.print("]")
	case 'T':
		p.print("(")
		if p.list(p.typ, ", ") == 1 {
			p.print(",")
		}
		p.print(")")
	case 'F':
		p.binder(p.fnSig)
	case 'D':
		p.print("dyn ")
		p.binder(func() { p.list(p.dynTrait, " + ") })
		if !p.eat('L') {
			p.fail()
			return
		}
		if lt := p.base62(); lt != 0 {
			p.print(" + ")
			p.printLifetime(lt)
		}
	case 'B':
		p.backref(p.typ)
	default:
		// A path type: the tag belongs to the path.
		p.pos--
		p.path(false)
	}
}

func (p *v0) fnSig() {
	unsafe := p.eat('U')
	abi := ""
	hasABI := false
	if p.eat('K') {
		hasABI = true
		if p.eat('C') {
			abi = "C"
		} else {
			id := p.ident()
			if id.puny != "" {
				p.fail()
				return
			}
			abi = strings.ReplaceAll(id.ascii, "_", "-")
		}
	}
	if unsafe {
		p.print("unsafe ")
	}
	if hasABI {
		p.print("extern \"" + abi + "\" ")
	}
	p.print("fn(")
	p.list(p.typ, ", ")
	p.print(")")
	if p.eat('u') {
		return // returns ()
	}
	p.print(" -> ")
	p.typ()
}

// dynTrait: a trait path, its generic arguments left open for the
// associated type bindings ("p" <name> <type>) that follow.
func (p *v0) dynTrait() {
	open := p.traitPathOpen()
	for !p.err && p.eat('p') {
		if open {
			p.print(", ")
		} else {
			p.print("<")
			open = true
		}
		id := p.ident()
		p.printIdent(id)
		p.print(" = ")
		p.typ()
	}
	if open {
		p.print(">")
	}
}

// traitPathOpen prints a trait path; with generic arguments it leaves
// the "<...>" open and returns true.
func (p *v0) traitPathOpen() bool {
	if !p.enter() {
		return false
	}
	defer p.leave()
	switch {
	case p.eat('B'):
		open := false
		start := p.pos - 1
		at := p.base62()
		if p.err || at >= uint64(start) {
			p.fail()
			return false
		}
		if p.out == nil {
			return false
		}
		saved := p.pos
		p.pos = int(at)
		open = p.traitPathOpen()
		p.pos = saved
		return open
	case p.eat('I'):
		p.path(false)
		p.print("<")
		p.list(p.genericArg, ", ")
		return true
	default:
		p.path(false)
		return false
	}
}

// constant prints a <const>: integers in decimal (hex with 0x past 64
// bits), bool, char, the placeholder "_"; other constant kinds are not
// supported (the symbol is then left mangled).
func (p *v0) constant(inValue bool) {
	if !p.enter() {
		return
	}
	defer p.leave()
	if p.eat('B') {
		p.backref(func() { p.constant(inValue) })
		return
	}
	t := p.next()
	switch t {
	case 'p':
		p.print("_")
		return
	case 'h', 't', 'm', 'y', 'o', 'j':
		p.print(p.constInt(false))
	case 'a', 's', 'l', 'x', 'n', 'i':
		p.print(p.constInt(true))
	case 'b':
		switch v := p.hexDigits(); v {
		case "0":
			p.print("false")
		case "1":
			p.print("true")
		default:
			p.fail()
		}
	case 'c':
		v, err := strconv.ParseUint(p.hexDigits(), 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			p.fail()
			return
		}
		p.print(quoteChar(rune(v)))
	default:
		p.fail()
	}
}

// constInt reads ["n"] <hex digits> "_" and formats it.
func (p *v0) constInt(signed bool) string {
	neg := signed && p.eat('n')
	h := p.hexDigits()
	if p.err {
		return ""
	}
	s := ""
	if len(h) <= 16 {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			p.fail()
			return ""
		}
		s = strconv.FormatUint(v, 10)
	} else {
		s = "0x" + h
	}
	if neg {
		s = "-" + s
	}
	return s
}

// hexDigits reads lowercase hex digits up to "_" ("0" for none).
func (p *v0) hexDigits() string {
	start := p.pos
	for !p.err {
		c := p.next()
		if c == '_' {
			break
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			p.fail()
		}
	}
	if p.err {
		return ""
	}
	h := strings.TrimLeft(p.s[start:p.pos-1], "0")
	if h == "" {
		h = "0"
	}
	return h
}

// quoteChar writes a char constant as Rust's Debug does: 'a', '\n', '\”.
func quoteChar(c rune) string {
	switch c {
	case '\'':
		return `'\''`
	case '\\':
		return `'\\'`
	case '\n':
		return `'\n'`
	case '\r':
		return `'\r'`
	case '\t':
		return `'\t'`
	case 0:
		return `'\0'`
	}
	if unicode.IsPrint(c) {
		return "'" + string(c) + "'"
	}
	return "'\\u{" + strconv.FormatInt(int64(c), 16) + "}'"
}
