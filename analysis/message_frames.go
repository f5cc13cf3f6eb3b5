package analysis

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// Reporting functions: a frame of one of them on the crash's stack says
// what the firmware was told before it died. Each rule reads the
// function's arguments from that frame: its DWARF arguments (values GDB
// would print, entry values proven from the caller's call site), or, for
// a function without them, r0-r3 when the frame is provably at the
// function's first instruction with its registers known (frame 0, or the
// frame an exception interrupted). Nothing else is guessed.
type msgRule struct {
	names []string
	rank  int // lower wins; then the innermost frame
	read  func(c *msgCtx, j int) *report.MessageJSON
}

var msgRules = []msgRule{
	{[]string{"__assert_func"}, 0, assertFuncMessage},
	{[]string{"__assert"}, 1, assertOldMessage},
	{[]string{"vAssertCalled"}, 0, hookRule("configASSERT")},
	{[]string{"assert_failed"}, 0, hookRule("assert_param")},
	{[]string{"z_fatal_error", "k_sys_fatal_error_handler"}, 0, zephyrFatalMessage},
	{[]string{"__stack_chk_fail", "__stack_chk_fail_local"}, 2, stackChkMessage},
	{[]string{"abort"}, 3, abortMessage},
}

// neverReturns: the C library's reporting functions that do not return
// (newlib's assert entry points).
var neverReturns = map[string]bool{"__assert_func": true, "__assert": true}

// maxMessageString bounds a string read for a message.
const maxMessageString = 512

type msgCtx struct {
	elf    *elfsym.File
	mem    unwinders.Memory
	frames []unwinders.Frame
	js     []report.FrameJSON
}

// frameMessage finds the best message the stack offers (nil: none).
func frameMessage(elf *elfsym.File, mem unwinders.Memory, frames []unwinders.Frame, js []report.FrameJSON, hooks []string) *report.MessageJSON {
	c := &msgCtx{elf: elf, mem: mem, frames: frames, js: js}
	var best *report.MessageJSON
	bestRank := 1 << 30
	rules := msgRules
	if len(hooks) > 0 {
		// --assert-hook: the application's own (file, line) hooks.
		rules = append(append([]msgRule(nil), msgRules...), msgRule{hooks, 0, hookRule("")})
	}
	for j := range js {
		name := js[j].Function
		if name == "" {
			continue
		}
		for _, r := range rules {
			if r.rank >= bestRank || !nameIn(name, r.names) {
				continue
			}
			if m := r.read(c, j); m != nil {
				idx := js[j].Index
				m.Frame = &idx
				m.PC = js[j].PC
				best, bestRank = m, r.rank
			}
		}
	}
	return best
}

func nameIn(n string, names []string) bool {
	for _, x := range names {
		if n == x {
			return true
		}
	}
	return false
}

// argVal is one argument as the frame knows it.
type argVal struct {
	v    uint32
	ok   bool
	from string // how it was known
	why  string // why it is unknown
	typ  string
}

// arg reads argument name (the reg'th argument register at entry) of
// frame j: its DWARF value, else r0-r3 at the function's entry, else the
// constant the caller's code provably put in that register.
func (c *msgCtx) arg(j int, name string, reg int) argVal {
	f := &c.js[j]
	for _, a := range f.Args {
		if a.Name == name {
			return c.orCallSite(j, reg, c.dwarfArg(f, a))
		}
	}
	return c.orCallSite(j, reg, c.entryReg(j, reg))
}

// orCallSite returns a when known, else the caller's proven constant for
// register reg, else a with why it is unknown.
func (c *msgCtx) orCallSite(j int, reg int, a argVal) argVal {
	if a.ok || reg < 0 || reg > 3 {
		return a
	}
	f := &c.js[j]
	p := f.Phys
	if f.Kind != "normal" || p < 0 || p+1 >= len(c.frames) || c.elf == nil {
		return a
	}
	at := c.frames[p].PC
	if c.frames[p].ReturnAddress && at >= 2 {
		at -= 2 // a noreturn call may end its function
	}
	callee, ok := c.elf.FuncAt(at)
	caller := &c.frames[p+1]
	if !ok || caller.Kind != unwinders.KindNormal || !caller.ReturnAddress || caller.AfterSVC {
		return a
	}
	// A caller found with less than high confidence (no unwind data
	// proved its return address) is trusted only for a function that
	// never returns: a return address right after a BL to it can only be
	// this very call's (no earlier call to it came back).
	if caller.Confidence != unwinders.ConfidenceHigh && !(caller.Confidence == unwinders.ConfidenceMedium && neverReturns[f.Function]) {
		a.why += fmt.Sprintf("; its caller's frame is only %s confidence, so the caller's code proves nothing", caller.Confidence)
		return a
	}
	vals, err := callSiteArgs(c.elf, c.mem, caller.PC, callee.Start)
	if err != nil {
		a.why += "; the caller's code proves nothing: " + err.Error()
		return a
	}
	v, ok := vals[reg]
	if !ok {
		a.why += fmt.Sprintf("; the caller's code does not set r%d to a constant on every path to the call at 0x%08x", reg, caller.PC-4)
		return a
	}
	return argVal{v: v.v, ok: true, typ: a.typ, from: fmt.Sprintf("r%d set to a constant at 0x%08x on every path to the call at 0x%08x (the caller's code)", reg, v.at, caller.PC-4)}
}

func (c *msgCtx) dwarfArg(f *report.FrameJSON, a report.VarJSON) argVal {
	out := argVal{typ: a.Type}
	switch {
	case len(a.Raw) > 0 && len(a.Raw) <= 4:
		var b [4]byte
		copy(b[:], a.Raw)
		out.v, out.ok = binary.LittleEndian.Uint32(b[:]), true
		if len(a.Raw) < 4 && strings.Contains(a.Type, "int") && !strings.Contains(a.Type, "unsigned") && a.Raw[len(a.Raw)-1]&0x80 != 0 {
			// sign-extend a short signed integer
			for i := len(a.Raw); i < 4; i++ {
				b[i] = 0xff
			}
			out.v = binary.LittleEndian.Uint32(b[:])
		}
		out.from = "DWARF location of " + a.Name
		if a.Entry {
			out.from = "the caller's call site (" + a.Name + "@entry)"
		}
	case a.OptimizedOut:
		out.why = a.Name + " is optimized out at this PC (DWARF), and no call site proves it"
	case a.Note != "":
		out.why = a.Name + ": " + a.Note
	default:
		out.why = a.Name + " is not known"
	}
	return out
}

// entryReg is argument register reg of frame j when the frame is at the
// function's first instruction with r0-r3 known: what the caller passed.
func (c *msgCtx) entryReg(j int, reg int) argVal {
	f := &c.js[j]
	fn := f.Function
	if len(f.Args) > 0 {
		return argVal{why: fn + "'s DWARF has no such argument"}
	}
	p := f.Phys
	if p < 0 || p >= len(c.frames) || f.Kind == "inlined" {
		return argVal{why: fn + " has no DWARF arguments"}
	}
	uf := &c.frames[p]
	regsKnown := p == 0 || (p > 0 && c.frames[p-1].Kind == unwinders.KindException)
	atEntry := false
	if c.elf != nil {
		if ref, ok := c.elf.SymbolFor(uf.PC); ok && ref.Offset == 0 && ref.Start == uf.PC&^1 {
			atEntry = true
		}
	}
	if !regsKnown || !atEntry || uf.ReturnAddress {
		return argVal{why: fmt.Sprintf("%s has no DWARF arguments and its frame is not at its first instruction with r0-r3 known: the registers that carried them were reused", fn)}
	}
	v, ok := uf.Regs.Get(unwinders.Reg(reg))
	if !ok {
		return argVal{why: fmt.Sprintf("r%d is not in the dump", reg)}
	}
	return argVal{v: v, ok: true, from: fmt.Sprintf("r%d at the entry of %s", reg, fn)}
}

// str reads the C string a pointer argument points at.
func (c *msgCtx) str(a argVal) (text string, trunc bool, note string) {
	if a.v == 0 {
		return "", false, "NULL"
	}
	return readMessageString(c.mem, a.v, maxMessageString)
}

// readMessageString reads a NUL-terminated string at addr, at most max
// bytes, in chunks so that a string running into memory the dump lacks
// keeps what is captured. Printable ASCII is kept (a backslash doubled),
// every other byte is \xNN. note says what stopped it when not a NUL.
func readMessageString(mem unwinders.Memory, addr uint32, max int) (text string, trunc bool, note string) {
	if mem == nil {
		return "", false, fmt.Sprintf("memory at 0x%08x not captured", addr)
	}
	var raw []byte
	var chunk [32]byte
	for len(raw) < max {
		n := min(len(chunk), max-len(raw))
		at := uint64(addr) + uint64(len(raw))
		if at > 0xffffffff {
			return escapeMessage(raw), true, "the string runs past the end of the address space"
		}
		err := mem.Read(uint32(at), chunk[:n])
		if err != nil {
			// Byte by byte: keep the captured start of the chunk.
			got := 0
			for ; got < n; got++ {
				if mem.Read(uint32(at)+uint32(got), chunk[got:got+1]) != nil {
					break
				}
			}
			if k := indexNUL(chunk[:got]); k >= 0 {
				return escapeMessage(append(raw, chunk[:k]...)), false, ""
			}
			raw = append(raw, chunk[:got]...)
			return escapeMessage(raw), len(raw) > 0, fmt.Sprintf("memory at 0x%08x not captured", uint32(at)+uint32(got))
		}
		if k := indexNUL(chunk[:n]); k >= 0 {
			return escapeMessage(append(raw, chunk[:k]...)), false, ""
		}
		raw = append(raw, chunk[:n]...)
	}
	return escapeMessage(raw), true, fmt.Sprintf("no NUL within %d bytes", max)
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// escapeMessage keeps printable ASCII (a backslash doubled) and writes
// every other byte as \xNN.
func escapeMessage(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		switch {
		case c == '\\':
			s.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, `\x%02x`, c)
		}
	}
	return s.String()
}

// strArg reads a string argument into the message's args list.
func (c *msgCtx) strArg(m *report.MessageJSON, name string, a argVal) (string, bool) {
	ma := report.MessageArg{Name: name, From: a.from}
	if !a.ok {
		ma.Note = a.why
		m.Args = append(m.Args, ma)
		return "", false
	}
	ma.Address = report.Hex(a.v)
	text, trunc, note := c.str(a)
	ma.Value, ma.Note = strconv.Quote(text), note
	if a.v == 0 {
		ma.Value = ""
	}
	m.Args = append(m.Args, ma)
	if a.v == 0 || (text == "" && note != "") {
		return "", false
	}
	if trunc {
		m.Truncated = true
		text += "..."
	}
	return text, true
}

func (c *msgCtx) intArg(m *report.MessageJSON, name string, a argVal, signed bool) (int64, bool) {
	ma := report.MessageArg{Name: name, From: a.from}
	if !a.ok {
		ma.Note = a.why
		m.Args = append(m.Args, ma)
		return 0, false
	}
	v := int64(a.v)
	if signed {
		v = int64(int32(a.v))
	}
	ma.Value = strconv.FormatInt(v, 10)
	m.Args = append(m.Args, ma)
	return v, true
}

// unknownNote joins the reasons of the args that could not be read.
func unknownNote(m *report.MessageJSON) {
	var why []string
	seen := map[string]bool{}
	for _, a := range m.Args {
		if a.Note != "" && a.Note != "NULL" && !seen[a.Note] {
			why = append(why, a.Note)
			seen[a.Note] = true
		}
	}
	m.Note = strings.Join(why, "; ")
}

// newlib: void __assert_func(const char *file, int line, const char *func,
// const char *failedexpr).
func assertFuncMessage(c *msgCtx, j int) *report.MessageJSON {
	m := &report.MessageJSON{Source: "__assert_func arguments"}
	c.assertion(m, j, c.arg(j, "file", 0), c.arg(j, "line", 1), c.arg(j, "func", 2), c.arg(j, "failedexpr", 3), true)
	// Called by newlib's __assert (which passes its own arguments on):
	// what __assert was told fills in what is unknown here.
	k := j + 1
	for k < len(c.js) && c.js[k].Phys == c.js[j].Phys {
		k++
	}
	if (m.File == "" || !strings.HasPrefix(m.Text, `assertion "`)) && k < len(c.js) && c.js[k].Function == "__assert" {
		o := assertOldMessage(c, k)
		used := false
		if !strings.HasPrefix(m.Text, `assertion "`) && strings.HasPrefix(o.Text, `assertion "`) {
			m.Text, used = o.Text, true
		}
		if m.File == "" && o.File != "" {
			m.File, used = o.File, true
		}
		if m.Line == nil && o.Line != nil {
			m.Line, used = o.Line, true
		}
		if used {
			m.Source = "__assert_func and __assert arguments"
			for _, a := range o.Args {
				a.Name = "__assert " + a.Name
				m.Args = append(m.Args, a)
			}
			unknownNote(m)
			if !strings.HasPrefix(m.Text, `assertion "`) || m.File == "" {
				return m
			}
			// Complete: the notes of __assert_func's unknown arguments
			// no longer matter.
			m.Note = ""
		}
	}
	return m
}

// newlib: void __assert(const char *file, int line, const char *failedexpr).
func assertOldMessage(c *msgCtx, j int) *report.MessageJSON {
	m := &report.MessageJSON{Source: "__assert arguments"}
	c.assertion(m, j, c.arg(j, "file", 0), c.arg(j, "line", 1), argVal{}, c.arg(j, "failedexpr", 2), false)
	return m
}

func (c *msgCtx) assertion(m *report.MessageJSON, j int, file, line, fn, expr argVal, hasFunc bool) {
	e, eok := c.strArg(m, "failedexpr", expr)
	f, fok := c.strArg(m, "file", file)
	l, lok := c.intArg(m, "line", line, true)
	if hasFunc {
		if fn.ok && fn.v == 0 {
			m.Args = append(m.Args, report.MessageArg{Name: "func", Value: "", Address: report.Hex(0), From: fn.from, Note: "NULL"})
		} else if s, ok := c.strArg(m, "func", fn); ok {
			m.Function = s
		}
	}
	if eok {
		m.Text = `assertion "` + e + `" failed`
	} else {
		m.Text = "assertion failed (expression unknown)"
	}
	if fok {
		m.File = f
	}
	if lok {
		m.Line = &l
	}
	unknownNote(m)
}

// An assert hook the application defines, told a file and a line:
// FreeRTOS leaves configASSERT to the application, which commonly calls
// vAssertCalled(__FILE__, __LINE__) (or (line, file)); STM32Cube's
// assert_param(expr) calls the application's assert_failed(uint8_t *file,
// uint32_t line); --assert-hook names others. Read from the function's
// DWARF only (the order is the application's): the string argument is
// the file, the integer one the line, each value from DWARF or, when
// optimized out, proven from the caller's code.
func hookRule(what string) func(c *msgCtx, j int) *report.MessageJSON {
	return func(c *msgCtx, j int) *report.MessageJSON {
		f := &c.js[j]
		label := what
		if label == "" {
			label = f.Function
		}
		m := &report.MessageJSON{Source: f.Function + " arguments", Text: "assertion failed (" + label + ")"}
		if len(f.Args) == 0 {
			m.Note = f.Function + " has no DWARF arguments: which argument is the file and which the line is the application's choice, so neither is read"
			return m
		}
		var file, line *report.VarJSON
		fileReg, lineReg := -1, -1
		scalar := len(f.Args) <= 4
		for i := range f.Args {
			a := &f.Args[i]
			switch {
			case isStringType(a.Type) && file == nil:
				file, fileReg = a, i
			case !strings.Contains(a.Type, "*") && line == nil:
				line, lineReg = a, i
			}
			if strings.Contains(a.Type, "long long") || strings.Contains(a.Type, "double") || strings.Contains(a.Type, "int64") || strings.Contains(a.Type, "struct") && !strings.Contains(a.Type, "*") {
				scalar = false // the i'th argument is then not in r<i>
			}
		}
		if !scalar {
			fileReg, lineReg = -1, -1
		}
		if file != nil {
			if s, ok := c.strArg(m, file.Name, c.orCallSite(j, fileReg, c.dwarfArg(f, *file))); ok {
				m.File = s
			}
		}
		if line != nil {
			if l, ok := c.intArg(m, line.Name, c.orCallSite(j, lineReg, c.dwarfArg(f, *line)), !isUnsignedType(line.Type)); ok {
				m.Line = &l
			}
		}
		unknownNote(m)
		return m
	}
}

// isStringType: a pointer to characters or bytes (char *, const char *,
// uint8_t *).
func isStringType(t string) bool {
	return strings.HasSuffix(t, "*") && !strings.HasSuffix(t, "**") && (strings.Contains(t, "char") || strings.Contains(t, "int8_t"))
}

// isUnsignedType: an unsigned integer type by its name.
func isUnsignedType(t string) bool {
	return strings.Contains(t, "unsigned") || strings.Contains(t, "uint") || strings.Contains(t, "size_t") || t == "_Bool" || t == "bool"
}

// Zephyr: z_fatal_error(unsigned int reason, const struct arch_esf *esf)
// and k_sys_fatal_error_handler(unsigned int reason, ...).
func zephyrFatalMessage(c *msgCtx, j int) *report.MessageJSON {
	m := &report.MessageJSON{Source: c.js[j].Function + " arguments"}
	r := c.arg(j, "reason", 0)
	if _, ok := c.intArg(m, "reason", r, false); ok {
		m.Text = zephyrReasonText(r.v)
	} else {
		m.Text = "Zephyr fatal error (reason unknown)"
	}
	unknownNote(m)
	return m
}

// caller is the function of the frame that called frame j (the next
// physical frame), when the walk found it with confidence.
func (c *msgCtx) caller(j int) string {
	for k := j + 1; k < len(c.js); k++ {
		f := &c.js[k]
		if f.Phys == c.js[j].Phys {
			continue
		}
		if f.Kind != "normal" && f.Kind != "inlined" {
			return ""
		}
		if f.Confidence != "high" {
			return ""
		}
		return f.Function
	}
	return ""
}

func stackChkMessage(c *msgCtx, j int) *report.MessageJSON {
	m := &report.MessageJSON{Source: c.js[j].Function + " call"}
	if fn := c.caller(j); fn != "" {
		m.Function = fn
		m.Text = "stack smashing detected: the stack protector's guard in " + fn + "'s frame was overwritten"
	} else {
		m.Text = "stack smashing detected: a stack protector's guard was overwritten"
	}
	return m
}

func abortMessage(c *msgCtx, j int) *report.MessageJSON {
	m := &report.MessageJSON{Source: "abort call"}
	if fn := c.caller(j); fn != "" {
		m.Function = fn
		m.Text = "abort() called by " + fn
	} else {
		m.Text = "abort() called"
	}
	return m
}

// ---- --message SYMBOL --------------------------------------------------

// maxSymbolMessage bounds the text read for --message.
const maxSymbolMessage = 1024

// symbolMessage reads --message SYMBOL: a char array (its text up to the
// first NUL, at most its size) or a char pointer (the string it points
// at), from the dump's memory. The kind comes from the variable's DWARF
// type; without one, an object of other than 4 bytes is an array.
func symbolMessage(elf *elfsym.File, mem unwinders.Memory, name string) (*report.MessageJSON, error) {
	if elf == nil {
		return nil, errors.New("needs the ELF's symbols")
	}
	addr, ok := elf.Symbol(name)
	if !ok {
		return nil, fmt.Errorf("no symbol %q in %s", name, elf.Name())
	}
	var size uint32
	if ref, ok := elf.SymbolFor(addr); ok && ref.Start == addr && ref.Name == name {
		size = ref.Size
	}
	kind := globalKind(elf, name)
	if kind == "" {
		switch {
		case size == 4:
			return nil, fmt.Errorf("%s is 4 bytes and no DWARF type says whether it is a char array or a pointer", name)
		case size == 0:
			return nil, fmt.Errorf("%s has no size and no DWARF type", name)
		}
		kind = "array"
	}
	m := &report.MessageJSON{Source: "--message " + name}
	if mem == nil {
		m.Note = fmt.Sprintf("memory at 0x%08x not captured", addr)
		return m, nil
	}
	switch kind {
	case "pointer":
		p, err := unwinders.ReadU32(mem, addr)
		if err != nil {
			m.Address = report.Hex(addr)
			m.Note = fmt.Sprintf("%s (the pointer, at 0x%08x) not captured", name, addr)
			return m, nil
		}
		m.Address = report.Hex(p)
		m.Args = []report.MessageArg{{Name: name, Value: report.Hex(p), Address: report.Hex(addr), From: "the pointer's value in the dump"}}
		if p == 0 {
			m.Note = name + " is NULL"
			return m, nil
		}
		m.Text, m.Truncated, m.Note = readMessageString(mem, p, maxSymbolMessage)
		if m.Truncated && m.Note == "" {
			m.Note = fmt.Sprintf("no NUL within %d bytes", maxSymbolMessage)
		}
	case "array":
		m.Address = report.Hex(addr)
		bound := maxSymbolMessage
		if size > 0 && size < uint32(bound) {
			bound = int(size)
		}
		m.Text, m.Truncated, m.Note = readMessageString(mem, addr, bound)
		if m.Truncated && size > 0 && bound == int(size) && strings.HasPrefix(m.Note, "no NUL") {
			m.Note = fmt.Sprintf("no NUL within its %d bytes", size)
		}
	default:
		return nil, fmt.Errorf("%s is a %s, not a char array or a char pointer", name, kind)
	}
	return m, nil
}

// globalKind is "array" or "pointer" for a global char array or char
// pointer named name, from its DWARF type; another type's name; "" when
// DWARF does not describe it.
func globalKind(elf *elfsym.File, name string) string {
	k, _ := elf.Memo("analysis.message.kind."+name, func() any {
		return dwarfGlobalKind(elf, name)
	}).(string)
	return k
}

func dwarfGlobalKind(elf *elfsym.File, name string) string {
	d := elf.DWARF()
	if d == nil {
		return ""
	}
	r := d.Reader()
	for n := 0; n < 5_000_000; n++ {
		e, err := r.Next()
		if err != nil || e == nil {
			return ""
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			continue
		}
		if e.Tag == dwarf.TagVariable {
			if nm, _ := e.Val(dwarf.AttrName).(string); nm == name {
				if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
					t, err := d.Type(off)
					if err != nil {
						return ""
					}
					return charKind(t)
				}
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	return ""
}

// charKind classifies a type for --message.
func charKind(t dwarf.Type) string {
	strip := func(t dwarf.Type) dwarf.Type {
		for range 16 {
			switch q := t.(type) {
			case *dwarf.QualType:
				t = q.Type
			case *dwarf.TypedefType:
				t = q.Type
			default:
				return t
			}
		}
		return t
	}
	isChar := func(t dwarf.Type) bool {
		switch strip(t).(type) {
		case *dwarf.CharType, *dwarf.UcharType:
			return true
		}
		return false
	}
	switch u := strip(t).(type) {
	case *dwarf.ArrayType:
		if isChar(u.Type) {
			return "array"
		}
	case *dwarf.PtrType:
		if isChar(u.Type) {
			return "pointer"
		}
	}
	return t.String()
}
