package crashdump

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	mutation "github.com/faultline-dev/faultline/internal/mutate"
	"github.com/faultline-dev/faultline/unwinders"
)

// hostileDir is the committed corpus of hostile inputs (README.md there).
const hostileDir = "../fixtures/hostile"

// hostileFiles returns the contents of every file under
// fixtures/hostile/<kind> for each kind.
func hostileFiles(f *testing.F, kinds ...string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, k := range kinds {
		paths, err := filepath.Glob(filepath.Join(hostileDir, k, "*"))
		if err != nil || len(paths) == 0 {
			f.Fatalf("no hostile %s inputs: %v", k, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// FuzzDetect feeds arbitrary bytes to Parse, which picks the format from
// the content: every importer and the native manifest, behind the
// detection order of Formats. Errors must be *FormatError values naming
// the file with an offset inside it; a dump that parses must have the
// format Detect names, an image without overlaps, a fault report, and
// must encode to a manifest and to CrashCatcher. The corpus is seeded with
// the hostile dumps of fixtures/hostile and the importer fixtures.
func FuzzDetect(f *testing.F) {
	for _, b := range hostileFiles(f, "native", "crashcatcher", "zephyr", "memfault", "probe-rs") {
		f.Add(b)
	}
	seedImport(f, ".crashcatcher.bin", ".crashcatcher.txt", ".zephyr.bin", ".zephyr.log", ".memfault.bin")
	f.Fuzz(func(t *testing.T, data []byte) {
		// Without region files, then with them.
		fuzzDump(t, data, Parse)
		d, err := Parse(data, "fuzz.bin", fuzzFiles)
		if err != nil {
			checkImportErr(t, err, "fuzz.bin", len(data))
			return
		}
		if ft, ok := Detect(data); !ok || ft.Name != d.Format {
			t.Fatalf("parsed as %q, but Detect says %q (%v)", d.Format, ft.Name, ok)
		}
		if _, err := d.Image(); err != nil {
			t.Fatalf("Image: %v", err)
		}
	})
}

// FuzzCombine feeds arbitrary register text and a memory image (Intel
// HEX, S-records, or raw bytes at a base address) to CombineData, the
// path of analyze --regs. Errors must be *FormatError values naming the
// input at fault with an offset inside it; a dump that combines must have
// a PC, an image without overlaps and a fault report.
func FuzzCombine(f *testing.F) {
	regs := hostileFiles(f, "regtext")
	images := hostileFiles(f, "memimage")
	goodRegs, err := os.ReadFile(filepath.Join(importDir(), "gcc-m3-O2-null_write_deep.regs.gdb.txt"))
	if err != nil {
		f.Fatal(err)
	}
	goodImage, err := os.ReadFile(filepath.Join(importDir(), "gcc-m3-O2-null_write_deep.mem.hex"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(goodRegs, goodImage, uint32(0))
	// A sample of the mutation sweep's register texts and images.
	for i, m := range mutation.All(goodRegs, mutation.Options{}) {
		if i%16 == 0 {
			f.Add(m.Data, goodImage, uint32(0))
		}
	}
	for i, m := range mutation.All(goodImage, mutation.Options{}) {
		if i%16 == 0 {
			f.Add(goodRegs, m.Data, uint32(0))
		}
	}
	for _, r := range regs {
		f.Add(r, goodImage, uint32(0))
	}
	for _, im := range images {
		f.Add(goodRegs, im, uint32(0))
		f.Add(goodRegs, im, uint32(0xffffff00))
	}
	f.Fuzz(func(t *testing.T, regs, image []byte, base uint32) {
		opt := CombineOptions{CPU: "cortex-m4", Image: ImageOptions{Base: base, HasBase: base != 0}}
		d, err := CombineData(regs, "fuzz.regs", []NamedImage{{Name: "fuzz.img", Data: image}}, opt)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %q is not a *FormatError", err, err)
			}
			n := len(regs)
			if fe.File == "fuzz.img" {
				n = len(image)
			} else if fe.File != "fuzz.regs" {
				t.Fatalf("error %q names %q, not an input", err, fe.File)
			}
			if !strings.HasPrefix(err.Error(), fe.File+": ") || fe.Offset > int64(n) {
				t.Fatalf("error %q: file %q, offset %d of %d bytes", err, fe.File, fe.Offset, n)
			}
			return
		}
		if !d.Regs.Known(unwinders.PC) {
			t.Fatal("a combined dump without a PC")
		}
		if _, err := d.Image(); err != nil {
			t.Fatalf("Image: %v", err)
		}
		_ = fault.Decode(d.Profile(), &d.Regs, d.Fault).String()
	})
}
