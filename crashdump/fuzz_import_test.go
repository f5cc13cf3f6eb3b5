package crashdump

import (
	mutation "github.com/faultline-dev/faultline/internal/mutate"

	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
)

// seedImport adds every fixtures/import file whose name ends with one of
// suffixes.
func seedImport(f *testing.F, suffixes ...string) {
	paths, _ := filepath.Glob(filepath.Join(importDir(), "*"))
	for _, p := range paths {
		for _, s := range suffixes {
			if strings.HasSuffix(p, s) {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
					addMutants(f, b, 16)
				}
			}
		}
	}
}

// addMutants adds every every-th mutant of b (internal/mutate:
// truncations at its structure boundaries, bit flips, length fields at
// 0 or their maximum) as a seed: a sample of the mutation sweep's inputs
// (cmd/faultline/cli TestMutationSweep), generated, never committed.
func addMutants(f *testing.F, b []byte, every int) {
	for i, m := range mutation.All(b, mutation.Options{}) {
		if i%every == 0 {
			f.Add(m.Data)
		}
	}
}

// checkImportErr checks the contract of every importer error.
func checkImportErr(t *testing.T, err error, name string, n int) {
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != name || !strings.HasPrefix(err.Error(), name+": ") {
		t.Fatalf("error %T %q does not name the file", err, err)
	}
	if fe.Offset > int64(n) {
		t.Fatalf("error offset %d past the end (%d bytes): %v", fe.Offset, n, err)
	}
}

// fuzzDump parses data with the given parser and exercises the result.
func fuzzDump(t *testing.T, data []byte, parse func([]byte, string, func(string) ([]byte, error)) (*Dump, error)) {
	d, err := parse(data, "fuzz.bin", nil)
	if err != nil {
		checkImportErr(t, err, "fuzz.bin", len(data))
		return
	}
	if _, err := d.Image(); err != nil {
		t.Fatalf("Image: %v", err)
	}
	_ = fault.Decode(d.Profile(), &d.Regs, d.Fault).String()
	if _, _, err := d.encode("fuzz", MaxHexRegion, nil); err != nil {
		t.Fatalf("encode of an imported dump: %v", err)
	}
	_ = d.WriteCrashCatcher(io.Discard)
}

func FuzzCrashCatcher(f *testing.F) {
	seedImport(f, ".crashcatcher.bin", ".crashcatcher.txt")
	f.Add(ccHeader())
	f.Add(cat(ccHeader(), le32(0x20000000, 0x20000008), make([]byte, 8), []byte{0xAC, 0xCE, 0x55, 0xED}))
	f.Add([]byte("CRASH ENCOUNTERED\r\n63430300\r\nEnd of dump\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDump(t, data, parseCrashCatcher)
		if matchCrashCatcherHex(data) {
			fuzzDump(t, data, parseCrashCatcherHex)
		}
	})
}

func FuzzZephyr(f *testing.F) {
	seedImport(f, ".zephyr.bin", ".zephyr.log")
	f.Add(cat(zHeader(0), zArch()))
	f.Add(cat(zHeader(0), zArch(), []byte{'T', 1, 0, 2, 0, 1, 2}, []byte{'F', 1, 0, 0, 0}, le32(0, 0)))
	f.Add([]byte("#CD:BEGIN#\n#CD:5a45\n#CD:END#\n"))
	// The console forms: colours, timestamps, CRLF, other lines, several
	// dumps, escape sequences cut short or too long, two records on a line.
	f.Add(cat(zConsole(zDump(0x1000), 0, "00:00:00.330,000"), zConsole(zDump(0x2000), -1, "00:00:01.000,000")))
	f.Add([]byte("[00:00:00.330,000] \x1b[1;31m<err> coredump: #CD:BEGIN#\x1b[0\r\n#CD:5a\x1b[" + strings.Repeat(";", 40) + "m45\r\n#CD:5a#CD:BEGIN#\x1bc\r\n#CD:ERROR CANNOT DUMP#\r\n#CD:END#"))
	if logs, _ := filepath.Glob(filepath.Join("..", "fixtures", "rtos-zephyr", "scenarios", "*-oops.zephyr.log")); len(logs) > 0 {
		if b, err := os.ReadFile(logs[0]); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDump(t, data, parseZephyr)
		if matchZephyrLog(data) {
			fuzzDump(t, data, parseZephyrLog)
		}
	})
}

func FuzzMemfault(f *testing.F) {
	seedImport(f, ".memfault.bin")
	f.Add(mfDump(mfRegs(), mfBlock(1, 0x20000000, make([]byte, 8)), mfBlock(3, 0, []byte("x"))))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDump(t, data, parseMemfault) })
}

// fuzzImage parses a memory image and checks the regions.
func fuzzImage(t *testing.T, data []byte) {
	rs, _, _, err := ParseMemoryImage(data, "fuzz.img", ImageOptions{Base: 0xFFFFFF00, HasBase: true})
	if err != nil {
		checkImportErr(t, err, "fuzz.img", len(data))
		return
	}
	d := &Dump{Path: "fuzz.img", Memory: rs}
	if _, err := d.Image(); err != nil {
		t.Fatalf("regions overlap: %v", err)
	}
}

func FuzzIHex(f *testing.F) {
	seedImport(f, ".mem.hex")
	f.Add([]byte(":020000040800F2\n:0400000001020304F2\n:00000001FF\n"))
	f.Add([]byte(":020000021000EC\n:0400000001020304F2\n"))
	f.Fuzz(fuzzImage)
}

func FuzzSRec(f *testing.F) {
	seedImport(f, ".mem.srec")
	f.Add([]byte("S00600004844521B\nS107000001020304EE\nS5030001FB\nS9030000FC\n"))
	f.Add([]byte("S2080000000102030400\nS804000000FB\n"))
	f.Fuzz(fuzzImage)
}

func FuzzRegText(f *testing.F) {
	seedImport(f, ".regs.gdb.txt", ".regs.openocd.txt")
	f.Add([]byte("r0 0x1 1\npc 0x2 2\n(3) sp (/32): 0x4 (dirty)\ns1 1.5 (raw 0x3fc00000)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseRegisterText(data, "fuzz.txt")
		if err != nil {
			checkImportErr(t, err, "fuzz.txt", len(data))
		}
	})
}
