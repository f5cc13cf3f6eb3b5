package crashdump

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// FuzzProbeRS feeds arbitrary bytes to the probe-rs importer; seeded with
// the probe-rs fixtures and the hostile coredumps. Errors must be
// *FormatError values naming the file with an offset inside it.
func FuzzProbeRS(f *testing.F) {
	for _, b := range hostileFiles(f, "probe-rs") {
		f.Add(b)
	}
	paths, _ := filepath.Glob(filepath.Join("..", "fixtures", "import", "probe-rs", "*.coredump"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
			addMutants(f, b, 16)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDump(t, data, parseProbeRS)
		if matchProbeRS(data) {
			if d, err := Parse(data, "fuzz.bin", nil); err == nil && d.Format != FormatProbeRS {
				t.Fatalf("probe-rs content parsed as %q", d.Format)
			}
		}
	})
}

// A declared length far beyond the file allocates nothing: the array of
// 2^32-1 bytes is refused before any buffer is made for it.
func TestProbeRSHugeLengthBounded(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "hostile", "probe-rs", "bytes-absurd-length.coredump"))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Parse(data, "huge.coredump", nil)
	runtime.ReadMemStats(&after)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "declares 4294967295 elements") {
		t.Fatalf("error %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("parsing a %d-byte file allocated %d bytes", len(data), n)
	}
}

// The importer reads what rmp_serde writes in its other forms: a
// RegisterValue as [index, [value]] (rmp_serde before 1.0), U64 and
// U128 values, a Vec<u8> as bin; and warns about the rest.
func TestProbeRSForms(t *testing.T) {
	doc := []byte{
		0x83,
		0xa9, 'r', 'e', 'g', 'i', 's', 't', 'e', 'r', 's', 0x84,
		0x0f, 0x92, 0x00, 0x91, 0xcd, 0x01, 0x00, // PC: [0, [0x100]] (U32)
		0x0d, 0x81, 0xa3, 'U', '6', '4', 0xce, 0x20, 0x00, 0x00, 0x20, // SP: {"U64": 0x20000020}
		0x0e, 0x81, 0xa4, 'U', '1', '2', '8', 0xc4, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf9, // LR as 16 bytes
		0x40, 0x81, 0xa3, 'U', '6', '4', 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, // S0 wider than 32 bits: ignored
		0xa4, 'd', 'a', 't', 'a', 0x91, 0x92, 0x92, 0xce, 0x20, 0x00, 0x00, 0x00, 0xce, 0x20, 0x00, 0x00, 0x08,
		0xc4, 0x08, 1, 2, 3, 4, 5, 6, 7, 8,
		0xa9, 'c', 'o', 'r', 'e', '_', 't', 'y', 'p', 'e', 0xa6, 'a', 'r', 'm', 'v', '8', 'm',
	}
	d, err := Parse(doc, "forms.coredump", nil)
	if err != nil {
		t.Fatal(err)
	}
	for reg, want := range map[unwinders.Reg]uint32{unwinders.PC: 0x100, unwinders.SP: 0x20000020, unwinders.LR: 0xfffffff9} {
		if v, ok := d.Regs.Get(reg); !ok || v != want {
			t.Errorf("%v = %#x %v, want %#x", reg, v, ok, want)
		}
	}
	if _, ok := d.Regs.Get(unwinders.S(0)); ok {
		t.Error("s0 wider than 32 bits was kept")
	}
	if len(d.Memory) != 1 || !bytes.Equal(d.Memory[0].Data, []byte{1, 2, 3, 4, 5, 6, 7, 8}) || d.CPU != "armv8-m" {
		t.Errorf("memory %v cpu %q", d.Memory, d.CPU)
	}
	if w := strings.Join(d.Warnings, "\n"); !strings.Contains(w, "register id 64 (offset") {
		t.Errorf("warnings %q", w)
	}
}

// Parsing a probe-rs coredump: the m3 fixture (16 KiB of RAM as an array
// of integers, as probe-rs writes it, plus the SCB block).
func BenchmarkParseProbeRS(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "import", "probe-rs", "gcc-m3-O2-null_write_deep.coredump"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseProbeRS(data, "bench.coredump", nil); err != nil {
			b.Fatal(err)
		}
	}
}
