package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestAnalyzeScratchSameReport: analyses that reuse one Scratch, dump
// after dump (every FreeRTOS fixture, with their different task counts
// and walk lengths, forwards then backwards so the memory shrinks and
// grows), give the reports Analyze gives: the same JSON, the same text
// (which prints the thread walks' frames too).
func TestAnalyzeScratchSameReport(t *testing.T) {
	manifests, err := filepath.Glob(filepath.Join(rtosFixtures, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	manifests = slices.DeleteFunc(manifests, func(p string) bool { return strings.HasSuffix(p, ".tasks.json") })
	if len(manifests) < 5 {
		t.Fatalf("%d fixtures", len(manifests))
	}
	type fixture struct {
		name string
		an   *Analyzer
		d    *crashdump.Dump
	}
	var fixtures []fixture
	for _, m := range manifests {
		name := strings.TrimSuffix(filepath.Base(m), ".json")
		elfPath := filepath.Join("../firmware-samples/rtos-freertos/build", name+".elf")
		if _, err := os.Stat(elfPath); err != nil {
			continue
		}
		elf, err := elfsym.Open(elfPath)
		if err != nil {
			t.Fatal(err)
		}
		defer elf.Close()
		an, err := NewAnalyzer(elf, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := crashdump.Load(m)
		if err != nil {
			t.Fatal(err)
		}
		fixtures = append(fixtures, fixture{name, an, d})
	}
	render := func(r *report.Report) (string, string) {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var txt bytes.Buffer
		if err := textout.Write(&txt, r); err != nil {
			t.Fatal(err)
		}
		return string(j), txt.String()
	}
	order := slices.Clone(fixtures)
	slices.Reverse(order)
	order = append(slices.Clone(fixtures), order...)
	var s Scratch
	threads := 0
	for _, f := range order {
		want, err := f.an.Analyze(f.d)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, wantText := render(want)
		got, err := f.an.AnalyzeScratch(f.d, &s)
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, gotText := render(got)
		if gotJSON != wantJSON {
			t.Errorf("%s: JSON differs with a Scratch:\n%s\nwant\n%s", f.name, gotJSON, wantJSON)
		}
		if gotText != wantText {
			t.Errorf("%s: text differs with a Scratch:\n%s\nwant\n%s", f.name, gotText, wantText)
		}
		threads += len(got.Threads)
	}
	if threads == 0 {
		t.Fatal("no thread in any fixture")
	}
}

// TestHexes: the one-allocation formatting of many addresses gives each
// what Hex and fmt give.
func TestHexes(t *testing.T) {
	vals := []uint32{0, 1, 0x8000_0000, 0xffff_ffff, 0x2000_17d8, 0xdead_beef}
	for i := range 140 { // past the stack buffers and the 64-value chunks
		vals = append(vals, uint32(i)*0x0101_0101)
	}
	s := hexes(vals)
	for k, v := range vals {
		want := fmt.Sprintf("0x%08x", v)
		if got := hexAt(s, k); got != want {
			t.Errorf("hexAt(%d) = %q, want %q", k, got, want)
		}
		if got := report.Hex(v); got != want {
			t.Errorf("Hex(%#x) = %q, want %q", v, got, want)
		}
	}
	if hexes(nil) != "" {
		t.Error("hexes(nil) not empty")
	}
}
