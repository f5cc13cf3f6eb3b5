// Package mutate derives hostile inputs from a good one, deterministically:
// truncations at the input's structure boundaries, single bit flips, and
// length and offset fields set to 0 or to their maximum. The mutation
// sweep (cmd/faultline/cli TestMutationSweep) runs every committed fixture's
// mutants through the commands, and the fuzz targets take some of them as
// seeds; nothing generated here is committed.
//
// Structure boundaries are found for ELF files (the header, every program
// and section header, every segment, section and note) and for JSON (every
// token); other binary inputs are cut at every word of their first 512
// bytes and at 64 points through the rest, text inputs at every line.
package mutate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
)

// A Mutant is one derived input.
type Mutant struct {
	Name string // what was done: "trunc@120", "flip@37.2", "u32@44=0xffffffff"
	Data []byte
}

// Options bound the mutants of one input.
type Options struct {
	MaxTruncations int // default 160
	Flips          int // default 48
	MaxFields      int // default 160 (each field gives 2 or 3 mutants)
}

func (o Options) withDefaults() Options {
	if o.MaxTruncations <= 0 {
		o.MaxTruncations = 160
	}
	if o.Flips <= 0 {
		o.Flips = 48
	}
	if o.MaxFields <= 0 {
		o.MaxFields = 160
	}
	return o
}

// All returns the mutants of data. The same data gives the same mutants,
// in the same order.
func All(data []byte, opt Options) []Mutant {
	opt = opt.withDefaults()
	var out []Mutant
	// Truncations.
	cuts := spread(boundaries(data), opt.MaxTruncations)
	for _, c := range cuts {
		out = append(out, Mutant{fmt.Sprintf("trunc@%d", c), bytes.Clone(data[:c])})
	}
	// Bit flips at positions drawn from a generator seeded by the input.
	if len(data) > 0 {
		h := fnv.New64a()
		h.Write(data)
		rng := xorshift(h.Sum64() | 1)
		for range opt.Flips {
			v := rng.next()
			pos, bit := int(v%uint64(len(data))), uint(v>>32)%8
			b := bytes.Clone(data)
			b[pos] ^= 1 << bit
			out = append(out, Mutant{fmt.Sprintf("flip@%d.%d", pos, bit), b})
		}
	}
	// Length and offset fields.
	for _, f := range spreadFields(fields(data), opt.MaxFields) {
		for _, v := range f.values() {
			b := bytes.Clone(data)
			if !f.put(b, v) {
				continue
			}
			out = append(out, Mutant{fmt.Sprintf("%s@%d=%#x", f.kind, f.off, v), b})
		}
	}
	// Text: the first number of each line (hex or decimal) set to 0 and
	// to a huge value; JSON: every number and hex string likewise.
	if isText(data) {
		n := 0
		for _, m := range numberRE.FindAllIndex(data, -1) {
			if n >= opt.MaxFields {
				break
			}
			n++
			for _, v := range [][]byte{[]byte("0"), []byte("0xffffffff"), []byte("99999999999999999999")} {
				b := append(append(bytes.Clone(data[:m[0]]), v...), data[m[1]:]...)
				out = append(out, Mutant{fmt.Sprintf("num@%d=%s", m[0], v), b})
			}
		}
	}
	return out
}

var numberRE = regexp.MustCompile(`0x[0-9a-fA-F]+|\b[0-9]+\b`)

// boundaries are the offsets at which data is cut.
func boundaries(data []byte) []int {
	set := map[int]bool{}
	add := func(o int) {
		if o > 0 && o < len(data) {
			set[o] = true
		}
	}
	switch {
	case len(data) >= 52 && string(data[:4]) == "\x7fELF" && data[4] == 1 && data[5] == 1:
		for _, o := range elfBoundaries(data) {
			add(o)
			add(o - 1)
			add(o + 1)
		}
	case isText(data):
		for i, c := range data {
			if c == '\n' {
				add(i)
				add(i + 1)
			}
			if c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == '"' {
				add(i)
			}
		}
		for k := 1; k < 32; k++ {
			add(len(data) * k / 32)
		}
	default:
		for o := 1; o < min(len(data), 512); o += 4 {
			add(o)
			add(o + 3)
		}
		for k := 1; k < 64; k++ {
			add(len(data) * k / 64)
		}
	}
	out := make([]int, 0, len(set))
	for o := range set {
		out = append(out, o)
	}
	sort.Ints(out)
	return out
}

// spread keeps at most n of the sorted offsets, evenly spaced.
func spread(s []int, n int) []int {
	if len(s) <= n {
		return s
	}
	out := make([]int, 0, n)
	for i := range n {
		out = append(out, s[i*len(s)/n])
	}
	return out
}

// field is a length, count or offset field.
type field struct {
	kind string // "u32" or "u16"
	off  int
}

func (f field) values() []uint64 {
	if f.kind == "u16" {
		return []uint64{0, 0xffff}
	}
	return []uint64{0, 0xffffffff, 0x7ffffff0}
}

func (f field) put(b []byte, v uint64) bool {
	switch {
	case f.kind == "u16" && f.off+2 <= len(b):
		binary.LittleEndian.PutUint16(b[f.off:], uint16(v))
	case f.kind == "u32" && f.off+4 <= len(b):
		binary.LittleEndian.PutUint32(b[f.off:], uint32(v))
	default:
		return false
	}
	return true
}

func spreadFields(fs []field, n int) []field {
	if len(fs) <= n {
		return fs
	}
	out := make([]field, 0, n)
	for i := range n {
		out = append(out, fs[i*len(fs)/n])
	}
	return out
}

// fields finds the length and offset fields of data: an ELF's header,
// program and section header fields and note sizes; for other binary
// inputs every aligned word of the first 256 bytes.
func fields(data []byte) []field {
	if isText(data) {
		return nil
	}
	if len(data) >= 52 && string(data[:4]) == "\x7fELF" && data[4] == 1 && data[5] == 1 {
		return elfFields(data)
	}
	var out []field
	for o := 0; o+4 <= min(len(data), 256); o += 4 {
		out = append(out, field{"u32", o})
	}
	return out
}

// isText reports whether data looks like text (JSON, a log, register
// text, Intel HEX, S-records).
func isText(data []byte) bool {
	n := min(len(data), 4096)
	if n == 0 {
		return false
	}
	for _, c := range data[:n] {
		if c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f {
			return false
		}
	}
	return true
}

type elf32 struct {
	data []byte
}

func (e elf32) u16(o int) int {
	if o+2 > len(e.data) {
		return 0
	}
	return int(binary.LittleEndian.Uint16(e.data[o:]))
}

func (e elf32) u32(o int) int {
	if o+4 > len(e.data) {
		return 0
	}
	return int(binary.LittleEndian.Uint32(e.data[o:]))
}

// elfBoundaries: the end of the ELF header, of every program and section
// header, the start and end of every segment and section, and every note
// header in PT_NOTE segments.
func elfBoundaries(data []byte) []int {
	e := elf32{data}
	out := []int{52}
	phoff, phnum := e.u32(28), min(e.u16(44), 256)
	for i := range phnum {
		h := phoff + 32*i
		out = append(out, h, h+32)
		off, size := e.u32(h+4), e.u32(h+16)
		out = append(out, off, off+size)
		if e.u32(h) == 4 { // PT_NOTE: every note
			for p, k := off, 0; p+12 <= off+size && p+12 <= len(data) && k < 64; k++ {
				out = append(out, p, p+12)
				namesz, descsz := e.u32(p), e.u32(p+4)
				if namesz > len(data) || descsz > len(data) {
					break
				}
				p += 12 + (namesz+3)&^3 + (descsz+3)&^3
				out = append(out, p)
			}
		}
	}
	shoff, shnum := e.u32(32), min(e.u16(48), 256)
	for i := range shnum {
		h := shoff + 40*i
		out = append(out, h, h+40)
		off, size := e.u32(h+16), e.u32(h+20)
		if e.u32(h+4) != 8 { // not NOBITS
			out = append(out, off, off+size)
		}
	}
	return out
}

// elfFields: e_phoff, e_shoff, the counts and sizes, every program
// header's offset, address and sizes, every section header's offset,
// size, link and entry size, and the sizes of the notes.
func elfFields(data []byte) []field {
	e := elf32{data}
	out := []field{{"u32", 28}, {"u32", 32}, {"u16", 42}, {"u16", 44}, {"u16", 46}, {"u16", 48}, {"u16", 50}}
	phoff, phnum := e.u32(28), min(e.u16(44), 256)
	for i := range phnum {
		h := phoff + 32*i
		out = append(out, field{"u32", h + 4}, field{"u32", h + 8}, field{"u32", h + 16}, field{"u32", h + 20})
		if e.u32(h) == 4 {
			off, size := e.u32(h+4), e.u32(h+16)
			for p, k := off, 0; p+12 <= off+size && p+12 <= len(data) && k < 64; k++ {
				out = append(out, field{"u32", p}, field{"u32", p + 4})
				namesz, descsz := e.u32(p), e.u32(p+4)
				if namesz > len(data) || descsz > len(data) {
					break
				}
				p += 12 + (namesz+3)&^3 + (descsz+3)&^3
			}
		}
	}
	shoff, shnum := e.u32(32), min(e.u16(48), 256)
	for i := range shnum {
		h := shoff + 40*i
		out = append(out, field{"u32", h + 16}, field{"u32", h + 20}, field{"u32", h + 24}, field{"u32", h + 36})
	}
	var ok []field
	for _, f := range out {
		if f.off >= 0 && f.off+4 <= len(data) {
			ok = append(ok, f)
		}
	}
	return ok
}

// xorshift is a small deterministic generator.
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}
