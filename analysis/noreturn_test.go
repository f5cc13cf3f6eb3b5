package analysis

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// A call to a noreturn function that is the last instruction of its caller
// leaves a return address at the first byte of the next function (clang)
// or at the caller's literal pool (gcc). The crash happens in the
// noreturn callee (firmware-samples/noreturn, dumps written by faultline
// emulate). With its own ELF every such dump pairs (no mismatch), the
// backtrace equals the emulator's truth and no frame is lowered.
func TestNoreturnCallEndsFunction(t *testing.T) {
	dumps, err := filepath.Glob(filepath.Join(repo, "fixtures/noreturn/*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dumps) < 16 {
		t.Fatalf("%d dumps in fixtures/noreturn, want 16", len(dumps))
	}
	for _, path := range dumps {
		base := strings.TrimSuffix(filepath.Base(path), ".json")
		build := base[:strings.LastIndex(base, "-")]
		t.Run(base, func(t *testing.T) {
			elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/noreturn/build", build+".elf"))
			if err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			d, err := crashdump.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if d.Truth == nil {
				t.Fatal("the dump has no truth")
			}
			r, err := Analyze(elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pairing.Verdict == report.PairMismatch {
				t.Errorf("pairing mismatch with its own ELF: %q", r.Pairing.Differences)
			}
			var got, want []string
			for _, f := range r.Frames {
				if f.Kind == "normal" {
					got = append(got, f.Function)
				}
				if f.Kind != "exception" && f.Kind != "inlined" && f.Confidence != "high" {
					t.Errorf("frame %d %s is %s (%s)", f.Index, f.Function, f.Confidence, f.Method)
				}
			}
			for _, f := range d.Truth.Frames {
				if f.Kind != "exception" {
					want = append(want, f.Function)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("backtrace %q, truth %q", got, want)
			}
			if !slices.Contains(want, "check_range") && !slices.Contains(want, "check_store") {
				t.Errorf("truth %q lacks the caller that ends in the noreturn call", want)
			}
		})
	}
}
