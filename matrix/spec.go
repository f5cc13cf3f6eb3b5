// Package matrix runs the firmware matrix of `faultline matrix`: every
// (build, scenario) case of a faultline.matrixspec/1 spec in the emulator,
// every unwinding strategy on each dump, each scored against the
// emulator's ground truth (design.md, "Scoring against truth"). It loads
// and checks the spec (LoadSpec), expands the cases (Spec.Cases), runs them
// in parallel (Runner), sorts failures into known and new ones against a
// known-failures file (LoadKnown, Report.ApplyKnown) and renders the result
// as text, markdown, JSON (faultline.matrix/1) or a self-contained HTML
// heatmap.
package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/scenario"
)

// SpecSchema is the schema name of a matrix spec.
const SpecSchema = "faultline.matrixspec/1"

// Spec is a parsed faultline.matrixspec/1: the builds, the scenarios, and
// which scenario applies to which build (Scenario.Requires against
// Build.Features).
type Spec struct {
	Schema    string     `json:"schema"`
	Builds    []Build    `json:"builds"`
	Scenarios []Scenario `json:"scenarios"`

	// Path is the file the spec was read from; relative ELF paths are
	// resolved against its directory.
	Path string `json:"-"`
}

// Build is one firmware image of the matrix.
type Build struct {
	Name string `json:"name"`
	// ELF is the image's path, relative to the spec's directory.
	ELF string `json:"elf"`
	// CPU goes into every trigger (--cpu); empty: from the ELF.
	CPU      string   `json:"cpu,omitempty"`
	Compiler string   `json:"compiler,omitempty"`
	Core     string   `json:"core,omitempty"`
	Opt      string   `json:"opt,omitempty"`
	Lang     string   `json:"lang,omitempty"`
	Variants []string `json:"variants,omitempty"`
	// Features are matched against Scenario.Requires.
	Features []string `json:"features,omitempty"`

	line int // where the build is in the spec
}

// Scenario is one way of making the firmware crash, with what the crash
// must look like for the case to be valid.
type Scenario struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Requires    []string         `json:"requires,omitempty"`
	Trigger     scenario.Trigger `json:"trigger"`
	Expect      Expect           `json:"expect"`

	line int
}

// Expect is what the emulated crash must be for a case to be valid: a case
// that does not meet it is a harness or firmware error, not a failure of
// any strategy. Empty fields are not checked.
type Expect struct {
	// Exception is the exception the dump decodes to ("HardFault").
	Exception string `json:"exception,omitempty"`
	// Causes are fault status bits as "REGISTER.BIT" ("CFSR.PRECISERR")
	// that must all be set.
	Causes []string `json:"causes,omitempty"`
	// Function is the truth's faulting function; "??" when the faulting
	// PC must be outside any function (a call through a NULL pointer).
	Function string `json:"function,omitempty"`
}

// SpecError says where a spec or known-failures file is wrong.
type SpecError struct {
	File string
	Line int // 1-based; 0 when the problem is the whole file
	What string
}

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.What)
	}
	return fmt.Sprintf("%s: %s", e.File, e.What)
}

// LoadSpec reads and checks the spec at file. Errors are *SpecError values
// naming the file and line, or the file system's error.
func LoadSpec(file string) (*Spec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseSpec(file, data)
}

// ParseSpec parses and checks a spec read from file. Unknown fields are
// errors, so that a misspelt key ("require") does not silently change the
// matrix.
func ParseSpec(file string, data []byte) (*Spec, error) {
	p := &specParser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	// The syntax first, over the whole file: the decoder's own syntax
	// errors count offsets from the value it was decoding.
	if err := json.Unmarshal(data, new(any)); err != nil {
		return nil, p.jsonErr(err, 0, "")
	}
	s, err := p.parse()
	if err != nil {
		return nil, err
	}
	s.Path = file
	if err := s.check(p); err != nil {
		return nil, err
	}
	return s, nil
}

type specParser struct {
	file string
	data []byte
	dec  *json.Decoder
}

// errAt is a SpecError at byte offset off.
func (p *specParser) errAt(off int64, format string, args ...any) error {
	return &SpecError{File: p.file, Line: lineAt(p.data, off), What: fmt.Sprintf(format, args...)}
}

// jsonErr turns a decoding error into a SpecError. A syntax error's
// offset counts from the start of the file (ParseSpec checks the whole
// file's syntax first); a type error's counts from base, the start of the
// value being decoded, and points just past the offending value; other
// errors (an unknown field) are reported at base.
func (p *specParser) jsonErr(err error, base int64, what string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	prefix := ""
	if what != "" {
		prefix = what + ": "
	}
	switch {
	case errors.As(err, &syn):
		if syn.Offset >= int64(len(p.data)) {
			return p.errAt(int64(len(p.data)), "%sunexpected end of the file", prefix)
		}
		return p.errAt(syn.Offset-1, "%sinvalid JSON: %s", prefix, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return p.errAt(base+typ.Offset-1, "%s%s: want %s, not JSON %s", prefix, field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.errAt(int64(len(p.data)), "%sunexpected end of the file", prefix)
	}
	return p.errAt(base, "%s%s", prefix, strings.TrimPrefix(err.Error(), "json: "))
}

// element decodes the next array element into v, strictly (unknown fields
// are errors); what names it in errors.
func (p *specParser) element(v any, what string) (line int, err error) {
	start := p.start()
	var raw json.RawMessage
	if err := p.dec.Decode(&raw); err != nil {
		return 0, p.jsonErr(err, start, what)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return 0, p.jsonErr(err, start, what)
	}
	return lineAt(p.data, start), nil
}

// start returns the offset of the next value: the decoder's position past
// white space and a separating comma.
func (p *specParser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *specParser) delim(want json.Delim, what string) error {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		return p.jsonErr(err, off, what)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		kind := "an object"
		if want == '[' {
			kind = "an array"
		}
		return p.errAt(off, "%s: want %s", what, kind)
	}
	return nil
}

func (p *specParser) parse() (*Spec, error) {
	s := &Spec{}
	if err := p.delim('{', "the spec"); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for p.dec.More() {
		off := p.start()
		tok, err := p.dec.Token()
		if err != nil {
			return nil, p.jsonErr(err, off, "")
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, p.errAt(off, "%q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "schema":
			voff := p.start()
			if err := p.dec.Decode(&s.Schema); err != nil {
				return nil, p.jsonErr(err, voff, "schema")
			}
			if s.Schema != SpecSchema {
				return nil, p.errAt(voff, "schema %q: want %q", s.Schema, SpecSchema)
			}
		case "builds":
			if err := p.delim('[', "builds"); err != nil {
				return nil, err
			}
			for p.dec.More() {
				var b Build
				line, err := p.element(&b, fmt.Sprintf("build %d", len(s.Builds)+1))
				if err != nil {
					return nil, err
				}
				b.line = line
				s.Builds = append(s.Builds, b)
			}
			if err := p.delim(']', "builds"); err != nil {
				return nil, err
			}
		case "scenarios":
			if err := p.delim('[', "scenarios"); err != nil {
				return nil, err
			}
			for p.dec.More() {
				var sc Scenario
				line, err := p.element(&sc, fmt.Sprintf("scenario %d", len(s.Scenarios)+1))
				if err != nil {
					return nil, err
				}
				sc.line = line
				s.Scenarios = append(s.Scenarios, sc)
			}
			if err := p.delim(']', "scenarios"); err != nil {
				return nil, err
			}
		default:
			return nil, p.errAt(off, "unknown field %q (want schema, builds, scenarios)", key)
		}
	}
	if err := p.delim('}', "the spec"); err != nil {
		return nil, err
	}
	if off := p.start(); off < int64(len(p.data)) {
		return nil, p.errAt(off, "data after the spec's JSON object")
	}
	if !seen["schema"] {
		return nil, p.errAt(0, "no \"schema\": want %q", SpecSchema)
	}
	return s, nil
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// validName reports whether a build or scenario name can be named in a
// known-failures line: not empty, no white space, no ':' and no glob
// metacharacters.
func validName(n string) bool {
	return n != "" && !strings.ContainsAny(n, " \t\r\n:*?[]\\#")
}

func (s *Spec) check(p *specParser) error {
	at := func(line int, format string, args ...any) error {
		return &SpecError{File: p.file, Line: line, What: fmt.Sprintf(format, args...)}
	}
	if len(s.Builds) == 0 {
		return at(0, "no builds")
	}
	if len(s.Scenarios) == 0 {
		return at(0, "no scenarios")
	}
	names := map[string]int{}
	for _, b := range s.Builds {
		what := fmt.Sprintf("build %q", b.Name)
		switch {
		case !validName(b.Name):
			return at(b.line, "build name %q: want a non-empty name without spaces, ':', '#' or glob characters", b.Name)
		case names[b.Name] != 0:
			return at(b.line, "%s is also defined on line %d", what, names[b.Name])
		case b.ELF == "":
			return at(b.line, "%s: no \"elf\"", what)
		case b.CPU != "" && !emu.ValidCPU(b.CPU):
			return at(b.line, "%s: cpu %q: want one of cortex-m0, cortex-m0plus, cortex-m3, cortex-m4, cortex-m7, cortex-m33", what, b.CPU)
		}
		for _, f := range b.Features {
			if f == "" || strings.ContainsAny(f, " \t") {
				return at(b.line, "%s: feature %q: want a word", what, f)
			}
		}
		names[b.Name] = b.line
	}
	names = map[string]int{}
	for _, sc := range s.Scenarios {
		what := fmt.Sprintf("scenario %q", sc.Name)
		switch {
		case !validName(sc.Name):
			return at(sc.line, "scenario name %q: want a non-empty name without spaces, ':', '#' or glob characters", sc.Name)
		case names[sc.Name] != 0:
			return at(sc.line, "%s is also defined on line %d", what, names[sc.Name])
		case sc.Trigger.CPU != "":
			return at(sc.line, "%s: trigger: cpu %q: the build says which CPU to emulate", what, sc.Trigger.CPU)
		}
		if _, err := sc.Trigger.Config("spec-check.elf"); err != nil {
			return at(sc.line, "%s: trigger: %v", what, err)
		}
		for _, c := range sc.Expect.Causes {
			reg, bit, ok := strings.Cut(c, ".")
			if !ok || reg == "" || bit == "" || strings.ToUpper(c) != c {
				return at(sc.line, "%s: expect: cause %q: want REGISTER.BIT such as CFSR.PRECISERR", what, c)
			}
		}
		for _, f := range sc.Requires {
			if f == "" || strings.ContainsAny(f, " \t") {
				return at(sc.line, "%s: requires %q: want a feature name", what, f)
			}
		}
		names[sc.Name] = sc.line
	}
	return nil
}

// ELFPath returns the build's ELF path resolved against the spec's
// directory.
func (s *Spec) ELFPath(b Build) string {
	if filepath.IsAbs(b.ELF) || s.Path == "" {
		return b.ELF
	}
	return filepath.Join(filepath.Dir(s.Path), filepath.FromSlash(b.ELF))
}

// Line returns the line of the spec that defines the build.
func (b Build) Line() int { return b.line }

// Line returns the line of the spec that defines the scenario.
func (sc Scenario) Line() int { return sc.line }

// Applies reports whether the scenario applies to the build: the build's
// features include every feature the scenario requires.
func (sc Scenario) Applies(b Build) bool {
	for _, r := range sc.Requires {
		if !slices.Contains(b.Features, r) {
			return false
		}
	}
	return true
}

// Case is one (build, scenario) pair of the matrix.
type Case struct {
	Build    Build
	Scenario Scenario
	// ELF is the build's ELF path, resolved.
	ELF string
}

// Name is "BUILD SCENARIO", as a known-failures line names the case.
func (c Case) Name() string { return c.Build.Name + " " + c.Scenario.Name }

// Filter selects builds and scenarios by path.Match glob; an empty pattern
// selects everything.
type Filter struct {
	Build, Scenario string
}

// Check reports a malformed pattern.
func (f Filter) Check() error {
	for _, p := range []string{f.Build, f.Scenario} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	return nil
}

func (f Filter) match(b Build, sc Scenario) bool {
	ok := func(pat, name string) bool {
		m, err := path.Match(pat, name)
		return pat == "" || (err == nil && m)
	}
	return ok(f.Build, b.Name) && ok(f.Scenario, sc.Name)
}

// Cases expands the matrix: for every build in spec order, every scenario
// in spec order that applies to it and that f selects.
func (s *Spec) Cases(f Filter) []Case {
	var out []Case
	for _, b := range s.Builds {
		for _, sc := range s.Scenarios {
			if sc.Applies(b) && f.match(b, sc) {
				out = append(out, Case{Build: b, Scenario: sc, ELF: s.ELFPath(b)})
			}
		}
	}
	return out
}

// Warnings lists what is legal but probably a mistake: a scenario that
// applies to no build, a build that runs no scenario.
func (s *Spec) Warnings() []string {
	var w []string
	for _, sc := range s.Scenarios {
		n := 0
		for _, b := range s.Builds {
			if sc.Applies(b) {
				n++
			}
		}
		if n == 0 {
			w = append(w, fmt.Sprintf("%s:%d: scenario %q applies to no build (requires %s)", s.Path, sc.line, sc.Name, strings.Join(sc.Requires, ", ")))
		}
	}
	for _, b := range s.Builds {
		n := 0
		for _, sc := range s.Scenarios {
			if sc.Applies(b) {
				n++
			}
		}
		if n == 0 {
			w = append(w, fmt.Sprintf("%s:%d: build %q runs no scenario (features %s)", s.Path, b.line, b.Name, strings.Join(b.Features, ", ")))
		}
	}
	return w
}
