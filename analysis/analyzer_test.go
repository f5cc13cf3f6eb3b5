package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/crashdump"
)

func TestSignature(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	r, err := Analyze(elf, d, Options{MaxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	s := bucket.SignatureOf(r)
	want := "v2|HardFault|CFSR.DACCVIOL,HFSR.FORCED|null_store|deep5_mixed>deep4_huge_locals>deep3_callee_saved"
	if s.Key() != want || len(s.ID()) != 12 {
		t.Errorf("signature %q id %q, want %q", s.Key(), s.ID(), want)
	}
	z := bucket.NewSummarizer("fw.elf", "auto", "path")
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
			textout.Write(&b, r)
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
					textout.Write(&b, got)
					if b.String() != want[i] {
						t.Errorf("%s %s: the shared Analyzer differs from Analyze", strat, d.Path)
					}
				})
			}
		}
		wg.Wait()
	}
}
