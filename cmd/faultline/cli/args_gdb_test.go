package cli

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// gdbVar is one line of GDB's "info args" / "info locals".
type gdbVar struct{ name, value string }

// gdbFrameVars runs GDB on dump through faultline gdbserver and returns,
// per frame number, its function and its args and locals as GDB prints
// them.
func gdbFrameVars(t *testing.T, bin, elf, dump string, n int) (funcs map[int]string, args, locals map[int][]gdbVar) {
	t.Helper()
	cmd := []string{"-nx", "-batch", "-ex", "set osabi none", "-ex", "set pagination off", "-ex", "set width 0",
		"-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
		"-ex", "target remote | " + bin + " gdbserver --stdio --elf " + elf + " " + dump}
	for i := 0; i < n; i++ {
		cmd = append(cmd, "-ex", fmt.Sprintf("echo ==FRAME %d==\\n", i), "-ex", fmt.Sprintf("frame %d", i),
			"-ex", "echo ==ARGS==\\n", "-ex", "info args", "-ex", "echo ==LOCALS==\\n", "-ex", "info locals")
	}
	cmd = append(cmd, elf)
	c := exec.Command("timeout", append([]string{"60", "gdb-multiarch"}, cmd...)...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb on %s: %v\n%s", dump, err, out)
	}
	funcs, args, locals = map[int]string{}, map[int][]gdbVar{}, map[int][]gdbVar{}
	head := regexp.MustCompile(`^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(`)
	frame, sect := -1, ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "==FRAME ") {
			frame, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "==FRAME "), "=="))
			sect = ""
			continue
		}
		if m := head.FindStringSubmatch(l); m != nil && sect == "" && frame >= 0 {
			if k, _ := strconv.Atoi(m[1]); k == frame {
				funcs[frame] = m[2]
			}
			continue
		}
		switch l {
		case "==ARGS==":
			sect = "args"
			continue
		case "==LOCALS==":
			sect = "locals"
			continue
		}
		name, val, ok := strings.Cut(l, " = ")
		if !ok || frame < 0 || strings.ContainsAny(name, " \t") {
			continue
		}
		if sect == "args" {
			args[frame] = append(args[frame], gdbVar{name, val})
		} else if sect == "locals" {
			locals[frame] = append(locals[frame], gdbVar{name, val})
		}
	}
	return funcs, args, locals
}

// argsTally counts a comparison with GDB.
type argsTally struct {
	compared, equal, oursUnknown, entryWhereGDBOptimized, bogus int
}

func (a *argsTally) add(b argsTally) {
	a.compared += b.compared
	a.equal += b.equal
	a.oursUnknown += b.oursUnknown
	a.entryWhereGDBOptimized += b.entryWhereGDBOptimized
	a.bogus += b.bogus
}

func (a argsTally) String() string {
	return fmt.Sprintf("%d compared, %d equal, %d ours optimized out/unavailable where GDB has a value, %d entry values where GDB says optimized out, %d bogus",
		a.compared, a.equal, a.oursUnknown, a.entryWhereGDBOptimized, a.bogus)
}

// compareVars matches ours against GDB's by name (in order for repeated
// names).
func compareVars(t *testing.T, where string, ours []report.VarJSON, gdb []gdbVar) argsTally {
	var n argsTally
	used := make([]bool, len(ours))
	for _, g := range gdb {
		k := -1
		for i, o := range ours {
			if !used[i] && o.Name == g.name {
				k = i
				break
			}
		}
		if k < 0 {
			t.Errorf("%s: GDB shows %s = %s, faultline does not list it", where, g.name, g.value)
			n.bogus++
			continue
		}
		used[k] = true
		o := ours[k]
		gOpt := g.value == "<optimized out>"
		if strings.HasPrefix(g.value, "<") && !gOpt {
			continue // GDB could not read it either (<error: ...>, <synthetic pointer>)
		}
		n.compared++
		switch {
		case gOpt && o.Value == "":
			n.equal++
		case gOpt && o.Entry:
			n.entryWhereGDBOptimized++
		case gOpt:
			t.Errorf("%s: %s: GDB <optimized out>, faultline %q", where, g.name, o.Value)
			n.bogus++
		case o.Value == "":
			t.Logf("%s: %s: GDB %q, faultline unknown (%s)", where, g.name, g.value, o.Note)
			n.oursUnknown++
		case o.Value == g.value:
			n.equal++
		case o.Value == "0x0" && strings.HasPrefix(g.value, "0x0 <"):
			// GDB names what lies at address 0 (the vector table);
			// faultline never names a NULL pointer.
			n.equal++
		default:
			t.Errorf("%s: %s: GDB %q, faultline %q (entry %v)", where, g.name, g.value, o.Value, o.Entry)
			n.bogus++
		}
	}
	return n
}

// TestArgsAgainstGDB checks every crash frame's arguments and locals
// against GDB's info args / info locals through faultline gdbserver, on the
// QEMU oracle dumps of gcc and clang builds at -O0 and -O2: every value
// GDB prints is ours too, or ours is optimized out (GDB takes a caller's
// r0-r3/r12 as unchanged by the call, faultline never does); never a
// different value, never a value where GDB says optimized out (except an
// @entry value GDB does not look up).
func TestArgsAgainstGDB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs GDB")
	}
	if _, err := exec.LookPath("gdb-multiarch"); err != nil {
		t.Skip("gdb-multiarch not installed")
	}
	bin := buildFaultline(t)
	builds := []string{"gcc-m3-O0", "gcc-m3-O2", "clang-m3-O0", "clang-m3-O2", "gcc-m4f-Og", "clang-m4f-Os"}
	if b := os.Getenv("FL_ARGS_BUILDS"); b != "" {
		builds = strings.Fields(b)
	}
	scenarios := []string{"null_write_deep", "null_fnptr", "udf", "div0", "irq_crash", "psp_thread", "fpu_crash"}
	var total argsTally
	for _, b := range builds {
		elfPath := repo + "/firmware-samples/build/" + b + ".elf"
		elf, err := elfsym.Open(elfPath)
		if err != nil {
			t.Fatal(err)
		}
		var per argsTally
		for _, sc := range scenarios {
			dump := repo + "/fixtures/qemu/" + b + "-" + sc + ".json"
			if _, err := os.Stat(dump); err != nil {
				continue
			}
			d, err := crashdump.Load(dump)
			if err != nil {
				t.Fatal(err)
			}
			r, err := analysis.Analyze(elf, d, analysis.Options{Locals: true})
			if err != nil {
				t.Fatal(err)
			}
			funcs, gargs, glocals := gdbFrameVars(t, bin, elfPath, dump, len(r.Frames))
			for _, f := range r.Frames {
				if f.Function == "" || funcs[f.Index] != f.Function {
					continue
				}
				where := fmt.Sprintf("%s-%s #%d %s", b, sc, f.Index, f.Function)
				per.add(compareVars(t, where+" args", f.Args, gargs[f.Index]))
				per.add(compareVars(t, where+" locals", f.Locals, glocals[f.Index]))
			}
		}
		t.Logf("%s: %v", b, per)
		total.add(per)
	}
	t.Logf("total: %v", total)
	if total.compared == 0 || total.equal*2 < total.compared {
		t.Errorf("only %d of %d values equal to GDB's", total.equal, total.compared)
	}
}
