package client

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Register is one register of the target description.
type Register struct {
	Name    string // lower case, as the description names it
	Num     int    // the remote register number (p, and the order of g)
	Bits    int    // bitsize
	Feature string // the feature that holds it
}

// Description is the target description: its registers by number.
type Description struct {
	Registers []Register // in register-number order
	Features  []string   // feature names, in order
	Annexes   []string   // the annexes read (target.xml and its includes)
}

// Lookup returns the register named name.
func (d *Description) Lookup(name string) (Register, bool) {
	for _, r := range d.Registers {
		if r.Name == name {
			return r, true
		}
	}
	return Register{}, false
}

// Bounds of a target description.
const (
	maxXML      = 1 << 20 // bytes of one annex
	maxAnnexes  = 64      // annexes, includes counted
	maxRegNum   = 4096    // highest register number accepted
	maxRegBits  = 512     // widest register accepted
	maxRegCount = 1024
)

type xmlInclude struct {
	Href string `xml:"href,attr"`
}

type xmlFeature struct {
	Name     string       `xml:"name,attr"`
	Regs     []xmlReg     `xml:"reg"`
	Includes []xmlInclude `xml:"include"`
}

type xmlReg struct {
	Name    string `xml:"name,attr"`
	Bitsize string `xml:"bitsize,attr"`
	Regnum  string `xml:"regnum,attr"`
}

// TargetDescription reads the target description (qXfer:features:read
// of target.xml), following xi:include annexes. Registers without a
// regnum number on from the previous register, as GDB numbers them.
func (c *Client) TargetDescription() (*Description, error) {
	d := &Description{}
	next := 0
	seen := map[string]bool{}
	var walk func(annex string, depth int) error
	walk = func(annex string, depth int) error {
		if seen[annex] {
			return nil
		}
		if len(seen) >= maxAnnexes || depth > 8 {
			return fmt.Errorf("%s: target description: more than %d annexes or includes nested deeper than 8", c.Remote, maxAnnexes)
		}
		seen[annex] = true
		d.Annexes = append(d.Annexes, annex)
		data, err := c.Xfer("features", annex, maxXML)
		if err != nil {
			return err
		}
		return parseAnnex(d, data, annex, &next, func(href string) error { return walk(href, depth+1) })
	}
	if err := walk("target.xml", 0); err != nil {
		return nil, err
	}
	sort.SliceStable(d.Registers, func(i, j int) bool { return d.Registers[i].Num < d.Registers[j].Num })
	return d, nil
}

// parseAnnex adds the registers of one annex to d; include is called for
// each xi:include, in document order (at the top level before the
// features, within a feature in its place).
func parseAnnex(d *Description, data []byte, annex string, next *int, include func(string) error) error {
	// A feature annex may be a bare <feature> document.
	var root struct {
		XMLName  xml.Name
		Name     string       `xml:"name,attr"`
		Includes []xmlInclude `xml:"include"`
		Features []xmlFeature `xml:"feature"`
		Regs     []xmlReg     `xml:"reg"`
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	if err := dec.Decode(&root); err != nil {
		return fmt.Errorf("target description %s: %v", annex, err)
	}
	feats := root.Features
	switch root.XMLName.Local {
	case "feature":
		feats = []xmlFeature{{Name: root.Name, Regs: root.Regs, Includes: root.Includes}}
	case "target":
		for _, in := range root.Includes {
			if err := include(in.Href); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("target description %s: root element <%s>: want <target> or <feature>", annex, root.XMLName.Local)
	}
	for _, f := range feats {
		if f.Name != "" {
			d.Features = append(d.Features, f.Name)
		}
		for _, in := range f.Includes {
			if err := include(in.Href); err != nil {
				return err
			}
		}
		for _, r := range f.Regs {
			num := *next
			if r.Regnum != "" {
				n, err := strconv.Atoi(r.Regnum)
				if err != nil || n < 0 || n > maxRegNum {
					return fmt.Errorf("target description %s: register %s: regnum %q: want 0..%d", annex, r.Name, r.Regnum, maxRegNum)
				}
				num = n
			}
			bits, err := strconv.Atoi(r.Bitsize)
			if err != nil || bits <= 0 || bits > maxRegBits || bits%8 != 0 {
				return fmt.Errorf("target description %s: register %s: bitsize %q: want a multiple of 8 up to %d", annex, r.Name, r.Bitsize, maxRegBits)
			}
			if len(d.Registers) >= maxRegCount {
				return fmt.Errorf("target description: more than %d registers", maxRegCount)
			}
			d.Registers = append(d.Registers, Register{Name: strings.ToLower(r.Name), Num: num, Bits: bits, Feature: f.Name})
			*next = num + 1
		}
	}
	return nil
}

// DefaultDescription is the register layout GDB assumes for an M-profile
// target without a description (GDB's arm-m-profile: r0-r15 at 0-15,
// xpsr at 25, the FPA registers between them).
func DefaultDescription() *Description {
	d := &Description{Features: []string{"(none: GDB's default M-profile layout)"}}
	names := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc"}
	for i, n := range names {
		d.Registers = append(d.Registers, Register{Name: n, Num: i, Bits: 32})
	}
	for i := 0; i < 8; i++ {
		d.Registers = append(d.Registers, Register{Name: fmt.Sprintf("f%d", i), Num: 16 + i, Bits: 96})
	}
	d.Registers = append(d.Registers, Register{Name: "fps", Num: 24, Bits: 32}, Register{Name: "xpsr", Num: 25, Bits: 32})
	return d
}

// RegisterValues are raw register contents by name, little-endian bytes;
// a register the server reported unavailable is absent.
type RegisterValues map[string][]byte

// U32 returns the low 32 bits of a register.
func (v RegisterValues) U32(name string) (uint32, bool) {
	b, ok := v[name]
	if !ok || len(b) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// ReadRegisters reads every register of d: "g" first (registers in
// number order, packed, as far as the reply goes; "xx" bytes are
// unavailable), then "p" for each wanted register g did not cover. want
// nil reads every register.
func (c *Client) ReadRegisters(d *Description, want func(name string) bool) (RegisterValues, []string, error) {
	vals := RegisterValues{}
	var notes []string
	g, err := c.Command("g")
	if err != nil {
		return nil, nil, err
	}
	if isError(g) {
		notes = append(notes, fmt.Sprintf("g replied %s; registers read one by one with p", g))
		g = nil
	}
	// g packs the described registers in number order, numbers the
	// description skips taking no room (GDB's remote.c does the same).
	off := 0
	covered := map[string]bool{}
	for _, r := range d.Registers {
		n := r.Bits / 4
		if off+n > len(g) {
			break
		}
		covered[r.Name] = true
		if b, ok := hexBytes(g[off : off+n]); ok {
			vals[r.Name] = b
		}
		off += n
	}
	for _, r := range d.Registers {
		if covered[r.Name] || (want != nil && !want(r.Name)) {
			continue
		}
		p, err := c.Command(fmt.Sprintf("p%x", r.Num))
		if err != nil {
			return nil, nil, err
		}
		switch {
		case len(p) == 0:
			notes = append(notes, fmt.Sprintf("register %s: the server does not support p", r.Name))
		case isError(p):
			notes = append(notes, fmt.Sprintf("register %s (p%x): %s", r.Name, r.Num, p))
		default:
			if len(p) != r.Bits/4 {
				notes = append(notes, fmt.Sprintf("register %s (p%x): %d hex digits, want %d", r.Name, r.Num, len(p), r.Bits/4))
				continue
			}
			if b, ok := hexBytes(p); ok {
				vals[r.Name] = b
			}
		}
	}
	return vals, notes, nil
}

// hexBytes decodes hex; false when any digit is not hex ("xx":
// unavailable).
func hexBytes(p []byte) ([]byte, bool) {
	if len(p)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(p)/2)
	for i := range out {
		v, err := strconv.ParseUint(string(p[2*i:2*i+2]), 16, 8)
		if err != nil {
			return nil, false
		}
		out[i] = byte(v)
	}
	return out, true
}

// MemoryRegion is one entry of the server's memory map.
type MemoryRegion struct {
	Type   string // "ram", "rom", "flash"
	Start  uint32
	Length uint64
}

// MemoryMap reads qXfer:memory-map:read (nil when the server does not
// offer it).
func (c *Client) MemoryMap() ([]MemoryRegion, error) {
	if !c.Supported("qXfer:memory-map:read") {
		return nil, nil
	}
	data, err := c.Xfer("memory-map", "", maxXML)
	if err != nil {
		return nil, err
	}
	var m struct {
		Regions []struct {
			Type   string `xml:"type,attr"`
			Start  string `xml:"start,attr"`
			Length string `xml:"length,attr"`
		} `xml:"memory"`
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: memory map: %v", c.Remote, err)
	}
	var out []MemoryRegion
	for _, r := range m.Regions {
		s, err1 := strconv.ParseUint(r.Start, 0, 32)
		l, err2 := strconv.ParseUint(r.Length, 0, 33)
		if err1 != nil || err2 != nil || s+l > 1<<32 {
			return nil, fmt.Errorf("%s: memory map: region start=%q length=%q: want numbers within 4 GiB", c.Remote, r.Start, r.Length)
		}
		out = append(out, MemoryRegion{Type: r.Type, Start: uint32(s), Length: l})
	}
	return out, nil
}

// Identity asks the server who it is (qGDBServerVersion, which some
// servers answer) and returns "" when it does not say.
func (c *Client) Identity() string {
	p, err := c.Command("qGDBServerVersion")
	if err != nil || len(p) == 0 || isError(p) {
		return ""
	}
	return strings.TrimSuffix(string(p), ";")
}
