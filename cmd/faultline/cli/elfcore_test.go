package cli

import (
	"encoding/json"
	"github.com/faultline-dev/faultline/internal/testtool"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// frameKeys is a report's backtrace as "function@pc" strings.
func frameKeys(t *testing.T, out string) ([]string, string) {
	t.Helper()
	var r struct {
		Frames []struct {
			Function, PC, Kind string
		}
		Pairing struct{ Verdict string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var k []string
	for _, f := range r.Frames {
		k = append(k, f.Kind+":"+f.Function+"@"+f.PC)
	}
	return k, r.Pairing.Verdict
}

// A core GDB wrote with gcore through faultline's gdbserver gives the
// backtrace of the dump it came from, and pairs with its ELF by the code
// bytes GDB saved.
func TestAnalyzeGDBCore(t *testing.T) {
	for _, src := range []string{"gcc-m3-O2-null_write_deep", "gcc-m4f-O2-fpu_crash"} {
		elf := filepath.Join(repo, "firmware-samples/build", src[:strings.LastIndex(src, "-")]+".elf")
		want, _, code := run(t, "", "analyze", "--format", "json", "--elf", elf, filepath.Join(repo, "fixtures/qemu", src+".json"))
		if code != 0 {
			t.Fatal(code)
		}
		got, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", elf, filepath.Join(repo, "fixtures/elfcore", src+".gcore.elf"))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", src, code, errOut)
		}
		w, _ := frameKeys(t, want)
		g, verdict := frameKeys(t, got)
		if !slices.Equal(w, g) || len(g) < 5 {
			t.Errorf("%s: core gives\n%q\nthe dump\n%q", src, g, w)
		}
		if verdict != "verified" {
			t.Errorf("%s: pairing %s, want verified (the core holds the code)", src, verdict)
		}
	}
}

var gdbBTLine = regexp.MustCompile(`(?m)^#\d+ .*$`)

// gdbBT runs gdb-multiarch in batch mode and returns its backtrace lines.
func gdbBT(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("gdb-multiarch", append([]string{"-batch", "-nx", "-ex", "set pagination off"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v: %s", err, out)
	}
	lines := gdbBTLine.FindAllString(string(out), -1)
	for i, l := range lines {
		lines[i] = gdbArgs.ReplaceAllString(l, "(...)")
	}
	return lines
}

// gdbArgs matches a frame's argument list: GDB 13 reads no VFP registers
// from a bare-metal core, so floating-point arguments print as errors
// there; the frames (number, PC, function, file:line) must still match.
var gdbArgs = regexp.MustCompile(`\(.*\) at `)

// convert --to elfcore writes a core that the real GDB opens with the
// firmware ELF, with the same backtrace GDB shows through faultline's
// gdbserver for the source dump (MSP and PSP stacks, nested exceptions,
// the FP frame).
func TestConvertELFCoreGDB(t *testing.T) {
	testtool.Need(t, "GDB opening the ELF cores convert writes", "gdb-multiarch")
	bin := buildFaultline(t)
	for _, src := range []string{"gcc-m3-O2-udf", "gcc-m3-O2-psp_thread", "gcc-m3-O2-irq_crash", "gcc-m4f-O2-fpu_crash", "clang-m3-O2-null_write_deep"} {
		elf := filepath.Join(repo, "firmware-samples/build", src[:strings.LastIndex(src, "-")]+".elf")
		dump := filepath.Join(repo, "fixtures/qemu", src+".json")
		core := filepath.Join(t.TempDir(), "core.elf")
		if _, errOut, code := run(t, "", "convert", "--to", "elfcore", dump, "-o", core); code != 0 {
			t.Fatalf("%s: convert: %s", src, errOut)
		}
		fromCore := gdbBT(t, "-ex", "bt", elf, core)
		live := gdbBT(t, "-ex", "target remote | "+bin+" gdbserver --stdio --elf "+elf+" "+dump, "-ex", "bt", elf)
		// GDB prints frame 0 once more when it opens a core.
		if len(fromCore) > 1 && fromCore[0] == fromCore[1] {
			fromCore = fromCore[1:]
		}
		if !slices.Equal(fromCore, live) || len(live) < 3 {
			t.Errorf("%s: GDB on the core:\n%s\nGDB through gdbserver:\n%s", src, strings.Join(fromCore, "\n"), strings.Join(live, "\n"))
		}
	}
}

// buildFaultline builds the faultline binary for tests that run it from
// another process (GDB's target remote | faultline gdbserver --stdio).
func buildFaultline(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faultline")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/faultline-dev/faultline/cmd/faultline").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// A core GDB wrote with gcore through faultline's gdbserver for a FreeRTOS
// dump (fixtures/elfcore/README.md): GDB saves each thread's stack as a
// segment of its own over the .bss it lies in, so the segments overlap
// with equal bytes and are read as one memory. Every thread is found with
// the name, state and priority of the source dump, and every switched-out
// thread has the source dump's backtrace. GDB saved RAM only up to the
// handler's SP (0x20003fb8, not 0x20004000): an SP at the very end of a
// region is the top of an empty stack there, so the main stack's bounds
// still come from that region (before, the dump had no main stack, and
// the walk of "deep", whose saved SP lies below its own stack, lost its
// first frame behind a gap). The crashing thread's own walk stops: GDB's
// core has no PSP, and the crash was in a task.
func TestAnalyzeGDBCoreFreeRTOS(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	type thread struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Priority *int   `json:"priority"`
		Current  bool   `json:"current"`
		Frames   []struct {
			Kind     string `json:"kind"`
			Function string `json:"function"`
			PC       string `json:"pc"`
		} `json:"frames"`
		Stop string `json:"stop"`
	}
	type report struct {
		Threads []thread `json:"threads"`
		Stop    string   `json:"stop"`
	}
	read := func(path string) report {
		out, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", elf, path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errOut)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := read(filepath.Join(repo, "fixtures/rtos/freertos/gcc-m3-O2.json"))
	got := read(filepath.Join(repo, "fixtures/elfcore/freertos-gcc-m3-O2.gcore.elf"))
	if len(got.Threads) != len(want.Threads) || len(want.Threads) < 10 {
		t.Fatalf("core has %d threads, the dump %d", len(got.Threads), len(want.Threads))
	}
	if !strings.Contains(got.Stop, "PSP is not known") {
		t.Errorf("crashing thread's stop %q, want the missing PSP named", got.Stop)
	}
	walked := 0
	for i, w := range want.Threads {
		g := got.Threads[i]
		if g.Name != w.Name || g.State != w.State || g.Current != w.Current || g.Priority == nil || w.Priority == nil || *g.Priority != *w.Priority {
			t.Errorf("thread %d: core %s %s current=%v, dump %s %s current=%v", i, g.Name, g.State, g.Current, w.Name, w.State, w.Current)
			continue
		}
		if w.Current {
			continue
		}
		if !reflect.DeepEqual(g.Frames, w.Frames) || g.Stop != w.Stop {
			t.Errorf("thread %s: core frames %v (%s), dump %v (%s)", w.Name, g.Frames, g.Stop, w.Frames, w.Stop)
			continue
		}
		walked++
	}
	if walked != len(want.Threads)-1 {
		t.Errorf("%d switched-out threads with the source dump's backtrace, want %d", walked, len(want.Threads)-1)
	}
}
