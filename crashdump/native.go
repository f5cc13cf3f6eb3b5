package crashdump

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// The native format, faultline.dump/1 (design.md):
//
//	{
//	  "schema":    "faultline.dump/1",                      required
//	  "cpu":       "cortex-m4",                             optional
//	  "build_id":  "3f1c...",                               optional; the firmware's GNU build ID in hex
//	  "registers": {"r0": "0x0", "pc": 516, ...},           optional; missing registers are unknown
//	  "fault":     {"cfsr": "0x8200", "hfsr": ..., ...},    optional; overrides the SCB bytes in memory
//	  "memory":    [{"address": "0x20000000", "file": "ram.bin", "size": 65536},
//	                {"address": "0xe000ed28", "hex": "00820000"}],
//	  "lockup":    {"fault": "BusFault", "pc": "0x48", "detail": "..."},  optional; the core locked up
//	  "truth":     {"source": "...", "frames": [...], "stop": "...",  optional
//	                "threads": [{"frame": "0x...", "sp": "0x...", "frames": [...]}]}  optional
//	}
//
// Numbers are "0x" hex strings or JSON integers. A register or fault value
// of null is unknown, like a missing one. Register names are those of
// unwinders.ParseReg; fault names those of fault.Names, in any case. Each
// memory entry has exactly one of "file" (a path relative to the manifest's
// directory, slash-separated, that must stay inside it) or "hex" (the bytes
// as hex digits), and an optional "size", the region's length in bytes,
// which must then match. Unknown keys in "registers", "fault" and memory
// entries are errors; unknown keys at the top level and in "truth" are
// ignored, for forward compatibility.

// matchNative accepts anything that starts like a JSON object, so that a
// broken manifest gets a JSON error rather than "unknown format".
func matchNative(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// parseNative decodes a faultline.dump/1 manifest. The fast path
// (nativefast.go) decodes a well-formed manifest in one pass; anything it
// does not accept, the precise reader below decodes again, so every error
// comes from the precise reader with its field path and offset. The
// region files the fast path read are handed to the precise reader
// instead of being read twice.
func parseNative(data []byte, name string, readFile func(rel string) ([]byte, error)) (*Dump, error) {
	var reads readLog
	if d, ok := parseNativeFast(data, name, readFile, &reads); ok {
		return d, nil
	}
	return parseNativePrecise(data, name, reads.replay(readFile))
}

// parseNativePrecise decodes a faultline.dump/1 manifest value by value
// (jsonnode.go), reporting the first problem with its field path and
// byte offset.
func parseNativePrecise(data []byte, name string, readFile func(rel string) ([]byte, error)) (*Dump, error) {
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &FormatError{File: name, Offset: se.Offset, Msg: "invalid JSON: " + se.Error(), Err: err}
		}
		return nil, &FormatError{File: name, Offset: -1, Msg: "invalid JSON: " + err.Error(), Err: err}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	root := node{raw: bytes.TrimRight(trimmed, " \t\r\n"), off: int64(len(data) - len(trimmed))}
	p := &parser{name: name}
	top, err := p.members(root)
	if err != nil {
		return nil, err
	}
	get := func(key string) (node, bool) {
		for _, m := range top {
			if m.key == key && !m.val.isNull() {
				return m.val, true
			}
		}
		return node{path: key, off: -1}, false
	}

	d := &Dump{Path: name, Format: FormatNative}
	n, ok := get("schema")
	if !ok {
		return nil, p.errf(n, "missing: want %q", FormatNative)
	}
	schema, err := p.str(n)
	if err != nil {
		return nil, err
	}
	if schema != FormatNative {
		return nil, p.errf(n, "%s is not supported: want %q", quoteShort(schema), FormatNative)
	}
	if n, ok := get("cpu"); ok {
		if d.CPU, err = p.str(n); err != nil {
			return nil, err
		}
		if d.CPU != "" && unwinders.ProfileOf(d.CPU) == unwinders.ProfileUnknown {
			return nil, p.errf(n, "%s is not a Cortex-M core: want one such as cortex-m0plus, cortex-m3, cortex-m4, cortex-m7 or cortex-m33", quoteShort(d.CPU))
		}
	}
	if n, ok := get("build_id"); ok {
		v, err := p.str(n)
		if err != nil {
			return nil, err
		}
		if d.BuildID, ok = NormalizeBuildID(v); !ok {
			return nil, p.errf(n, "%s: want the GNU build ID as hex digits (2 to 128)", quoteShort(v))
		}
	}
	if n, ok := get("registers"); ok {
		if err := p.registers(n, &d.Regs); err != nil {
			return nil, err
		}
	}
	var explicit fault.SCB
	if n, ok := get("fault"); ok {
		if explicit, err = p.fault(n); err != nil {
			return nil, err
		}
	}
	if n, ok := get("memory"); ok {
		if d.Memory, err = p.memory(n, readFile); err != nil {
			return nil, err
		}
		d.Warnings = append(d.Warnings, p.warnings...)
	}
	if n, ok := get("truth"); ok {
		if d.Truth, err = p.truth(n); err != nil {
			return nil, err
		}
	}
	if n, ok := get("lockup"); ok {
		if d.Lockup, err = p.lockup(n); err != nil {
			return nil, err
		}
	}
	im, err := d.Image()
	if err != nil { // p.memory has checked overlaps already
		return nil, &FormatError{File: name, Field: "memory", Offset: -1, Msg: err.Error(), Err: err}
	}
	d.Fault = fault.FromMemory(im).Merge(explicit)
	return d, nil
}

// registers decodes the "registers" object.
func (p *parser) registers(n node, regs *unwinders.Registers) error {
	ms, err := p.members(n)
	if err != nil {
		return err
	}
	first := make(map[unwinders.Reg]string)
	for _, m := range ms {
		reg, ok := unwinders.ParseReg(m.key)
		if !ok {
			return p.errf(m.val, "unknown register %s: want r0-r12, sp, lr, pc, xpsr, msp, psp, control, primask, basepri, faultmask, fpscr, s0-s31, msp_s, psp_s, msp_ns, psp_ns or control_ns", quoteShort(m.key))
		}
		if k, dup := first[reg]; dup {
			return p.errf(m.val, "same register as %s", n.field(k))
		}
		first[reg] = m.key
		if m.val.isNull() {
			continue
		}
		v, err := p.u32(m.val)
		if err != nil {
			return err
		}
		regs.Set(reg, v)
	}
	return nil
}

// fault decodes the "fault" object.
func (p *parser) fault(n node) (fault.SCB, error) {
	var scb fault.SCB
	ms, err := p.members(n)
	if err != nil {
		return scb, err
	}
	first := make(map[string]string)
	for _, m := range ms {
		f := scb.Field(m.key)
		if f == nil {
			return scb, p.errf(m.val, "unknown fault register %s: want one of %s", quoteShort(m.key), strings.ToLower(strings.Join(fault.Names(), ", ")))
		}
		up := strings.ToUpper(m.key)
		if k, dup := first[up]; dup {
			return scb, p.errf(m.val, "same register as %s", n.field(k))
		}
		first[up] = m.key
		if m.val.isNull() {
			continue
		}
		v, err := p.u32(m.val)
		if err != nil {
			return scb, err
		}
		*f = fault.Known(v)
	}
	return scb, nil
}

// memory decodes the "memory" array and reads the region files.
func (p *parser) memory(n node, readFile func(rel string) ([]byte, error)) ([]unwinders.Region, error) {
	elems, err := p.elements(n)
	if err != nil {
		return nil, err
	}
	var (
		regions []unwinders.Region
		nodes   []node
	)
	for _, e := range elems {
		r, err := p.region(e, readFile)
		if err != nil {
			return nil, err
		}
		if len(r.Data) == 0 {
			continue // a missing region file: p.region warned
		}
		regions = append(regions, r)
		nodes = append(nodes, e)
	}
	// Overlaps, reported against both entries in document order.
	if a, b, ok := overlap(regions); ok {
		return nil, p.errf(nodes[b], "region %s (0x%08x-0x%08x) overlaps %s, region %s (0x%08x-0x%08x)",
			regions[b].Name, regions[b].Addr, regions[b].End(), nodes[a].path, regions[a].Name, regions[a].Addr, regions[a].End())
	}
	return regions, nil
}

// overlap finds two regions that overlap: the pair that comes first in
// address order, as indexes a < b in document order.
func overlap(regions []unwinders.Region) (a, b int, found bool) {
	switch len(regions) {
	case 0, 1:
		return 0, 0, false
	case 2: // the usual dump: RAM and the SCB block
		if regions[1].Addr < regions[0].Addr {
			if uint64(regions[0].Addr) < regions[1].End() {
				return 0, 1, true
			}
		} else if uint64(regions[1].Addr) < regions[0].End() {
			return 0, 1, true
		}
		return 0, 0, false
	}
	idx := make([]int, len(regions))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return regions[idx[a]].Addr < regions[idx[b]].Addr })
	for k := 1; k < len(idx); k++ {
		a, b := idx[k-1], idx[k]
		if uint64(regions[b].Addr) < regions[a].End() {
			return min(a, b), max(a, b), true
		}
	}
	return 0, 0, false
}

// region decodes one memory entry. What the region files may hold in all
// is readFile's to bound (Load: MaxTotalSize or LoadOptions.MaxMemory of
// read files; mapped files cost only the pages touched); hex regions are
// bounded by MaxManifestSize.
func (p *parser) region(e node, readFile func(rel string) ([]byte, error)) (unwinders.Region, error) {
	var r unwinders.Region
	ms, err := p.members(e)
	if err != nil {
		return r, err
	}
	var addr, file, hexv, size *node
	for i := range ms {
		m := &ms[i]
		switch m.key {
		case "address":
			addr = &m.val
		case "file":
			file = &m.val
		case "hex":
			hexv = &m.val
		case "size":
			size = &m.val
		default:
			return r, p.errf(m.val, "unknown key: want address, file, hex or size")
		}
	}
	if addr == nil {
		return r, p.errf(e, "no address")
	}
	a, err := p.u32(*addr)
	if err != nil {
		return r, err
	}
	r.Addr = a
	var want int64 = -1
	if size != nil {
		v, err := p.number(*size, 1<<32)
		if err != nil {
			return r, err
		}
		if v > MaxRegionSize {
			return r, &FormatError{File: p.name, Field: size.path, Offset: size.off, Err: ErrTooLarge,
				Msg: fmt.Sprintf("%d bytes: larger than the %d byte region limit", v, MaxRegionSize)}
		}
		want = int64(v)
	}
	switch {
	case file != nil && hexv != nil:
		return r, p.errf(e, `has both "file" and "hex": want exactly one`)
	case file == nil && hexv == nil:
		return r, p.errf(e, `has neither "file" nor "hex": want exactly one`)
	case file != nil:
		rel, err := p.str(*file)
		if err != nil {
			return r, err
		}
		if err := p.checkRel(*file, rel); err != nil {
			return r, err
		}
		if readFile == nil {
			return r, p.errf(*file, "cannot read %s: no directory to read region files from", quoteShort(rel))
		}
		b, err := readFile(rel)
		if errors.Is(err, fs.ErrNotExist) {
			// A dump whose region file went missing is decoded without
			// that memory.
			what := fmt.Sprintf("memory from 0x%08x on, size not given", a)
			if want > 0 {
				what = fmt.Sprintf("0x%08x-0x%08x", a, uint64(a)+uint64(want))
			}
			p.warnings = append(p.warnings, fmt.Sprintf("%s: region file %s (%s) is missing: that memory is not in the dump", e.path, quoteShort(rel), what))
			r.Name = rel
			return r, nil
		}
		if err != nil {
			fe := p.errf(*file, "cannot read %s: %s", quoteShort(rel), fsReason(err))
			fe.Err = err
			return r, fe
		}
		r.Name, r.Data = rel, b
		if n := int64(len(b)); want >= 0 && n < want && uint64(a)+uint64(want) <= 1<<32 {
			// Cut short: decoded as far as it goes.
			p.warnings = append(p.warnings, fmt.Sprintf("%s: region file %s holds %d of its %d bytes: memory 0x%08x-0x%08x is missing", e.path, quoteShort(rel), n, want, uint64(a)+uint64(n), uint64(a)+uint64(want)))
			if n == 0 {
				return r, nil
			}
			want = n
		}
	default:
		s, err := p.str(*hexv)
		if err != nil {
			return r, err
		}
		if len(s)/2 > MaxRegionSize {
			return r, &FormatError{File: p.name, Field: hexv.path, Offset: hexv.off, Err: ErrTooLarge,
				Msg: fmt.Sprintf("%d bytes: larger than the %d byte region limit", len(s)/2, MaxRegionSize)}
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			var ib hex.InvalidByteError
			if errors.As(err, &ib) {
				return r, p.errf(*hexv, "invalid hex digit %q at position %d", rune(ib), strings.IndexByte(s, byte(ib)))
			}
			return r, p.errf(*hexv, "odd number of hex digits (%d): want two per byte", len(s))
		}
		r.Name, r.Data = fmt.Sprintf("hex@0x%08x", a), b
	}
	n := int64(len(r.Data))
	switch {
	case n == 0:
		return r, p.errf(e, "region %s is empty", r.Name)
	case want >= 0 && n < want:
		return r, p.errf(e, "region %s is short: %d bytes, size says %d", r.Name, n, want)
	case want >= 0 && n > want:
		return r, p.errf(e, "region %s is long: %d bytes, size says %d", r.Name, n, want)
	case n > MaxRegionSize:
		return r, &FormatError{File: p.name, Field: e.path, Offset: e.off, Err: ErrTooLarge,
			Msg: fmt.Sprintf("region %s is %d bytes: larger than the %d byte region limit", r.Name, n, MaxRegionSize)}
	case r.End() > 1<<32:
		return r, p.errf(e, "region %s at 0x%08x with %d bytes runs past 4 GiB (ends at 0x%x)", r.Name, r.Addr, n, r.End())
	}
	return r, nil
}

// checkRel rejects region file paths that are empty, absolute or escape the
// manifest's directory: a dump is untrusted input.
func (p *parser) checkRel(n node, rel string) error {
	switch relProblem(rel) {
	case relEmpty:
		return p.errf(n, "empty path: want a file name relative to the manifest's directory")
	case relAbsolute:
		return p.errf(n, "%s is an absolute path: want a path relative to the manifest's directory", quoteShort(rel))
	case relEscapes:
		return p.errf(n, "%s escapes the manifest's directory: want a path inside it", quoteShort(rel))
	}
	return nil
}

// What is wrong with a region file path (checkRel).
const (
	relOK = iota
	relEmpty
	relAbsolute
	relEscapes
)

func relProblem(rel string) int {
	native := filepath.FromSlash(rel)
	switch {
	case rel == "":
		return relEmpty
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(native) || filepath.VolumeName(native) != "":
		return relAbsolute
	case strings.IndexByte(rel, 0) >= 0 || !filepath.IsLocal(native):
		return relEscapes
	}
	return relOK
}

// truth decodes the "truth" object.
func (p *parser) truth(n node) (*Truth, error) {
	ms, err := p.members(n)
	if err != nil {
		return nil, err
	}
	t := new(Truth)
	var haveSource, haveFrames bool
	for _, m := range ms {
		switch m.key {
		case "source":
			if t.Source, err = p.str(m.val); err != nil {
				return nil, err
			}
			haveSource = true
		case "stop":
			if t.Stop, err = p.optStr(m.val); err != nil {
				return nil, err
			}
		case "frames":
			elems, err := p.elements(m.val)
			if err != nil {
				return nil, err
			}
			for _, e := range elems {
				f, err := p.truthFrame(e)
				if err != nil {
					return nil, err
				}
				t.Frames = append(t.Frames, f)
			}
			haveFrames = true
		case "threads":
			elems, err := p.elements(m.val)
			if err != nil {
				return nil, err
			}
			t.Threads = make([]ThreadTruth, 0, len(elems))
			for _, e := range elems {
				th, err := p.threadTruth(e)
				if err != nil {
					return nil, err
				}
				t.Threads = append(t.Threads, th)
			}
		}
	}
	if !haveSource {
		return nil, p.errf(node{path: n.field("source"), off: -1}, "missing: want a string naming what produced the truth")
	}
	if !haveFrames {
		return nil, p.errf(node{path: n.field("frames"), off: -1}, "missing: want an array of frames")
	}
	return t, nil
}

// threadTruth decodes one element of truth.threads: "frame" (required),
// "sp" and "frames" (required).
func (p *parser) threadTruth(e node) (ThreadTruth, error) {
	var th ThreadTruth
	ms, err := p.members(e)
	if err != nil {
		return th, err
	}
	var haveFrame, haveFrames bool
	for _, m := range ms {
		switch m.key {
		case "frame":
			if th.Frame, err = p.u32(m.val); err != nil {
				return th, err
			}
			haveFrame = true
		case "sp":
			if m.val.isNull() {
				continue
			}
			if th.SP, err = p.u32(m.val); err != nil {
				return th, err
			}
			th.HasSP = true
		case "frames":
			elems, err := p.elements(m.val)
			if err != nil {
				return th, err
			}
			th.Frames = make([]TruthFrame, 0, len(elems))
			for _, fe := range elems {
				f, err := p.truthFrame(fe)
				if err != nil {
					return th, err
				}
				th.Frames = append(th.Frames, f)
			}
			haveFrames = true
		}
	}
	if !haveFrame {
		return th, p.errf(node{path: e.field("frame"), off: -1}, "missing: want the address of the thread's exception frame")
	}
	if !haveFrames {
		return th, p.errf(node{path: e.field("frames"), off: -1}, "missing: want an array of frames")
	}
	return th, nil
}

// truthFrame decodes one element of truth.frames.
// lockup decodes "lockup": an object whose keys are all optional ("fault",
// "pc", "detail"); unknown keys are ignored, as in "truth".
func (p *parser) lockup(n node) (*fault.LockupInfo, error) {
	ms, err := p.members(n)
	if err != nil {
		return nil, err
	}
	l := new(fault.LockupInfo)
	for _, m := range ms {
		switch m.key {
		case "fault":
			if l.Fault, err = p.optStr(m.val); err != nil {
				return nil, err
			}
		case "detail":
			if l.Detail, err = p.optStr(m.val); err != nil {
				return nil, err
			}
		case "pc":
			if m.val.isNull() {
				continue
			}
			if l.PC, err = p.u32(m.val); err != nil {
				return nil, err
			}
			l.HasPC = true
		}
	}
	return l, nil
}

func (p *parser) truthFrame(e node) (TruthFrame, error) {
	var f TruthFrame
	ms, err := p.members(e)
	if err != nil {
		return f, err
	}
	for _, m := range ms {
		switch m.key {
		case "pc":
			if m.val.isNull() {
				continue
			}
			if f.PC, err = p.u32(m.val); err != nil {
				return f, err
			}
			f.HasPC = true
		case "function":
			f.Function, err = p.optStr(m.val)
		case "file":
			f.File, err = p.optStr(m.val)
		case "kind":
			f.Kind, err = p.optStr(m.val)
			switch f.Kind {
			case "", "exception":
			case "normal":
				f.Kind = ""
			default:
				if err == nil {
					err = p.errf(m.val, "%s is not a frame kind: want \"normal\" or \"exception\"", quoteShort(f.Kind))
				}
			}
		case "line":
			if m.val.isNull() {
				continue
			}
			var v uint64
			v, err = p.number(m.val, 1<<31-1)
			f.Line = int(v)
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}
