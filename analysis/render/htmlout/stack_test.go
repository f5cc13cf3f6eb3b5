package htmlout_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestStackColumns checks the stack picture's model on a deep chain: every
// frame whose caller was unwound from the stack has its saved LR found in
// its own span, spans are contiguous from the exception frame to the
// initial SP, and the exception frame is laid out r0..xPSR.
func TestStackColumns(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	r, err := analysis.Analyze(elf, d, analysis.Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	top := elf.Info().Vectors.InitialSP
	cols := htmlout.StackColumns(r, d.Memory, top)
	if len(cols) != 1 || cols[0].Name != "MSP" {
		t.Fatalf("columns %+v: want the main stack only", cols)
	}
	blocks := cols[0].Blocks
	if blocks[0].Hi != top {
		t.Errorf("outermost span ends at 0x%08x, want the initial SP 0x%08x", blocks[0].Hi, top)
	}
	for i := 1; i < len(blocks); i++ {
		if blocks[i].Hi != blocks[i-1].Lo {
			t.Errorf("%s ends at 0x%08x but %s starts at 0x%08x", blocks[i].Title, blocks[i].Hi, blocks[i-1].Title, blocks[i-1].Lo)
		}
	}
	saved := 0
	for _, b := range blocks {
		if b.Kind == "exception" {
			if b.Rows[len(b.Rows)-1].Label != "r0" || b.Rows[0].Label != "xPSR" || len(b.Rows) != 8 {
				t.Errorf("exception rows %+v", b.Rows)
			}
			continue
		}
		if b.SavedAt != 0 {
			saved++
			if b.SavedAt < b.Lo || b.SavedAt >= b.Hi {
				t.Errorf("%s: saved LR at 0x%08x outside [0x%08x, 0x%08x)", b.Title, b.SavedAt, b.Lo, b.Hi)
			}
		}
	}
	// deep5_mixed .. main save LR; Reset_Handler is outermost and
	// HardFault_Handler and null_store have no frame at the fault.
	if saved != 8 {
		t.Errorf("%d frames with a saved LR, want 8", saved)
	}
}

// TestStackColumnsFP checks an extended frame with lazily stacked FP
// registers and the alignment pad.
func TestStackColumnsFP(t *testing.T) {
	elf, d := load(t, "clang-m4f-O0", "fpu_crash")
	r, err := analysis.Analyze(elf, d, analysis.Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	var exc *htmlout.StackBlock
	for _, c := range htmlout.StackColumns(r, d.Memory, 0) {
		for i := range c.Blocks {
			if c.Blocks[i].Kind == "exception" {
				exc = &c.Blocks[i]
			}
		}
	}
	if exc == nil {
		t.Fatal("no exception block")
	}
	classes := map[string]int{}
	for _, w := range exc.Rows {
		classes[w.Class]++
	}
	if classes["fp"] != 18 || classes["pad"] != 1 || classes["exc"] != 8 || exc.Rows[0].Class != "pad" {
		t.Errorf("rows by class %v (first %+v): want 8 registers, 18 FP words, the pad on top", classes, exc.Rows[0])
	}
}

// TestHTMLWarningsFirst: the warnings (the pairing verdict among them)
// come before the fault and the backtrace, where a reader starts.
func TestHTMLWarningsFirst(t *testing.T) {
	r := &report.Report{Warnings: []string{"gcc-m3-O2.elf may not be the firmware that crashed: build IDs differ"}, Frames: []report.FrameJSON{}}
	var b strings.Builder
	if err := htmlout.Write(&b, r, nil, htmlout.Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	w, f := strings.Index(page, "<h2>Warnings</h2>"), strings.Index(page, "<h2>What happened</h2>")
	if w < 0 || f < 0 || w > f {
		t.Errorf("warnings at %d, the fault at %d: want the warnings first", w, f)
	}
}

const repo = "../../.."

func load(t testing.TB, build, scenario string) (*elfsym.File, *crashdump.Dump) {
	t.Helper()
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/build", build+".elf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { elf.Close() })
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu", build+"-"+scenario+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return elf, d
}
