package allocrec

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/heapwalk"
	"github.com/faultline-dev/faultline/unwinders"
)

const (
	ram   = 0x20000000
	table = ram + 0x100
)

// build makes a 4 KiB RAM image holding a version 1 table of depth 4 and
// the given capacity at table, with the entries given.
func build(capacity int, ents ...Entry) []byte {
	b := make([]byte, 0x1000)
	le := binary.LittleEndian
	h := b[table-ram:]
	le.PutUint32(h[0:], Magic)
	le.PutUint16(h[4:], Version)
	le.PutUint16(h[6:], HeaderSize)
	le.PutUint16(h[8:], 8+4*4)
	le.PutUint16(h[10:], 4)
	le.PutUint32(h[12:], uint32(capacity))
	le.PutUint32(h[16:], uint32(len(ents)))
	le.PutUint32(h[28:], 1)
	for i, e := range ents {
		o := HeaderSize + i*24
		le.PutUint32(h[o:], e.Addr)
		le.PutUint32(h[o+4:], e.Size)
		for k, r := range e.Returns {
			le.PutUint32(h[o+8+4*k:], r)
		}
	}
	return b
}

func image(t testing.TB, data []byte) *unwinders.Image {
	im := new(unwinders.Image)
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: ram, Data: data}); err != nil {
		t.Fatal(err)
	}
	return im
}

func inRAM(addr, size uint32) bool { return addr >= ram && uint64(addr)+uint64(size) <= ram+0x1000 }

func sample() []Entry {
	return []Entry{
		{Addr: ram + 0x800, Size: 44, Returns: []uint32{0x101, 0x201}},
		{Addr: ram + 0x900, Size: 512, Returns: []uint32{0x301}},
		{Addr: ram + 0x840, Size: 44, Returns: []uint32{0x101, 0x205, 0x401}},
	}
}

func TestRead(t *testing.T) {
	tab, err := Read(image(t, build(8, sample()...)), Input{Addr: table, SymbolSize: HeaderSize + 8*24, InRAM: inRAM})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Count != 3 || len(tab.Entries) != 3 || tab.Capacity != 8 || !tab.Scan || tab.Layout.Source != "header" || len(tab.Problems) != 0 {
		t.Fatalf("%+v", tab)
	}
	if got := tab.Entries[2]; got.Addr != ram+0x840 || got.Size != 44 || len(got.Returns) != 3 || got.Returns[2] != 0x401 {
		t.Errorf("entry 2: %+v", got)
	}
	sites := tab.Sites()
	if len(sites) != 2 || sites[0].Return != 0x301 || sites[0].Bytes != 512 || sites[1].Return != 0x101 || sites[1].Bytes != 88 || len(sites[1].Entries) != 2 {
		t.Errorf("sites %+v", sites)
	}
	if tab.LiveBytes() != 600 {
		t.Errorf("live bytes %d", tab.LiveBytes())
	}
}

// TestReadCorrupt: every way the header can be wrong gives ErrCorrupt and
// says what is wrong.
func TestReadCorrupt(t *testing.T) {
	le := binary.LittleEndian
	cases := []struct {
		name string
		edit func(h []byte)
		in   Input
		want string
	}{
		{"magic", func(h []byte) { le.PutUint32(h, 0xdeadbeef) }, Input{}, "magic is 0xdeadbeef"},
		{"version", func(h []byte) { le.PutUint16(h[4:], 2) }, Input{}, "version 2"},
		{"header size", func(h []byte) { le.PutUint16(h[6:], 8) }, Input{}, "header_size is 8"},
		{"depth 0", func(h []byte) { le.PutUint16(h[10:], 0) }, Input{}, "depth is 0"},
		{"depth huge", func(h []byte) { le.PutUint16(h[10:], 0xffff) }, Input{}, "depth is 65535"},
		{"entry size", func(h []byte) { le.PutUint16(h[8:], 20) }, Input{}, "entry_size is 20"},
		{"capacity huge", func(h []byte) { le.PutUint32(h[12:], 0xffffffff) }, Input{}, "capacity is 4294967295"},
		{"count beyond capacity", func(h []byte) { le.PutUint32(h[16:], 0x7fffffff) }, Input{}, "count is 2147483647 live entries, beyond the capacity of 8"},
		{"symbol too small", func(h []byte) {}, Input{SymbolSize: 64}, "but the symbol has 64"},
		{"dwarf disagrees", func(h []byte) {}, Input{DWARF: &Layout{Entries: 32, EntrySize: 24, Depth: 4, Capacity: 64, RetOff: 8, SizeOff: 4}}, "contradicts the firmware's debug types"},
		{"dwarf fields outside", func(h []byte) {}, Input{DWARF: &Layout{Entries: 32, EntrySize: 24, Depth: 4, Capacity: 8, RetOff: 12, SizeOff: 4}}, "outside its 24 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := build(8, sample()...)
			c.edit(b[table-ram:])
			in := c.in
			in.Addr = table
			_, err := Read(image(t, b), in)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "fl_allocrec at 0x20000100") {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	// A table the dump does not hold: not corrupt, unreadable.
	if _, err := Read(image(t, build(8)), Input{Addr: 0x30000000}); err == nil || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("unmapped: %v", err)
	}
	// Live entries past the end of the dump.
	b := build(200, sample()...)
	binary.LittleEndian.PutUint32(b[table-ram+16:], 190)
	if _, err := Read(image(t, b), Input{Addr: table}); err == nil || !strings.Contains(err.Error(), "does not hold its 190 live entries") {
		t.Errorf("entries past the dump: %v", err)
	}
}

// TestReadEntries: bad entries are skipped with a problem each; the rest
// stays usable; the list of problems is bounded.
func TestReadEntries(t *testing.T) {
	ents := sample()
	ents = append(ents,
		Entry{Addr: 0x00000400, Size: 16, Returns: []uint32{0x101}}, // flash
		Entry{Addr: 0xfffffff0, Size: 64, Returns: []uint32{0x101}}, // past 4 GiB
		Entry{Addr: ram + 0x900, Size: 8, Returns: []uint32{0x301}}, // duplicate
		Entry{Addr: 0, Size: 8},
	)
	tab, err := Read(image(t, build(8, ents...)), Input{Addr: table, InRAM: inRAM})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Entries) != 3 || len(tab.Problems) != 4 {
		t.Fatalf("entries %d, problems %q", len(tab.Entries), tab.Problems)
	}
	for i, want := range []string{"0x00000400 (16 bytes) is not in RAM", "runs past 4 GiB", "entries 1 and 5 both hold block 0x20000900", "address 0"} {
		if !strings.Contains(tab.Problems[i], want) {
			t.Errorf("problem %d: %q, want %q", i, tab.Problems[i], want)
		}
	}
	var many []Entry
	for i := range 40 {
		many = append(many, Entry{Addr: 0x100 + uint32(i)*8, Size: 4, Returns: []uint32{1}})
	}
	tab, err = Read(image(t, build(64, many...)), Input{Addr: table, InRAM: inRAM})
	if err != nil || len(tab.Entries) != 0 || len(tab.Problems) != maxProblems+1 || !strings.Contains(tab.Problems[maxProblems], "and 32 more") {
		t.Errorf("many problems: %v %q", err, tab.Problems)
	}
}

// TestCheck compares a table with a heap walk.
func TestCheck(t *testing.T) {
	tab := &Table{Entries: []Entry{
		{Addr: ram + 0x808, Size: 40},  // used: fine
		{Addr: ram + 0x838, Size: 40},  // free in the walk
		{Addr: ram + 0x868, Size: 100}, // bigger than its block
		{Addr: ram + 0x844, Size: 4},   // inside a block
		{Addr: ram + 0x100, Size: 4},   // outside the heap: not the walk's business
	}}
	w := &heapwalk.Walk{Allocator: "newlib", Start: ram + 0x800, End: ram + 0x900, Blocks: []heapwalk.Block{
		{Addr: ram + 0x800, Ptr: ram + 0x808, Size: 48, Used: true},
		{Addr: ram + 0x830, Ptr: ram + 0x838, Size: 48},
		{Addr: ram + 0x860, Ptr: ram + 0x868, Size: 48, Used: true},
		{Addr: ram + 0x890, Ptr: ram + 0x898, Size: 48, Used: true},
		{Addr: ram + 0x8c0, Ptr: ram + 0x8c8, Size: 64},
	}}
	warns, notes := tab.Check([]*heapwalk.Walk{w})
	if len(warns) != 3 || !strings.Contains(warns[0], "0x20000838 (40 bytes) as live, but the newlib heap has it free") ||
		!strings.Contains(warns[1], "has 100 bytes, but its newlib heap block has 48") || !strings.Contains(warns[2], "0x20000844 (4 bytes), which starts no block") {
		t.Errorf("warnings %q", warns)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "1 blocks in use in the newlib heap (48 bytes with headers) are not in the table") {
		t.Errorf("notes %q", notes)
	}
}

// FuzzRead: any RAM image at any table address reads without a panic, and
// what it returns is consistent and bounded.
func FuzzRead(f *testing.F) {
	f.Add(build(8, sample()...), uint16(0x100), false)
	f.Add(build(3, sample()...), uint16(0x100), true)
	f.Add(build(1), uint16(0xff0), false)
	if m, _ := filepath.Glob("../../fixtures/hostile/allocrec/*.bin"); len(m) > 0 {
		for _, p := range m {
			if b, err := os.ReadFile(p); err == nil && len(b) <= 1<<16 {
				f.Add(b, uint16(0x100), true)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, off uint16, dwarf bool) {
		if len(data) > 1<<16 {
			return
		}
		b := make([]byte, 0x1000)
		copy(b, data)
		in := Input{Addr: ram + uint32(off)%0x1000, InRAM: inRAM}
		if dwarf {
			in.DWARF = &Layout{Entries: 32, EntrySize: 24, SizeOff: 4, RetOff: 8, Depth: 4, Capacity: 8}
		}
		tab, err := Read(image(t, b), in)
		if err != nil {
			if tab != nil {
				t.Fatal("a table with an error")
			}
			return
		}
		if tab.Count > tab.Capacity || tab.Capacity > MaxCapacity || len(tab.Entries) > tab.Count || tab.Layout.Depth > MaxDepth {
			t.Fatalf("inconsistent table %+v", tab)
		}
		n := 0
		for _, s := range tab.Sites() {
			n += len(s.Entries)
		}
		if n != len(tab.Entries) {
			t.Fatalf("sites hold %d entries of %d", n, len(tab.Entries))
		}
		tab.Check(nil)
	})
}

// BenchmarkRead reads a full table of MaxCapacity entries of depth 4 (1.5
// MiB) and groups it by site: the worst case the reader accepts.
func BenchmarkRead(b *testing.B) {
	const n = MaxCapacity
	data := make([]byte, HeaderSize+n*24)
	le := binary.LittleEndian
	le.PutUint32(data[0:], Magic)
	le.PutUint16(data[4:], Version)
	le.PutUint16(data[6:], HeaderSize)
	le.PutUint16(data[8:], 24)
	le.PutUint16(data[10:], 4)
	le.PutUint32(data[12:], n)
	le.PutUint32(data[16:], n)
	for i := range n {
		o := HeaderSize + i*24
		le.PutUint32(data[o:], ram+0x100000+uint32(i)*16)
		le.PutUint32(data[o+4:], 8)
		le.PutUint32(data[o+8:], 0x1001+uint32(i%97)*4)
		le.PutUint32(data[o+12:], 0x2001)
	}
	im := new(unwinders.Image)
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: ram, Data: data}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		t, err := Read(im, Input{Addr: ram})
		if err != nil || len(t.Entries) != n {
			b.Fatal(err)
		}
		if len(t.Sites()) != 97 {
			b.Fatal("sites")
		}
	}
}
