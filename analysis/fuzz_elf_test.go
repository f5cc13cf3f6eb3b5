package analysis

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/internal/mutate"
)

// FuzzELF feeds arbitrary bytes as the firmware ELF of a real crash dump:
// elfsym's loading (headers, sections, symbols, DWARF), then every
// strategy's tables built from the ELF (.ARM.exidx/.ARM.extab,
// .debug_frame/.eh_frame), the Thumb decoder over its code, the walk, the
// symbolization of the frames and the HTML page. No panic, no hang: a
// load error names the file, and every analysis ends with a stop reason
// within the frame limit. The corpus is seeded with the hostile ELFs of
// fixtures/hostile/elf and the sample firmware the dump comes from.
func FuzzELF(f *testing.F) {
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-unwind-null_write_deep.json"))
	if err != nil {
		f.Fatal(err)
	}
	seeds, _ := filepath.Glob(filepath.Join(repo, "fixtures/hostile/elf/*.elf"))
	if len(seeds) == 0 {
		f.Fatal("no hostile ELF in fixtures/hostile/elf")
	}
	seeds = append(seeds, filepath.Join(repo, "firmware-samples/build/gcc-m3-O2-unwind.elf"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A sample of the mutation sweep's ELFs (internal/mutate: cuts at
	// every header, section and segment boundary, bit flips, header
	// fields at 0 or their maximum).
	if b, err := os.ReadFile(seeds[len(seeds)-1]); err == nil {
		for i, m := range mutate.All(b, mutate.Options{}) {
			if i%24 == 0 {
				f.Add(m.Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		elf, err := elfsym.NewFile(bytes.NewReader(data), "fuzz.elf")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.elf") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		defer elf.Close()
		_ = elf.Info()
		for _, s := range Strategies() {
			if !s.Available {
				continue
			}
			r, err := Analyze(elf, d, Options{Unwinder: s.Name, MaxFrames: 16})
			if err != nil {
				continue
			}
			if r.Stop == "" || len(r.Walk.Frames) > 16 {
				t.Fatalf("%s: stop %q, %d frames", s.Name, r.Stop, len(r.Walk.Frames))
			}
			if s.Name == "auto" {
				if err := htmlout.Write(io.Discard, r, d, htmlout.Options{ELF: elf}); err != nil {
					t.Fatalf("WriteHTML: %v", err)
				}
			}
		}
	})
}
