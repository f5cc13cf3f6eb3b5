package analysis

import (
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

const repo = ".."

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

func names(r *report.Report) []string {
	var n []string
	for _, f := range r.Frames {
		if f.Kind == "exception" {
			n = append(n, "<exception>")
		} else {
			n = append(n, f.Function)
		}
	}
	return n
}

// A handler that clobbered LR before the dump was taken: the walk must
// still find the exception frame (on MSP at the handler's entry SP, and on
// PSP for a thread crash) and say it is less sure.
func TestClobberedLR(t *testing.T) {
	for _, c := range []struct{ build, scenario, stack string }{
		{"gcc-m3-O2", "null_write_deep", "MSP"},
		{"gcc-m3-O2", "psp_thread", "PSP"},
		{"clang-m4f-O0", "fpu_crash", "MSP"},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			elf, d := load(t, c.build, c.scenario)
			want := d.Truth.Frames[2].Function
			d.Regs.Set(unwinders.LR, 0x12345679)
			r, err := Analyze(elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := names(r)
			if len(n) < 3 || n[1] != "<exception>" || n[2] != want {
				t.Fatalf("got %q, want the handler, <exception>, %s", n, want)
			}
			if r.Frames[1].Method != unwinders.MethodException || r.Frames[1].Confidence != "medium" || r.Frames[1].Stack != c.stack {
				t.Errorf("exception frame %+v", r.Frames[1])
			}
		})
	}
}

// A crash handler may store the reconstructed pre-exception state (the
// stacked registers, PC = the faulting PC) instead of its own: the report
// must still name the fault from the status registers and start at the
// faulting function.
func TestPreExceptionCapture(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "udf")
	full, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := full.Walk.Frames[2] // the frame the exception interrupted
	var regs unwinders.Registers
	f.Regs.Each(func(r unwinders.Reg, v uint32) { regs.Set(r, v) })
	d.Regs = regs
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fault.Exception != "HardFault" || len(r.Fault.Causes) == 0 {
		t.Errorf("fault %+v", r.Fault)
	}
	if n := names(r); len(n) == 0 || n[0] != d.Truth.Frames[2].Function {
		t.Errorf("frames %q, want %s first", n, d.Truth.Frames[2].Function)
	}
}
