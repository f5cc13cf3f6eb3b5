package analysis

import (
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestVarsConcurrent decodes the arguments and locals of several dumps of
// one ELF at once (an Analyzer shared by analyze -j): the same values as
// one at a time (go test -race checks the shared DWARF state).
func TestVarsConcurrent(t *testing.T) {
	elf, err := elfsym.Open("../../../firmware-samples/build/gcc-m3-O0.elf")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAnalyzer(elf, Options{Locals: true})
	if err != nil {
		t.Fatal(err)
	}
	var dumps []*crashdump.Dump
	for _, sc := range []string{"null_write_deep", "udf", "div0", "irq_crash"} {
		d, err := crashdump.Load("../../../fixtures/qemu/gcc-m3-O0-" + sc + ".json")
		if err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, d)
	}
	text := func(r *Report) string {
		s := ""
		for _, f := range r.Frames {
			for _, v := range append(f.Args, f.Locals...) {
				s += f.Function + ":" + v.Text() + "\n"
			}
		}
		return s
	}
	var want []string
	for _, d := range dumps {
		r, err := a.Analyze(d)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, text(r))
		if len(want[len(want)-1]) == 0 {
			t.Fatalf("%s: no arguments or locals", d.Path)
		}
	}
	var wg sync.WaitGroup
	for round := 0; round < 3; round++ {
		for i, d := range dumps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := a.Analyze(d)
				if err != nil {
					t.Error(err)
					return
				}
				if got := text(r); got != want[i] {
					t.Errorf("%s: concurrent decode differs:\n%s\nwant\n%s", d.Path, got, want[i])
				}
			}()
		}
	}
	wg.Wait()
}
