// Package regress runs crash-regression specs (faultline.regress/1) for
// `faultline regress`: each scenario makes the firmware crash in the
// emulator (a scenario.Trigger), the dump is analysed with the chosen
// unwinder, and the fault and the backtrace are compared with what the
// spec expects. A scenario can also check the firmware's own crash
// handler: the run continues into the handler, the dump it emits over
// semihosting is decoded (its format detected from the content, as
// `analyze` does) and its analysis must agree with the harness's.
//
// Load parses and checks a spec; Run runs it; WriteText and WriteJUnit
// report the results. Nothing here prints or exits: the cli package does.
package regress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/scenario"
)

// Schema is the spec format's name, the value of its "schema" field.
const Schema = "faultline.regress/1"

// MaxSpecSize bounds the spec file.
const MaxSpecSize = 4 << 20

// Match modes of Expect.Match.
const (
	MatchPrefix = "prefix" // the expected frames are the backtrace's first frames (the default)
	MatchExact  = "exact"  // the expected frames are the whole backtrace
)

// Handler output streams (HandlerCheck.Output).
const (
	OutputAuto   = "auto" // stdout if it holds a dump, else stderr (the default)
	OutputStdout = "stdout"
	OutputStderr = "stderr"
)

// Spec is a parsed faultline.regress/1 file.
type Spec struct {
	Schema string `json:"schema"`
	// Name names the suite in JUnit output; default: the file's base name
	// without its extension.
	Name string `json:"name,omitempty"`
	// ELF is the firmware, relative to the spec's directory; a scenario
	// may name its own.
	ELF string `json:"elf,omitempty"`
	// Unwinder is the strategy that analyses the dumps (default auto).
	Unwinder string `json:"unwinder,omitempty"`
	// MaxFrames bounds every walk (default 64).
	MaxFrames int        `json:"max_frames,omitempty"`
	Scenarios []Scenario `json:"scenarios"`

	// Path is the file the spec was read from, as given to Load.
	Path string `json:"-"`
}

// Scenario is one crash to provoke and check.
type Scenario struct {
	// Name identifies the scenario in the output and in JUnit; unique in
	// the spec.
	Name string `json:"name"`
	// ELF overrides the spec's firmware (relative to the spec's directory).
	ELF string `json:"elf,omitempty"`
	// Unwinder overrides the spec's strategy.
	Unwinder string `json:"unwinder,omitempty"`
	// Trigger is how to make the firmware crash: the flags of `faultline
	// emulate` as data.
	Trigger scenario.Trigger `json:"trigger"`
	Expect  Expect           `json:"expect"`
	// Handler, when Check is set, also checks the firmware's own crash
	// handler (the run continues into it, as with --run-handler).
	Handler HandlerCheck `json:"handler"`

	// ELFPath is ELF (the scenario's or the spec's) joined to the spec's
	// directory: the path to open.
	ELFPath string `json:"-"`
	// Frames are Expect.RawFrames, parsed.
	Frames []FrameExpect `json:"-"`
}

// Expect is what the harness's analysis of the crash must show.
type Expect struct {
	Fault *FaultExpect `json:"fault,omitempty"`
	// RawFrames lists the expected frames from the faulting frame
	// outwards, each a function name or an object {function, file, line};
	// Scenario.Frames holds them parsed.
	RawFrames []json.RawMessage `json:"frames,omitempty"`
	// Match is MatchPrefix (default) or MatchExact.
	Match string `json:"match,omitempty"`
	// Heap runs the scenario with the allocator hooked (faultline heap)
	// and checks what is live when the run ends; the run then need not
	// fault.
	Heap *HeapExpect `json:"heap,omitempty"`
	// Threads are RTOS threads that must be found (by name), each with
	// its state and backtrace when given.
	Threads []ThreadExpect `json:"threads,omitempty"`
	// ThreadsTruth requires every RTOS thread with a true stack (the
	// emulator's truth.threads; the crashing thread's is the crash's) to
	// be unwound exactly as that stack.
	ThreadsTruth bool `json:"threads_truth,omitempty"`
}

// ThreadExpect is one expected RTOS thread (a FreeRTOS task or Zephyr
// thread as analyze lists it).
type ThreadExpect struct {
	Name string `json:"name"`
	// State, when set, is the thread's state as analyze names it:
	// running, ready, blocked, suspended or deleted.
	State string `json:"state,omitempty"`
	// RawFrames and Match are the thread's backtrace, as expect.frames and
	// expect.match are the crash's; Frames holds them parsed.
	RawFrames []json.RawMessage `json:"frames,omitempty"`
	Match     string            `json:"match,omitempty"`
	Frames    []FrameExpect     `json:"-"`
}

// HeapExpect bounds the heap at the end of a run. Every field is optional.
type HeapExpect struct {
	// LeakedBytes and LeakedBlocks bound what is still allocated when the
	// run ends (0: no leak at all).
	LeakedBytes  *uint64 `json:"leaked_bytes,omitempty"`
	LeakedBlocks *int    `json:"leaked_blocks,omitempty"`
	// Errors bounds the heap errors (double free, invalid free, use after
	// free, overflow); 0 by default when the heap is checked.
	Errors *int `json:"errors,omitempty"`
	// Sites bound the bytes live at the end per allocation site: the
	// blocks whose allocation stack has a frame in Function.
	Sites []HeapSiteExpect `json:"sites,omitempty"`
	// Alloc and Free name a custom allocator pair (faultline heap --alloc
	// --free); empty: the allocators faultline knows.
	Alloc string `json:"alloc,omitempty"`
	Free  string `json:"free,omitempty"`
}

// HeapSiteExpect bounds one allocation site.
type HeapSiteExpect struct {
	Function string `json:"function"`
	MaxBytes uint64 `json:"max_bytes"`
}

// FaultExpect is the expected fault. Every field is optional.
type FaultExpect struct {
	// Exception is the exception taken, as analyze names it: "HardFault",
	// "MemManage", "BusFault", "UsageFault", "IRQ 7", ...
	Exception string `json:"exception,omitempty"`
	// Causes must all be among the status bits that are set, written
	// REGISTER.BIT: "CFSR.DACCVIOL", "HFSR.FORCED".
	Causes []string `json:"causes,omitempty"`
	// Address is the faulting data address (MMFAR/BFAR/SFAR when valid),
	// a number or a string such as "0x0".
	Address json.RawMessage `json:"address,omitempty"`

	address    uint32
	hasAddress bool
}

// FrameExpect is one expected frame.
type FrameExpect struct {
	// Function is the function name as analyze prints it (the raw ELF
	// symbol is accepted too); "*" matches any frame.
	Function string `json:"function"`
	// File, when set, must be the frame's source file or a suffix of it
	// that starts at a path element ("main.c" matches "./src/main.c").
	File string `json:"file,omitempty"`
	// Line, when not 0, must be the frame's line.
	Line int `json:"line,omitempty"`
	// Args, when set, are arguments the frame must have, by name, with
	// the value analyze prints (frames[].args[].value: "3", "0x0",
	// "<optimized out>" for one that cannot be known).
	Args map[string]string `json:"args,omitempty"`
}

// HandlerCheck configures the crash-handler check.
type HandlerCheck struct {
	Check bool `json:"check"`
	// Output is the semihosting stream the handler writes its dump to:
	// OutputAuto (default), OutputStdout or OutputStderr.
	Output string `json:"output,omitempty"`
}

// Wildcard is the FrameExpect.Function that matches any frame.
const Wildcard = "*"

// Match reports whether f is the frame e expects.
func (e FrameExpect) Match(f Frame) bool {
	if f.Exception {
		return false
	}
	if e.Function != Wildcard && e.Function != f.Function && (f.Symbol == "" || e.Function != f.Symbol) {
		return false
	}
	if e.File != "" && !fileMatches(f.File, e.File) {
		return false
	}
	for name, want := range e.Args {
		if got, ok := f.Args[name]; !ok || got != want {
			return false
		}
	}
	return e.Line == 0 || e.Line == f.Line
}

// fileMatches reports whether want names the file got: equal, or a suffix
// of got that starts after a '/'. A leading "./" of want is ignored.
func fileMatches(got, want string) bool {
	want = strings.TrimPrefix(want, "./")
	if got == want {
		return true
	}
	return strings.HasSuffix(got, want) && got[len(got)-len(want)-1] == '/'
}

// String is e as the diff shows it: "null_store main.c:56".
func (e FrameExpect) String() string {
	s := e.Function
	switch {
	case e.File != "" && e.Line != 0:
		s += " " + e.File + ":" + strconv.Itoa(e.Line)
	case e.File != "":
		s += " " + e.File
	case e.Line != 0:
		s += " line " + strconv.Itoa(e.Line)
	}
	if len(e.Args) > 0 {
		names := make([]string, 0, len(e.Args))
		for n := range e.Args {
			names = append(names, n)
		}
		slices.Sort(names)
		for i, n := range names {
			names[i] = n + "=" + e.Args[n]
		}
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// SpecError is a problem with a spec file: the file, where in it when known
// (line and column of a JSON error), the field, and what is wrong.
type SpecError struct {
	File      string
	Line, Col int    // 0 when not known
	Field     string // "scenarios[2] \"udf\": expect.match"; "" for the whole file
	Msg       string
	Err       error // the underlying error, if any
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *SpecError) Unwrap() error { return e.Err }

// ErrSpec is wrapped by every SpecError about the spec's content (not by
// those about reading the file, which wrap the file system's error).
var ErrSpec = errors.New("regress: bad spec")

// Load reads, parses and checks the spec at path. ELF paths are resolved
// against path's directory and must name existing files. Errors are
// *SpecError.
func Load(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &SpecError{File: path, Msg: "cannot read: " + pathlessReason(err), Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, &SpecError{File: path, Msg: "not a regular file", Err: ErrSpec}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecSize+1))
	if err != nil {
		return nil, &SpecError{File: path, Msg: "cannot read: " + pathlessReason(err), Err: err}
	}
	if len(data) > MaxSpecSize {
		return nil, &SpecError{File: path, Msg: fmt.Sprintf("larger than the %d byte limit", MaxSpecSize), Err: ErrSpec}
	}
	return Parse(data, path, fileExists)
}

// pathlessReason is an *fs.PathError's reason without the path (the
// caller names the file).
func pathlessReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func fileExists(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return errors.New(pathlessReason(err))
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return nil
}

// Parse parses and checks a spec held in data. path names it in errors
// and is the base for relative ELF paths; exists (nil: no check) says why
// an ELF path cannot be used, or nil. Errors are *SpecError.
func Parse(data []byte, path string, exists func(path string) error) (*Spec, error) {
	p := parser{data: data, file: path}
	var s Spec
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return nil, p.jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		line, col := p.position(int(d.InputOffset()))
		return nil, &SpecError{File: path, Line: line, Col: col, Msg: "more data after the spec's JSON object", Err: ErrSpec}
	}
	s.Path = path
	if err := p.check(&s, exists); err != nil {
		return nil, err
	}
	return &s, nil
}

// parser holds the input for error positions.
type parser struct {
	data []byte
	file string
}

// position turns a byte offset into a 1-based line and column (in runes).
func (p *parser) position(off int) (line, col int) {
	off = max(0, min(off, len(p.data)))
	before := p.data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, col
}

var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// jsonError turns an encoding/json error into a *SpecError with a position.
func (p *parser) jsonError(err error) error {
	e := &SpecError{File: p.file, Err: errors.Join(ErrSpec, err)}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		e.Msg = "empty file: want a " + Schema + " JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		e.Line, e.Col = p.position(len(p.data))
		e.Msg = "unexpected end of file: the JSON is incomplete"
	case errors.As(err, &se):
		e.Line, e.Col = p.position(int(se.Offset) - 1) // Offset is just past the bad byte
		e.Msg = "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")
	case errors.As(err, &te):
		e.Line, e.Col = p.position(int(te.Offset) - 1) // the value's first byte, or its end
		e.Field = te.Field
		e.Msg = fmt.Sprintf("got a JSON %s, want %s", te.Value, jsonTypeWord(te.Type.String()))
		if te.Field == "" {
			e.Msg = fmt.Sprintf("got a JSON %s, want an object {\"schema\": %q, ...}", te.Value, Schema)
		}
	default:
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			// Point at the first occurrence of the key.
			key := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(m[1])) + `\s*:`)
			if loc := key.FindIndex(p.data); loc != nil {
				e.Line, e.Col = p.position(loc[0])
			}
			e.Msg = fmt.Sprintf("unknown field %q (see `faultline regress --help` for the spec format)", m[1])
		} else {
			e.Msg = strings.TrimPrefix(err.Error(), "json: ")
		}
	}
	return e
}

// jsonTypeWord names a Go type the way a spec author thinks of it.
func jsonTypeWord(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "uint"):
		return "a non-negative whole number"
	case strings.HasPrefix(goType, "int"):
		return "a whole number"
	case goType == "[]string":
		return "an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// exceptionNames are the names analyze gives exceptions (besides "IRQ n").
var exceptionNames = []string{"Reset", "NMI", "HardFault", "MemManage", "BusFault", "UsageFault",
	"SecureFault", "SVCall", "DebugMonitor", "PendSV", "SysTick"}

var (
	irqName   = regexp.MustCompile(`^IRQ (0|[1-9][0-9]{0,2})$`)
	causeName = regexp.MustCompile(`^(CFSR|HFSR|SFSR|DFSR)\.[A-Z][A-Z0-9_]*$`)
)

// check validates s and fills in the derived fields.
func (p *parser) check(s *Spec, exists func(string) error) error {
	bad := func(field, format string, args ...any) error {
		return &SpecError{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrSpec}
	}
	switch s.Schema {
	case Schema:
	case "":
		return bad("schema", "missing: want %q", Schema)
	default:
		return bad("schema", "%q is not supported: want %q", s.Schema, Schema)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	}
	if err := checkUnwinder(s.Unwinder); err != nil {
		return bad("unwinder", "%v", err)
	}
	if s.MaxFrames < 0 || s.MaxFrames > 4096 {
		return bad("max_frames", "%d: want 1..4096 (0 or absent: 64)", s.MaxFrames)
	}
	if len(s.Scenarios) == 0 {
		return bad("scenarios", "no scenarios: want at least one {\"name\", \"trigger\", \"expect\"}")
	}
	dir := filepath.Dir(p.file)
	names := map[string]int{}
	for i := range s.Scenarios {
		sc := &s.Scenarios[i]
		where := fmt.Sprintf("scenarios[%d]", i)
		if sc.Name != "" {
			where += " " + strconv.Quote(sc.Name)
		}
		field := func(f string) string { return where + ": " + f }
		switch {
		case strings.TrimSpace(sc.Name) == "":
			return bad(where, "the scenario has no name")
		case strings.IndexFunc(sc.Name, unicode.IsControl) >= 0 || !utf8.ValidString(sc.Name):
			return bad(field("name"), "control characters or invalid UTF-8 in the name")
		}
		if j, dup := names[sc.Name]; dup {
			return bad(field("name"), "the same name as scenarios[%d]: names must be unique", j)
		}
		names[sc.Name] = i
		elf := sc.ELF
		if elf == "" {
			elf = s.ELF
		}
		if elf == "" {
			return bad(where, "no firmware: give \"elf\" in the spec or in the scenario")
		}
		sc.ELFPath = filepath.Join(dir, filepath.FromSlash(elf))
		if filepath.IsAbs(elf) {
			sc.ELFPath = elf
		}
		if exists != nil {
			if err := exists(sc.ELFPath); err != nil {
				f := "elf"
				if sc.ELF != "" {
					f = field("elf")
				}
				return bad(f, "%q (%s, relative to the spec's directory): %v", elf, sc.ELFPath, err)
			}
		}
		if err := checkUnwinder(sc.Unwinder); err != nil {
			return bad(field("unwinder"), "%v", err)
		}
		tr := sc.Trigger
		if sc.Handler.Check {
			tr.RunHandler = true
		}
		if _, err := tr.Config(sc.ELFPath); err != nil {
			return bad(field("trigger"), "%v", err)
		}
		if err := checkExpect(sc, field, bad); err != nil {
			return err
		}
		switch sc.Handler.Output {
		case "", OutputAuto, OutputStdout, OutputStderr:
		default:
			return bad(field("handler.output"), "%q: want %q, %q or %q", sc.Handler.Output, OutputAuto, OutputStdout, OutputStderr)
		}
		if sc.Handler.Output != "" && !sc.Handler.Check {
			return bad(field("handler"), "\"output\" without \"check\": true")
		}
		if sc.Expect.Fault == nil && len(sc.Frames) == 0 && !sc.Handler.Check && sc.Expect.Heap == nil &&
			len(sc.Expect.Threads) == 0 && !sc.Expect.ThreadsTruth {
			return bad(where, "nothing to check: give expect.fault, expect.frames, expect.threads, expect.threads_truth, expect.heap or handler.check")
		}
		if h := sc.Expect.Heap; h != nil {
			if (h.Alloc == "") != (h.Free == "") {
				return bad(field("expect.heap"), "\"alloc\" and \"free\" go together")
			}
			for i, st := range h.Sites {
				if st.Function == "" {
					return bad(field(fmt.Sprintf("expect.heap.sites[%d]", i)), "\"function\" is required")
				}
			}
			if sc.Handler.Check {
				return bad(field("expect.heap"), "cannot be combined with handler.check")
			}
		}
	}
	return nil
}

func checkUnwinder(name string) error {
	if name == "" {
		return nil
	}
	if _, err := analysis.Lookup(name); err != nil {
		var names []string
		for _, s := range analysis.Strategies() {
			names = append(names, s.Name)
		}
		return fmt.Errorf("%v: want one of %s", err, strings.Join(names, ", "))
	}
	return nil
}

// checkExpect validates sc.Expect and parses its frames into sc.Frames.
func checkExpect(sc *Scenario, field func(string) string, bad func(string, string, ...any) error) error {
	ex := &sc.Expect
	switch ex.Match {
	case "", MatchPrefix, MatchExact:
	default:
		return bad(field("expect.match"), "%q: want %q or %q", ex.Match, MatchPrefix, MatchExact)
	}
	if ex.Match != "" && len(ex.RawFrames) == 0 {
		return bad(field("expect.match"), "\"match\" without \"frames\"")
	}
	if ex.Match == "" {
		ex.Match = MatchPrefix
	}
	sc.Frames = nil
	for i, raw := range ex.RawFrames {
		f, err := parseFrame(raw)
		if err != nil {
			return bad(field(fmt.Sprintf("expect.frames[%d]", i)), "%v", err)
		}
		sc.Frames = append(sc.Frames, f)
	}
	seen := map[string]bool{}
	for i := range ex.Threads {
		te := &ex.Threads[i]
		at := func(f string) string { return field(fmt.Sprintf("expect.threads[%d]%s", i, f)) }
		switch {
		case strings.TrimSpace(te.Name) == "":
			return bad(at(".name"), "no thread name")
		case seen[te.Name]:
			return bad(at(".name"), "thread %q is expected twice", te.Name)
		}
		seen[te.Name] = true
		switch te.State {
		case "", "running", "ready", "blocked", "suspended", "deleted":
		default:
			return bad(at(".state"), "%q: want running, ready, blocked, suspended or deleted", te.State)
		}
		switch te.Match {
		case "", MatchPrefix, MatchExact:
		default:
			return bad(at(".match"), "%q: want %q or %q", te.Match, MatchPrefix, MatchExact)
		}
		if te.Match != "" && len(te.RawFrames) == 0 {
			return bad(at(".match"), "\"match\" without \"frames\"")
		}
		if te.Match == "" {
			te.Match = MatchPrefix
		}
		te.Frames = nil
		for j, raw := range te.RawFrames {
			f, err := parseFrame(raw)
			if err != nil {
				return bad(at(fmt.Sprintf(".frames[%d]", j)), "%v", err)
			}
			te.Frames = append(te.Frames, f)
		}
	}
	if fe := ex.Fault; fe != nil {
		if fe.Exception != "" && !validException(fe.Exception) {
			hint := ""
			for _, n := range exceptionNames {
				if strings.EqualFold(n, fe.Exception) {
					hint = fmt.Sprintf(" (did you mean %q?)", n)
				}
			}
			return bad(field("expect.fault.exception"), "%q is not an exception name%s: want one of %s, or \"IRQ n\"",
				fe.Exception, hint, strings.Join(exceptionNames, ", "))
		}
		for i, c := range fe.Causes {
			if !causeName.MatchString(c) {
				return bad(field(fmt.Sprintf("expect.fault.causes[%d]", i)), "%q: want REGISTER.BIT with REGISTER one of CFSR, HFSR, SFSR, DFSR, e.g. \"CFSR.DACCVIOL\"", c)
			}
		}
		if len(fe.Address) > 0 {
			v, err := parseAddress(fe.Address)
			if err != nil {
				return bad(field("expect.fault.address"), "%v", err)
			}
			fe.address, fe.hasAddress = v, true
		}
		if fe.Exception == "" && len(fe.Causes) == 0 && !fe.hasAddress {
			return bad(field("expect.fault"), "empty: give \"exception\", \"causes\" or \"address\"")
		}
	}
	return nil
}

func validException(s string) bool {
	for _, n := range exceptionNames {
		if s == n {
			return true
		}
	}
	return irqName.MatchString(s)
}

// parseFrame parses one entry of expect.frames: "name" or {"function",
// "file", "line"}.
func parseFrame(raw json.RawMessage) (FrameExpect, error) {
	raw = bytes.TrimSpace(raw)
	var f FrameExpect
	switch {
	case len(raw) > 0 && raw[0] == '"':
		if err := json.Unmarshal(raw, &f.Function); err != nil {
			return f, err
		}
	case len(raw) > 0 && raw[0] == '{':
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&f); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return f, fmt.Errorf("%s: got a JSON %s, want %s", te.Field, te.Value, jsonTypeWord(te.Type.String()))
			}
			return f, errors.New(strings.TrimPrefix(err.Error(), "json: ") + ": want {\"function\", \"file\", \"line\", \"args\"}")
		}
	default:
		return f, fmt.Errorf("got %s: want a function name or an object {\"function\", \"file\", \"line\"}", abbreviate(string(raw), 40))
	}
	switch {
	case strings.TrimSpace(f.Function) == "":
		return f, errors.New("no function name (use \"*\" to match any frame)")
	case f.Line < 0:
		return f, fmt.Errorf("line %d: want a positive line number", f.Line)
	}
	return f, nil
}

// parseAddress accepts a JSON number or a string in any base
// scenario.ParseNumber reads.
func parseAddress(raw json.RawMessage) (uint32, error) {
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	} else {
		s = string(raw)
	}
	v, err := scenario.ParseNumber(s, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %v: want a 32-bit address such as \"0x20000000\"", abbreviate(string(raw), 40), err)
	}
	return uint32(v), nil
}

func abbreviate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}
