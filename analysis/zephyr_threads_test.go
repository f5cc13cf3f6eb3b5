package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// zephyrTruth is fixtures/rtos-zephyr/<build>.threads.json: each thread's
// backtrace as GDB gave it in QEMU from the thread's saved context.
type zephyrTruth struct {
	Threads []struct {
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		Current   bool              `json:"current"`
		Registers map[string]string `json:"registers"`
		Frames    []struct {
			Function string `json:"function"`
			Kind     string `json:"kind"`
		} `json:"frames"`
	} `json:"threads"`
}

// TestZephyrThreadBacktraces compares faultline's own backtrace of every
// thread of the Zephyr-like kernel (the auto walk from the registers the
// rtos package recovered) with GDB's in QEMU, for the native dump at the
// HardFault and for the Zephyr coredump the firmware wrote. GDB adds the
// functions that tail-called their callee (kind "tailcall", synthesized
// from DWARF call-site information); they are not on the stack, so they
// are left out of the comparison. For the native dump the crashing thread's
// backtrace starts with the handler and the exception frame. The scenario
// fixtures (fixtures/rtos-zephyr/scenarios) add a log of two coredumps (a
// k_oops then a HardFault), a k_panic whose coredump has SP 0 (the
// exception frame is found on the thread's stack) and faults inside an
// ISR (the interrupted thread's frame found on its stack: PSP).
func TestZephyrThreadBacktraces(t *testing.T) {
	root := filepath.Join("..")
	oracles, err := filepath.Glob(filepath.Join(root, "fixtures", "rtos-zephyr", "*.threads.json"))
	if err != nil || len(oracles) == 0 {
		t.Fatalf("no oracle: %v", err)
	}
	scenarios, err := filepath.Glob(filepath.Join(root, "fixtures", "rtos-zephyr", "scenarios", "*.threads.json"))
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no scenario oracle: %v", err)
	}
	exact, total := 0, 0
	for _, p := range append(oracles, scenarios...) {
		name := strings.TrimSuffix(filepath.Base(p), ".threads.json")
		// A scenario's fixtures are named <build>-<scenario> (the build's
		// ELF run with the firmware's z_scenario set: oracle/run.sh).
		build, scenario := name, ""
		if i := strings.LastIndex(name, "-"); filepath.Base(filepath.Dir(p)) == "scenarios" && i > 0 {
			build, scenario = name[:i], name[i+1:]
		}
		handler := "HardFault_Handler"
		if scenario == "panic" || scenario == "panicram" || scenario == "fppanic" {
			handler = "SVC_Handler"
		}
		dir := filepath.Dir(p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var truth zephyrTruth
		if err := json.Unmarshal(b, &truth); err != nil {
			t.Fatal(err)
		}
		elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "rtos-zephyr", "build", build+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, dump := range []string{name + ".json", name + ".zephyr.log"} {
			t.Run(dump, func(t *testing.T) {
				d, err := crashdump.Load(filepath.Join(dir, dump))
				if err != nil {
					t.Fatal(err)
				}
				r, err := Analyze(elf, d, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if r.RTOS == nil || len(r.Threads) != len(truth.Threads) {
					t.Fatalf("rtos %+v, %d threads: want zephyr with %d", r.RTOS, len(r.Threads), len(truth.Threads))
				}
				byID := map[string]report.ThreadJSON{}
				for _, th := range r.Threads {
					byID[th.ID] = th
				}
				if handler == "SVC_Handler" && strings.HasSuffix(dump, ".zephyr.log") {
					// The coredump's SP was 0: the recovered one must be
					// the thread's SP before the SVC (26-word frames too).
					for _, tt := range truth.Threads {
						if got := r.Regs.Value(unwinders.SP); tt.Current && fmt.Sprintf("0x%x", got) != tt.Registers["sp"] {
							t.Errorf("recovered SP 0x%x, want %s (warnings %q)", got, tt.Registers["sp"], r.Warnings)
						}
					}
				}
				for _, tt := range truth.Threads {
					total++
					th, ok := byID["0x"+strings.TrimPrefix(tt.ID, "0x")]
					if !ok {
						for _, x := range r.Threads {
							if x.Name == tt.Name {
								th, ok = x, true
							}
						}
					}
					if !ok {
						t.Errorf("thread %s %s not reported", tt.ID, tt.Name)
						continue
					}
					var want, got []string
					if tt.Current && strings.HasSuffix(dump, ".json") {
						want = append(want, handler)
					}
					for _, f := range tt.Frames {
						if f.Kind != "tailcall" && f.Kind != "exception" {
							want = append(want, f.Function)
						}
					}
					frames := th.Frames
					if tt.Current {
						frames = r.Frames
					}
					for _, f := range frames {
						if f.Kind == "exception" || f.Kind == "gap" {
							continue
						}
						got = append(got, f.Function)
					}
					if strings.Join(got, " < ") != strings.Join(want, " < ") {
						t.Errorf("thread %s: faultline %q\nGDB (without tail-call frames) %q", tt.Name, got, want)
						continue
					}
					exact++
				}
			})
		}
		elf.Close()
	}
	t.Logf("%d of %d thread backtraces equal GDB's (tail-call frames aside)", exact, total)
}

// BenchmarkAnalyzeZephyrThreads decodes the 8-thread Zephyr-like dump with
// an Analyzer: discovery (layouts cached across dumps), the crash's walk
// and every thread's walk.
func BenchmarkAnalyzeZephyrThreads(b *testing.B) {
	root := filepath.Join("..")
	elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "rtos-zephyr", "build", "gcc-m4f-O2.elf"))
	if err != nil {
		b.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(filepath.Join(root, "fixtures", "rtos-zephyr", "gcc-m4f-O2.json"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAnalyzer(elf, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := a.Analyze(d)
		if err != nil || len(r.Threads) != 8 {
			b.Fatal(err)
		}
	}
}

// TestZephyrStrippedContext: without debug information (the offsets
// table has no stack bounds) the k_panic coredump's SP and the ISR
// coredump's PSP are still recovered, and every thread's walk equals
// GDB's (inlined frames aside: there is no DWARF to name them): each
// thread's walk stays within the memory block holding its SP. In "ram"
// the coredump holds all of RAM in one block; in "panicram" (a k_panic
// with all of RAM) the exception frame's words are also in the coredump's
// static arch block, and the search around the thread's saved SP must
// find only the one on its stack.
func TestZephyrStrippedContext(t *testing.T) {
	root := filepath.Join("..")
	elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "rtos-zephyr", "build", "gcc-m3-O2-nodebug.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	names := func(frames []report.FrameJSON) []string {
		var out []string
		for _, f := range frames {
			if f.Kind == "exception" || f.Kind == "gap" || f.Kind == "inlined" {
				continue
			}
			out = append(out, f.Function)
		}
		return out
	}
	for _, name := range []string{"gcc-m3-O2-panic", "gcc-m3-O2-isr", "gcc-m3-O2-ram", "gcc-m3-O2-panicram"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, "fixtures", "rtos-zephyr", "scenarios")
			b, err := os.ReadFile(filepath.Join(dir, name+".threads.json"))
			if err != nil {
				t.Fatal(err)
			}
			var truth zephyrTruth
			if err := json.Unmarshal(b, &truth); err != nil {
				t.Fatal(err)
			}
			d, err := crashdump.Load(filepath.Join(dir, name+".zephyr.log"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Analyze(elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]report.ThreadJSON{}
			for _, th := range r.Threads {
				byID[th.ID] = th
			}
			for _, tt := range truth.Threads {
				var want []string
				for _, f := range tt.Frames {
					if f.Kind != "tailcall" && f.Kind != "exception" && f.Kind != "inlined" {
						want = append(want, f.Function)
					}
				}
				th, ok := byID[fmt.Sprintf("0x%08x", hexID(t, tt.ID))]
				if !ok {
					t.Errorf("thread %s %s not found", tt.ID, tt.Name)
					continue
				}
				got := names(th.Frames)
				if tt.Current {
					got = names(r.Frames)
				}
				if strings.Join(got, " < ") != strings.Join(want, " < ") {
					t.Errorf("thread %s: faultline %q\nGDB %q", tt.Name, got, want)
				}
			}
		})
	}
}

func hexID(t *testing.T, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}
