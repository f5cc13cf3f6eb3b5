package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// Expected values below come from arm-none-eabi-readelf -SW/-lW/-s,
// arm-none-eabi-nm -S, arm-none-eabi-objdump -d and arm-none-eabi-addr2line
// run on the committed ELFs (see testdata/README.md), not from elfsym.

func open(t testing.TB, name string) *File {
	t.Helper()
	f, err := Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var _ unwinders.Program = (*File)(nil)

func TestSections(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	want := []struct {
		name             string
		addr, size, off  uint32
		alloc, exec, wrt bool
	}{
		{".isr_vector", 0, 0x40, 0x1000, true, false, false},
		{".text", 0x40, 0x110, 0x1040, true, true, false},
		{".data", 0x20000000, 4, 0x2000, true, false, true},
		{".ramfunc", 0x20000004, 0x10, 0x2004, true, true, false},
		{".bss", 0x20000014, 4, 0x2014, true, false, true},
		{".debug_info", 0, 0x5bb, 0x2014, false, false, false},
	}
	secs := f.Sections()
	for i, w := range want {
		s := secs[i+1]
		if s.Name != w.name || s.Addr != w.addr || s.Size != w.size || s.Offset != w.off || s.Alloc != w.alloc || s.Exec != w.exec || s.Write != w.wrt {
			t.Errorf("section %d = %+v, want %+v", i+1, s, w)
		}
	}
	addr, data, ok := f.Section(".text")
	if !ok || addr != 0x40 || len(data) != 0x110 {
		t.Errorf("Section(.text) = %#x, %d bytes, %v", addr, len(data), ok)
	}
	// objdump: "a8: 2001 movs r0, #1" -> bytes 01 20 at .text+0x68.
	if data[0x68] != 0x01 || data[0x69] != 0x20 {
		t.Errorf(".text bytes at 0xa8 = % x, want 01 20", data[0x68:0x6a])
	}
	if _, d, ok := f.Section(".bss"); !ok || d != nil {
		t.Errorf("Section(.bss) = %v, %v; want nil data", d, ok)
	}
	if _, _, ok := f.Section(".nonexistent"); ok {
		t.Error("Section(.nonexistent) found")
	}
	for _, c := range []struct {
		addr uint32
		code bool
	}{{0, false}, {0x40, true}, {0x14f, true}, {0x150, false}, {0x20000000, false}, {0x20000004, true}, {0x20000013, true}, {0x20000014, false}} {
		if got := f.IsCode(c.addr); got != c.code {
			t.Errorf("IsCode(%#x) = %v, want %v", c.addr, got, c.code)
		}
	}
}

func TestSegments(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	// readelf -lW: LOAD 0x001000 0x00000000 0x00000000 0x00150 R E
	//              LOAD 0x002000 0x20000000 0x00000150 0x00014 RWE
	segs := f.Segments()
	type seg struct {
		addr uint32
		n    int
	}
	want := []seg{{0, 0x150}, {0x150, 0x14}, {0x20000000, 0x14}}
	if len(segs) != len(want) {
		t.Fatalf("got %d segments, want %d: %+v", len(segs), len(want), segs)
	}
	raw, _ := os.ReadFile("testdata/gcc-inline-O2.elf")
	for i, w := range want {
		if segs[i].Addr != w.addr || len(segs[i].Data) != w.n {
			t.Errorf("segment %d at %#x, %d bytes; want %#x, %d", i, segs[i].Addr, len(segs[i].Data), w.addr, w.n)
		}
	}
	if !bytes.Equal(segs[0].Data, raw[0x1000:0x1150]) || !bytes.Equal(segs[1].Data, raw[0x2000:0x2014]) {
		t.Error("segment data differs from the file bytes")
	}
	var im unwinders.Image
	if err := im.AddLayer(segs...); err != nil {
		t.Fatal(err)
	}
	// ram_add runs from RAM: its first instruction (objdump: 4b02) is
	// readable at its run address and at its load address 0x154.
	for _, a := range []uint32{0x20000004, 0x154} {
		if v, err := unwinders.ReadU16(&im, a); err != nil || v != 0x4b02 {
			t.Errorf("ReadU16(%#x) = %#x, %v; want 0x4b02", a, v, err)
		}
	}
}

func TestFuncAt(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	cases := []struct {
		addr uint32
		fn   unwinders.Function
		ok   bool
	}{
		{0x40, unwinders.Function{Name: "Default_Handler", Start: 0x40, End: 0x42, Thumb: true}, true},
		{0x42, unwinders.Function{}, false}, // padding after Default_Handler
		{0xb4, unwinders.Function{Name: "compute", Start: 0xb4, End: 0x108, Thumb: true}, true},
		{0x107, unwinders.Function{Name: "compute", Start: 0xb4, End: 0x108, Thumb: true}, true},
		// asm_nosize has no size: it covers up to the next function symbol
		// (asm_after is a NOTYPE label, not a function), End == Start.
		{0xa8, unwinders.Function{Name: "asm_nosize", Start: 0xa8, End: 0xa8, Thumb: true}, true},
		{0xb2, unwinders.Function{Name: "asm_nosize", Start: 0xa8, End: 0xa8, Thumb: true}, true},
		{0x20000006, unwinders.Function{Name: "ram_add", Start: 0x20000004, End: 0x20000014, Thumb: true}, true},
		{0x20000000, unwinders.Function{}, false}, // the object "device"
		{0x10000000, unwinders.Function{}, false},
	}
	for _, c := range cases {
		fn, ok := f.FuncAt(c.addr)
		if fn != c.fn || ok != c.ok {
			t.Errorf("FuncAt(%#x) = %+v, %v; want %+v, %v", c.addr, fn, ok, c.fn, c.ok)
		}
	}
	for name, want := range map[string]uint32{"compute": 0xb4, "_estack": 0x20010000, "device": 0x20000000, "g_pfnVectors": 0, "asm_after": 0xb0} {
		if v, ok := f.Symbol(name); !ok || v != want {
			t.Errorf("Symbol(%q) = %#x, %v; want %#x", name, v, ok, want)
		}
	}
	for _, name := range []string{"$t", "$d", "unused_big", ""} {
		if v, ok := f.Symbol(name); ok {
			t.Errorf("Symbol(%q) = %#x, want not found", name, v)
		}
	}
}

func TestMappingSymbols(t *testing.T) {
	f := open(t, "gcc-armthumb.elf")
	// readelf -s: $a 8000, $d 8014, $t 8018, $d 8028, $a 802c, $d 8044,
	// $t 8048, $a 804c, $a 8050, $d 8058; thumb_func = 0x8019 (Thumb bit),
	// arm_func = 0x8000, __arm_func_from_thumb = 0x8049 (a Thumb stub that
	// switches to ARM at 0x804c).
	for _, c := range []struct {
		addr  uint32
		name  string
		thumb bool
	}{{0x8000, "arm_func", false}, {0x8018, "thumb_func", true}, {0x802c, "_start", false},
		{0x8048, "__arm_func_from_thumb", true}, {0x8050, "__thumb_func_from_arm", false}} {
		fn, ok := f.FuncAt(c.addr + 2)
		if !ok || fn.Name != c.name || fn.Thumb != c.thumb || fn.Start != c.addr {
			t.Errorf("FuncAt(%#x) = %+v, %v; want %s thumb=%v", c.addr, fn, ok, c.name, c.thumb)
		}
	}
	for _, c := range []struct {
		addr uint32
		kind MapKind
	}{{0x8000, MapARM}, {0x8010, MapARM}, {0x8014, MapData}, {0x8018, MapThumb}, {0x8026, MapThumb},
		{0x8028, MapData}, {0x802c, MapARM}, {0x8048, MapThumb}, {0x804a, MapThumb}, {0x804c, MapARM},
		{0x8058, MapData}, {0x805c, MapData}, {0x7000, MapUnknown}} {
		if got := f.Mapping(c.addr); got != c.kind {
			t.Errorf("Mapping(%#x) = %v, want %v", c.addr, got, c.kind)
		}
	}
	for a := uint32(0x8000); a < 0x8060; a += 2 {
		if ref, ok := f.SymbolFor(a); ok && strings.HasPrefix(ref.Name, "$") {
			t.Errorf("SymbolFor(%#x) returned mapping symbol %q", a, ref.Name)
		}
		for _, l := range mustSymbolize(t, f, a) {
			if strings.HasPrefix(l.Function, "$") || strings.HasPrefix(l.Symbol, "$") {
				t.Errorf("Symbolize(%#x) names mapping symbol: %+v", a, l)
			}
		}
	}
	in := f.Info()
	if in.ThumbFuncs != 2 || in.ARMFuncs != 3 {
		t.Errorf("Info: %d Thumb and %d ARM functions, want 2 and 3", in.ThumbFuncs, in.ARMFuncs)
	}
}

func TestSymbolForGap(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	cases := []struct {
		addr uint32
		want SymbolRef
		ok   bool
	}{
		{0x41, SymbolRef{Name: "Default_Handler", Start: 0x40, Size: 2, Kind: SymFunc, Thumb: true, Offset: 1, Placement: Inside}, true},
		// nm: Default_Handler 0x40 size 2, Reset_Handler 0x44: 0x42 is padding.
		{0x42, SymbolRef{Name: "Default_Handler", Start: 0x40, Size: 2, Kind: SymFunc, Thumb: true, Offset: 2, Placement: InGap}, true},
		{0xaa, SymbolRef{Name: "asm_nosize", Start: 0xa8, Kind: SymFunc, Thumb: true, Offset: 2, Placement: Unsized}, true},
		{0xb2, SymbolRef{Name: "asm_after", Start: 0xb0, Kind: SymLabel, Offset: 2, Placement: Unsized}, true},
		{0x20000002, SymbolRef{Name: "device", Start: 0x20000000, Size: 4, Kind: SymObject, Offset: 2, Placement: Inside}, true},
		{0x10, SymbolRef{Name: "g_pfnVectors", Start: 0, Size: 0x40, Kind: SymObject, Offset: 0x10, Placement: Inside}, true},
		{0x10000000, SymbolRef{}, false},
	}
	for _, c := range cases {
		got, ok := f.SymbolFor(c.addr)
		if got != c.want || ok != c.ok {
			t.Errorf("SymbolFor(%#x) = %+v, %v; want %+v, %v", c.addr, got, ok, c.want, c.ok)
		}
	}
	ref, _ := f.SymbolFor(0x42)
	if s := ref.String(); s != "gap after Default_Handler (Default_Handler+0x2, 0x0 past its end)" {
		t.Errorf("String() = %q", s)
	}
	// Symbolize does not blame Default_Handler for its padding.
	if locs := mustSymbolize(t, f, 0x42); len(locs) != 0 {
		t.Errorf("Symbolize(0x42) = %+v, want nothing", locs)
	}
}

func mustSymbolize(t testing.TB, f *File, addr uint32) []Location {
	t.Helper()
	locs, err := f.Symbolize(addr)
	if err != nil {
		t.Fatalf("Symbolize(%#x): %v", addr, err)
	}
	return locs
}

func TestInlineChain(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	// addr2line -f -i 0xc2: leaf inline.c:14, middle :20, outer :28, compute :34.
	got := mustSymbolize(t, f, 0xc2)
	want := []Location{
		{Function: "leaf", LinkageName: "leaf", Symbol: "compute", Offset: 0xe, File: "./src/inline.c", Line: 14, Inlined: true},
		{Function: "middle", LinkageName: "middle", Symbol: "compute", Offset: 0xe, File: "./src/inline.c", Line: 20, Column: 15, Inlined: true},
		{Function: "outer", LinkageName: "outer", Symbol: "compute", Offset: 0xe, File: "./src/inline.c", Line: 28, Column: 8, Inlined: true},
		{Function: "compute", LinkageName: "compute", Symbol: "compute", Offset: 0xe, File: "./src/inline.c", Line: 34, Column: 9},
	}
	if len(got) != len(want) {
		t.Fatalf("Symbolize(0xc2) = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("level %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var b strings.Builder
	WriteAddr2Line(&b, got, false)
	if s := b.String(); s != "leaf\n./src/inline.c:14\nmiddle\n./src/inline.c:20\nouter\n./src/inline.c:28\ncompute\n./src/inline.c:34\n" {
		t.Errorf("WriteAddr2Line:\n%s", s)
	}
	js, err := json.Marshal(f.Describe(0xc2))
	if err != nil || !strings.Contains(string(js), `"function":"leaf"`) || !strings.Contains(string(js), `"placement":"inside"`) {
		t.Errorf("Describe JSON = %s, %v", js, err)
	}
}

func TestGCSectionsAtZero(t *testing.T) {
	// unused_big was removed by --gc-sections; its DWARF and line sequence
	// start at 0 and cover the vector table and Default_Handler.
	// addr2line -f -i 0x42 prints "unused_big ./src/inline.c:13".
	f := open(t, "gcc-inline-O2.elf")
	for a := uint32(0); a < 0x44; a += 2 {
		for _, l := range mustSymbolize(t, f, a) {
			if l.Function == "unused_big" || l.Function == "outer" || l.Function == "middle" {
				t.Errorf("Symbolize(%#x) uses DWARF of removed code: %+v", a, l)
			}
		}
	}
	if !f.dw.deadCovers(0x42) {
		t.Error("removed DWARF at 0 was not seen")
	}
}

func TestCXX(t *testing.T) {
	f := open(t, "gxx-cxx-O2.elf")
	// addr2line -f -i 0xb0: _ZN2fl7Counter4bumpEm ./src/cxx.cpp:12 inlined
	// in _ZN2fl7Counter5twiceEm ./src/cxx.cpp:20; with -C
	// fl::Counter::bump(unsigned long), fl::Counter::twice(unsigned long).
	got := mustSymbolize(t, f, 0xb0)
	if len(got) != 2 || got[0].Function != "fl::Counter::bump(unsigned long)" || got[0].LinkageName != "_ZN2fl7Counter4bumpEm" ||
		got[1].Function != "fl::Counter::twice(unsigned long)" || got[0].Symbol != "_ZN2fl7Counter5twiceEm" || !got[0].Inlined || got[1].Inlined {
		t.Errorf("Symbolize(0xb0) = %+v", got)
	}
	var b strings.Builder
	WriteAddr2Line(&b, got, true)
	if s := b.String(); s != "fl::Counter::bump(unsigned long)\n./src/cxx.cpp:12\nfl::Counter::twice(unsigned long)\n./src/cxx.cpp:20\n" {
		t.Errorf("demangled output:\n%s", s)
	}
}

func TestStripped(t *testing.T) {
	f := open(t, "gcc-inline-O2-nodebug.elf")
	if w := strings.Join(f.Warnings(), "\n"); !strings.Contains(w, "no DWARF") {
		t.Errorf("warnings = %q", w)
	}
	// addr2line -f -i 0xc2 on the stripped copy: "compute" "??:?".
	got := mustSymbolize(t, f, 0xc2)
	if len(got) != 1 || got[0].Function != "compute" || got[0].Line != 0 || got[0].File != "" || got[0].Offset != 0xe {
		t.Errorf("Symbolize(0xc2) = %+v", got)
	}
	var b strings.Builder
	WriteAddr2Line(&b, got, false)
	if b.String() != "compute\n??:?\n" {
		t.Errorf("output %q", b.String())
	}

	n := open(t, "gcc-inline-O2-nosyms.elf")
	if w := strings.Join(n.Warnings(), "\n"); !strings.Contains(w, "no symbol table") {
		t.Errorf("warnings = %q", w)
	}
	if locs := mustSymbolize(t, n, 0xc2); locs != nil {
		t.Errorf("Symbolize on a file without symbols = %+v", locs)
	}
	if _, ok := n.FuncAt(0xc2); ok {
		t.Error("FuncAt found a function without a symbol table")
	}
	if len(n.Segments()) != 3 || !n.IsCode(0xc2) {
		t.Error("segments or sections lost when stripping symbols")
	}
	b.Reset()
	WriteAddr2Line(&b, nil, false)
	if b.String() != "??\n??:0\n" {
		t.Errorf("output %q", b.String())
	}
}

func TestInfo(t *testing.T) {
	f := open(t, "gcc-unwind-O2.elf")
	in := f.Info()
	// readelf -S: .ARM.exidx at 0x174, 0x40 bytes; .ARM.extab 0x24 bytes;
	// .debug_frame 0xc8 bytes... readelf -u: 8 entries, 3 compact inline
	// (0x40, compute, ram_add), 3 in .ARM.extab (Reset_Handler, crash,
	// main), 2 EXIDX_CANTUNWIND (asm_nosize, after ram_add). readelf -s:
	// 10 FUNC symbols, all Thumb; __ram_add_veneer (0x148) has no entry of
	// its own and inherits main's.
	x := in.Exidx
	if x == nil || x.Addr != 0x174 || x.Size != 0x40 || x.Entries != 8 || x.Inline != 3 || x.Extab != 3 || x.CantUnwind != 2 {
		t.Fatalf("exidx %+v", x)
	}
	if in.Functions != 10 || x.FuncsCovered != 8 || x.FuncsCantUnwind != 1 || x.FuncsInherited != 1 || x.FuncsUncovered != 0 {
		t.Errorf("functions %d, exidx coverage %+v", in.Functions, x)
	}
	if in.Extab == nil || in.Extab.Size != 0x24 || in.EhFrame != nil {
		t.Errorf("extab %+v eh_frame %+v", in.Extab, in.EhFrame)
	}
	// readelf -x .isr_vector: 00000120 45000000 -> initial SP 0x20010000,
	// reset 0x45; the symbol g_pfnVectors names the table.
	if v := in.Vectors; v == nil || v.Source != "symbol g_pfnVectors" || v.InitialSP != 0x20010000 || v.Reset != 0x45 || v.ResetHandler != "Reset_Handler" {
		t.Errorf("vectors %+v", in.Vectors)
	}
	// readelf -A: Tag_CPU_name "7E-M", Tag_CPU_arch v7E-M, profile
	// Microcontroller, Tag_FP_arch VFPv4-D16, Tag_ABI_VFP_args VFP registers.
	if a := in.Attributes; a == nil || a.CPUName != "7E-M" || a.CPUArch != "v7E-M" || a.Profile != "M" || a.FPArch != "VFPv4-D16" || !a.FPHardABI {
		t.Errorf("attributes %+v", in.Attributes)
	}
	if in.ThumbFuncs != 10 || in.ARMFuncs != 0 {
		t.Errorf("thumb %d arm %d", in.ThumbFuncs, in.ARMFuncs)
	}
	// readelf --debug-dump: DWARF 5 units, version 3 line tables.
	if d := in.DWARF; d == nil || len(d.Versions) != 1 || d.Versions[0] != 5 || len(d.LineVersions) != 1 || d.LineVersions[0] != 3 || d.Units != 2 {
		t.Errorf("dwarf %+v", in.DWARF)
	}
	if len(in.Stack) != 1 || in.Stack[0] != (NamedAddress{"_estack", 0x20010000}) {
		t.Errorf("stack symbols %+v", in.Stack)
	}
	if _, err := json.Marshal(in); err != nil {
		t.Error(err)
	}
	// The clang-built file: DWARF 4.
	if d := open(t, "clang-inline-O2-dwarf4.elf").Info().DWARF; d == nil || len(d.Versions) != 1 || d.Versions[0] != 4 || d.LineVersions[0] != 4 {
		t.Errorf("clang dwarf4: %+v", d)
	}
}

func TestBadInputs(t *testing.T) {
	cases := []struct {
		file string
		err  error
		msg  string
	}{
		{"testdata/bad/armbe.elf", ErrUnsupported, "big-endian"},
		{"testdata/bad/x86_64.o", ErrUnsupported, "ELFCLASS64"},
		{"testdata/bad/aarch64.o", ErrUnsupported, "ELFCLASS64"},
		{"testdata/bad/i386.o", ErrUnsupported, "EM_386"},
		{"testdata/Makefile", ErrNotELF, "magic"},
		{"testdata/src/test.ld", ErrNotELF, "magic"},
	}
	for _, c := range cases {
		_, err := Open(c.file)
		var fe *FormatError
		if !errors.Is(err, c.err) || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), c.file) {
			t.Errorf("Open(%s) = %v; want %v mentioning %q and the file name", c.file, err, c.err, c.msg)
		}
	}
	if _, err := NewFile(bytes.NewReader(nil), "empty"); !errors.Is(err, ErrNotELF) {
		t.Errorf("empty input: %v", err)
	}
	if _, err := Open("testdata/does-not-exist.elf"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// exercise calls every accessor; it must not panic on any File.
func exercise(f *File) {
	f.Sections()
	f.Progs()
	f.Segments()
	f.Warnings()
	f.Info()
	f.Name()
	f.Entry()
	f.Symbol("main")
	f.Section(".text")
	addrs := []uint32{0, 1, 2, 0x40, 0x42, 0xc2, 0x100, 0x8000, 0x20000000, 0xfffffffe, 0xffffffff}
	for _, s := range f.sections {
		addrs = append(addrs, s.Addr, s.Addr+s.Size/2, s.Addr+s.Size-1)
	}
	for _, a := range addrs {
		f.FuncAt(a)
		f.IsCode(a)
		f.SymbolFor(a)
		f.Mapping(a)
		locs, _ := f.Symbolize(a)
		WriteAddr2Line(&bytes.Buffer{}, locs, true)
		f.Describe(a)
	}
}

func TestCorrupt(t *testing.T) {
	for _, name := range []string{"gcc-inline-O2.elf", "clang-inline-O2-dwarf5.elf", "gxx-cxx-O2.elf"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		try := func(what string, d []byte) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s %s: panic: %v", name, what, p)
				}
			}()
			f, err := NewFile(bytes.NewReader(d), name)
			if err != nil {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("%s: error does not name the file: %v", what, err)
				}
				return
			}
			exercise(f)
		}
		// Truncations: every length up to 256 bytes, then a spread.
		for n := 0; n < len(data); n += max(1, min(n/64, 97)) {
			try("truncated", data[:n])
		}
		// Flip every byte of the ELF header, the program headers and the
		// section headers, two ways.
		le := func(o int) int { return int(data[o]) | int(data[o+1])<<8 | int(data[o+2])<<16 | int(data[o+3])<<24 }
		shoff, phoff := le(32), le(28)
		var offs []int
		for i := 0; i < ehdrSize; i++ {
			offs = append(offs, i)
		}
		for i := phoff; i < phoff+4*phdrSize && i < len(data); i++ {
			offs = append(offs, i)
		}
		for i := shoff; i < len(data); i++ {
			offs = append(offs, i)
		}
		for _, o := range offs {
			for _, x := range []byte{0xff, 0x80} {
				d := bytes.Clone(data)
				d[o] ^= x
				try("flipped", d)
			}
		}
		// Scribble over every debug section, one at a time.
		f, _ := NewFile(bytes.NewReader(data), name)
		for _, s := range f.sections {
			if !strings.HasPrefix(s.Name, ".debug_") || s.Type == elf.SHT_NOBITS {
				continue
			}
			for _, step := range []int{1, 7, 31} {
				d := bytes.Clone(data)
				for i := int(s.Offset); i < int(s.Offset+s.Size); i += step {
					d[i] ^= byte(i*13 + step)
				}
				try("scribbled "+s.Name, d)
			}
		}
	}
}

// TestConcurrent: eight goroutines symbolizing a freshly opened file at
// once (its lazy indexes built under contention) get exactly what one
// goroutine gets from another fresh open of the same file.
func TestConcurrent(t *testing.T) {
	type answer struct {
		locs  []Location
		err   error
		fn    string
		start uint32
		ok    bool
	}
	const lo, hi = 0x40, 0x300
	query := func(f *File, a uint32) answer {
		locs, err := f.Symbolize(a)
		fn, ok := f.FuncAt(a)
		return answer{locs, err, fn.Name, fn.Start, ok}
	}
	ref := open(t, "clang-inline-O2-dwarf5.elf")
	want := make([]answer, 0, (hi-lo)/2)
	named := 0
	for a := uint32(lo); a < hi; a += 2 {
		w := query(ref, a)
		if w.ok && len(w.locs) > 0 && w.locs[0].Line > 0 {
			named++
		}
		want = append(want, w)
	}
	if named < len(want)/2 {
		t.Fatalf("only %d of %d addresses resolve to a function and a line: the range no longer exercises the indexes", named, len(want))
	}
	f := open(t, "clang-inline-O2-dwarf5.elf")
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			bad := ""
			// Each goroutine starts at another address so that the first
			// lookups of every index race.
			for k := range want {
				i := (k + g*len(want)/8) % len(want)
				a := uint32(lo + 2*i)
				if got := query(f, a); !reflect.DeepEqual(got, want[i]) && bad == "" {
					bad = fmt.Sprintf("goroutine %d, 0x%x: got %+v, want %+v", g, a, got, want[i])
				}
			}
			errs <- bad
		}(g)
	}
	for g := 0; g < 8; g++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// TestIvIndexUnsorted: items handed over out of address order (a line
// program's sequences as gcc lists them: COMDAT templates above the main
// .text first) are found as if they had been sorted.
func TestIvIndexUnsorted(t *testing.T) {
	type iv struct{ lo, hi uint32 }
	items := []iv{{0x300, 0x340}, {0x100, 0x200}, {0x200, 0x280}, {0x280, 0x300}}
	ix := newIvIndex(items, func(x *iv) (uint32, uint64) { return x.lo, uint64(x.hi) })
	for _, a := range []uint32{0x100, 0x1ff, 0x200, 0x2a0, 0x33f} {
		got, ok := ix.innermost(a)
		if !ok || a < got.lo || a >= got.hi {
			t.Errorf("0x%x: got %+v, %v", a, got, ok)
		}
	}
	if _, ok := ix.innermost(0x340); ok {
		t.Error("0x340 is past every item")
	}
}

// TestDemangle: the entry point picks the right demangler (see
// internal/rustdemangle for the Rust oracles).
func TestDemangle(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"_ZN11cortex_m_rt18__cortex_m_rt_main17h4f3a9c1d7e2b6a05E", "cortex_m_rt::__cortex_m_rt_main"},
		{"_RNvCs8cwT8Fceb3f_7symbols4main", "symbols::main"},
		{"_ZN9telemetry4RingItLj7EE3popERt", "telemetry::Ring<unsigned short, 7u>::pop(unsigned short&)"},
		{"_ZN3foo3barE", "foo::bar"},
		{"main", "main"},
		{"_Zbogus", "_Zbogus"},
		{"_Rbogus", "_Rbogus"},
	} {
		if got := Demangle(c.in); got != c.want {
			t.Errorf("Demangle(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
