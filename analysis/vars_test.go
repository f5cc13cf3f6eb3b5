package analysis

import (
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestVarsConcurrent decodes the arguments and locals of several dumps of
// one ELF at once (an Analyzer shared by analyze -j): the same values as
// one at a time (go test -race checks the shared DWARF state).
func TestVarsConcurrent(t *testing.T) {
	elf, err := elfsym.Open("../firmware-samples/build/gcc-m3-O0.elf")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAnalyzer(elf, Options{Locals: true})
	if err != nil {
		t.Fatal(err)
	}
	var dumps []*crashdump.Dump
	for _, sc := range []string{"null_write_deep", "udf", "div0", "irq_crash"} {
		d, err := crashdump.Load("../fixtures/qemu/gcc-m3-O0-" + sc + ".json")
		if err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, d)
	}
	text := func(r *report.Report) string {
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

// An argument whose current location needs a register the frame does not
// have gets the value its caller passed, proven from the caller's call
// site, marked entry (GDB's a@entry): deep2_big_locals(a) of gcc -O2 is
// r1-1 at 0x2bc (r1 is caller-saved: unknown), and deep1_entry's call
// site says r0 = r4*3+1 = 10 with r4 recovered by CFI (GDB: a=a@entry=10).
func TestArgAtEntry(t *testing.T) {
	elf, err := elfsym.Open(repo + "/firmware-samples/build/gcc-m3-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(repo + "/fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	vfs := vframes(elf, r.Target, r.Walk.Frames)
	k := -1
	for _, f := range r.Frames {
		if f.Function == "deep2_big_locals" {
			k = f.Phys
		}
	}
	if k < 0 || vfs[k] == nil {
		t.Fatal("no deep2_big_locals frame")
	}
	if vfs[k].PC != 0x2bd {
		t.Fatalf("deep2_big_locals looked up at 0x%x, want 0x2bd (return address 0x2be - 1)", vfs[k].PC)
	}
	vfs[k].PC = 0x2bc // where a is r1-1
	sc := elf.Vars().FrameVars(vfs[k], false)
	if len(sc) != 1 || len(sc[0].Args) != 1 {
		t.Fatalf("scopes %+v", sc)
	}
	if a := sc[0].Args[0]; a.Value != "10" || !a.Entry {
		t.Errorf("a = %+v, want 10 from the call site (entry)", a)
	}
	// Without the caller, nothing can be proven.
	vfs[k].Caller = nil
	if a := elf.Vars().FrameVars(vfs[k], false)[0].Args[0]; !a.OptimizedOut || a.Value != "" {
		t.Errorf("a without the caller = %+v, want optimized out", a)
	}
}
