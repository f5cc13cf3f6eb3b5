package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// gdbThreadFrame is one frame of one thread as GDB shows it.
type gdbThreadFrame struct {
	function     string
	args, locals []gdbVar
}

// gdbThreadVars runs GDB on dump through faultline gdbserver and returns,
// per GDB thread id (1..n, named as "info threads" names them), the first
// depth frames with their function, "info args" and "info locals".
func gdbThreadVars(t *testing.T, bin, elf, dump string, n, depth int) (names map[int]string, frames map[int][]gdbThreadFrame) {
	t.Helper()
	cmd := []string{"-nx", "-batch", "-ex", "set osabi none", "-ex", "set pagination off", "-ex", "set width 0",
		"-ex", "set backtrace past-main on",
		"-ex", "target remote | " + bin + " gdbserver --stdio --elf " + elf + " " + dump, "-ex", "info threads"}
	for th := 1; th <= n; th++ {
		cmd = append(cmd, "-ex", fmt.Sprintf("echo ==THREAD %d==\\n", th), "-ex", fmt.Sprintf("thread %d", th))
		for i := 0; i < depth; i++ {
			cmd = append(cmd, "-ex", fmt.Sprintf("echo ==FRAME %d==\\n", i), "-ex", fmt.Sprintf("frame %d", i),
				"-ex", "echo ==ARGS==\\n", "-ex", "info args", "-ex", "echo ==LOCALS==\\n", "-ex", "info locals")
		}
	}
	cmd = append(cmd, elf)
	c := exec.Command("timeout", append([]string{"120", "gdb-multiarch"}, cmd...)...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb on %s: %v\n%s", dump, err, out)
	}
	names, frames = map[int]string{}, map[int][]gdbThreadFrame{}
	listed := regexp.MustCompile(`^[* ] +(\d+) +Thread \d+ "([^"]*)"`)
	head := regexp.MustCompile(`^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(`)
	th, frame, sect := 0, -1, ""
	var cur *gdbThreadFrame
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "==THREAD "):
			th, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "==THREAD "), "=="))
			frame, cur = -1, nil
			continue
		case strings.HasPrefix(l, "==FRAME "):
			frame, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "==FRAME "), "=="))
			sect, cur = "", nil
			continue
		case l == "==ARGS==":
			sect = "args"
			continue
		case l == "==LOCALS==":
			sect = "locals"
			continue
		}
		if m := listed.FindStringSubmatch(l); m != nil && th == 0 {
			k, _ := strconv.Atoi(m[1])
			names[k] = m[2]
			continue
		}
		if m := head.FindStringSubmatch(l); m != nil && sect == "" && frame >= 0 {
			if k, _ := strconv.Atoi(m[1]); k == frame && len(frames[th]) == frame {
				frames[th] = append(frames[th], gdbThreadFrame{function: m[2]})
				cur = &frames[th][frame]
			}
			continue
		}
		name, val, ok := strings.Cut(l, " = ")
		if !ok || cur == nil || strings.ContainsAny(name, " \t") {
			continue
		}
		if sect == "args" {
			cur.args = append(cur.args, gdbVar{name, val})
		} else if sect == "locals" {
			cur.locals = append(cur.locals, gdbVar{name, val})
		}
	}
	return names, frames
}

// TestThreadArgsAgainstGDB checks the arguments and locals of every frame
// of every non-crashing RTOS thread (the Zephyr-like and FreeRTOS-like
// kernels' QEMU dumps, gcc and clang, -O0 to -O2) against GDB's, thread by
// thread, through faultline gdbserver (GDB unwinds each thread from the
// saved context the server gives it, with its own unwinder and DWARF
// evaluator): every value GDB prints is ours too or ours is unknown (GDB
// takes a caller's r0-r3/r12 as unchanged by the call, faultline never
// does); never a different value, never a value where GDB says optimized
// out. Frames are paired by function in order (GDB may show a frame
// faultline's walk does not, or the reverse).
func TestThreadArgsAgainstGDB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs GDB")
	}
	if _, err := exec.LookPath("gdb-multiarch"); err != nil {
		t.Skip("gdb-multiarch not installed")
	}
	bin := buildFaultline(t)
	type dumpCase struct{ elf, dump string }
	var cases []dumpCase
	zd, _ := filepath.Glob(repo + "/fixtures/rtos-zephyr/*.threads.json")
	for _, p := range zd {
		b := strings.TrimSuffix(filepath.Base(p), ".threads.json")
		cases = append(cases, dumpCase{repo + "/firmware-samples/rtos-zephyr/build/" + b + ".elf", repo + "/fixtures/rtos-zephyr/" + b + ".json"},
			// The Zephyr coredump the same firmware printed (its threads
			// from the coredump's memory).
			dumpCase{repo + "/firmware-samples/rtos-zephyr/build/" + b + ".elf", repo + "/fixtures/rtos-zephyr/" + b + ".zephyr.log"})
	}
	fd, _ := filepath.Glob(repo + "/fixtures/rtos/freertos/*.tasks.json")
	for _, p := range fd {
		b := strings.TrimSuffix(filepath.Base(p), ".tasks.json")
		cases = append(cases, dumpCase{repo + "/firmware-samples/rtos-freertos/build/" + b + ".elf", repo + "/fixtures/rtos/freertos/" + b + ".json"})
	}
	if f := os.Getenv("FL_THREAD_ARGS"); f != "" {
		var keep []dumpCase
		for _, c := range cases {
			if strings.Contains(c.dump, f) {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	if len(cases) == 0 {
		t.Fatal("no RTOS oracle dumps")
	}
	var total argsTally
	threadFrames := 0
	for _, c := range cases {
		elf, err := elfsym.Open(c.elf)
		if err != nil {
			t.Fatal(err)
		}
		d, err := crashdump.Load(c.dump)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(elf, d, analysis.Options{Locals: true})
		elf.Close()
		if err != nil {
			t.Fatal(err)
		}
		depth := 0
		for _, th := range r.Threads {
			depth = max(depth, len(th.Frames)+2)
		}
		names, gframes := gdbThreadVars(t, bin, c.elf, c.dump, len(r.Threads), min(depth, 12))
		var per argsTally
		for id, name := range names {
			var th *report.ThreadJSON
			for i := range r.Threads {
				if r.Threads[i].Name == name {
					th = &r.Threads[i]
				}
			}
			if th == nil || th.Current {
				continue // the crashing thread: TestArgsAgainstGDB
			}
			g := gframes[id]
			k := 0
			for _, f := range th.Frames {
				if f.Function == "" {
					continue
				}
				for k < len(g) && g[k].function != f.Function {
					k++
				}
				if k >= len(g) {
					break
				}
				where := fmt.Sprintf("%s thread %s #%d %s", filepath.Base(c.dump), name, f.Index, f.Function)
				per.add(compareVars(t, where+" args", f.Args, g[k].args))
				per.add(compareVars(t, where+" locals", f.Locals, g[k].locals))
				threadFrames++
				k++
			}
		}
		t.Logf("%s: %v", filepath.Base(c.dump), per)
		total.add(per)
	}
	t.Logf("total over %d thread frames: %v", threadFrames, total)
	if total.compared == 0 || total.equal*2 < total.compared {
		t.Errorf("only %d of %d values equal to GDB's", total.equal, total.compared)
	}
}

// TestThreadArgsShown: a blocked thread's frames carry their arguments in
// text, JSON and HTML (the Zephyr-like kernel's consumer thread, blocked
// in k_sem_take under process_next(n=1), as GDB shows it from the
// thread's saved context), and --locals adds the locals.
func TestThreadArgsShown(t *testing.T) {
	elf := repo + "/firmware-samples/rtos-zephyr/build/gcc-m3-O2.elf"
	dump := repo + "/fixtures/rtos-zephyr/gcc-m3-O2.json"
	out, errOut, code := run(t, "", "analyze", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "process_next+0x8 (n=1)") || !strings.Contains(out, "park+0x10 (why=7)") {
		t.Errorf("text: no thread frame arguments:\n%s", out)
	}
	out, _, _ = run(t, "", "analyze", "--elf", elf, "--format", "html", dump)
	if !strings.Contains(out, `<span class="args">(why=7)</span>`) {
		t.Errorf("html: no thread frame arguments")
	}
	out, _, _ = run(t, "", "analyze", "--elf", elf, "--format", "json", "--locals", dump)
	var r struct {
		Threads []struct {
			Name   string
			Frames []struct {
				Function     string
				Args, Locals []struct{ Name, Value string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, th := range r.Threads {
		for _, f := range th.Frames {
			if th.Name == "consumer" && f.Function == "process_next" && len(f.Args) == 1 && f.Args[0].Name == "n" && f.Args[0].Value == "1" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("json: no consumer thread frame process_next (n=1): %+v", r.Threads)
	}
}
