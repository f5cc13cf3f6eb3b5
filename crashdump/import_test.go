package crashdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// TestImportFixtures checks the committed fixtures/import files against the
// generator (refresh with -update) and decodes each with the importers,
// comparing the registers with the state the generator computed by hand.
func TestImportFixtures(t *testing.T) {
	dir := importDir()
	for _, f := range buildImportFixtures(t) {
		path := filepath.Join(dir, f.file)
		if *update {
			if err := os.WriteFile(path, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, f.data) {
			t.Errorf("%s differs from the generator's output: run go test ./crashdump -run TestImportFixtures -update and review the diff", path)
		}
	}
	for _, name := range importSources {
		s := readSource(t, name)
		p := computePre(t, s)
		for _, tc := range []struct{ file, format string }{
			{".crashcatcher.bin", FormatCrashCatcher},
			{".crashcatcher.txt", FormatCrashCatcherHex},
			{".crashcatcher-v2.bin", FormatCrashCatcher},
			{".zephyr.bin", FormatZephyr},
			{".zephyr.log", FormatZephyrLog},
			{".memfault.bin", FormatMemfault},
		} {
			t.Run(name+tc.file, func(t *testing.T) {
				d, err := Load(filepath.Join(dir, name+tc.file))
				if err != nil {
					t.Fatal(err)
				}
				if d.Format != tc.format {
					t.Errorf("Format = %q, want %q", d.Format, tc.format)
				}
				want := map[unwinders.Reg]uint32{unwinders.SP: p.SP, unwinders.LR: p.LR, unwinders.PC: p.PC, unwinders.XPSR: p.XPSR}
				for i := 0; i < 13; i++ {
					want[unwinders.R0+unwinders.Reg(i)] = p.R[i]
				}
				// Zephyr and CrashCatcher 2.0 carry no MSP/PSP.
				if tc.format != FormatZephyr && tc.format != FormatZephyrLog && !strings.Contains(tc.file, "-v2") {
					want[unwinders.MSP], want[unwinders.PSP] = p.MSP, p.PSP
				}
				if p.FP && strings.HasPrefix(tc.format, "crashcatcher") {
					for i := 0; i < 32; i++ {
						want[unwinders.S(i)] = p.S[i]
					}
					want[unwinders.FPSCR] = p.FPSCR
				}
				for reg, v := range want {
					if g, ok := d.Regs.Get(reg); !ok || g != v {
						t.Errorf("%s = 0x%08x, %v; want 0x%08x", reg, g, ok, v)
					}
				}
				var n int
				d.Regs.Each(func(unwinders.Reg, uint32) { n++ })
				if n != len(want) {
					t.Errorf("%d registers known, want %d", n, len(want))
				}
				if v, ok := d.Fault.CFSR.Get(); !ok || v != s.word(t, 0xE000ED28) {
					t.Errorf("CFSR = 0x%x, %v; want 0x%x", v, ok, s.word(t, 0xE000ED28))
				}
				if v, ok := d.Fault.ICSR.Get(); !ok || v&0x1ff != p.ExcPSR&0x1ff {
					t.Errorf("ICSR = 0x%x, %v; want VECTACTIVE %d", v, ok, p.ExcPSR&0x1ff)
				}
				if _, err := d.Image(); err != nil {
					t.Error(err)
				}
				wantWarn := 0
				if tc.format == FormatCrashCatcherHex {
					wantWarn = 0 // the second, cut-short dump is never reached
				}
				if len(d.Warnings) != wantWarn {
					t.Errorf("warnings %q", d.Warnings)
				}
			})
		}
		t.Run(name+".raw", func(t *testing.T) {
			for _, combo := range [][2]string{{".regs.gdb.txt", ".mem.hex"}, {".regs.openocd.txt", ".mem.srec"}} {
				d, err := Combine(filepath.Join(dir, name+combo[0]), []string{filepath.Join(dir, name+combo[1])}, CombineOptions{CPU: s.CPU})
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range s.Regs {
					reg, _ := unwinders.ParseReg(k)
					if g, ok := d.Regs.Get(reg); !ok || g != v {
						t.Errorf("%s: %s = 0x%x, %v; want 0x%x", combo[0], k, g, ok, v)
					}
				}
				if len(d.Memory) != len(s.Mem) {
					t.Errorf("%s: %d regions, want %d", combo[1], len(d.Memory), len(s.Mem))
				}
				for i, r := range d.Memory {
					if r.Addr != s.Mem[i].Addr || !bytes.Equal(r.Data, s.Mem[i].Data) {
						t.Errorf("%s: region %d at 0x%08x differs", combo[1], i, r.Addr)
					}
				}
				if v, ok := d.Fault.CFSR.Get(); !ok || v != s.word(t, 0xE000ED28) {
					t.Errorf("CFSR = 0x%x, %v", v, ok)
				}
			}
			d, err := Combine(filepath.Join(dir, name+".regs.gdb.txt"), []string{filepath.Join("..", "fixtures", "qemu", name+".ram.bin")},
				CombineOptions{Image: ImageOptions{Base: 0x20000000, HasBase: true}})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Memory) != 1 || d.Memory[0].Addr != 0x20000000 || len(d.Memory[0].Data) != len(s.Mem[0].Data) {
				t.Errorf("raw binary: %d regions", len(d.Memory))
			}
		})
	}
}

// TestWriteCrashCatcher exports each oracle dump (taken at the handler's
// first instruction) to CrashCatcher and checks it against the bytes the
// generator laid out by hand, except for memory layout, then decodes it.
func TestWriteCrashCatcher(t *testing.T) {
	for _, name := range importSources {
		t.Run(name, func(t *testing.T) {
			d, err := Load(filepath.Join("..", "fixtures", "qemu", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := d.WriteCrashCatcher(&b); err != nil {
				t.Fatal(err)
			}
			s := readSource(t, name)
			p := computePre(t, s)
			want, _ := buildCrashCatcher(t, s, p, 3, false)
			hdr := 88
			if p.FP {
				hdr += 132
			}
			if !bytes.Equal(b.Bytes()[:hdr], want[:hdr]) {
				t.Errorf("header and registers differ:\n got % x\nwant % x", b.Bytes()[:hdr], want[:hdr])
			}
			d2, err := Parse(b.Bytes(), "x.bin", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(d2.Memory) != len(d.Memory) {
				t.Errorf("%d regions, want %d", len(d2.Memory), len(d.Memory))
			}
			if d2.Fault.CFSR != d.Fault.CFSR || d2.Fault.ICSR != d.Fault.ICSR {
				t.Errorf("fault %+v, want %+v", d2.Fault, d.Fault)
			}
			// Exporting the imported dump again gives the same bytes, except
			// that exceptionPSR keeps only the exception number (the
			// imported dump carries it in ICSR.VECTACTIVE).
			var b2 bytes.Buffer
			if err := d2.WriteCrashCatcher(&b2); err != nil {
				t.Fatal(err)
			}
			first := bytes.Clone(b.Bytes())
			copy(first[84:88], le32(binary.LittleEndian.Uint32(first[84:])&0x1ff))
			if !bytes.Equal(first, b2.Bytes()) {
				t.Errorf("second export differs")
			}
		})
	}
}

func TestWriteCrashCatcherNotAtEntry(t *testing.T) {
	d, err := Load(filepath.Join("..", "fixtures", "qemu", importSources[0]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	// As if the handler had pushed 8 bytes: SP no longer points at the frame.
	d.Regs.Set(unwinders.SP, d.Regs.Value(unwinders.SP)-8)
	err = d.WriteCrashCatcher(new(bytes.Buffer))
	if !errors.Is(err, ErrNoPreException) {
		t.Errorf("err = %v, want ErrNoPreException", err)
	}
}

// le32 is a little-endian word for hand-built inputs.
func le32(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// ccHeader is a minimal v3 CrashCatcher header (88 bytes, no FP).
func ccHeader() []byte {
	return cat([]byte{'c', 'C', 3, 0}, le32(0), le32(0, 1, 2, 3), le32(4, 5, 6, 7, 8, 9, 10, 11), le32(12, 0x20000100, 0x1001, 0x200, 0x01000000), le32(0x200000e0, 0, 3))
}

func zHeader(flags byte) []byte { return cat([]byte{'Z', 'E', 2, 0, 3, 0, 5, flags}, le32(0)) }
func zArch() []byte {
	return cat([]byte{'A', 1, 0, 36, 0}, le32(0, 1, 2, 3, 12, 0x1001, 0x200, 0x01000000, 0x20000100))
}
func mfBlock(typ byte, addr uint32, data []byte) []byte {
	return cat([]byte{typ, 0, 0, 0}, le32(addr, uint32(len(data))), data)
}
func mfDump(blocks ...[]byte) []byte {
	body := cat(blocks...)
	return cat(le32(0x45524F43, 2, uint32(12+len(body)+16)), body, le32(0x504D5544, 0, 0, 0))
}
func mfRegs() []byte {
	return mfBlock(0, 0, le32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x20000100, 0x1001, 0x200, 0x01000000, 0x200000e0, 0))
}

// TestImportErrors feeds each importer broken input and checks that the
// error names the file, the offset and what was expected.
func TestImportErrors(t *testing.T) {
	mem := func(a, e uint32, n int) []byte { return cat(le32(a, e), make([]byte, n)) }
	zmem := func(a, e uint32, n int) []byte { return cat([]byte{'M', 1, 0}, le32(a, e), make([]byte, n)) }
	for _, tc := range []struct {
		name string
		data []byte
		off  int64
		want string
	}{
		{"cc version", []byte{'c', 'C', 9, 0, 0, 0, 0, 0}, 2, "version 9.0 is not supported"},
		{"cc truncated header", ccHeader()[:40], 8, "truncated: the registers"},
		{"cc truncated exceptionPSR", ccHeader()[:86], 84, "truncated: exceptionPSR"},
		{"cc region past end", cat(ccHeader(), mem(0x20000000, 0x20000100, 16)), 96, "truncated: memory region 0x20000000-0x20000100 needs 256 bytes, only 16 left"},
		{"cc region end below start", cat(ccHeader(), mem(0x20000100, 0x20000000, 0)), 88, "end 0x20000000 is below its start"},
		{"cc overlapping regions", cat(ccHeader(), mem(0x20000000, 0x20000010, 16), mem(0x20000008, 0x20000018, 16)), 112, "overlaps the region 0x20000000-0x20000010 at offset 88"},
		{"cc huge region", cat(ccHeader(), le32(0, 0xF0000000)), 88, "larger than the"},
		{"cc junk tail", cat(ccHeader(), []byte{1, 2, 3, 4}), 88, "want a region header (8 bytes) or the stack-overflow marker"},
		{"cc short tail", cat(ccHeader(), []byte{1, 2}), 88, "truncated: a memory region header"},
		{"cchex bad digit", []byte("CRASH ENCOUNTERED\r\n63430300\r\n0000000G\r\nEnd of dump\r\n"), 36, "invalid hex digit 'G'"},
		{"cchex odd", []byte("63430300\r\n000\r\nEnd of dump\r\n"), 10, "line of 3 hex digits"},
		{"cchex truncated", []byte("x\r\n63430300\r\n00000000\r\n0000\r\nEnd of dump\r\n"), 23, "truncated: the registers"},
		{"zephyr version", cat([]byte{'Z', 'E', 9, 0, 3, 0, 5, 0}, le32(0)), 2, "header version 9 is not supported"},
		{"zephyr target", cat([]byte{'Z', 'E', 2, 0, 1, 0, 5, 0}, le32(0)), 4, "target code 1 is not ARM Cortex-M"},
		{"zephyr pointer size", cat([]byte{'Z', 'E', 2, 0, 3, 0, 6, 0}, le32(0)), 6, "want 2^5"},
		{"zephyr truncated header", []byte{'Z', 'E', 2, 0, 3}, 4, "truncated: the target code"},
		{"zephyr unknown block", cat(zHeader(0), zArch(), []byte{'X', 1, 0}), 53, "unknown block id 'X' (0x58)"},
		{"zephyr arch short", cat(zHeader(0), []byte{'A', 2, 0, 36, 0}, make([]byte, 36)), 15, "arch block of version 2 is 36 bytes: want 68"},
		{"zephyr arch past end", cat(zHeader(0), []byte{'A', 1, 0, 36, 0}, make([]byte, 20)), 17, "truncated: the arch block needs 36 bytes, only 20 left"},
		{"zephyr memory past end", cat(zHeader(0), zArch(), zmem(0x20000000, 0x20001000, 4)), 64, "truncated: memory block 0x20000000-0x20001000 needs 4096 bytes, only 4 left"},
		{"zephyr overlap", cat(zHeader(0), zArch(), zmem(0x20000000, 0x20000008, 8), zmem(0x20000004, 0x20000010, 12)), 72, "overlaps"},
		{"zephyr missing crc", cat(zHeader(1), zArch()), 53, "announces a CRC trailer"},
		{"zephyr bad crc", cat(zHeader(1), zArch(), []byte{'C', 1, 0}, le32(0xdeadbeef)), 56, "CRC-32 mismatch: the dump says 0xdeadbeef"},
		{"zephyr no arch", zHeader(0), 12, "no arch ('A') block"},
		{"zlog bad digit", []byte("#CD:BEGIN#\n#CD:5a45zz\n#CD:END#\n"), 19, "invalid hex digit 'z'"},
		{"zlog error", []byte("boot\n#CD:BEGIN#\n#CD:ERROR CANNOT DUMP#\n"), 16, "the coredump backend failed"},
		{"zlog truncated", []byte("t=1 #CD:BEGIN#\nt=2 #CD:5a450200\nt=3 #CD:0300\nt=4 #CD:END#\n"), 44, "truncated: the pointer size"},
		{"memfault magic", cat([]byte("CORE"), le32(1, 28), le32(0x504D5544, 0, 0, 0)), 4, "version 1 is not supported"},
		{"memfault total beyond file", cat(le32(0x45524F43, 2, 1000), mfRegs()), 8, "truncated: the header's total size is 1000 bytes, the file has 100"},
		{"memfault no footer", func() []byte { b := mfDump(mfRegs()); return b[:len(b)-16] }(), 8, "truncated"},
		{"memfault unknown type", mfDump(mfRegs(), mfBlock(77, 0, nil)), 100, "unknown block type 77"},
		{"memfault block past end", mfDump(mfRegs(), cat([]byte{1, 0, 0, 0}, le32(0x20000000, 4096))), 112, "truncated: memory block 0x20000000 (4096 bytes) needs 4096 bytes, only 16 left"},
		{"memfault short regs", mfDump(mfBlock(0, 0, le32(1, 2, 3))), 20, "register block of 12 bytes: want 76"},
		{"memfault overlap", mfDump(mfRegs(), mfBlock(1, 0x20000000, make([]byte, 8)), mfBlock(1, 0x20000004, make([]byte, 8))), 120, "overlaps"},
		{"memfault no regs", mfDump(mfBlock(1, 0x20000000, make([]byte, 8))), 12, "no register block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.data, "bad.bin", nil)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FormatError", err)
			}
			if fe.File != "bad.bin" || fe.Offset != tc.off || !strings.Contains(fe.Msg, tc.want) {
				t.Errorf("got %q at offset %d; want offset %d and %q", err, fe.Offset, tc.off, tc.want)
			}
		})
	}
}

func TestImportWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"cc overflow bytes", cat(ccHeader(), []byte{0xAC, 0xCE, 0x55, 0xED}), "stack overflowed"},
		{"cc overflow word", cat(ccHeader(), le32(0xACCE55ED)), "stack overflowed"},
		{"cchex no trailer", []byte("CRASH ENCOUNTERED\r\n" + strings.ToUpper(fmt.Sprintf("%x", ccHeader())) + "\r\n"), "End of dump"},
		{"zephyr v2 no callee", cat(zHeader(0), []byte{'A', 2, 0, 68, 0}, make([]byte, 68)), "r4-r11 were not collected"},
		{"zephyr reason", cat([]byte{'Z', 'E', 2, 0, 3, 0, 5, 0}, le32(3), zArch()), "K_ERR_KERNEL_OOPS"},
		{"zephyr cpu block", cat(zHeader(0), zArch(), []byte{'F', 1, 0, 4, 0}, le32(1, 0x20000000, 0)), "CPU 1"},
		{"memfault trailing", cat(mfDump(mfRegs()), []byte{0xff, 0xff}), "2 bytes after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.data, "w.bin", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(d.Warnings, "\n"), tc.want) {
				t.Errorf("warnings %q, want %q", d.Warnings, tc.want)
			}
		})
	}
}

// TestZephyrOldSP: Zephyr 2.x stored the ESF address as SP; the importer
// recognises the frame at SP and moves SP above it.
func TestZephyrOldSP(t *testing.T) {
	frame := le32(0, 1, 2, 3, 12, 0x1001, 0x200, 0x01000200) // xPSR bit 9: padded
	arch := cat([]byte{'A', 1, 0, 36, 0}, le32(0, 1, 2, 3, 12, 0x1001, 0x200, 0x01000200, 0x20000100))
	d, err := Parse(cat(zHeader(0), arch, []byte{'M', 1, 0}, le32(0x20000100, 0x20000120), frame), "old.bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp := d.Regs.Value(unwinders.SP); sp != 0x20000124 {
		t.Errorf("SP = 0x%08x, want 0x20000124", sp)
	}
}

func TestMemoryImageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		off        int64
		want       string
	}{
		{"ihex checksum", ":0400000001020304F0\n:00000001FF\n", 17, "checksum 0xf0: want 0xf2"},
		{"ihex digit", ":04000000010203G4F2\n", 15, "invalid hex digit 'G'"},
		{"ihex count", ":0500000001020304F2\n", 1, "count 5 but 4 data bytes"},
		{"ihex type", ":0000000AF6\n", 7, "record type 0a"},
		{"ihex line", ":0400000001020304F2\nhello\n", 20, "want ':'"},
		{"ihex overlap", ":0400000001020304F2\n:0400020001020304F0\n", 20, "records overlap"},
		{"srec checksum", "S1070000010203040F\n", 16, "checksum 0x0f: want 0xee"},
		{"srec count", "S10900000102030405EE\n", 2, "count 9 but 8 bytes follow"},
		{"srec digit", "S10700000102030XEE\n", 15, "invalid hex digit 'X'"},
		{"srec S5", "S107000001020304EE\nS5030002FA\n", 19, "S5 record count 2: the file has 1"},
		{"srec S4", "S107000001020304EE\nS4030000FC\n", 19, "S4 record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := ParseMemoryImage([]byte(tc.data), "m.hex", ImageOptions{})
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v", err)
			}
			if fe.Offset != tc.off || !strings.Contains(fe.Msg, tc.want) {
				t.Errorf("got %q at %d; want %d %q", err, fe.Offset, tc.off, tc.want)
			}
		})
	}
	if _, _, _, err := ParseMemoryImage([]byte{1, 2, 3}, "m.bin", ImageOptions{}); err == nil || !strings.Contains(err.Error(), "--base") {
		t.Errorf("raw without base: %v", err)
	}
	rs, f, w, err := ParseMemoryImage([]byte("S00600004844521B\nS107000001020304EE\nS107000405060708DA\nS5030002FA\nS9030000FC\n"), "ok.srec", ImageOptions{})
	if err != nil || f != ImageSRec || len(w) != 0 || len(rs) != 1 || len(rs[0].Data) != 8 || rs[0].Data[7] != 8 {
		t.Errorf("srec: %v %v %v %v", rs, f, w, err)
	}
	rs, f, _, err = ParseMemoryImage([]byte(":020000040800F2\n:0400000001020304F2\n:00000001FF\n"), "ok.hex", ImageOptions{})
	if err != nil || f != ImageIHex || len(rs) != 1 || rs[0].Addr != 0x08000000 {
		t.Errorf("ihex: %v %v %v", rs, f, err)
	}
}

func TestParseRegisterText(t *testing.T) {
	gdb := `(gdb) info registers
r0             0x20000100          536871168
sp             0x2000ffb8          0x2000ffb8
pc             0x8000234           0x8000234 <main+12>
xPSR           0x21000003          553648131
msp            0x2000ffb8          0x2000ffb8
control        0x0                 0
r5             <unavailable>
s1             1.5                 (raw 0x3fc00000)
d0             {f = 0x0, u64 = 0x0}
`
	r, err := ParseRegisterText([]byte(gdb), "g.txt")
	if err != nil {
		t.Fatal(err)
	}
	for reg, v := range map[unwinders.Reg]uint32{unwinders.R0: 0x20000100, unwinders.SP: 0x2000ffb8, unwinders.PC: 0x8000234, unwinders.XPSR: 0x21000003, unwinders.MSP: 0x2000ffb8, unwinders.CONTROL: 0, unwinders.S(1): 0x3fc00000} {
		if g, ok := r.Get(reg); !ok || g != v {
			t.Errorf("%s = %x %v", reg, g, ok)
		}
	}
	if r.Known(unwinders.R5) {
		t.Error("r5 known")
	}
	ocd := "===== arm v7m registers\n(0) r0 (/32): 0x00000000\n(16) xPSR (/32): 0x01000000\npc (/32): 0x00000204 (dirty)\n(40) d0 (/64): 0x0000000000000000\n"
	r, err = ParseRegisterText([]byte(ocd), "o.txt")
	if err != nil || r.Value(unwinders.XPSR) != 0x01000000 || r.Value(unwinders.PC) != 0x204 || !r.Known(unwinders.R0) {
		t.Errorf("openocd: %v", err)
	}
	for _, tc := range []struct{ data, want string }{
		{"hello world\n", "no register values found"},
		{"r0 0x1 1\nr0 0x2 2\n", "given twice"},
		{"pc 0xZZ\n", "not a hex number"},
		{"pc 0x123456789 0\n", "does not fit in 32 bits"},
		{"(15) pc (/64): 0x0\n", "64 bits wide"},
	} {
		if _, err := ParseRegisterText([]byte(tc.data), "bad.txt"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.txt: ") {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.want)
		}
	}
}
