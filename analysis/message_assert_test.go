package analysis

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/unwinders"
)

// gdbMessage is the oracle's sidecar (fixtures/oracle/capture.py, FL_CALLS
// and FL_EVAL): the registers and strings GDB read at the entry of each
// reporting function, GDB's "info args" of those frames at the fault, and
// GDB's reading of the message symbols at the fault.
type gdbMessage struct {
	Calls []struct {
		Function       string
		LR             string
		R0, R1, R2, R3 string
		Strings        map[string]string
	}
	FaultFrames []struct {
		Function string
		Level    int
		InfoArgs string `json:"info_args"`
	} `json:"fault_frames"`
	Eval []struct {
		Expr    string
		Print   string
		Address string
		Bytes   string
		String  *string
	}
}

func hexU32(t *testing.T, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unescapeMessage inverts escapeMessage.
func unescapeMessage(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && s[i+1] == 'x':
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			out = append(out, byte(v))
			i += 3
		default:
			t.Fatalf("bad escape in %q", s)
		}
	}
	return out
}

// gdbArgs parses GDB's "info args": name -> value text.
func gdbArgs(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if n, v, ok := strings.Cut(l, " = "); ok {
			out[n] = v
		}
	}
	return out
}

func loadGDBMessage(t *testing.T, path string) gdbMessage {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g gdbMessage
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

func msgArg(m *report.MessageJSON, name string) *report.MessageArg {
	for i := range m.Args {
		if m.Args[i].Name == name {
			return &m.Args[i]
		}
	}
	return nil
}

// assertFixture analyzes one dump of fixtures/qemu-assert.
func assertFixture(t *testing.T, base string, opt Options) *report.Report {
	t.Helper()
	build := strings.Join(strings.SplitN(base, "-", 4)[:3], "-")
	elf, d := openFixture(t, verdictFixture{filepath.Join(repo, "fixtures/qemu-assert", base+".json"), filepath.Join(repo, "firmware-samples/assert/build", build+".elf")})
	defer elf.Close()
	r, err := Analyze(elf, d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAssertSampleMessages (issue 24, item 2): every scenario of our
// message sample (firmware-samples/assert, gcc and clang, -O0 and -O2),
// crashed in QEMU: the message faultline reads from the dump equals, byte
// for byte, what GDB read from the same run: the arguments in the
// registers at the entry of __assert_func / vAssertCalled (a breakpoint
// there), and the --message symbols at the fault. Every argument GDB
// itself can print at the fault (info args) is known to faultline too,
// and none GDB calls <optimized out> is given a value.
func TestAssertSampleMessages(t *testing.T) {
	sides, err := filepath.Glob(filepath.Join(repo, "fixtures/qemu-assert/*.gdbmsg"))
	if err != nil {
		t.Fatal(err)
	}
	checked, fullAsserts, beyondGDB, hookFiles, scen := 0, 0, 0, 0, map[string]int{}
	for _, side := range sides {
		base := strings.TrimSuffix(filepath.Base(side), ".gdbmsg")
		scenario := strings.SplitN(base, "-", 4)[3]
		scen[scenario]++
		g := loadGDBMessage(t, side)
		call := func(fn string) (regs [4]uint32, strs [4][]byte, ok bool) {
			for _, c := range g.Calls {
				if c.Function == fn {
					for i, r := range []string{c.R0, c.R1, c.R2, c.R3} {
						regs[i] = hexU32(t, r)
						if s, has := c.Strings["r"+strconv.Itoa(i)]; has {
							strs[i] = unhex(t, s)
						}
					}
					ok = true
				}
			}
			return
		}
		gdbAt := func(fn string) map[string]string {
			for _, f := range g.FaultFrames {
				if f.Function == fn {
					return gdbArgs(f.InfoArgs)
				}
			}
			return nil
		}
		// consistent: an argument GDB prints at the fault is known to
		// faultline, one GDB has as <optimized out> is not.
		consistent := func(m *report.MessageJSON, fn string, names ...string) {
			ga := gdbAt(fn)
			for _, n := range names {
				a := msgArg(m, n)
				gv, has := ga[n]
				if a == nil || !has {
					t.Errorf("%s: argument %s: faultline %+v, GDB %q", base, n, a, gv)
					continue
				}
				known := a.Note == "" || a.Note == "NULL" || a.Value != ""
				// GDB knows it: so does faultline. Faultline knows more
				// than GDB only from the caller's code (a proven
				// constant), whose value is checked above.
				if gdbKnows := gv != "<optimized out>"; gdbKnows && !known || !gdbKnows && known && !strings.Contains(a.From, "the caller's code") {
					t.Errorf("%s: %s: faultline %+v, GDB %s", base, n, a, gv)
				}
				if known && !(gv != "<optimized out>") {
					beyondGDB++
				}
				checked++
			}
		}
		switch scenario {
		case "assert_newlib", "assert_old":
			r := assertFixture(t, base, Options{})
			m := r.Message
			regs, strs, ok := call("__assert_func")
			if !ok || m == nil || (m.Source != "__assert_func arguments" && (scenario != "assert_old" || m.Source != "__assert_func and __assert arguments")) {
				t.Errorf("%s: message %+v, GDB stopped at __assert_func: %v", base, m, ok)
				continue
			}
			known := func(n string) *report.MessageArg {
				if a := msgArg(m, n); a != nil && a.Value != "" {
					return a
				}
				if a := msgArg(m, "__assert "+n); a != nil && a.Value != "" {
					return a
				}
				return &report.MessageArg{}
			}
			if a := known("failedexpr"); a.Value != "" {
				if string(unescapeMessage(t, m.Text)) != `assertion "`+string(strs[3])+`" failed` {
					t.Errorf("%s: text %q, GDB read expression %q", base, m.Text, strs[3])
				}
				if a.Address != report.Hex(regs[3]) {
					t.Errorf("%s: failedexpr at %s, GDB %#x", base, a.Address, regs[3])
				}
				fullAsserts++
				checked++
			}
			if a := known("file"); a.Value != "" {
				if string(unescapeMessage(t, m.File)) != string(strs[0]) || a.Address != report.Hex(regs[0]) {
					t.Errorf("%s: file %q, GDB %q", base, m.File, strs[0])
				}
				checked++
			}
			if m.Line == nil || *m.Line != int64(int32(regs[1])) {
				t.Errorf("%s: line %v, GDB r1 %d", base, m.Line, regs[1])
			} else {
				checked++
			}
			if regs[2] == 0 {
				if m.Function != "" {
					t.Errorf("%s: function %q for a NULL func", base, m.Function)
				}
			} else if a := msgArg(m, "func"); a.Value != "" {
				if m.Function != string(strs[2]) {
					t.Errorf("%s: function %q, GDB %q", base, m.Function, strs[2])
				}
				checked++
			}
			consistent(m, "__assert_func", "file", "line", "func", "failedexpr")
		case "vassert", "assert_hook", "assert_param":
			// The hook, its (file, line) registers and argument names.
			hook, fileR, lineR, names, opt := "vAssertCalled", 0, 1, []string{"pcFile", "ulLine"}, Options{}
			switch scenario {
			case "assert_hook":
				hook, fileR, lineR, names = "app_assert_hook", 1, 0, []string{"file", "line"}
				opt.AssertHooks = []string{hook}
				if r := assertFixture(t, base, Options{}); r.Message != nil {
					t.Errorf("%s: without --assert-hook: message %+v", base, r.Message)
				}
			case "assert_param":
				hook, names = "assert_failed", []string{"file", "line"}
			}
			r := assertFixture(t, base, opt)
			m := r.Message
			regs, strs, ok := call(hook)
			if !ok || m == nil || m.Source != hook+" arguments" {
				t.Errorf("%s: message %+v", base, m)
				continue
			}
			if m.File != "" {
				if m.File != string(strs[fileR]) {
					t.Errorf("%s: file %q, GDB %q", base, m.File, strs[fileR])
				}
				checked++
				hookFiles++
			}
			if m.Line != nil {
				if *m.Line != int64(regs[lineR]) {
					t.Errorf("%s: line %d, GDB %d", base, *m.Line, regs[lineR])
				}
				checked++
			}
			consistent(m, hook, names...)
		case "abort_direct", "stack_chk":
			r := assertFixture(t, base, Options{})
			m := r.Message
			fn, src := "abort", "abort call"
			if scenario == "stack_chk" {
				fn, src = "__stack_chk_fail", "__stack_chk_fail call"
			}
			var caller string
			for i, f := range r.Truth.Frames {
				if f.Function == fn && i+1 < len(r.Truth.Frames) {
					caller = r.Truth.Frames[i+1].Function
				}
			}
			if _, _, ok := call(fn); !ok || caller == "" {
				t.Errorf("%s: GDB never stopped at %s (caller %q)", base, fn, caller)
			}
			if m == nil || m.Source != src || m.Function != caller || !strings.Contains(m.Text, caller) {
				t.Errorf("%s: message %+v, want %s called by %s", base, m, fn, caller)
				continue
			}
			checked++
		case "message_buffer", "message_raw":
			for _, e := range g.Eval {
				r := assertFixture(t, base, Options{Message: e.Expr})
				m := r.Message
				if m == nil || m.Source != "--message "+e.Expr {
					t.Errorf("%s: --message %s: %+v (warnings %q)", base, e.Expr, m, r.Warnings)
					continue
				}
				var want []byte
				switch {
				case e.Bytes != "": // the array, whole
					want = unhex(t, e.Bytes)
					k := strings.IndexByte(string(want), 0)
					if k >= 0 {
						want = want[:k]
					}
					if m.Truncated != (k < 0) {
						t.Errorf("%s: %s truncated %v, NUL at %d", base, e.Expr, m.Truncated, k)
					}
				case e.String != nil:
					want = unhex(t, *e.String)
				default:
					t.Fatalf("%s: GDB could not read %s", base, e.Expr)
				}
				if got := unescapeMessage(t, m.Text); string(got) != string(want) {
					t.Errorf("%s: --message %s: %q, GDB read %q", base, e.Expr, got, want)
				}
				if m.Address != report.Hex(hexU32(t, e.Address)) {
					t.Errorf("%s: --message %s at %s, GDB %s", base, e.Expr, m.Address, e.Address)
				}
				checked++
			}
		}
	}
	for _, s := range []string{"assert_newlib", "assert_old", "vassert", "abort_direct", "stack_chk", "message_buffer", "message_raw", "assert_hook", "assert_param"} {
		if scen[s] < 7 {
			t.Errorf("scenario %s: %d builds, want 7", s, scen[s])
		}
	}
	if hookFiles < 21 {
		t.Errorf("%d assert hooks with their file", hookFiles)
	}
	if fullAsserts < 14 || checked < 160 {
		t.Errorf("%d assertions with their expression, %d values checked", fullAsserts, checked)
	}
	t.Logf("%d dumps, %d values checked against GDB, %d assertions with their expression, %d arguments GDB calls <optimized out> proven from the caller's code", len(sides), checked, fullAsserts, beyondGDB)
}

// TestMessageHostile: a message pointer outside the dump, a dump without
// the RAM, a string running into uncaptured memory, an unterminated
// array, huge line numbers: what cannot be read is "not captured", never
// invented, and every read is bounded.
func TestMessageHostile(t *testing.T) {
	base := "gcc-m3-O2-message_buffer"
	elf, d0 := openFixture(t, verdictFixture{filepath.Join(repo, "fixtures/qemu-assert", base+".json"), filepath.Join(repo, "firmware-samples/assert/build/gcc-m3-O2.elf")})
	defer elf.Close()
	ptrAt, _ := elf.Symbol("last_error")
	msgAt, _ := elf.Symbol("crash_msg")
	patched := func(f func(ram []byte, lo uint32)) *crashdump.Dump {
		d := *d0
		d.Memory = append([]unwinders.Region(nil), d0.Memory...)
		for i := range d.Memory {
			if d.Memory[i].Addr == 0x20000000 {
				ram := append([]byte(nil), d.Memory[i].Data...)
				f(ram, d.Memory[i].Addr)
				d.Memory[i].Data = ram
			}
		}
		return &d
	}
	run := func(d *crashdump.Dump, sym string) *report.MessageJSON {
		t.Helper()
		r, err := Analyze(elf, d, Options{Message: sym})
		if err != nil {
			t.Fatal(err)
		}
		return r.Message
	}
	// The pointer aims outside the dump.
	d := patched(func(ram []byte, lo uint32) { binary.LittleEndian.PutUint32(ram[ptrAt-lo:], 0x30000000) })
	if m := run(d, "last_error"); m == nil || m.Text != "" || m.Note != "memory at 0x30000000 not captured" || m.Address != "0x30000000" {
		t.Errorf("pointer outside the dump: %+v", m)
	}
	// A string running to the end of the captured RAM.
	var end uint32
	d = patched(func(ram []byte, lo uint32) {
		end = lo + uint32(len(ram))
		copy(ram[len(ram)-5:], "tail!")
		binary.LittleEndian.PutUint32(ram[ptrAt-lo:], end-5)
	})
	if m := run(d, "last_error"); m == nil || m.Text != "tail!" || !m.Truncated || m.Note != "memory at "+strings.Replace(report.Hex(end), "0x", "0x", 1)+" not captured" {
		t.Errorf("string into uncaptured memory: %+v (end %s)", m, report.Hex(end))
	}
	// An array with no NUL: bounded by its size.
	d = patched(func(ram []byte, lo uint32) {
		for i := 0; i < 200; i++ {
			ram[msgAt-lo+uint32(i)] = 'A'
		}
	})
	if m := run(d, "crash_msg"); m == nil || m.Text != strings.Repeat("A", 64) || !m.Truncated || m.Note != "no NUL within its 64 bytes" {
		t.Errorf("unterminated array: %+v", m)
	}
	// A pointer to 2000 non-NUL bytes: bounded at 1024.
	d = patched(func(ram []byte, lo uint32) {
		for i := 0; i < 2000; i++ {
			ram[0x1000+i] = 0xff
		}
		binary.LittleEndian.PutUint32(ram[ptrAt-lo:], lo+0x1000)
	})
	if m := run(d, "last_error"); m == nil || m.Text != strings.Repeat(`\xff`, 1024) || !m.Truncated {
		t.Errorf("unterminated string: %+v", m)
	}
	// No RAM in the dump: the array and the pointer are not captured.
	d = patched(func([]byte, uint32) {})
	var keep []unwinders.Region
	for _, r := range d.Memory {
		if r.Addr != 0x20000000 {
			keep = append(keep, r)
		}
	}
	d.Memory = keep
	if m := run(d, "crash_msg"); m == nil || m.Text != "" || m.Note != "memory at "+report.Hex(msgAt)+" not captured" {
		t.Errorf("no RAM, array: %+v", m)
	}
	if m := run(d, "last_error"); m == nil || m.Text != "" || !strings.Contains(m.Note, "not captured") {
		t.Errorf("no RAM, pointer: %+v", m)
	}
	var b strings.Builder
	r, _ := Analyze(elf, d, Options{Message: "crash_msg"})
	if err := textout.Write(&b, r); err != nil || !strings.Contains(b.String(), "Message: <not captured> (read from the --message crash_msg at "+report.Hex(msgAt)+")\n  note: memory at "+report.Hex(msgAt)+" not captured\n") {
		t.Errorf("text:\n%s", b.String())
	}
	// Not a string.
	if r, _ := Analyze(elf, d0, Options{Message: "rx_queue"}); r.Message != nil || !strings.Contains(strings.Join(r.Warnings, "\n"), "--message rx_queue: rx_queue is a struct queue, not a char array or a char pointer") {
		t.Errorf("struct: %+v %q", r.Message, r.Warnings)
	}
}

// TestMessageArgRules: the rules on arguments alone: a huge or negative
// line as the function's type says, a NULL func, and r0-r3 read for a
// function without DWARF arguments only at its first instruction with the
// registers known.
func TestMessageArgRules(t *testing.T) {
	elf, err := openELF(filepath.Join(repo, "firmware-samples/assert/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	im := &unwinders.Image{}
	if err := im.AddLayer(elf.Segments()...); err != nil {
		t.Fatal(err)
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	g := loadGDBMessage(t, filepath.Join(repo, "fixtures/qemu-assert/gcc-m3-O2-assert_newlib.gdbmsg"))
	c0 := g.Calls[0]
	file, line, fn, expr := hexU32(t, c0.R0), hexU32(t, c0.R1), hexU32(t, c0.R2), hexU32(t, c0.R3)

	// DWARF arguments: line 0xffffffff is int -1 for __assert_func and
	// 4294967295 for an unsigned long.
	js := []report.FrameJSON{{Index: 0, Function: "__assert_func", Kind: "normal", Args: []report.VarJSON{
		{Name: "file", Type: "const char *", Value: "x", Raw: u32(file)},
		{Name: "line", Type: "int", Value: "-1", Raw: u32(0xffffffff)},
		{Name: "func", Type: "const char *", Value: "0x0", Raw: u32(0)},
		{Name: "failedexpr", Type: "const char *", Value: "x", Raw: u32(expr)},
	}}}
	frames := []unwinders.Frame{{PC: 0x400, Kind: unwinders.KindNormal}}
	m := frameMessage(elf, im, frames, js, nil)
	if m == nil || m.Text != `assertion "q->n < QUEUE_MAX" failed` || m.File != "assert.c" || m.Line == nil || *m.Line != -1 || m.Function != "" || msgArg(m, "func").Note != "NULL" || msgArg(m, "func").Value != "" {
		t.Errorf("int line -1, func NULL: %+v", m)
	}
	js[0].Args[0].Raw = u32(0) // a NULL file is never followed
	if m := frameMessage(elf, im, frames, js, nil); m == nil || m.File != "" || msgArg(m, "file").Note != "NULL" {
		t.Errorf("NULL file: %+v", m)
	}
	js[0] = report.FrameJSON{Function: "vAssertCalled", Kind: "normal", Args: []report.VarJSON{
		{Name: "ulLine", Type: "unsigned long", Value: "4294967295", Raw: u32(0xffffffff)},
		{Name: "pcFile", Type: "const char *", Value: "x", Raw: u32(file)},
	}}
	if m := frameMessage(elf, im, frames, js, nil); m == nil || m.Line == nil || *m.Line != 4294967295 || m.File != "assert.c" {
		t.Errorf("unsigned line, arguments in the other order: %+v", m)
	}
	js[0] = report.FrameJSON{Function: "assert_failed", Kind: "normal", Args: []report.VarJSON{
		{Name: "file", Type: "uint8_t *", Value: "x", Raw: u32(file)},
		{Name: "line", Type: "uint32_t", Value: "4294967295", Raw: u32(0xffffffff)},
	}}
	if m := frameMessage(elf, im, frames, js, nil); m == nil || m.Line == nil || *m.Line != 4294967295 || m.File != "assert.c" || m.Text != "assertion failed (assert_param)" {
		t.Errorf("assert_failed, uint8_t * file and uint32_t line: %+v", m)
	}
	if m := (&report.MessageJSON{Text: "assertion failed (configASSERT)", File: "assert.c", Line: ptr(int64(4294967295)), Source: "vAssertCalled arguments"}).Summary(); m != "assertion failed (configASSERT) at assert.c:4294967295" {
		t.Errorf("summary %q", m)
	}

	// No DWARF arguments: r0-r3 only at the entry, registers known.
	entry, _ := elf.Symbol("__assert_func")
	var regs unwinders.Registers
	for i, v := range []uint32{file, line, fn, expr} {
		regs.Set(unwinders.Reg(i), v)
	}
	js[0] = report.FrameJSON{Function: "__assert_func", Kind: "normal"}
	frames[0] = unwinders.Frame{PC: entry &^ 1, Kind: unwinders.KindNormal, Regs: regs}
	m = frameMessage(elf, im, frames, js, nil)
	if m == nil || m.Text != `assertion "q->n < QUEUE_MAX" failed` || m.File != "assert.c" || m.Function != "queue_push" || m.Line == nil || *m.Line != int64(line) || msgArg(m, "file").From != "r0 at the entry of __assert_func" {
		t.Errorf("at the entry: %+v", m)
	}
	frames[0].PC += 2
	m = frameMessage(elf, im, frames, js, nil)
	if m == nil || m.Text != "assertion failed (expression unknown)" || m.File != "" || m.Line != nil || !strings.Contains(m.Note, "not at its first instruction") {
		t.Errorf("past the entry: %+v", m)
	}
	// A caller frame (its r0-r3 are not known) is never read.
	frames = []unwinders.Frame{{PC: 0x100, Kind: unwinders.KindNormal}, {PC: entry &^ 1, Kind: unwinders.KindNormal, Regs: regs, ReturnAddress: true}}
	js = []report.FrameJSON{{Function: "HardFault_Handler", Kind: "normal"}, {Index: 1, Function: "__assert_func", Kind: "normal", Phys: 1}}
	if m := frameMessage(elf, im, frames, js, nil); m == nil || m.File != "" || m.Line != nil {
		t.Errorf("caller frame: %+v", m)
	}
	frames[1].ReturnAddress = false
	if m := frameMessage(elf, im, frames, js, nil); m == nil || m.File != "" || m.Line != nil {
		t.Errorf("caller frame, not a return address: %+v", m)
	}
}

func ptr[T any](v T) *T { return &v }

// TestMessageRenderings: the assertion of gcc -O2's assert_newlib in the
// JSON, text and HTML reports, from GDB's reading of the arguments.
func TestMessageRenderings(t *testing.T) {
	base := "gcc-m3-O2-assert_newlib"
	g := loadGDBMessage(t, filepath.Join(repo, "fixtures/qemu-assert", base+".gdbmsg"))
	c0 := g.Calls[0]
	s := func(r string) string { return string(unhex(t, c0.Strings[r])) }
	line := int64(hexU32(t, c0.R1))
	elf, d := openFixture(t, verdictFixture{filepath.Join(repo, "fixtures/qemu-assert", base+".json"), filepath.Join(repo, "firmware-samples/assert/build/gcc-m3-O2.elf")})
	defer elf.Close()
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Message
	if m == nil || m.Frame == nil {
		t.Fatalf("message %+v", m)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Message map[string]any
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"text": `assertion "` + s("r3") + `" failed`, "file": s("r0"), "line": float64(line), "function": s("r2"), "source": "__assert_func arguments", "frame": float64(*m.Frame), "pc": m.PC}
	for k, v := range want {
		if back.Message[k] != v {
			t.Errorf("JSON message.%s = %v, want %v", k, back.Message[k], v)
		}
	}
	if args, _ := back.Message["args"].([]any); len(args) != 4 {
		t.Errorf("JSON message.args %v", back.Message["args"])
	}
	if r.Frames[*m.Frame].Function != "__assert_func" || r.Frames[*m.Frame].PC != m.PC {
		t.Errorf("frame #%d is %s at %s", *m.Frame, r.Frames[*m.Frame].Function, r.Frames[*m.Frame].PC)
	}
	summary := `assertion "` + s("r3") + `" failed at ` + s("r0") + ":" + strconv.FormatInt(line, 10) + " in " + s("r2")
	var b strings.Builder
	if err := textout.Write(&b, r); err != nil {
		t.Fatal(err)
	}
	where := "__assert_func arguments, frame #" + strconv.Itoa(*m.Frame) + " at " + m.PC + ": failedexpr " + report.Hex(hexU32(t, c0.R3)) + ", file " + report.Hex(hexU32(t, c0.R0)) + ", func " + report.Hex(hexU32(t, c0.R2))
	if w := "\nMessage: " + summary + " (read from the " + where + ")\n"; !strings.Contains(b.String(), w) {
		t.Errorf("text lacks %q:\n%s", w, b.String())
	}
	b.Reset()
	if err := htmlout.Write(&b, r, d, htmlout.Options{}); err != nil {
		t.Fatal(err)
	}
	if w := "<b>" + html.EscapeString(summary) + "</b> · read from the " + where; !strings.Contains(b.String(), w) {
		t.Errorf("HTML lacks %q", w)
	}
}

// TestZephyrFatalArgsMessage: z_fatal_error / k_sys_fatal_error_handler
// give the reason's name from their reason argument (DWARF), or from r0
// at their first instruction. (Our Zephyr look-alike's dumps stop before
// z_fatal_error runs, and its coredumps carry the reason themselves: this
// rule is checked on constructed frames.)
func TestZephyrFatalArgsMessage(t *testing.T) {
	elf, err := openELF(filepath.Join(repo, "firmware-samples/assert/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	frames := []unwinders.Frame{{PC: 0x400, Kind: unwinders.KindNormal}}
	for reason, want := range map[uint32]string{0: "K_ERR_CPU_EXCEPTION", 2: "K_ERR_STACK_CHK_FAIL", 4: "K_ERR_KERNEL_PANIC", 99: "reason 99 (architecture specific or unknown)"} {
		js := []report.FrameJSON{{Function: "z_fatal_error", Kind: "normal", Args: []report.VarJSON{
			{Name: "reason", Type: "unsigned int", Value: "x", Raw: u32(reason)}, {Name: "esf", Type: "const struct arch_esf *", OptimizedOut: true}}}}
		if m := frameMessage(elf, nil, frames, js, nil); m == nil || m.Text != want || m.Source != "z_fatal_error arguments" {
			t.Errorf("reason %d: %+v", reason, m)
		}
	}
	js := []report.FrameJSON{{Function: "k_sys_fatal_error_handler", Kind: "normal", Args: []report.VarJSON{{Name: "reason", Type: "unsigned int", OptimizedOut: true}}}}
	if m := frameMessage(elf, nil, frames, js, nil); m == nil || m.Text != "Zephyr fatal error (reason unknown)" || !strings.Contains(m.Note, "optimized out") {
		t.Errorf("optimized out: %+v", m)
	}
}

// TestCallSiteProof: the constants a caller's code puts in r0-r3 before
// the BL, on gcc -O0's queue_push (ldr r3/ldr r2/movs r1/ldr r0/bl
// __assert_func), and on the same code patched in the dump's memory: a
// branch into the sequence, a register copy, an IT block, a jump table, a
// BL elsewhere.
func TestCallSiteProof(t *testing.T) {
	elf, err := openELF(filepath.Join(repo, "firmware-samples/assert/build/gcc-m3-O0.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	fn, _ := elf.Symbol("queue_push")
	callee, _ := elf.Symbol("__assert_func")
	g := loadGDBMessage(t, filepath.Join(repo, "fixtures/qemu-assert/gcc-m3-O0-assert_newlib.gdbmsg"))
	c0 := g.Calls[0]
	ret := hexU32(t, c0.LR) &^ 1
	truth := []uint32{hexU32(t, c0.R0), hexU32(t, c0.R1), hexU32(t, c0.R2), hexU32(t, c0.R3)}
	mem := func(patch map[uint32][]byte) unwinders.Memory {
		im := &unwinders.Image{}
		if err := im.AddLayer(elf.Segments()...); err != nil {
			t.Fatal(err)
		}
		code := make([]byte, 0x48)
		if err := im.Read(fn, code); err != nil {
			t.Fatal(err)
		}
		for at, b := range patch {
			copy(code[at-fn:], b)
		}
		if err := im.AddLayer(unwinders.Region{Addr: fn, Data: code}); err != nil {
			t.Fatal(err)
		}
		return im
	}
	proven := func(name string, patch map[uint32][]byte, want ...int) {
		t.Helper()
		got, err := callSiteArgs(elf, mem(patch), ret, callee)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if len(got) != len(want) {
			t.Errorf("%s: proven %v, want registers %v", name, got, want)
		}
		for _, r := range want {
			if v, ok := got[r]; !ok || v.v != truth[r] {
				t.Errorf("%s: r%d %+v, GDB %#x", name, r, v, truth[r])
			}
		}
	}
	// The code as built: bls.n at fn+0x10 skips the sequence at fn+0x12.
	if ret != fn+0x1e {
		t.Fatalf("the call returns to %#x, queue_push is at %#x: the code changed, adjust the patches", ret, fn)
	}
	proven("as built", nil, 0, 1, 2, 3)
	// bls.n fn+0x16: a path arrives at movs r1: r2 and r3 are not proven.
	proven("branch into the sequence", map[uint32][]byte{fn + 0x10: {0x01, 0xd9}}, 0, 1)
	// mov r1, r5: not a constant.
	proven("register copy", map[uint32][]byte{fn + 0x16: {0x29, 0x46}}, 0, 2, 3)
	// it ls before ldr r3: r3's load is conditional.
	proven("IT block", map[uint32][]byte{fn + 0x10: {0x98, 0xbf}}, 0, 1, 2)
	for name, patch := range map[string]map[uint32][]byte{
		"jump table":   {fn + 0x32: {0xdf, 0xe8, 0x00, 0xf0}}, // tbb [pc, r0]
		"add pc":       {fn + 0x32: {0x87, 0x44}},             // add pc, r0
		"BL elsewhere": {fn + 0x1a: {0x00, 0xf0, 0x00, 0xf8}}, // bl fn+0x1e
	} {
		if got, err := callSiteArgs(elf, mem(patch), ret, callee); err == nil {
			t.Errorf("%s: proven %v", name, got)
		}
	}
}

// TestCallSiteProofMOVT: clang -O0's movw/movt pairs, the high half
// patched to a non-zero value, and a movt whose low half is no movw.
func TestCallSiteProofMOVT(t *testing.T) {
	elf, err := openELF(filepath.Join(repo, "firmware-samples/assert/build/clang-m3-O0.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	fn, _ := elf.Symbol("queue_push")
	callee, _ := elf.Symbol("__assert_func")
	g := loadGDBMessage(t, filepath.Join(repo, "fixtures/qemu-assert/clang-m3-O0-assert_newlib.gdbmsg"))
	ret := hexU32(t, g.Calls[0].LR) &^ 1
	r0 := hexU32(t, g.Calls[0].R0)
	if ret != fn+0x34 {
		t.Fatalf("the call returns to %#x, queue_push is at %#x: the code changed, adjust the patches", ret, fn)
	}
	run := func(patch []byte, at uint32) map[int]callSiteValue {
		im := &unwinders.Image{}
		if err := im.AddLayer(elf.Segments()...); err != nil {
			t.Fatal(err)
		}
		if err := im.AddLayer(unwinders.Region{Addr: fn + at, Data: patch}); err != nil {
			t.Fatal(err)
		}
		got, err := callSiteArgs(elf, im, ret, callee)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// movt r0, #2 at fn+0x1a.
	if got := run([]byte{0xc0, 0xf2, 0x02, 0x00}, 0x1a); got[0].v != r0|0x20000 || len(got) != 4 {
		t.Errorf("movt #2: %+v, want r0 %#x", got, r0|0x20000)
	}
	// movs r0, #1; nop.w instead of movw r0: the movt's low half is unknown.
	if got := run([]byte{0x01, 0x20, 0x00, 0xbf}, 0x16); len(got) != 3 {
		t.Errorf("movt after movs: %+v", got)
	} else if _, ok := got[0]; ok {
		t.Errorf("movt after movs proved r0: %+v", got)
	}
}

// TestMessageTextProven: the text report names the values only the
// caller's code proved (clang -O0: GDB has all three as optimized out).
func TestMessageTextProven(t *testing.T) {
	r := assertFixture(t, "clang-m3-O0-assert_newlib", Options{})
	var b strings.Builder
	if err := textout.Write(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "; failedexpr, file, func proven from the caller's code)\n") {
		t.Errorf("text:\n%s", b.String())
	}
}

// TestMessageStackTop: every scenario's dump cut to the top of its RAM
// (64 bytes to 2 KiB: the stack's top only, as a size-limited capture
// keeps it) gives no message value the whole dump does not: each known
// part equals the whole dump's, the rest is left out.
func TestMessageStackTop(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(repo, "fixtures/qemu-assert/*.gdbmsg"))
	if err != nil {
		t.Fatal(err)
	}
	cuts, partial := 0, 0
	for _, side := range paths {
		base := strings.TrimSuffix(filepath.Base(side), ".gdbmsg")
		build := strings.Join(strings.SplitN(base, "-", 4)[:3], "-")
		opt := Options{}
		if strings.Contains(base, "message_") {
			opt.Message = "last_error"
		}
		elf, d := openFixture(t, verdictFixture{filepath.Join(repo, "fixtures/qemu-assert", base+".json"), filepath.Join(repo, "firmware-samples/assert/build", build+".elf")})
		full, err := Analyze(elf, d, opt)
		if err != nil {
			t.Fatal(err)
		}
		m0 := full.Message
		for _, keep := range []int{64, 256, 512, 2048} {
			c := *d
			c.Memory = nil
			for _, r := range d.Memory {
				if r.Addr == 0x20000000 && len(r.Data) > keep {
					r = unwinders.Region{Addr: r.Addr + uint32(len(r.Data)-keep), Data: r.Data[len(r.Data)-keep:]}
				}
				c.Memory = append(c.Memory, r)
			}
			r, err := Analyze(elf, &c, opt)
			if err != nil {
				t.Fatal(err)
			}
			cuts++
			m := r.Message
			if m == nil {
				partial++
				continue
			}
			if m0 == nil {
				t.Errorf("%s cut to %d: message %+v, none in the whole dump", base, keep, m)
				continue
			}
			same := func(what, got, want string) {
				if got != "" && got != want {
					t.Errorf("%s cut to %d: %s %q, the whole dump %q", base, keep, what, got, want)
				}
			}
			if !strings.Contains(m.Text, "unknown") && m.Text != "" {
				same("text", m.Text, m0.Text)
			}
			same("file", m.File, m0.File)
			same("function", m.Function, m0.Function)
			if m.Line != nil && (m0.Line == nil || *m.Line != *m0.Line) {
				t.Errorf("%s cut to %d: line %d, the whole dump %v", base, keep, *m.Line, m0.Line)
			}
			for _, a := range m.Args {
				if a.Value == "" {
					continue
				}
				if b := msgArg(m0, a.Name); b == nil || b.Value != a.Value {
					t.Errorf("%s cut to %d: %s = %s, the whole dump %+v", base, keep, a.Name, a.Value, b)
				}
			}
			if m.Text != m0.Text || m.File != m0.File {
				partial++
			}
		}
		elf.Close()
	}
	t.Logf("%d cut dumps, %d with less of the message than the whole dump", cuts, partial)
	if cuts < 100 {
		t.Errorf("%d cuts", cuts)
	}
}
