package exidx

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// Malformed index sections are rejected as a whole with a *FormatError
// saying where.
func TestHostileIndex(t *testing.T) {
	cases := []struct {
		name  string
		exidx []byte
		want  string
	}{
		{"size not a multiple of 8", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, "not a multiple of 8"},
		{"bit 31 in the first word", words(0x80000000, 1), "bit 31 set"},
		{"not sorted", words(prel31At(0x2000, exidxAt), 1, prel31At(0x1000, exidxAt+8), 1), "not sorted"},
	}
	for _, tc := range cases {
		_, err := ParseTable(exidxAt, tc.exidx, extabAt, nil, nil)
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a FormatError saying %q", tc.name, err, tc.want)
		}
	}
	// Garbage: every 8-byte pattern decodes or fails cleanly.
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i>>3)
	}
	_, _ = ParseTable(exidxAt, garbage, extabAt, garbage, nil)

	// An empty section is a table with nothing in it.
	tab, err := ParseTable(exidxAt, nil, extabAt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Lookup(0x1000); !errors.Is(err, ErrNoEntry) {
		t.Errorf("empty table: %v", err)
	}
}

// Malformed entries are marked and declined without spoiling the rest of
// the table.
func TestHostileEntries(t *testing.T) {
	sp := uint32(0x2000ff00)
	bigStack := make([]uint32, 9*1021+4)
	for i := range bigStack {
		bigStack[i] = 0x1001
	}
	endless := []uint32{0x81ffb280}
	for i := 0; i < 255; i++ {
		endless = append(endless, 0x80808080)
	}
	many := []uint32{0x81ffafaf}
	for i := 0; i < 255; i++ {
		many = append(many, 0xafafafaf)
	}
	cases := []struct {
		name   string
		spec   entrySpec
		extab  []byte // replaces the built .ARM.extab when not nil
		stack  []uint32
		small  bool // only 12 bytes of stack
		err    error
		reason string
	}{
		{name: "extab pointer past the section", spec: entrySpec{inline: prel31At(extabAt+0x1000, exidxAt+4)},
			err: ErrBadEntry, reason: "outside .ARM.extab"},
		{name: "extab pointer below the section", spec: entrySpec{inline: prel31At(extabAt-8, exidxAt+4)},
			err: ErrBadEntry, reason: "outside .ARM.extab"},
		{name: "count past the end", spec: entrySpec{extab: []uint32{0x81ffabb0}}, err: ErrBadEntry, reason: "run past the end"},
		{name: "pr2 count past the end", spec: entrySpec{extab: []uint32{0x8203abb0, 0xb0b0b0b0}}, err: ErrBadEntry, reason: "run past the end"},
		{name: "reserved personality index", spec: entrySpec{extab: []uint32{0x83000000}}, err: ErrBadEntry, reason: "reserved"},
		{name: "inline entry with index 1", spec: entrySpec{inline: 0x81abb0b0}, err: ErrBadEntry, reason: "not personality routine 0"},
		{name: "endless uleb128", spec: entrySpec{extab: endless}, err: ErrBadOpcode, reason: "uleb128"},
		{name: "uleb128 at the end", spec: entrySpec{extab: []uint32{0x8100b280}}, err: ErrBadOpcode, reason: "uleb128"},
		{name: "255 words of pops, stack not there", spec: entrySpec{extab: many}, small: true, err: unwinders.ErrUnmapped},
		{name: "255 words of pops", spec: entrySpec{extab: many}, stack: bigStack},
		{name: "vsp wraps", spec: entrySpec{extab: []uint32{0x8101b2ff, 0xffffff0f}}, err: ErrBadOpcode, reason: "does not fit 32 bits"},
		{name: "generic entry, unknown personality", spec: entrySpec{extab: []uint32{prel31At(0x1000, extabAt), 0x00abb0b0}},
			err: ErrUnknownPersonality},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.start, s.end, s.name = fnLo, fnHi, "f"
			tab, p := buildTable(t, s)
			var mem unwinders.Memory = stackImage(t, sp, tc.stack...)
			if tc.small {
				mem = &memMap{base: sp, data: make([]byte, 12)}
			}
			_, err := step(t, tab, p, mem, callSite(sp, map[unwinders.Reg]uint32{unwinders.LR: 0x1001}))
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v, want %v", err, tc.err)
			}
			if !errors.Is(err, unwinders.ErrNotApplicable) && tc.err != unwinders.ErrUnmapped {
				t.Errorf("%v does not wrap ErrNotApplicable", err)
			}
			if tc.reason != "" && !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%q does not say %q", err, tc.reason)
			}
		})
	}
}

// memMap is a sparse Memory for the fuzzers.
type memMap struct {
	base uint32
	data []byte
}

func (m *memMap) Read(addr uint32, p []byte) error {
	if addr < m.base || uint64(addr-m.base)+uint64(len(p)) > uint64(len(m.data)) {
		return &unwinders.UnmappedError{Addr: addr, Size: len(p)}
	}
	copy(p, m.data[addr-m.base:])
	return nil
}

// seedSections adds the sections of every test ELF to a fuzz corpus.
func seedSections(f *testing.F, add func(exidx, extab []byte, ea, ta uint32)) {
	elfs, _ := filepath.Glob("testdata/*.elf")
	for _, path := range elfs {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		p := loadELF(f, path)
		xa, x, ok := p.Section(".ARM.exidx")
		if !ok {
			continue
		}
		ta, tb, _ := p.Section(".ARM.extab")
		add(x, tb, xa, ta)
	}
}

// FuzzTable decodes random sections and calls every accessor.
func FuzzTable(f *testing.F) {
	seedSections(f, func(x, tb []byte, xa, ta uint32) { f.Add(x, tb, xa, ta) })
	f.Add(words(0x7ffffff8, 0x80abb0b0), words(0x81ffb280), uint32(0x100), uint32(0x200))
	f.Fuzz(func(t *testing.T, exidx, extab []byte, xa, ta uint32) {
		tab, err := ParseTable(xa, exidx, ta, extab, nil)
		if err != nil {
			return
		}
		mem := &memMap{base: 0x20000000, data: make([]byte, 512)}
		for i := 0; i < tab.Len(); i++ {
			e := tab.At(i)
			_ = e.String()
			for _, op := range e.Opcodes() {
				_ = op.String()
			}
			if _, err := tab.Lookup(e.Start); err != nil {
				t.Fatalf("entry %d not found at its own start 0x%x: %v", i, e.Start, err)
			}
			var st State
			st.VSP = 0x20000000
			st.Regs.Set(unwinders.R7, 0x20000100)
			_ = Execute(e.Stream(), mem, &st)
		}
		_, _ = tab.Lookup(xa)
	})
}

// FuzzStep runs random opcode streams against random stack contents.
func FuzzStep(f *testing.F) {
	seedSections(f, func(x, tb []byte, xa, ta uint32) {
		tab, err := ParseTable(xa, x, ta, tb, nil)
		if err != nil {
			return
		}
		for _, e := range tab.Entries() {
			if e.Stream() != nil {
				f.Add(e.Stream(), []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint32(0x20000000), uint32(0x20000010))
			}
		}
	})
	f.Add([]byte{0xb2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, []byte{}, uint32(0), uint32(0))
	f.Add([]byte{0x8f, 0xff, 0x97, 0x9d, 0xc8, 0xff}, make([]byte, 64), uint32(0x20000000), uint32(0xfffffff0))
	f.Fuzz(func(t *testing.T, stream, stack []byte, sp, r7 uint32) {
		if len(stream) > 4096 {
			stream = stream[:4096]
		}
		mem := &memMap{base: sp &^ 3, data: stack}
		var regs unwinders.Registers
		regs.Set(unwinders.R7, r7)
		regs.Set(unwinders.LR, 0x1001)
		e := Entry{Kind: Compact, stream: stream}
		fr := unwinders.Frame{PC: 0x1000, SP: sp, Regs: regs, ReturnAddress: true}
		c, err := Unwind(mem, &e, &fr)
		if err == nil && !c.Regs.Known(unwinders.SP) {
			t.Fatalf("caller SP unknown")
		}
		// The same bytes as code: the prologue check must not panic or
		// run away either.
		code := stack
		if len(code) > 1024 {
			code = code[:1024]
		}
		p := &fakeProg{funcs: []unwinders.Function{{Name: "f", Start: 0x1000, End: 0x1000 + uint32(len(code))}}}
		tg := &unwinders.Target{Mem: &memMap{base: 0x1000, data: code}, Prog: p}
		e.Start = 0x1000
		for pc := uint32(0x1000); pc < 0x1000+uint32(len(code)); pc += 2 {
			_ = proveBody(tg, &e, pc)
		}
	})
}

// BenchmarkLookupStep measures the strategy's per-frame cost on the C++
// sample: one Lookup and one Unwind of a call site in catcher().
func BenchmarkLookupStep(b *testing.B) {
	p := loadELF(b, "testdata/cxx-m4f-O2.elf")
	tab, err := NewTable(p)
	if err != nil {
		b.Fatal(err)
	}
	catcher, _ := p.Symbol("_Z7catcheri")
	sp := uint32(0x2000f000)
	mem := p.image(b, ramRegion(sp, 1, 2, 3, 4, 5, 6, 7, 8))
	u := New(tab)
	tg := &unwinders.Target{Mem: mem, Prog: p}
	var regs unwinders.Registers
	regs.Set(unwinders.SP, sp)
	frames := []unwinders.Frame{{PC: catcher + 0x10, SP: sp, Regs: regs, ReturnAddress: true}}
	if _, err := u.Step(tg, frames); err != nil {
		b.Fatal(err)
	}
	b.Run("Lookup", func(b *testing.B) {
		for b.Loop() {
			if _, err := tab.Lookup(catcher + 0x10); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Step", func(b *testing.B) {
		for b.Loop() {
			if _, err := u.Step(tg, frames); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("NewTable", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewTable(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
