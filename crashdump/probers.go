package crashdump

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// FormatProbeRS is the Format name of a probe-rs coredump.
const FormatProbeRS = "probe-rs"

// probe-rs coredump layout (probe-rs/src/core/dump.rs, struct CoreDump;
// `probe-rs` writes it with rmp_serde's write_named, reads it with
// from_slice). The file is one MessagePack value:
//
//	CoreDump, a struct: a map keyed by field name (write_named), or, from
//	a writer that uses rmp_serde's compact form, an array of the fields
//	in this order:
//	  registers                     map RegisterId (u16) -> RegisterValue
//	  data                          array of [Range<u64>, Vec<u8>]
//	  instruction_set               "Thumb2" for Cortex-M
//	  supports_native_64bit_access  bool
//	  core_type                     "armv6m" | "armv7m" | "armv7em" | "armv8m" (serde snake_case)
//	  fpu_support                   bool
//	  floating_point_register_count nil or an integer
//	RegisterValue, an enum: {"U32": n} | {"U64": n} | {"U128": n}
//	  (rmp_serde 1.x: a newtype variant is a one-entry map keyed by the
//	  variant's name; rmp_serde before 1.0 wrote [index, [n]], also read)
//	Range<u64>: {"start": n, "end": n} (or [start, end] in compact form)
//	Vec<u8>: an array of integers 0-255 (serde's sequence); a bin value
//	  is read too
//
// Cortex-M register ids are the DCRSR REGSEL numbers probe-rs uses
// (architecture/arm/core/registers/cortex_m.rs and armv8m.rs): 0-12
// r0-r12, 13 SP, 14 LR, 15 PC, 16 xPSR, 17 MSP, 18 PSP, 20 CONTROL,
// FAULTMASK, BASEPRI and PRIMASK packed in bytes 3..0, 33 FPSCR, 64-95
// S0-S31. Other ids (the ARMv8-M secure/non-secure banked stack pointers
// and limits) are not needed for a backtrace and are ignored.
const (
	probeRSExtra    = 20
	probeRSFPSCR    = 33
	probeRSS0       = 64
	probeRSMaxDepth = 32 // nesting skipped in unknown fields
)

// probeRSFields are the CoreDump field names in declaration order (the
// compact, array form lists them in this order).
var probeRSFields = [...]string{"registers", "data", "instruction_set", "supports_native_64bit_access", "core_type", "fpu_support", "floating_point_register_count"}

// probeRSCPU maps CoreType to the CPU a dump names: the architecture,
// which ProfileOf knows; probe-rs does not record the exact core.
var probeRSCPU = map[string]string{"armv6m": "armv6-m", "armv7m": "armv7-m", "armv7em": "armv7e-m", "armv8m": "armv8-m"}

// matchProbeRS accepts a MessagePack map whose first key is a CoreDump
// field name, or a short array (the compact form) that starts with a map
// of registers.
func matchProbeRS(data []byte) bool {
	if len(data) < 2 {
		return false
	}
	c := data[0]
	switch {
	case msgpcode.IsFixedMap(c) && c != msgpcode.FixedMapLow:
		key := data[1:]
		if !msgpcode.IsFixedString(key[0]) {
			return false
		}
		n := int(key[0] & msgpcode.FixedStrMask)
		if len(key) < 1+n {
			// Cut short in the first key: still ours if it is a prefix of a field name.
			n = len(key) - 1
		}
		for _, f := range probeRSFields {
			if n > 0 && len(f) >= n && string(key[1:1+n]) == f[:n] {
				return true
			}
		}
	case c >= msgpcode.FixedArrayLow|2 && c <= msgpcode.FixedArrayLow|7:
		m := data[1]
		return (msgpcode.IsFixedMap(m) || m == msgpcode.Map16 || m == msgpcode.Map32) && bytes.Contains(data[:min(len(data), 64)], []byte("\xa3U32"))
	}
	return false
}

// mpReader decodes MessagePack tokens from a dump held in memory with the
// msgpack module's token API; the reflection decoder is not used, so that
// no length the file declares is allocated before it is checked against
// the bytes that are there.
type mpReader struct {
	name string
	data []byte
	br   *bytes.Reader
	dec  *msgpack.Decoder
}

func newMPReader(name string, data []byte) *mpReader {
	br := bytes.NewReader(data)
	// bytes.Reader is an io.ByteScanner: the decoder reads from it
	// directly, without a buffer, so br's position is the decoder's.
	return &mpReader{name: name, data: data, br: br, dec: msgpack.NewDecoder(br)}
}

func (m *mpReader) off() int  { return len(m.data) - m.br.Len() }
func (m *mpReader) left() int { return m.br.Len() }

func (m *mpReader) seek(off int) { m.br.Seek(int64(off), io.SeekStart) }

func (m *mpReader) errAt(off int, format string, args ...any) *FormatError {
	return &FormatError{File: m.name, Offset: int64(off), Msg: fmt.Sprintf(format, args...)}
}

// describe names the MessagePack value that starts at off, for messages.
func (m *mpReader) describe(off int) string {
	if off >= len(m.data) {
		return "the end of the file"
	}
	c := m.data[off]
	kind := "a reserved byte"
	switch {
	case msgpcode.IsFixedNum(c) || c == msgpcode.Uint8 || c == msgpcode.Uint16 || c == msgpcode.Uint32 || c == msgpcode.Uint64 ||
		c == msgpcode.Int8 || c == msgpcode.Int16 || c == msgpcode.Int32 || c == msgpcode.Int64:
		kind = "an integer"
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		kind = "a map"
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		kind = "an array"
	case msgpcode.IsString(c):
		kind = "a string"
	case msgpcode.IsBin(c):
		kind = "binary data"
	case c == msgpcode.Nil:
		kind = "nil"
	case c == msgpcode.True || c == msgpcode.False:
		kind = "a boolean"
	case c == msgpcode.Float || c == msgpcode.Double:
		kind = "a floating-point number"
	case msgpcode.IsExt(c):
		kind = "an extension value"
	}
	return fmt.Sprintf("%s (byte 0x%02x)", kind, c)
}

// fail turns a decoder error at off into a *FormatError that says what
// was expected there, in words rather than the module's.
func (m *mpReader) fail(off int, err error, what string) *FormatError {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return m.errAt(off, "truncated: the file ends inside %s", what)
	}
	return m.errAt(off, "want %s, found %s", what, m.describe(off))
}

func (m *mpReader) peek() byte {
	if m.left() == 0 {
		return 0xc1 // never used by MessagePack: describes as the end
	}
	return m.data[m.off()]
}

// arrayLen reads an array header; each element takes at least one byte,
// so a length above what is left of the file is an error before anything
// is allocated for it.
func (m *mpReader) arrayLen(what string) (int, error) {
	off := m.off()
	c := m.peek()
	if !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32 {
		return 0, m.errAt(off, "want %s (an array), found %s", what, m.describe(off))
	}
	n, err := m.dec.DecodeArrayLen()
	if err != nil {
		return 0, m.fail(off, err, what)
	}
	if n > m.left() {
		return 0, m.errAt(off, "truncated: %s declares %d elements, but only %d bytes follow", what, n, m.left())
	}
	return n, nil
}

// mapLen reads a map header, bounded like arrayLen (an entry takes two
// bytes at least).
func (m *mpReader) mapLen(what string) (int, error) {
	off := m.off()
	c := m.peek()
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return 0, m.errAt(off, "want %s (a map), found %s", what, m.describe(off))
	}
	n, err := m.dec.DecodeMapLen()
	if err != nil {
		return 0, m.fail(off, err, what)
	}
	if n > m.left()/2 {
		return 0, m.errAt(off, "truncated: %s declares %d entries, but only %d bytes follow", what, n, m.left())
	}
	return n, nil
}

// raw reads a string or bin value and returns its bytes without copying.
func (m *mpReader) raw(what string) ([]byte, error) {
	off := m.off()
	c := m.peek()
	if !msgpcode.IsString(c) && !msgpcode.IsBin(c) {
		return nil, m.errAt(off, "want %s, found %s", what, m.describe(off))
	}
	n, err := m.dec.DecodeBytesLen()
	if err != nil {
		return nil, m.fail(off, err, what)
	}
	if n > m.left() {
		return nil, m.errAt(off, "truncated: %s declares %d bytes, but only %d follow", what, n, m.left())
	}
	start := m.off()
	m.seek(start + n)
	return m.data[start : start+n : start+n], nil
}

func (m *mpReader) str(what string) (string, error) {
	off := m.off()
	if !msgpcode.IsString(m.peek()) {
		return "", m.errAt(off, "want %s (a string), found %s", what, m.describe(off))
	}
	b, err := m.raw(what)
	return string(b), err
}

func (m *mpReader) uint(what string) (uint64, error) {
	off := m.off()
	c := m.peek()
	if !msgpcode.IsFixedNum(c) && (c < msgpcode.Uint8 || c > msgpcode.Int64) {
		return 0, m.errAt(off, "want %s (an integer), found %s", what, m.describe(off))
	}
	if msgpcode.IsFixedNum(c) && int8(c) < 0 || c >= msgpcode.Int8 && c <= msgpcode.Int64 {
		v, err := m.dec.DecodeInt64()
		if err != nil {
			return 0, m.fail(off, err, what)
		}
		if v < 0 {
			return 0, m.errAt(off, "%s is %d: want a value of 0 or more", what, v)
		}
		return uint64(v), nil
	}
	v, err := m.dec.DecodeUint64()
	if err != nil {
		return 0, m.fail(off, err, what)
	}
	return v, nil
}

func (m *mpReader) bool(what string) (bool, error) {
	off := m.off()
	if c := m.peek(); c != msgpcode.True && c != msgpcode.False {
		return false, m.errAt(off, "want %s (a boolean), found %s", what, m.describe(off))
	}
	v, err := m.dec.DecodeBool()
	if err != nil {
		return false, m.fail(off, err, what)
	}
	return v, nil
}

// skip passes over one value of a field faultline does not read, nested
// at most probeRSMaxDepth deep; strings and binary data are stepped over
// without being read.
func (m *mpReader) skip(what string, depth int) error {
	off := m.off()
	if depth > probeRSMaxDepth {
		return m.errAt(off, "%s is nested more than %d levels deep", what, probeRSMaxDepth)
	}
	c := m.peek()
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := m.arrayLen(what)
		if err != nil {
			return err
		}
		for range n {
			if err := m.skip(what, depth+1); err != nil {
				return err
			}
		}
		return nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := m.mapLen(what)
		if err != nil {
			return err
		}
		for range 2 * n {
			if err := m.skip(what, depth+1); err != nil {
				return err
			}
		}
		return nil
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		_, err := m.raw(what)
		return err
	case msgpcode.IsExt(c):
		_, n, err := m.dec.DecodeExtHeader()
		if err != nil {
			return m.fail(off, err, what)
		}
		if n > m.left() {
			return m.errAt(off, "truncated: %s declares %d bytes, but only %d follow", what, n, m.left())
		}
		m.seek(m.off() + n)
		return nil
	case c == 0xc1:
		return m.errAt(off, "want %s, found %s", what, m.describe(off))
	}
	if err := m.dec.Skip(); err != nil { // a scalar
		return m.fail(off, err, what)
	}
	return nil
}

// probeRSDump is what parseProbeRS collects before it builds the Dump.
type probeRSDump struct {
	regs      map[uint16]uint32
	regsSeen  bool
	dataSeen  bool
	isa       string
	coreType  string
	fpu       bool
	fpuSeen   bool
	fpRegs    int
	fpRegsSet bool
}

// parseProbeRS decodes a probe-rs coredump: registers by probe-rs's
// Cortex-M register ids, memory ranges as regions, the core type as the
// CPU (its architecture). A memory range whose byte list is shorter than
// the range says is kept as far as it goes, with a warning.
func parseProbeRS(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	m := newMPReader(name, data)
	d := &Dump{Path: name, Format: FormatProbeRS}
	p := &probeRSDump{regs: map[uint16]uint32{}}
	set := &regionSet{r: &binReader{name: name, data: data}}
	field := func(key string) error {
		switch key {
		case "registers":
			p.regsSeen = true
			return m.probeRSRegisters(p, d)
		case "data":
			p.dataSeen = true
			return m.probeRSData(set, d)
		case "instruction_set":
			s, err := m.probeRSUnit("instruction_set")
			p.isa = s
			return err
		case "core_type":
			s, err := m.probeRSUnit("core_type")
			p.coreType = s
			return err
		case "fpu_support":
			v, err := m.bool("fpu_support")
			p.fpu, p.fpuSeen = v, true
			return err
		case "supports_native_64bit_access":
			_, err := m.bool(key)
			return err
		case "floating_point_register_count":
			if m.peek() == msgpcode.Nil {
				m.seek(m.off() + 1)
				return nil
			}
			v, err := m.uint(key)
			p.fpRegs, p.fpRegsSet = int(min(v, math.MaxInt32)), true
			return err
		}
		return m.skip("the field "+key, 0)
	}
	off := m.off()
	switch c := m.peek(); {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := m.mapLen("the CoreDump struct")
		if err != nil {
			return nil, err
		}
		for range n {
			koff := m.off()
			key, err := m.str("a CoreDump field name")
			if err != nil {
				return nil, err
			}
			if len(key) > 64 {
				return nil, m.errAt(koff, "a CoreDump field name of %d bytes: want one of %q", len(key), probeRSFields)
			}
			if err := field(key); err != nil {
				return nil, err
			}
		}
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := m.arrayLen("the CoreDump struct")
		if err != nil {
			return nil, err
		}
		for i := range n {
			key := fmt.Sprintf("field %d", i)
			if i < len(probeRSFields) {
				key = probeRSFields[i]
			}
			if err := field(key); err != nil {
				return nil, err
			}
		}
	default:
		return nil, m.errAt(off, "want a probe-rs CoreDump (a MessagePack map or array), found %s", m.describe(off))
	}
	if m.left() > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d bytes after the coredump's end (offset %d) were ignored", m.left(), m.off()))
	}
	switch {
	case !p.regsSeen:
		return nil, m.errAt(-1, "no registers field: a probe-rs coredump without registers cannot be decoded")
	case !p.dataSeen:
		d.Warnings = append(d.Warnings, "the coredump has no data field: no memory was dumped")
	}
	if p.isa != "" && p.isa != "Thumb2" {
		return nil, m.errAt(-1, "instruction set %q: faultline reads Cortex-M coredumps (Thumb2)", p.isa)
	}
	if p.coreType != "" {
		cpu, ok := probeRSCPU[p.coreType]
		if !ok {
			return nil, m.errAt(-1, "core type %q: faultline reads Cortex-M coredumps (armv6m, armv7m, armv7em, armv8m)", p.coreType)
		}
		d.CPU = cpu
	}
	if p.fpuSeen {
		fpu := p.fpu
		d.FPU = &fpu
	}
	if len(p.regs) == 0 {
		return nil, m.errAt(-1, "the registers map holds no register: a coredump without registers cannot be decoded")
	}
	for id, v := range p.regs {
		switch {
		case id <= 15:
			d.Regs.Set(unwinders.R0+unwinders.Reg(id), v) // r0-r12, SP, LR, PC
		case id == 16:
			d.Regs.Set(unwinders.XPSR, v)
		case id == 17:
			d.Regs.Set(unwinders.MSP, v)
		case id == 18:
			d.Regs.Set(unwinders.PSP, v)
		case id == probeRSExtra:
			d.Regs.Set(unwinders.CONTROL, v>>24)
			d.Regs.Set(unwinders.FAULTMASK, v>>16&0xff)
			d.Regs.Set(unwinders.BASEPRI, v>>8&0xff)
			d.Regs.Set(unwinders.PRIMASK, v&0xff)
		case id == probeRSFPSCR:
			d.Regs.Set(unwinders.FPSCR, v)
		case id >= probeRSS0 && id < probeRSS0+32:
			d.Regs.Set(unwinders.S(int(id-probeRSS0)), v)
		}
	}
	if _, ok := d.Regs.Get(unwinders.PC); !ok {
		d.Warnings = append(d.Warnings, "the coredump holds no PC (register id 15)")
	}
	if err := set.overlaps(); err != nil {
		return nil, err
	}
	d.Memory = set.regions
	if err := d.faultFromMemory(fault.SCB{}); err != nil {
		return nil, err
	}
	return d, nil
}

// probeRSUnit reads a unit enum variant: a string (rmp_serde 1.x), or
// [index, []] (before 1.0), which names no variant and is refused.
func (m *mpReader) probeRSUnit(what string) (string, error) {
	off := m.off()
	if !msgpcode.IsString(m.peek()) {
		return "", m.errAt(off, "want %s as a variant name (a string, as rmp_serde 1.x writes it), found %s", what, m.describe(off))
	}
	b, err := m.raw(what)
	if err != nil {
		return "", err
	}
	if len(b) > 32 {
		return "", m.errAt(off, "%s of %d bytes: want a variant name", what, len(b))
	}
	return string(b), nil
}

// probeRSRegisters reads the registers map.
func (m *mpReader) probeRSRegisters(p *probeRSDump, d *Dump) error {
	n, err := m.mapLen("the registers map")
	if err != nil {
		return err
	}
	for range n {
		koff := m.off()
		id, err := m.uint("a register id")
		if err != nil {
			return err
		}
		if id > math.MaxUint16 {
			return m.errAt(koff, "register id %d: want a 16-bit id", id)
		}
		voff := m.off()
		v, ok, err := m.probeRSValue(id)
		if err != nil {
			return err
		}
		if !ok {
			d.Warnings = append(d.Warnings, fmt.Sprintf("register id %d (offset %d) does not fit in 32 bits: ignored", id, voff))
			continue
		}
		if _, dup := p.regs[uint16(id)]; dup {
			d.Warnings = append(d.Warnings, fmt.Sprintf("register id %d is listed twice (offset %d): the last value is used", id, koff))
		}
		p.regs[uint16(id)] = v
	}
	return nil
}

// probeRSValue reads a RegisterValue; ok is false when the value does
// not fit in 32 bits.
func (m *mpReader) probeRSValue(id uint64) (v uint32, ok bool, err error) {
	what := fmt.Sprintf("the value of register id %d", id)
	off := m.off()
	var variant string
	switch c := m.peek(); {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := m.mapLen(what)
		if err != nil {
			return 0, false, err
		}
		if n != 1 {
			return 0, false, m.errAt(off, "%s is a map of %d entries: want {\"U32\": value} (one entry)", what, n)
		}
		if variant, err = m.probeRSUnit(what + "'s variant"); err != nil {
			return 0, false, err
		}
	case msgpcode.IsFixedArray(c):
		// rmp_serde before 1.0: [variant index, [value]].
		if n, err := m.arrayLen(what); err != nil {
			return 0, false, err
		} else if n != 2 {
			return 0, false, m.errAt(off, "%s is an array of %d: want [variant, [value]]", what, n)
		}
		idx, err := m.uint(what + "'s variant index")
		if err != nil {
			return 0, false, err
		}
		if idx > 2 {
			return 0, false, m.errAt(off, "%s has variant index %d: want 0 (U32), 1 (U64) or 2 (U128)", what, idx)
		}
		variant = [...]string{"U32", "U64", "U128"}[idx]
		if n, err := m.arrayLen(what); err != nil {
			return 0, false, err
		} else if n != 1 {
			return 0, false, m.errAt(off, "%s holds %d values: want 1", what, n)
		}
	default:
		return 0, false, m.errAt(off, "want %s ({\"U32\": value}), found %s", what, m.describe(off))
	}
	voff := m.off()
	switch variant {
	case "U32", "U64":
		x, err := m.uint(what)
		if err != nil {
			return 0, false, err
		}
		if variant == "U32" && x > math.MaxUint32 {
			return 0, false, m.errAt(voff, "%s is U32 but holds 0x%x", what, x)
		}
		return uint32(x), x <= math.MaxUint32, nil
	case "U128":
		if msgpcode.IsBin(m.peek()) {
			b, err := m.raw(what)
			if err != nil {
				return 0, false, err
			}
			if len(b) != 16 {
				return 0, false, m.errAt(voff, "%s is U128 as %d bytes: want 16", what, len(b))
			}
			for _, x := range b[:12] {
				if x != 0 {
					return 0, false, nil
				}
			}
			return uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15]), true, nil
		}
		x, err := m.uint(what)
		if err != nil {
			return 0, false, err
		}
		return uint32(x), x <= math.MaxUint32, nil
	}
	return 0, false, m.errAt(off, "%s has variant %q: want U32, U64 or U128", what, variant)
}

// probeRSData reads the memory ranges.
func (m *mpReader) probeRSData(set *regionSet, d *Dump) error {
	n, err := m.arrayLen("the data array (memory ranges)")
	if err != nil {
		return err
	}
	for i := range n {
		hdr := m.off()
		what := fmt.Sprintf("memory range %d", i)
		if k, err := m.arrayLen(what + " ([range, bytes])"); err != nil {
			return err
		} else if k != 2 {
			return m.errAt(hdr, "%s is an array of %d: want [range, bytes]", what, k)
		}
		start, end, err := m.probeRSRange(what)
		if err != nil {
			return err
		}
		if end < start {
			return m.errAt(hdr, "%s ends (0x%x) before it starts (0x%x)", what, end, start)
		}
		if start > math.MaxUint32 {
			return m.errAt(hdr, "%s starts at 0x%x: want a 32-bit address", what, start)
		}
		if err := set.checkSize(hdr, uint32(start), end-start, what); err != nil {
			return err
		}
		b, err := m.probeRSBytes(what)
		if err != nil {
			return err
		}
		if uint64(len(b)) != end-start {
			if uint64(len(b)) < end-start {
				d.Warnings = append(d.Warnings, fmt.Sprintf("%s 0x%08x-0x%08x holds %d of its %d bytes: memory from 0x%08x on is missing", what, start, end, len(b), end-start, start+uint64(len(b))))
			} else {
				d.Warnings = append(d.Warnings, fmt.Sprintf("%s 0x%08x-0x%08x holds %d bytes, more than its %d: the bytes past its end were ignored", what, start, end, len(b), end-start))
				b = b[:end-start]
			}
		}
		set.add(hdr, regionName(FormatProbeRS, uint32(start)), uint32(start), b)
	}
	return nil
}

// probeRSRange reads a Range<u64>: {"start", "end"} or [start, end].
func (m *mpReader) probeRSRange(what string) (start, end uint64, err error) {
	what += "'s address range"
	off := m.off()
	if msgpcode.IsFixedArray(m.peek()) {
		n, err := m.arrayLen(what)
		if err != nil {
			return 0, 0, err
		}
		if n != 2 {
			return 0, 0, m.errAt(off, "%s is an array of %d: want [start, end]", what, n)
		}
		if start, err = m.uint(what + " start"); err != nil {
			return 0, 0, err
		}
		end, err = m.uint(what + " end")
		return start, end, err
	}
	n, err := m.mapLen(what)
	if err != nil {
		return 0, 0, err
	}
	var gotS, gotE bool
	for range n {
		koff := m.off()
		k, err := m.str(what + " field name")
		if err != nil {
			return 0, 0, err
		}
		switch k {
		case "start":
			start, err = m.uint(what + " start")
			gotS = true
		case "end":
			end, err = m.uint(what + " end")
			gotE = true
		default:
			return 0, 0, m.errAt(koff, "%s has a field %.40q: want start and end", what, k)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if !gotS || !gotE {
		return 0, 0, m.errAt(off, "%s lacks its start or end", what)
	}
	return start, end, nil
}

// probeRSBytes reads a Vec<u8>: an array of integers 0-255, or bin.
func (m *mpReader) probeRSBytes(what string) ([]byte, error) {
	what += "'s bytes"
	if msgpcode.IsBin(m.peek()) {
		return m.raw(what)
	}
	n, err := m.arrayLen(what)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n) // n <= the bytes left: bounded by the file
	pos := m.off()
	for i := range b {
		// Fast path for the two forms rmp_serde writes a u8 in.
		if pos < len(m.data) && m.data[pos] < 0x80 {
			b[i] = m.data[pos]
			pos++
			continue
		}
		if pos+1 < len(m.data) && m.data[pos] == msgpcode.Uint8 {
			b[i] = m.data[pos+1]
			pos += 2
			continue
		}
		m.seek(pos)
		v, err := m.uint(fmt.Sprintf("%s, element %d", what, i))
		if err != nil {
			return nil, err
		}
		if v > 255 {
			return nil, m.errAt(pos, "%s, element %d, is %d: want a byte (0-255)", what, i, v)
		}
		b[i] = byte(v)
		pos = m.off()
	}
	m.seek(pos)
	return b, nil
}
