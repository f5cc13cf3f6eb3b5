package crashdump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// node is one JSON value of a document that has already been checked to be
// valid JSON, with where it sits: its byte offset in the file and its field
// path ("memory[2].address").
type node struct {
	raw  []byte
	off  int64
	path string
}

// member is one key/value pair of a JSON object.
type member struct {
	key string
	val node
}

// parser walks a validated JSON document and reports errors against the
// file name.
type parser struct {
	name     string
	warnings []string // what a partial dump lacks (missing or short region files)
}

func (p *parser) errf(n node, format string, args ...any) *FormatError {
	return &FormatError{File: p.name, Field: n.path, Offset: n.off, Msg: fmt.Sprintf(format, args...)}
}

// field returns the path of a member named key inside n.
func (n node) field(key string) string {
	if n.path == "" {
		return key
	}
	return n.path + "." + key
}

func (n node) isNull() bool { return string(n.raw) == "null" }

// kind names the JSON type of n for messages.
func (n node) kind() string {
	if len(n.raw) == 0 {
		return "nothing"
	}
	switch n.raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// show returns n's JSON text for messages, shortened.
func (n node) show() string {
	const max = 40
	if len(n.raw) <= max {
		return string(n.raw)
	}
	return string(n.raw[:max]) + "..."
}

// members returns the members of an object in document order. A key that
// appears twice is an error (encoding/json would silently keep the last).
func (p *parser) members(n node) ([]member, error) {
	if len(n.raw) == 0 || n.raw[0] != '{' {
		return nil, p.errf(n, "got %s, want an object", n.kind())
	}
	dec := json.NewDecoder(bytes.NewReader(n.raw))
	if _, err := dec.Token(); err != nil {
		return nil, p.errf(n, "invalid object: %v", err)
	}
	var out []member
	seen := make(map[string]bool)
	for dec.More() {
		keyOff := n.off + dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return nil, p.errf(n, "invalid object: %v", err)
		}
		key, ok := t.(string)
		if !ok {
			return nil, p.errf(n, "invalid object key %v", t)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, p.errf(n, "invalid value of %q: %v", key, err)
		}
		end := dec.InputOffset()
		m := member{key: key, val: node{raw: v, off: n.off + end - int64(len(v)), path: n.field(key)}}
		if seen[key] {
			return nil, &FormatError{File: p.name, Field: m.val.path, Offset: keyOff, Msg: "key appears twice"}
		}
		seen[key] = true
		out = append(out, m)
	}
	return out, nil
}

// elements returns the elements of an array.
func (p *parser) elements(n node) ([]node, error) {
	if len(n.raw) == 0 || n.raw[0] != '[' {
		return nil, p.errf(n, "got %s, want an array", n.kind())
	}
	dec := json.NewDecoder(bytes.NewReader(n.raw))
	if _, err := dec.Token(); err != nil {
		return nil, p.errf(n, "invalid array: %v", err)
	}
	var out []node
	for i := 0; dec.More(); i++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, p.errf(n, "invalid element %d: %v", i, err)
		}
		end := dec.InputOffset()
		out = append(out, node{raw: v, off: n.off + end - int64(len(v)), path: fmt.Sprintf("%s[%d]", n.path, i)})
	}
	return out, nil
}

// str decodes a JSON string.
func (p *parser) str(n node) (string, error) {
	if len(n.raw) == 0 || n.raw[0] != '"' {
		return "", p.errf(n, "got %s, want a string", n.kind())
	}
	var s string
	if err := json.Unmarshal(n.raw, &s); err != nil {
		return "", p.errf(n, "invalid string: %v", err)
	}
	return s, nil
}

// optStr decodes a string that may be null or absent ("").
func (p *parser) optStr(n node) (string, error) {
	if n.isNull() {
		return "", nil
	}
	return p.str(n)
}

// wantNumber is the expectation every number error states.
const wantNumber = `want a "0x" hex string or a JSON integer`

// u32 decodes a 32-bit number: a "0x..." hex string or a JSON integer
// (design.md: "Numbers are hex strings or JSON integers").
func (p *parser) u32(n node) (uint32, error) {
	v, err := p.number(n, 0xFFFFFFFF)
	return uint32(v), err
}

// number decodes a non-negative number no larger than max.
func (p *parser) number(n node, max uint64) (uint64, error) {
	if len(n.raw) == 0 {
		return 0, p.errf(n, "missing value: %s", wantNumber)
	}
	var (
		v   uint64
		err error
	)
	switch c := n.raw[0]; {
	case c == '"':
		s, serr := p.str(n)
		if serr != nil {
			return 0, serr
		}
		if len(s) < 3 || !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") || !isHex(s[2:]) {
			return 0, p.errf(n, "%s is not a number: %s", quoteShort(s), wantNumber)
		}
		v, err = strconv.ParseUint(s[2:], 16, 64)
		if err != nil || v > max {
			return 0, p.errf(n, "%s %s", quoteShort(s), tooLarge(max))
		}
	case c == '-':
		return 0, p.errf(n, "%s is negative: want a value from 0 to %#x", n.show(), max)
	case c >= '0' && c <= '9':
		if bytes.ContainsAny(n.raw, ".eE") {
			return 0, p.errf(n, "%s is not an integer: %s", n.show(), wantNumber)
		}
		v, err = strconv.ParseUint(string(n.raw), 10, 64)
		if err != nil || v > max {
			return 0, p.errf(n, "%s %s", n.show(), tooLarge(max))
		}
	default:
		return 0, p.errf(n, "%s is not a number: %s", n.show(), wantNumber)
	}
	return v, nil
}

// tooLarge says why a value above max is refused: "does not fit in 32
// bits" where max is all ones, else "is too large: at most 0x100000000"
// (a size of up to 4 GiB is not a number of bits).
func tooLarge(max uint64) string {
	if max&(max+1) == 0 {
		return fmt.Sprintf("does not fit in %d bits", bitsOf(max))
	}
	return fmt.Sprintf("is too large: at most %#x", max)
}

func bitsOf(max uint64) int {
	b := 0
	for max != 0 {
		b++
		max >>= 1
	}
	return b
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// quoteShort quotes s for a message, shortened.
func quoteShort(s string) string {
	const max = 120
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
