package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
)

// TestStackColumns checks the stack picture's model on a deep chain: every
// frame whose caller was unwound from the stack has its saved LR found in
// its own span, spans are contiguous from the exception frame to the
// initial SP, and the exception frame is laid out r0..xPSR.
func TestStackColumns(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	r, err := Analyze(elf, d, Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	top := elf.Info().Vectors.InitialSP
	cols := StackColumns(r, d.Memory, top)
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
	r, err := Analyze(elf, d, Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	var exc *StackBlock
	for _, c := range StackColumns(r, d.Memory, 0) {
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

func TestSignature(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	r, err := Analyze(elf, d, Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	s := SignatureOf(r)
	want := "v2|HardFault|CFSR.DACCVIOL,HFSR.FORCED|null_store|deep5_mixed>deep4_huge_locals>deep3_callee_saved"
	if s.Key() != want || len(s.ID()) != 12 {
		t.Errorf("signature %q id %q, want %q", s.Key(), s.ID(), want)
	}
	z := NewSummarizer("fw.elf", "auto", "path")
	z.Add(r)
	z.Add(r)
	z.AddError("bad.json", errString("bad.json: truncated"))
	sum := z.Summary()
	if sum.Dumps != 3 || sum.Decoded != 2 || len(sum.Buckets) != 1 || sum.Buckets[0].Count != 2 || sum.Undecodable.Count != 1 {
		t.Errorf("summary %+v", sum)
	}
	b, err := json.Marshal(sum)
	if err != nil || !bytes.Contains(b, []byte(`"schema":"faultline.summary/1"`)) {
		t.Errorf("json %v %s", err, b)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestAnalyzerConcurrent runs one Analyzer from many goroutines (run with
// -race) and checks each report equals Analyze's.
func TestAnalyzerConcurrent(t *testing.T) {
	elf, _ := load(t, "gcc-m3-O2-unwind", "udf")
	var dumps []*crashdump.Dump
	for _, s := range []string{"null_write_deep", "irq_crash", "psp_thread", "udf", "div0", "null_fnptr"} {
		_, d := load(t, "gcc-m3-O2-unwind", s)
		dumps = append(dumps, d)
	}
	for _, strat := range []string{"auto", "cfi", "exidx", "framepointer", "prologue", "stackscan"} {
		a, err := NewAnalyzer(elf, Options{Unwinder: strat, MaxFrames: 64})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]string, len(dumps))
		for i, d := range dumps {
			r, err := Analyze(elf, d, Options{Unwinder: strat, MaxFrames: 64})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			r.WriteText(&b)
			want[i] = b.String()
		}
		var wg sync.WaitGroup
		for range 4 {
			for i, d := range dumps {
				wg.Go(func() {
					got, err := a.Analyze(d)
					if err != nil {
						t.Error(err)
						return
					}
					var b strings.Builder
					got.WriteText(&b)
					if b.String() != want[i] {
						t.Errorf("%s %s: the shared Analyzer differs from Analyze", strat, d.Path)
					}
				})
			}
		}
		wg.Wait()
	}
}

// TestHTMLWarningsFirst: the warnings (the pairing verdict among them)
// come before the fault and the backtrace, where a reader starts.
func TestHTMLWarningsFirst(t *testing.T) {
	r := &Report{Warnings: []string{"gcc-m3-O2.elf may not be the firmware that crashed: build IDs differ"}, Frames: []FrameJSON{}}
	var b strings.Builder
	if err := WriteHTML(&b, r, nil, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	w, f := strings.Index(page, "<h2>Warnings</h2>"), strings.Index(page, "<h2>What happened</h2>")
	if w < 0 || f < 0 || w > f {
		t.Errorf("warnings at %d, the fault at %d: want the warnings first", w, f)
	}
}
