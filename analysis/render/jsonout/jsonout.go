// Package jsonout renders a report as JSON (faultline.analysis/1, the
// form its struct tags give): Write prints one report as analyze --format
// json does; an Encoder prints JSON lines (--format jsonl), byte for byte
// what encoding/json's Encoder writes, faster.
package jsonout

import (
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/analysis/report"
)

// A faster JSON line for a report: the bytes encoding/json's Encoder
// writes for a report.Report (HTML-safe escaping, no indentation, a
// newline), built without reflection for the parts that make up most of
// an RTOS report (every thread's frames) and with encoding/json for the
// rest, field by field.
//
// The hand-written parts rely on the exact field lists of FrameJSON,
// ThreadJSON and StackJSON: NewEncoder checks them, and a type that
// changed (a field added, renamed or retagged) is encoded by encoding/json
// again, so the output never depends on this file being up to date
// (TestReportEncoderFastPath says when it is not). Report's own fields are
// read from its type, so a field added there is encoded like any other.

// Write writes r as one indented JSON document (two spaces, a final
// newline): the output of analyze --format json for one dump.
func Write(w io.Writer, r *report.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// An Encoder encodes reports as JSON lines; it is used by one goroutine at
// a time (a batch's emitter) and reuses its buffer.
type Encoder struct {
	fields     []reportField // nil: encode the whole report with encoding/json
	fastFrames bool          // FrameJSON has the fields appendFrame writes
	fastThread bool          // ThreadJSON and StackJSON have the fields appendThread writes
	buf        []byte
}

// reportField is one JSON member of Report.
type reportField struct {
	index     int
	key       []byte // `"name":`
	omitEmpty bool
	kind      int // fieldJSON, fieldFrames, fieldThreads, fieldHexRegs, fieldString
}

const (
	fieldJSON = iota
	fieldFrames
	fieldThreads
	fieldHexRegs
	fieldString
)

// The field lists the hand-written encoders were written for: name, type
// and tag of every field, in order.
const (
	frameShape  = `Index int json:"index";PC string json:"pc,omitempty";Function string json:"function,omitempty";Symbol string json:"symbol,omitempty";Offset *int64 json:"offset,omitempty";File string json:"file,omitempty";Line int json:"line,omitempty";Kind string json:"kind";Method string json:"method";SP string json:"sp,omitempty";Confidence string json:"confidence";Image string json:"image,omitempty";ExcReturn string json:"exc_return,omitempty";Stack string json:"stack,omitempty";Note string json:"note,omitempty";Gap bool json:"gap,omitempty";Args []report.VarJSON json:"args,omitempty";Locals []report.VarJSON json:"locals,omitempty";Phys int json:"-"`
	threadShape = `Name string json:"name";State string json:"state";Current bool json:"current";Priority *int json:"priority,omitempty";BasePriority *int json:"base_priority,omitempty";ID string json:"id";WaitingOn string json:"waiting_on,omitempty";Stack report.StackJSON json:"stack";Diagnosis []string json:"diagnosis,omitempty";Frames []report.FrameJSON json:"frames";Stop string json:"stop";Error string json:"error,omitempty";Walk unwinders.Result json:"-";Raw rtos.Thread json:"-"`
	stackShape  = `Start string json:"start,omitempty";End string json:"end,omitempty";SP string json:"sp,omitempty";HighWaterBytes int json:"high_water_bytes";Overflow bool json:"overflow"`
)

// shapeOf lists a struct type's fields as the shapes above do.
func shapeOf(t reflect.Type) string {
	var parts []string
	for i := range t.NumField() {
		f := t.Field(i)
		parts = append(parts, f.Name+" "+f.Type.String()+" "+string(f.Tag))
	}
	return strings.Join(parts, ";")
}

// plainStruct reports whether t has the field list shape and no JSON or
// text marshaling method of its own.
func plainStruct(t reflect.Type, shape string) bool {
	marshaler := reflect.TypeFor[json.Marshaler]()
	text := reflect.TypeFor[encoding.TextMarshaler]()
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(marshaler) || x.Implements(text) {
			return false
		}
	}
	return shapeOf(t) == shape
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder {
	e := &Encoder{fastFrames: plainStruct(reflect.TypeFor[report.FrameJSON](), frameShape)}
	e.fastThread = e.fastFrames && plainStruct(reflect.TypeFor[report.ThreadJSON](), threadShape) &&
		plainStruct(reflect.TypeFor[report.StackJSON](), stackShape)
	framesType := reflect.TypeFor[[]report.FrameJSON]()
	threadsType := reflect.TypeFor[[]report.ThreadJSON]()
	hexRegsType := reflect.TypeFor[*report.HexRegs]()
	t := reflect.TypeFor[report.Report]()
	var fields []reportField
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if !f.IsExported() || tag == "-" {
			if f.Anonymous {
				return e // embedded structs: leave them to encoding/json
			}
			continue
		}
		if f.Anonymous {
			return e
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !hasTag || name == "" {
			name = f.Name
		}
		omit := false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				omit = true
			case "":
			default:
				return e // ",string", ",omitzero", ...: encoding/json's business
			}
		}
		if !validKey(name) {
			return e
		}
		rf := reportField{index: i, key: appendJSONString(nil, name), omitEmpty: omit}
		rf.key = append(rf.key, ':')
		switch {
		case f.Type == framesType && e.fastFrames:
			rf.kind = fieldFrames
		case f.Type == threadsType && e.fastThread:
			rf.kind = fieldThreads
		case f.Type == hexRegsType:
			rf.kind = fieldHexRegs
		case f.Type.Kind() == reflect.String && f.Type.PkgPath() == "":
			rf.kind = fieldString
		}
		fields = append(fields, rf)
	}
	e.fields = fields
	return e
}

// validKey reports whether encoding/json would use name as is.
func validKey(name string) bool {
	for _, c := range name {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return name != ""
}

// Line returns r as one JSON line, the bytes json.NewEncoder(w).Encode(r)
// writes. The slice is valid until the next call.
func (e *Encoder) Line(r *report.Report) ([]byte, error) {
	if e.fields == nil || r == nil {
		var b bytes.Buffer
		err := json.NewEncoder(&b).Encode(r)
		return b.Bytes(), err
	}
	b := e.buf[:0]
	b = append(b, '{')
	v := reflect.ValueOf(r).Elem()
	first := true
	for i := range e.fields {
		f := &e.fields[i]
		fv := v.Field(f.index)
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		var err error
		switch f.kind {
		case fieldString:
			b = appendJSONString(b, fv.String())
		case fieldFrames:
			b = appendFrames(b, fv.Interface().([]report.FrameJSON))
		case fieldThreads:
			b = appendThreads(b, fv.Interface().([]report.ThreadJSON))
		case fieldHexRegs:
			b, err = appendHexRegs(b, fv.Interface().(*report.HexRegs))
		default:
			b, err = appendMarshal(b, fv.Addr().Interface())
		}
		if err != nil {
			return nil, err
		}
	}
	b = append(b, '}', '\n')
	e.buf = b
	return b, nil
}

// appendMarshal appends encoding/json's encoding of *p (p a pointer to
// the field, so that methods on the pointer apply as they do inside the
// report).
func appendMarshal(b []byte, p any) ([]byte, error) {
	out, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// appendHexRegs appends a register set. Its MarshalJSON output is compact
// already; encoding/json would only escape <, > and & in it, which
// register names never hold (checked: anything unusual goes the slow way).
func appendHexRegs(b []byte, h *report.HexRegs) ([]byte, error) {
	if h == nil {
		return append(b, "null"...), nil
	}
	start := len(b)
	b = h.AppendJSON(b)
	for _, c := range b[start:] {
		if c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf || c < 0x20 || c == '\\' {
			return appendMarshal(b[:start], &h)
		}
	}
	return b, nil
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// appendList writes xs as a JSON array (null when nil), each element with
// elem.
func appendList[T any](b []byte, xs []T, elem func([]byte, *T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, &xs[i])
	}
	return append(b, ']')
}

func appendFrames(b []byte, frames []report.FrameJSON) []byte {
	return appendList(b, frames, appendFrame)
}

// appendFrame writes the fields of frameShape.
func appendFrame(b []byte, f *report.FrameJSON) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(f.Index), 10)
	b = appendOptString(b, `,"pc":`, f.PC)
	b = appendOptString(b, `,"function":`, f.Function)
	b = appendOptString(b, `,"symbol":`, f.Symbol)
	if f.Offset != nil {
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, *f.Offset, 10)
	}
	b = appendOptString(b, `,"file":`, f.File)
	if f.Line != 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, f.Kind)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, f.Method)
	b = appendOptString(b, `,"sp":`, f.SP)
	b = append(b, `,"confidence":`...)
	b = appendJSONString(b, f.Confidence)
	b = appendOptString(b, `,"image":`, f.Image)
	b = appendOptString(b, `,"exc_return":`, f.ExcReturn)
	b = appendOptString(b, `,"stack":`, f.Stack)
	b = appendOptString(b, `,"note":`, f.Note)
	if f.Gap {
		b = append(b, `,"gap":true`...)
	}
	b = appendVars(b, `,"args":`, f.Args)
	b = appendVars(b, `,"locals":`, f.Locals)
	return append(b, '}')
}

// appendVars writes frames[].args or frames[].locals (omitted when empty).
func appendVars(b []byte, key string, vs []report.VarJSON) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(b, key...)
	for i := range vs {
		v := &vs[i]
		if i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, v.Name)
		b = appendOptString(b, `,"type":`, v.Type)
		b = appendOptString(b, `,"value":`, v.Value)
		if v.Entry {
			b = append(b, `,"entry":true`...)
		}
		if v.OptimizedOut {
			b = append(b, `,"optimized_out":true`...)
		}
		b = appendOptString(b, `,"note":`, v.Note)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendThreads(b []byte, threads []report.ThreadJSON) []byte {
	return appendList(b, threads, appendThread)
}

// appendThread writes the fields of threadShape and stackShape.
func appendThread(b []byte, t *report.ThreadJSON) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, t.Name)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, t.State)
	b = append(b, `,"current":`...)
	b = strconv.AppendBool(b, t.Current)
	if t.Priority != nil {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(*t.Priority), 10)
	}
	if t.BasePriority != nil {
		b = append(b, `,"base_priority":`...)
		b = strconv.AppendInt(b, int64(*t.BasePriority), 10)
	}
	b = append(b, `,"id":`...)
	b = appendJSONString(b, t.ID)
	b = appendOptString(b, `,"waiting_on":`, t.WaitingOn)
	s := &t.Stack
	b = append(b, `,"stack":{`...)
	sep := ""
	if s.Start != "" {
		b = append(b, `"start":`...)
		b = appendJSONString(b, s.Start)
		sep = ","
	}
	if s.End != "" {
		b = append(b, sep+`"end":`...)
		b = appendJSONString(b, s.End)
		sep = ","
	}
	if s.SP != "" {
		b = append(b, sep+`"sp":`...)
		b = appendJSONString(b, s.SP)
		sep = ","
	}
	b = append(b, sep+`"high_water_bytes":`...)
	b = strconv.AppendInt(b, int64(s.HighWaterBytes), 10)
	b = append(b, `,"overflow":`...)
	b = strconv.AppendBool(b, s.Overflow)
	b = append(b, '}')
	if len(t.Diagnosis) > 0 {
		b = append(b, `,"diagnosis":[`...)
		for i, d := range t.Diagnosis {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, d)
		}
		b = append(b, ']')
	}
	b = append(b, `,"frames":`...)
	b = appendFrames(b, t.Frames)
	b = append(b, `,"stop":`...)
	b = appendJSONString(b, t.Stop)
	b = appendOptString(b, `,"error":`, t.Error)
	return append(b, '}')
}

// appendOptString appends key and s unless s is empty (omitempty).
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendJSONString(b, s)
}

// appendJSONString appends s as encoding/json writes a string with HTML
// escaping (its default): ", \ and control characters escaped (\b, \f,
// \n, \r, \t by name), <, > and & as \u003c, \u003e, \u0026, U+2028 and
// U+2029 escaped, and each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonPlain[c] != 0 {
			i++ // the usual case: one table look-up a byte
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlain[c] is 1 for the bytes appendJSONString copies as they are:
// ASCII other than control characters, '"', '\\', '<', '>' and '&'. (A
// string constant: a table nobody can change.)
const jsonPlain = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 0x00
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 0x10
	"\x01\x01\x00\x01\x01\x01\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 0x20: '"' '&'
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x00\x01" + // 0x30: '<' '>'
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 0x40
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x01\x01" + // 0x50: '\\'
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 0x60
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 0x70
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 0x80 and up: UTF-8
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
