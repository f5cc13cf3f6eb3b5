package crashdump

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// sample is the example manifest of design.md, with a 64-byte ram.bin.
const sample = `{
  "schema": "faultline.dump/1",
  "cpu": "cortex-m4",
  "registers": {"r0": "0x0", "r12": "0x0",
                "sp": "0x2000ffb8", "lr": "0xfffffff9", "pc": "0x00000204",
                "xpsr": "0x01000003", "msp": "0x2000ffb8", "psp": "0x0",
                "control": "0x0", "primask": "0x0", "basepri": "0x0",
                "faultmask": "0x0"},
  "fault": {"cfsr": "0x8200", "hfsr": "0x40000000", "mmfar": "0x0",
            "bfar": "0xe0100000"},
  "memory": [{"address": "0x20000000", "file": "ram.bin"},
             {"address": "0xe000ed28", "hex": "00820000"}],
  "truth": {"source": "emulator-shadow-stack",
            "frames": [{"pc": "0x00000204", "function": "HardFault_Handler"}]}
}`

// ram is the content of ram.bin in the in-memory tests.
func ram() []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// mapFS returns a readFile over a map of files.
func mapFS(files map[string][]byte) func(string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		b, ok := files[rel]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrNotExist}
		}
		return b, nil
	}
}

func TestParseSample(t *testing.T) {
	d, err := Parse([]byte(sample), "crash.json", mapFS(map[string][]byte{"ram.bin": ram()}))
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != "crash.json" || d.Format != "faultline.dump/1" || d.CPU != "cortex-m4" || d.Profile() != unwinders.V7M {
		t.Errorf("header: %q %q %q", d.Path, d.Format, d.CPU)
	}
	want := map[unwinders.Reg]uint32{
		unwinders.R0: 0, unwinders.R12: 0, unwinders.SP: 0x2000ffb8, unwinders.LR: 0xfffffff9, unwinders.PC: 0x204,
		unwinders.XPSR: 0x01000003, unwinders.MSP: 0x2000ffb8, unwinders.PSP: 0, unwinders.CONTROL: 0,
		unwinders.PRIMASK: 0, unwinders.BASEPRI: 0, unwinders.FAULTMASK: 0,
	}
	n := 0
	d.Regs.Each(func(r unwinders.Reg, v uint32) {
		n++
		if w, ok := want[r]; !ok || w != v {
			t.Errorf("register %s = %#x, want %#x (listed %v)", r, v, w, ok)
		}
	})
	if n != len(want) || d.Regs.Known(unwinders.R1) {
		t.Errorf("%d registers known, want %d; r1 must be unknown", n, len(want))
	}
	wantFault := fault.SCB{CFSR: fault.Known(0x8200), HFSR: fault.Known(0x40000000), MMFAR: fault.Known(0), BFAR: fault.Known(0xe0100000)}
	if d.Fault != wantFault {
		t.Errorf("fault = %+v, want %+v", d.Fault, wantFault)
	}
	wantMem := []unwinders.Region{
		{Name: "ram.bin", Addr: 0x20000000, Data: ram()},
		{Name: "hex@0xe000ed28", Addr: 0xe000ed28, Data: []byte{0x00, 0x82, 0, 0}},
	}
	if !reflect.DeepEqual(d.Memory, wantMem) {
		t.Errorf("memory = %+v, want %+v", d.Memory, wantMem)
	}
	wantTruth := &Truth{Source: "emulator-shadow-stack", Frames: []TruthFrame{{PC: 0x204, HasPC: true, Function: "HardFault_Handler"}}}
	if !reflect.DeepEqual(d.Truth, wantTruth) {
		t.Errorf("truth = %+v, want %+v", d.Truth, wantTruth)
	}
	im, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := unwinders.ReadU32(im, 0x20000004); err != nil || v != 0x07060504 {
		t.Errorf("ReadU32(0x20000004) = %#x, %v", v, err)
	}
	r := fault.Decode(d.Profile(), &d.Regs, d.Fault)
	if r.Exception != "HardFault" || r.Address == nil || *r.Address != 0xe0100000 || len(r.Causes) != 3 {
		t.Errorf("decode: %v", r)
	}
}

// TestFaultFromMemory checks that the SCB block in memory fills the fault
// registers, and that explicit values win.
func TestFaultFromMemory(t *testing.T) {
	m := `{"schema": "faultline.dump/1", "cpu": "m3",
	  "fault": {"HFSR": 1073741824, "bfar": null},
	  "memory": [{"address": "0xe000ed24", "hex": "00000000820000000000000000000000000000000000000000000000"}]}`
	d, err := Parse([]byte(m), "scb.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fault.SCB{SHCSR: fault.Known(0), CFSR: fault.Known(0x82), HFSR: fault.Known(1 << 30), DFSR: fault.Known(0), MMFAR: fault.Known(0), BFAR: fault.Known(0), AFSR: fault.Known(0)}
	if d.Fault != want {
		t.Errorf("fault = %+v\nwant    %+v", d.Fault, want)
	}
}

// sameDump compares two dumps, ignoring Path and region names.
func sameDump(t *testing.T, got, want *Dump) {
	t.Helper()
	g, w := *got, *want
	g.Path, w.Path = "", ""
	g.Memory, w.Memory = unnamed(g.Memory), unnamed(w.Memory)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("dumps differ:\ngot  %+v\nwant %+v", g, w)
	}
}

func unnamed(rs []unwinders.Region) []unwinders.Region {
	out := make([]unwinders.Region, len(rs))
	for i, r := range rs {
		out[i] = unwinders.Region{Addr: r.Addr, Data: r.Data}
	}
	return out
}

// bigDump has every kind of content: FP registers, file and hex regions, a
// region ending exactly at 4 GiB, explicit and in-memory fault registers,
// and truth.
func bigDump(t *testing.T) *Dump {
	d := &Dump{Format: FormatNative, CPU: "cortex-m4"}
	for i := range unwinders.NumRegs {
		if i != int(unwinders.R5) { // r5 unknown
			d.Regs.Set(unwinders.Reg(i), uint32(i)*0x01010101)
		}
	}
	ramb := make([]byte, 4096)
	for i := range ramb {
		ramb[i] = byte(i * 7)
	}
	scb := make([]byte, 64) // 0xe000ed00..0xe000ed3f
	scb[0x28], scb[0x29] = 0x82, 0x00
	scb[0x2f] = 0x40
	top := bytes.Repeat([]byte{0xee}, 256)
	d.Memory = []unwinders.Region{
		{Name: "crash.20000000.bin", Addr: 0x20000000, Data: ramb},
		{Name: "hex@0xe000ed00", Addr: 0xe000ed00, Data: scb},
		{Name: "crash.ffffef00.bin", Addr: 0xffffef00, Data: bytes.Repeat(top, 17)[:0x1100]},
	}
	im, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	d.Fault = fault.FromMemory(im).Merge(fault.SCB{BFAR: fault.Known(0xdeadbeef), SFSR: fault.Known(0x48)})
	d.Truth = &Truth{Source: "emulator-shadow-stack", Stop: "reached the reset handler", Frames: []TruthFrame{
		{PC: 0x204, HasPC: true, Function: "HardFault_Handler", File: "startup.c", Line: 41},
		{Kind: "exception"},
		{PC: 0, HasPC: true, Function: "std::vector<int>::at & <lambda>"},
		{Function: "no_pc"},
	}}
	return d
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		d    *Dump
	}{
		{"big", bigDump(t)},
		{"empty", &Dump{Format: FormatNative}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name, "crash.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.d.Write(path); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want := *tc.d
			want.Path = path
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("Load(Write(d)) differs:\ngot  %+v\nwant %+v", got, &want)
			}
			// Writing again, elsewhere, gives identical bytes.
			path2 := filepath.Join(dir, tc.name, "again", "crash.json")
			if err := os.MkdirAll(filepath.Dir(path2), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := got.Write(path2); err != nil {
				t.Fatal(err)
			}
			compareDirs(t, filepath.Dir(path), filepath.Dir(path2))
		})
	}
}

// compareDirs checks that the files of dir a (not its subdirectories) are
// byte-identical in dir b.
func compareDirs(t *testing.T, a, b string) {
	t.Helper()
	es, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() {
			continue
		}
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: second write differs (%v)", e.Name(), err)
		}
	}
}

// TestRoundTripSample writes the design.md sample: its 64-byte file region
// becomes hex, and the dump is otherwise unchanged.
func TestRoundTripSample(t *testing.T) {
	d, err := Parse([]byte(sample), "crash.json", mapFS(map[string][]byte{"ram.bin": ram()}))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.json")
	if err := d.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sameDump(t, got, d)
	if got.Memory[0].Name != "hex@0x20000000" {
		t.Errorf("region name %q, want hex@0x20000000", got.Memory[0].Name)
	}
}

func TestWriteRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		d    Dump
		want string
	}{
		{"empty region", Dump{Memory: []unwinders.Region{{Name: "x", Addr: 4}}}, "memory[0] (x at 0x00000004) is empty"},
		{"overlap", Dump{Memory: []unwinders.Region{{Name: "a", Addr: 0, Data: make([]byte, 8)}, {Name: "b", Addr: 4, Data: make([]byte, 8)}}}, "overlap"},
		{"past 4 GiB", Dump{Memory: []unwinders.Region{{Name: "a", Addr: 0xfffffffc, Data: make([]byte, 8)}}}, "past the end"},
		{"kind", Dump{Truth: &Truth{Frames: []TruthFrame{{Kind: "inlined"}}}}, `kind "inlined"`},
		{"line", Dump{Truth: &Truth{Frames: []TruthFrame{{Line: -1}}}}, "line -1"},
	} {
		path := filepath.Join(dir, "w.json")
		err := tc.d.Write(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Write error %v, want one naming %s and containing %q", tc.name, err, path, tc.want)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: Write left %s behind", tc.name, path)
		}
	}
}

// edit replaces old with new in the sample, once; it fails the test when
// old is not there.
func edit(t testing.TB, old, new string) string {
	t.Helper()
	if !strings.Contains(sample, old) {
		t.Fatalf("sample lacks %q", old)
	}
	return strings.Replace(sample, old, new, 1)
}

// badCases are malformed dumps and the text their error must contain after
// "crash.json: ".
func badCases(t testing.TB) []struct{ name, json, want string } {
	mem := func(entries string) string {
		return edit(t, `[{"address": "0x20000000", "file": "ram.bin"},
             {"address": "0xe000ed28", "hex": "00820000"}]`, entries)
	}
	return []struct{ name, json, want string }{
		{"empty", "", "empty file"},
		{"not JSON", "hello", "unknown dump format (starts with 68 65 6c 6c 6f): want a faultline.dump/1 JSON manifest"},
		{"array", "[1, 2]", "unknown dump format"},
		{"garbage", "{not json}", "offset 2: invalid JSON: invalid character 'n' looking for beginning of object key string"},
		{"truncated", sample[:100], "offset 100: invalid JSON: unexpected end of JSON input"},
		{"trailing garbage", sample + "x", fmt.Sprintf("offset %d: invalid JSON: invalid character 'x' after top-level value", len(sample)+1)},
		{"no schema", edit(t, `"schema": "faultline.dump/1",`, ""), `schema: missing: want "faultline.dump/1"`},
		{"other schema", edit(t, `"faultline.dump/1"`, `"faultline.dump/2"`), `schema: "faultline.dump/2" is not supported: want "faultline.dump/1"`},
		{"schema number", edit(t, `"faultline.dump/1"`, `1`), `schema: got a number, want a string`},
		{"cpu number", edit(t, `"cortex-m4"`, `4`), `cpu: got a number, want a string`},
		{"bad hex number", edit(t, `"pc": "0x00000204"`, `"pc": "0xzz"`), `registers.pc: "0xzz" is not a number: want a "0x" hex string or a JSON integer`},
		{"hex without 0x", edit(t, `"pc": "0x00000204"`, `"pc": "1f"`), `registers.pc: "1f" is not a number`},
		{"decimal string", edit(t, `"pc": "0x00000204"`, `"pc": "516"`), `registers.pc: "516" is not a number`},
		{"bare 0x", edit(t, `"pc": "0x00000204"`, `"pc": "0x"`), `registers.pc: "0x" is not a number`},
		{"hex with space", edit(t, `"pc": "0x00000204"`, `"pc": " 0x204"`), `registers.pc: " 0x204" is not a number`},
		{"float", edit(t, `"pc": "0x00000204"`, `"pc": 1.5`), `registers.pc: 1.5 is not an integer`},
		{"exponent", edit(t, `"pc": "0x00000204"`, `"pc": 1e3`), `registers.pc: 1e3 is not an integer`},
		{"negative", edit(t, `"pc": "0x00000204"`, `"pc": -4`), `registers.pc: -4 is negative`},
		{"hex too big", edit(t, `"pc": "0x00000204"`, `"pc": "0x100000000"`), `registers.pc: "0x100000000" does not fit in 32 bits`},
		{"integer too big", edit(t, `"pc": "0x00000204"`, `"pc": 4294967296`), `registers.pc: 4294967296 does not fit in 32 bits`},
		{"huge integer", edit(t, `"pc": "0x00000204"`, `"pc": 123456789012345678901234567890`), `registers.pc: 123456789012345678901234567890 does not fit in 32 bits`},
		{"boolean", edit(t, `"pc": "0x00000204"`, `"pc": true`), `registers.pc: true is not a number`},
		{"object number", edit(t, `"pc": "0x00000204"`, `"pc": {}`), `registers.pc: {} is not a number`},
		{"unknown register", edit(t, `"r12": "0x0"`, `"r16": "0x0"`), `registers.r16: unknown register "r16": want r0-r12, sp, lr, pc`},
		{"unknown register s32", edit(t, `"r12": "0x0"`, `"s32": "0x0"`), `registers.s32: unknown register "s32"`},
		{"register alias twice", edit(t, `"r12": "0x0"`, `"r15": "0x0"`), `registers.pc: same register as registers.r15`},
		{"register twice", edit(t, `"r12": "0x0"`, `"pc": "0x0"`), `registers.pc: key appears twice`},
		{"registers array", edit(t, `"registers": {`, `"registers": [`)[:0] + `{"schema": "faultline.dump/1", "registers": []}`, `registers: got an array, want an object`},
		{"fault unknown", edit(t, `"cfsr": "0x8200"`, `"xfsr": "0x8200"`), `fault.xfsr: unknown fault register "xfsr": want one of cfsr, hfsr, mmfar`},
		{"fault twice", edit(t, `"mmfar": "0x0"`, `"CFSR": "0x0"`), `fault.CFSR: same register as fault.cfsr`},
		{"fault bad number", edit(t, `"hfsr": "0x40000000"`, `"hfsr": "forced"`), `fault.hfsr: "forced" is not a number`},
		{"memory object", mem(`{}`), `memory: got an object, want an array`},
		{"memory element", mem(`[1]`), `memory[0]: got a number, want an object`},
		{"no address", mem(`[{"file": "ram.bin"}]`), `memory[0]: no address`},
		{"bad address", mem(`[{"address": "0x1_0", "file": "ram.bin"}]`), `memory[0].address: "0x1_0" is not a number`},
		{"both", mem(`[{"address": 0, "file": "ram.bin", "hex": "00"}]`), `memory[0]: has both "file" and "hex": want exactly one`},
		{"neither", mem(`[{"address": 0}]`), `memory[0]: has neither "file" nor "hex": want exactly one`},
		{"unknown memory key", mem(`[{"address": 0, "hex": "00", "name": "x"}]`), `memory[0].name: unknown key: want address, file, hex or size`},
		{"long file", mem(`[{"address": 0, "file": "ram.bin", "size": 32}]`), `memory[0]: region ram.bin is long: 64 bytes, size says 32`},
		{"short hex", mem(`[{"address": 0, "hex": "0011", "size": 4}]`), `memory[0]: region hex@0x00000000 is short: 2 bytes, size says 4`},
		{"size too large", mem(`[{"address": 0, "file": "ram.bin", "size": 4294967296}]`), `memory[0].size: 4294967296 bytes: larger than the 536870912 byte region limit`},
		{"size too big", mem(`[{"address": 0, "file": "ram.bin", "size": 4294967297}]`), `memory[0].size: 4294967297 is too large: at most 0x100000000`},
		{"empty hex", mem(`[{"address": 0, "hex": ""}]`), `memory[0]: region hex@0x00000000 is empty`},
		{"odd hex", mem(`[{"address": 0, "hex": "123"}]`), `memory[0].hex: odd number of hex digits (3): want two per byte`},
		{"bad hex digit", mem(`[{"address": 0, "hex": "00zz"}]`), `memory[0].hex: invalid hex digit 'z' at position 2`},
		{"hex number", mem(`[{"address": 0, "hex": 12}]`), `memory[0].hex: got a number, want a string`},
		{"overlap", mem(`[{"address": "0x20000000", "file": "ram.bin"}, {"address": "0x20000010", "hex": "00"}]`),
			`memory[1]: region hex@0x20000010 (0x20000010-0x20000011) overlaps memory[0], region ram.bin (0x20000000-0x20000040)`},
		{"overlap reversed", mem(`[{"address": "0x20000010", "hex": "00"}, {"address": "0x20000000", "file": "ram.bin"}]`),
			`memory[1]: region ram.bin (0x20000000-0x20000040) overlaps memory[0], region hex@0x20000010 (0x20000010-0x20000011)`},
		{"same address", mem(`[{"address": 4, "hex": "00"}, {"address": 4, "hex": "00"}]`), `memory[1]: region hex@0x00000004 (0x00000004-0x00000005) overlaps memory[0]`},
		{"past 4 GiB", mem(`[{"address": "0xfffffff0", "file": "ram.bin"}]`), `memory[0]: region ram.bin at 0xfffffff0 with 64 bytes runs past 4 GiB (ends at 0x100000030)`},
		{"address too big", mem(`[{"address": "0x100000000", "hex": "00"}]`), `memory[0].address: "0x100000000" does not fit in 32 bits`},
		{"absolute path", mem(`[{"address": 0, "file": "/etc/passwd"}]`), `memory[0].file: "/etc/passwd" is an absolute path: want a path relative to the manifest's directory`},
		{"backslash absolute", mem(`[{"address": 0, "file": "\\x.bin"}]`), `memory[0].file: "\\x.bin" is an absolute path`},
		{"dotdot", mem(`[{"address": 0, "file": "../ram.bin"}]`), `memory[0].file: "../ram.bin" escapes the manifest's directory: want a path inside it`},
		{"inner dotdot", mem(`[{"address": 0, "file": "a/../../ram.bin"}]`), `memory[0].file: "a/../../ram.bin" escapes the manifest's directory`},
		{"empty path", mem(`[{"address": 0, "file": ""}]`), `memory[0].file: empty path`},
		{"NUL in path", mem(`[{"address": 0, "file": "ram.bin\u0000x"}]`), `memory[0].file: "ram.bin\x00x" escapes`},
		{"truth without frames", edit(t, `"frames": [{"pc": "0x00000204", "function": "HardFault_Handler"}]`, `"stop": "x"`), `truth.frames: missing: want an array of frames`},
		{"truth without source", edit(t, `"source": "emulator-shadow-stack",`, ``), `truth.source: missing`},
		{"truth frames object", edit(t, `"frames": [{"pc": "0x00000204", "function": "HardFault_Handler"}]`, `"frames": {}`), `truth.frames: got an object, want an array`},
		{"truth bad pc", edit(t, `{"pc": "0x00000204", "function"`, `{"pc": "pc", "function"`), `truth.frames[0].pc: "pc" is not a number`},
		{"truth bad kind", edit(t, `"function": "HardFault_Handler"`, `"function": "x", "kind": "inlined"`), `truth.frames[0].kind: "inlined" is not a frame kind: want "normal" or "exception"`},
		{"truth bad line", edit(t, `"function": "HardFault_Handler"`, `"function": "x", "line": -1`), `truth.frames[0].line: -1 is negative`},
		{"truth line too big", edit(t, `"function": "HardFault_Handler"`, `"function": "x", "line": 2147483648`), `truth.frames[0].line: 2147483648 does not fit in 31 bits`},
		{"truth function number", edit(t, `"function": "HardFault_Handler"`, `"function": 7`), `truth.frames[0].function: got a number, want a string`},
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range badCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.json), "crash.json", mapFS(map[string][]byte{"ram.bin": ram()}))
			if err == nil {
				t.Fatalf("no error; dump %+v", d)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "crash.json" {
				t.Fatalf("error %T %v is not a *FormatError for crash.json", err, err)
			}
			if want := "crash.json: " + tc.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n  %s\nwant prefix\n  %s", err, want)
			}
		})
	}
}

// TestErrorOffsets checks that field errors point at the offending value.
func TestErrorOffsets(t *testing.T) {
	for _, tc := range []struct{ json, at string }{
		{edit(t, `"pc": "0x00000204"`, `"pc": "0xzz"`), `"0xzz"`},
		{edit(t, `"r12": "0x0"`, `"r16": "0x1"`), `"0x1"`},
		{edit(t, `"hex": "00820000"`, `"hex": "0082000"`), `"0082000"`},
		{edit(t, `"line": 1`[:0]+`"function": "HardFault_Handler"`, `"function": "x", "kind": "inlined"`), `"inlined"`},
	} {
		_, err := Parse([]byte(tc.json), "crash.json", mapFS(map[string][]byte{"ram.bin": ram()}))
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("%v", err)
		}
		if want := int64(strings.Index(tc.json, tc.at)); fe.Offset != want {
			t.Errorf("%v: offset %d, want %d", err, fe.Offset, want)
		}
	}
}

// TestTruncated parses every proper prefix of the sample: each must fail
// with a clear error, never panic.
func TestTruncated(t *testing.T) {
	files := mapFS(map[string][]byte{"ram.bin": ram()})
	for n := 0; n < len(sample); n++ {
		_, err := Parse([]byte(sample[:n]), "crash.json", files)
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix %d: error %v is not a *FormatError", n, err)
		}
		msg := err.Error()
		switch {
		case strings.TrimSpace(sample[:n]) == "":
			if !errors.Is(err, ErrUnknownFormat) {
				t.Errorf("prefix %d: %v", n, err)
			}
		case !strings.HasPrefix(msg, "crash.json: offset ") || !strings.Contains(msg, "invalid JSON") || fe.Offset > int64(n) || fe.Offset < 1:
			t.Errorf("prefix %d: %v", n, err)
		}
	}
}

func TestDetect(t *testing.T) {
	if f, ok := Detect([]byte(" \n{")); !ok || f.Name != FormatNative {
		t.Errorf("Detect(JSON object) = %q, %v", f.Name, ok)
	}
	for _, b := range []string{"", "  ", "[]", "cat", "ZEBRA", "COR"} {
		if f, ok := Detect([]byte(b)); ok {
			t.Errorf("Detect(%q) = %q", b, f.Name)
		}
	}
	for b, want := range map[string]string{
		"cC\x03\x00":                  FormatCrashCatcher,
		"ZE\x02\x00":                  FormatZephyr,
		"CORE":                        FormatMemfault,
		"log\r\n6343030001000000\r\n": FormatCrashCatcherHex,
		"[00:00:01] #CD:BEGIN#\n":     FormatZephyrLog,
	} {
		if f, ok := Detect([]byte(b)); !ok || f.Name != want {
			t.Errorf("Detect(%q) = %q, %v; want %q", b, f.Name, ok, want)
		}
	}
	a, b := Formats(), Formats()
	first := b[0].Name
	a[0].Name = "changed"
	if b[0].Name != first || Formats()[0].Name != first {
		t.Error("Formats shares its slice between calls")
	}
}

// writeFiles creates files in dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifest(entries string) string {
	return `{"schema": "faultline.dump/1", "memory": [` + entries + `]}`
}

func TestLoadErrors(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dump")
	writeFiles(t, root, map[string]string{"outside.bin": "secret!!"})
	writeFiles(t, dir, map[string]string{
		"ram.bin":           "0123456789abcdef",
		"sub/ram.bin":       "0123",
		"ok.json":           manifest(`{"address": 0, "file": "ram.bin", "size": 16}, {"address": 16, "file": "sub/ram.bin"}`),
		"missing.json":      manifest(`{"address": 0, "file": "nope.bin"}`),
		"short.json":        manifest(`{"address": 0, "file": "ram.bin", "size": 17}`),
		"dotdot.json":       manifest(`{"address": 0, "file": "../outside.bin"}`),
		"abs.json":          manifest(`{"address": 0, "file": "` + filepath.ToSlash(filepath.Join(root, "outside.bin")) + `"}`),
		"link.json":         manifest(`{"address": 0, "file": "link.bin"}`),
		"dir.json":          manifest(`{"address": 0, "file": "sub"}`),
		"overlap.json":      manifest(`{"address": 0, "file": "ram.bin"}, {"address": 15, "file": "sub/ram.bin"}`),
		"big.json":          manifest(`{"address": 0, "file": "big.bin"}`),
		"garbage.json":      "\x7fELF\x01\x01",
		"truncated.json":    `{"schema": "faultline.dump/1", "memory": [`,
		"past4g.json":       manifest(`{"address": "0xfffffff8", "file": "ram.bin"}`),
		"badnum.json":       `{"schema": "faultline.dump/1", "registers": {"pc": "0xzz"}}`,
		"unknownreg.json":   `{"schema": "faultline.dump/1", "registers": {"x99": 1}}`,
		"sub/nested.json":   manifest(`{"address": 0, "file": "../ram.bin"}`),
		"sub/fine.json":     manifest(`{"address": 0, "file": "ram.bin"}`),
		"dotslash.json":     manifest(`{"address": 0, "file": "./sub/../ram.bin"}`),
		"missingdir.json":   manifest(`{"address": 0, "file": "nodir/ram.bin"}`),
		"emptyregion.json":  manifest(`{"address": 0, "file": "empty.bin"}`),
		"empty.bin":         "",
		"hexandfile.json":   manifest(`{"address": 0, "file": "ram.bin", "hex": "00"}`),
		"notanobject.json":  `{"schema": "faultline.dump/1", "memory": [[]]}`,
		"escapesroot.json":  manifest(`{"address": 0, "file": "sub/../../dump/ram.bin"}`),
		"sizemismatch.json": manifest(`{"address": 0, "file": "sub/ram.bin", "size": "0x10"}`),
	})
	if err := os.Symlink(filepath.Join(root, "outside.bin"), filepath.Join(dir, "link.bin")); err != nil {
		t.Fatal(err)
	}

	// A sparse file larger than MaxRegionSize: refused from its size, unread.
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxRegionSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d, err := Load(filepath.Join(dir, "ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Memory) != 2 || d.Memory[1].Name != "sub/ram.bin" || string(d.Memory[1].Data) != "0123" {
		t.Errorf("ok.json: memory %+v", d.Memory)
	}
	if d, err := Load(filepath.Join(dir, "dotslash.json")); err != nil || string(d.Memory[0].Data) != "0123456789abcdef" {
		t.Errorf("dotslash.json: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "sub", "fine.json")); err != nil {
		t.Errorf("sub/fine.json: %v", err)
	}

	// Partial dumps: a missing or short region file is decoded as far as
	// it goes, with a warning naming the file and the addresses missing.
	for _, tc := range []struct{ file, warning string }{
		{"missing.json", `memory[0]: region file "nope.bin" (memory from 0x00000000 on, size not given) is missing: that memory is not in the dump`},
		{"missingdir.json", `memory[0]: region file "nodir/ram.bin" (memory from 0x00000000 on, size not given) is missing: that memory is not in the dump`},
		{"short.json", `memory[0]: region file "ram.bin" holds 16 of its 17 bytes: memory 0x00000010-0x00000011 is missing`},
		{"sizemismatch.json", `memory[0]: region file "sub/ram.bin" holds 4 of its 16 bytes: memory 0x00000004-0x00000010 is missing`},
	} {
		d, err := Load(filepath.Join(dir, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if len(d.Warnings) != 1 || d.Warnings[0] != tc.warning {
			t.Errorf("%s: warnings %q, want %q", tc.file, d.Warnings, tc.warning)
		}
	}

	for _, tc := range []struct {
		file string
		want string
		is   error
	}{
		{"nonexistent.json", "cannot read: no such file or directory", fs.ErrNotExist},
		{"dotdot.json", `memory[0].file: "../outside.bin" escapes the manifest's directory`, nil},
		{"escapesroot.json", `memory[0].file: "sub/../../dump/ram.bin" escapes the manifest's directory`, nil},
		{"sub/nested.json", `memory[0].file: "../ram.bin" escapes the manifest's directory`, nil},
		{"abs.json", `memory[0].file: "` + filepath.ToSlash(filepath.Join(root, "outside.bin")) + `" is an absolute path`, nil},
		{"link.json", `memory[0].file: cannot read "link.bin": path escapes from parent`, nil},
		{"dir.json", `memory[0].file: cannot read "sub": not a regular file`, nil},
		{"overlap.json", `memory[1]: region sub/ram.bin (0x0000000f-0x00000013) overlaps memory[0], region ram.bin (0x00000000-0x00000010)`, nil},
		{"big.json", `memory[0].file: cannot read "big.bin": too large: 536870913 bytes, more than the 536870912 byte region limit`, ErrTooLarge},
		{"garbage.json", `unknown dump format (starts with 7f 45 4c 46 01 01)`, ErrUnknownFormat},
		{"truncated.json", `offset 42: invalid JSON: unexpected end of JSON input`, nil},
		{"past4g.json", `memory[0]: region ram.bin at 0xfffffff8 with 16 bytes runs past 4 GiB (ends at 0x100000008)`, nil},
		{"badnum.json", `registers.pc: "0xzz" is not a number`, nil},
		{"unknownreg.json", `registers.x99: unknown register "x99"`, nil},
		{"emptyregion.json", `memory[0]: region empty.bin is empty`, nil},
		{"hexandfile.json", `memory[0]: has both "file" and "hex"`, nil},
		{"notanobject.json", `memory[0]: got an array, want an object`, nil},
	} {
		path := filepath.Join(dir, tc.file)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: no error", tc.file)
			continue
		}
		if want := path + ": " + tc.want; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n  got  %v\n  want %s", tc.file, err, want)
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != path {
			t.Errorf("%s: %T is not a *FormatError naming the file", tc.file, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: errors.Is(%v, %v) is false", tc.file, err, tc.is)
		}
	}
}

// TestLoadManifestTooLarge refuses a manifest over MaxManifestSize from its
// size.
func TestLoadManifestTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxManifestSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path)
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), path+": cannot read: too large") {
		t.Errorf("got %v", err)
	}
}
