package crashdump

import (
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// The fast path of the native reader: one pass over the manifest that
// validates the JSON and decodes the values at once, without the
// per-value decoders of the precise reader (jsonnode.go), which exist to
// report an error's field path and byte offset.
//
// The fast path never reports an error: it gives up (ok false) on
// anything it does not accept, and parseNative then runs the precise
// reader, which reports the error or, for the rare valid manifest the
// fast path leaves alone (keys with escapes or outside ASCII, numbers or
// hex with escapes, more than fastMaxMembers keys in an object, nesting
// deeper than fastMaxDepth), decodes it. Whatever the fast path accepts, the precise
// reader accepts too, with the same Dump; TestNativeFastDifferential and
// FuzzNativeFast check that.
//
// It reads no region file before the whole manifest has been decoded and
// checked, and then reads them in document order, as the precise reader
// does. So when a file or a size check fails, the precise reader, which
// checks the manifest first too, makes the same reads up to the same
// point: readLog hands it the bytes (or errors) the fast path got.

// Bounds beyond which the fast path leaves a manifest to the precise
// reader.
const (
	fastMaxDepth   = 256 // nesting of values the fast path skips
	fastMaxMembers = 32  // keys of an object other than "registers", "fault" and a memory entry
)

// readLog records the region file reads of the fast path, so that the
// precise reader, when it runs after the fast path gave up, gets the same
// answers without reading the files again (Load's readFile counts what it
// has read against MaxTotalSize).
type readLog struct {
	reads []loggedRead
	next  int
}

type loggedRead struct {
	rel  string
	data []byte
	err  error
}

// read reads rel through readFile and records the answer.
func (l *readLog) read(readFile func(rel string) ([]byte, error), rel string) ([]byte, error) {
	b, err := readFile(rel)
	l.reads = append(l.reads, loggedRead{rel, b, err})
	return b, err
}

// replay returns a readFile that answers the recorded reads in order, then
// reads through readFile. A request that differs from the record (which
// the order of the checks rules out) also reads through.
func (l *readLog) replay(readFile func(rel string) ([]byte, error)) func(rel string) ([]byte, error) {
	if readFile == nil || len(l.reads) == 0 {
		return readFile
	}
	return func(rel string) ([]byte, error) {
		if l.next < len(l.reads) && l.reads[l.next].rel == rel {
			r := l.reads[l.next]
			l.next++
			return r.data, r.err
		}
		l.next = len(l.reads)
		return readFile(rel)
	}
}

// fastRegion is a memory entry decoded, before its file is read.
type fastRegion struct {
	addr uint32
	want int64  // the "size", -1 without
	file string // the region file, "" for hex
	data []byte // the hex bytes
}

// parseNativeFast decodes a well-formed faultline.dump/1 manifest; ok is
// false when it leaves the manifest to the precise reader.
func parseNativeFast(data []byte, name string, readFile func(rel string) ([]byte, error), log *readLog) (*Dump, bool) {
	s := fastScanner{data: data}
	if s.peek() != '{' {
		return nil, false
	}
	d := &Dump{Path: name, Format: FormatNative}
	var (
		explicit   fault.SCB
		pending    []fastRegion
		haveSchema bool
		keys       keySet
	)
	ok := s.object(&keys, func(key []byte) bool {
		if s.peek() == 'n' { // null is the same as missing
			return s.literal("null")
		}
		switch string(key) {
		case "schema":
			v, ok := s.stringValue()
			if !ok || v != FormatNative {
				return false
			}
			haveSchema = true
			return true
		case "cpu":
			v, ok := s.stringValue()
			d.CPU = v
			return ok && (v == "" || unwinders.ProfileOf(v) != unwinders.ProfileUnknown)
		case "build_id":
			v, ok := s.stringValue()
			if ok {
				d.BuildID, ok = NormalizeBuildID(v)
			}
			return ok
		case "registers":
			return s.registers(&d.Regs)
		case "fault":
			return s.fault(&explicit)
		case "memory":
			var ok bool
			pending, ok = s.memory(readFile != nil)
			return ok
		case "truth":
			var ok bool
			d.Truth, ok = s.truth()
			return ok
		case "lockup":
			// Rare: left to the precise reader.
			return false
		}
		return s.skip(0)
	})
	if s.peek(); !ok || !haveSchema || s.pos != len(data) {
		return nil, false
	}

	// The region files, in document order, with the checks of
	// parser.region.
	for _, p := range pending {
		r := unwinders.Region{Addr: p.addr, Name: p.file, Data: p.data}
		if p.file != "" {
			b, err := log.read(readFile, p.file)
			if err != nil {
				return nil, false
			}
			r.Data = b
		} else {
			r.Name = hexRegionName(p.addr)
		}
		n := int64(len(r.Data))
		if n == 0 || p.want >= 0 && n != p.want || n > MaxRegionSize || r.End() > 1<<32 {
			return nil, false
		}
		d.Memory = append(d.Memory, r)
	}
	if _, _, found := overlap(d.Memory); found {
		return nil, false
	}
	im, err := d.Image()
	if err != nil {
		return nil, false
	}
	d.Fault = fault.FromMemory(im).Merge(explicit)
	return d, true
}

// hexRegionName is fmt.Sprintf("hex@0x%08x", addr).
func hexRegionName(addr uint32) string {
	const digits = "0123456789abcdef"
	b := []byte("hex@0x00000000")
	for i := len(b) - 1; addr != 0; i-- {
		b[i] = digits[addr&0xf]
		addr >>= 4
	}
	return string(b)
}

// fastScanner walks a JSON document byte by byte. Its methods return
// false for anything the fast path does not accept, invalid JSON
// included, and leave pos anywhere then.
type fastScanner struct {
	data []byte
	pos  int
}

// peek skips white space and returns the next byte, 0 at the end.
func (s *fastScanner) peek() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// keySet is the keys of one object so far, to reject duplicates as
// parser.members does. The fast path accepts only keys without escapes
// and in ASCII, whose raw bytes are the decoded key.
type keySet struct {
	keys [fastMaxMembers][]byte
	n    int
}

func (k *keySet) add(key []byte) bool {
	if k.n == len(k.keys) {
		return false
	}
	for _, old := range k.keys[:k.n] {
		if string(old) == string(key) {
			return false
		}
	}
	k.keys[k.n] = key
	k.n++
	return true
}

// object scans an object, calling member for each value with pos at the
// value; member must scan it. keys, when not nil, rejects duplicate keys.
func (s *fastScanner) object(keys *keySet, member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return true
	}
	for {
		key, ok := s.key()
		if !ok || keys != nil && !keys.add(key) {
			return false
		}
		if s.peek() != ':' {
			return false
		}
		s.pos++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// array scans an array, calling elem for each element with pos at it.
func (s *fastScanner) array(elem func(i int) bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return true
	}
	for i := 0; ; i++ {
		if !elem(i) {
			return false
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// key scans an object key without escapes, in ASCII.
func (s *fastScanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	raw, esc, ok := s.str()
	if !ok || esc {
		return nil, false
	}
	for _, c := range raw {
		if c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return raw, true
}

// str scans a string at pos and returns the bytes between the quotes and
// whether they hold escapes, which it checks.
func (s *fastScanner) str() (raw []byte, esc, ok bool) {
	data := s.data
	start := s.pos + 1
	for i := start; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			s.pos = i + 1
			return data[start:i], esc, true
		case c == '\\':
			esc = true
			if i+1 >= len(data) {
				return nil, false, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return nil, false, false
				}
				for _, h := range data[i+2 : i+6] {
					if unhex(h) < 0 {
						return nil, false, false
					}
				}
				i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			i++
		}
	}
	return nil, false, false
}

// stringValue scans a string value and decodes it as encoding/json does
// (parser.str): escapes and invalid UTF-8 go through json.Unmarshal.
func (s *fastScanner) stringValue() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	start := s.pos
	raw, esc, ok := s.str()
	if !ok {
		return "", false
	}
	if !esc && utf8.Valid(raw) {
		return string(raw), true
	}
	var v string
	if json.Unmarshal(s.data[start:s.pos], &v) != nil {
		return "", false
	}
	return v, true
}

// optString scans a string or null ("") value (parser.optStr).
func (s *fastScanner) optString() (string, bool) {
	if s.peek() == 'n' {
		return "", s.literal("null")
	}
	return s.stringValue()
}

// literal scans true, false or null.
func (s *fastScanner) literal(word string) bool {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return false
	}
	s.pos += len(word)
	return true
}

// number scans a JSON number; integer reports one without sign, fraction
// or exponent.
func (s *fastScanner) number() (raw []byte, integer, ok bool) {
	data := s.data
	start, i := s.pos, s.pos
	digits := func() bool {
		j := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return nil, false, false
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		digits()
	default:
		return nil, false, false
	}
	integer = data[start] != '-'
	if i < len(data) && data[i] == '.' {
		integer = false
		i++
		if !digits() {
			return nil, false, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integer = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false, false
		}
	}
	s.pos = i
	return data[start:i], integer, true
}

// num scans a number no larger than max: a "0x" hex string or a JSON
// integer (parser.number).
func (s *fastScanner) num(max uint64) (uint64, bool) {
	var v uint64
	switch c := s.peek(); {
	case c == '"':
		raw, esc, ok := s.str()
		if !ok || esc || len(raw) < 3 || raw[0] != '0' || raw[1] != 'x' && raw[1] != 'X' {
			return 0, false
		}
		for _, c := range raw[2:] {
			h := unhex(c)
			if h < 0 {
				return 0, false
			}
			if v = v<<4 | uint64(h); v > max {
				return 0, false
			}
		}
	case '0' <= c && c <= '9':
		raw, integer, ok := s.number()
		if !ok || !integer {
			return 0, false
		}
		for _, c := range raw {
			if v = v*10 + uint64(c-'0'); v > max {
				return 0, false
			}
		}
	default:
		return 0, false
	}
	return v, true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// skip scans any value.
func (s *fastScanner) skip(depth int) bool {
	switch c := s.peek(); {
	case c == '{':
		return depth < fastMaxDepth && s.object(nil, func([]byte) bool { return s.skip(depth + 1) })
	case c == '[':
		return depth < fastMaxDepth && s.array(func(int) bool { return s.skip(depth + 1) })
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, _, ok := s.number()
		return ok
	}
	return false
}

// registers scans the "registers" object (parser.registers).
func (s *fastScanner) registers(regs *unwinders.Registers) bool {
	var seen uint64
	return s.object(nil, func(key []byte) bool {
		reg, ok := regByName(key)
		if !ok || int(reg) >= 64 || seen&(1<<reg) != 0 {
			return false
		}
		seen |= 1 << reg
		if s.peek() == 'n' {
			return s.literal("null")
		}
		v, ok := s.num(0xFFFFFFFF)
		regs.Set(reg, uint32(v))
		return ok
	})
}

// regByName is unwinders.ParseReg, without its case folding and trimming
// for the names Write uses.
func regByName(key []byte) (unwinders.Reg, bool) {
	switch string(key) {
	case "r0":
		return unwinders.R0, true
	case "r1":
		return unwinders.R1, true
	case "r2":
		return unwinders.R2, true
	case "r3":
		return unwinders.R3, true
	case "r4":
		return unwinders.R4, true
	case "r5":
		return unwinders.R5, true
	case "r6":
		return unwinders.R6, true
	case "r7":
		return unwinders.R7, true
	case "r8":
		return unwinders.R8, true
	case "r9":
		return unwinders.R9, true
	case "r10":
		return unwinders.R10, true
	case "r11":
		return unwinders.R11, true
	case "r12":
		return unwinders.R12, true
	case "sp":
		return unwinders.SP, true
	case "lr":
		return unwinders.LR, true
	case "pc":
		return unwinders.PC, true
	case "xpsr":
		return unwinders.XPSR, true
	case "msp":
		return unwinders.MSP, true
	case "psp":
		return unwinders.PSP, true
	case "control":
		return unwinders.CONTROL, true
	case "primask":
		return unwinders.PRIMASK, true
	case "basepri":
		return unwinders.BASEPRI, true
	case "faultmask":
		return unwinders.FAULTMASK, true
	}
	return unwinders.ParseReg(string(key))
}

// fault scans the "fault" object (parser.fault).
func (s *fastScanner) fault(scb *fault.SCB) bool {
	var seen [16]*fault.Opt
	n := 0
	return s.object(nil, func(key []byte) bool {
		f := scbField(scb, key)
		if f == nil || n == len(seen) {
			return false
		}
		for _, g := range seen[:n] {
			if g == f {
				return false
			}
		}
		seen[n] = f
		n++
		if s.peek() == 'n' {
			return s.literal("null")
		}
		v, ok := s.num(0xFFFFFFFF)
		*f = fault.Known(uint32(v))
		return ok
	})
}

// scbField is scb.Field, without its case folding for the names Write
// uses.
func scbField(scb *fault.SCB, key []byte) *fault.Opt {
	switch string(key) {
	case "cfsr":
		return &scb.CFSR
	case "hfsr":
		return &scb.HFSR
	case "mmfar":
		return &scb.MMFAR
	case "bfar":
		return &scb.BFAR
	}
	return scb.Field(string(key))
}

// memory scans the "memory" array (parser.memory up to reading the
// files). canRead says whether there is a readFile.
func (s *fastScanner) memory(canRead bool) ([]fastRegion, bool) {
	var out []fastRegion
	ok := s.array(func(int) bool {
		r := fastRegion{want: -1}
		var haveAddr, haveFile, haveHex, haveSize bool
		ok := s.object(nil, func(key []byte) bool {
			var ok bool
			switch string(key) {
			case "address":
				if haveAddr {
					return false
				}
				haveAddr = true
				var v uint64
				v, ok = s.num(0xFFFFFFFF)
				r.addr = uint32(v)
			case "size":
				if haveSize {
					return false
				}
				haveSize = true
				var v uint64
				v, ok = s.num(1 << 32)
				r.want = int64(v)
				ok = ok && v <= MaxRegionSize
			case "file":
				if haveFile {
					return false
				}
				haveFile = true
				r.file, ok = s.stringValue()
				ok = ok && canRead && relProblem(r.file) == relOK
			case "hex":
				if haveHex || s.peek() != '"' {
					return false
				}
				haveHex = true
				var raw []byte
				var esc bool
				raw, esc, ok = s.str()
				if !ok || esc || len(raw)%2 != 0 || len(raw)/2 > MaxRegionSize {
					return false
				}
				r.data = make([]byte, len(raw)/2)
				_, err := hex.Decode(r.data, raw)
				ok = err == nil
			}
			return ok
		})
		if !ok || !haveAddr || haveFile == haveHex {
			return false
		}
		out = append(out, r)
		return true
	})
	return out, ok
}

// truth scans the "truth" object (parser.truth).
func (s *fastScanner) truth() (*Truth, bool) {
	t := new(Truth)
	var haveSource, haveFrames bool
	var keys keySet
	ok := s.object(&keys, func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "source":
			t.Source, ok = s.stringValue()
			haveSource = true
		case "stop":
			t.Stop, ok = s.optString()
		case "frames":
			haveFrames = true
			ok = s.array(func(int) bool {
				f, ok := s.truthFrame()
				if t.Frames == nil {
					t.Frames = make([]TruthFrame, 0, 16)
				}
				t.Frames = append(t.Frames, f)
				return ok
			})
		case "threads":
			t.Threads = []ThreadTruth{}
			ok = s.array(func(int) bool {
				th, ok := s.threadTruth()
				t.Threads = append(t.Threads, th)
				return ok
			})
		default:
			ok = s.skip(0)
		}
		return ok
	})
	return t, ok && haveSource && haveFrames
}

// threadTruth scans one element of truth.threads (parser.threadTruth).
func (s *fastScanner) threadTruth() (ThreadTruth, bool) {
	var th ThreadTruth
	var haveFrame, haveFrames bool
	var keys keySet
	ok := s.object(&keys, func(key []byte) bool {
		var ok bool
		var v uint64
		switch string(key) {
		case "frame":
			v, ok = s.num(0xFFFFFFFF)
			th.Frame, haveFrame = uint32(v), true
		case "sp":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			v, ok = s.num(0xFFFFFFFF)
			th.SP, th.HasSP = uint32(v), true
		case "frames":
			haveFrames = true
			th.Frames = []TruthFrame{}
			ok = s.array(func(int) bool {
				f, ok := s.truthFrame()
				th.Frames = append(th.Frames, f)
				return ok
			})
		default:
			ok = s.skip(0)
		}
		return ok
	})
	return th, ok && haveFrame && haveFrames
}

// truthFrame scans one element of truth.frames (parser.truthFrame).
func (s *fastScanner) truthFrame() (TruthFrame, bool) {
	var f TruthFrame
	var keys keySet
	ok := s.object(&keys, func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "pc":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			var v uint64
			v, ok = s.num(0xFFFFFFFF)
			f.PC, f.HasPC = uint32(v), true
		case "function":
			f.Function, ok = s.optString()
		case "file":
			f.File, ok = s.optString()
		case "kind":
			f.Kind, ok = s.optString()
			switch f.Kind {
			case "", "exception":
			case "normal":
				f.Kind = ""
			default:
				ok = false
			}
		case "line":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			var v uint64
			v, ok = s.num(1<<31 - 1)
			f.Line = int(v)
		default:
			ok = s.skip(0)
		}
		return ok
	})
	return f, ok
}
