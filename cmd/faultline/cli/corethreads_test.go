package cli

import (
	"encoding/json"
	"github.com/faultline-dev/faultline/internal/testtool"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
)

var (
	// "Thread 3 (LWP 3):" on a core, `Thread 3 (Thread 3 "rx" (rx, ...)):` through faultline's gdbserver.
	gdbThreadHdr = regexp.MustCompile(`^Thread \d+ \((?:LWP (\d+)|Thread \d+ "([^"]*)".*)\):$`)
	gdbFrameFn   = regexp.MustCompile(`^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(`)
)

// gdbThreadBTs runs thread apply all bt in GDB (on a core, or with the
// given extra arguments, through a remote target) and returns each
// thread's function names, "<signal handler called>" for exception
// frames, keyed by LWP number on a core ("1", "2"...) or by the thread
// name the gdbserver gives.
func gdbThreadBTs(t *testing.T, limit int, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("gdb-multiarch", append([]string{"-batch", "-nx", "-ex", "set pagination off",
		"-ex", "set backtrace limit " + strconv.Itoa(limit)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v: %s", err, out)
	}
	bts := map[string][]string{}
	key := ""
	for _, line := range strings.Split(string(out), "\n") {
		if m := gdbThreadHdr.FindStringSubmatch(line); m != nil {
			key = m[1] + m[2]
			bts[key] = []string{}
			continue
		}
		if key == "" || !strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Contains(line, "<signal handler called>") {
			bts[key] = append(bts[key], "<signal handler called>")
		} else if m := gdbFrameFn.FindStringSubmatch(line); m != nil {
			bts[key] = append(bts[key], m[1])
		} else {
			bts[key] = append(bts[key], "?"+line)
		}
	}
	return bts
}

// isSubsequence reports whether every element of sub appears in s in
// order.
func isSubsequence(sub, s []string) bool {
	i := 0
	for _, x := range s {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}

// convert --to elfcore --elf writes one NT_PRSTATUS per RTOS thread: GDB
// lists them, and thread apply all bt on the core gives, thread by
// thread, exactly what GDB gives through faultline's gdbserver on the
// source dump. faultline's own walk of each thread is the same backtrace
// where it has a frame: its frames appear in GDB's, in order, from the
// same first frame to the task entry (GDB adds the tail-call and inlined
// frames it reconstructs from DWARF call sites, and goes on past the task
// entry into the task-exit function, where faultline stops). faultline
// reads the core back with the same threads and names.
func TestConvertELFCoreThreadsGDB(t *testing.T) {
	testtool.Need(t, "GDB reading the threads of the ELF cores convert writes", "gdb-multiarch")
	bin := buildFaultline(t)
	for _, build := range []string{"gcc-m3-O2", "gcc-m4f-O2", "gcc-m0-O2"} {
		elf := filepath.Join(repo, "firmware-samples/rtos-freertos/build", build+".elf")
		dump := filepath.Join(repo, "fixtures/rtos/freertos", build+".json")
		out, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
		if code != 0 {
			t.Fatalf("%s: %s", build, errOut)
		}
		var r struct {
			Threads []struct {
				Name, Error string
				Frames      []struct{ Function, Kind string }
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		core := filepath.Join(t.TempDir(), "core.elf")
		if _, errOut, code := run(t, "", "convert", "--to", "elfcore", "--elf", elf, dump, "-o", core); code != 0 {
			t.Fatalf("%s: convert: %s", build, errOut)
		}
		bts := gdbThreadBTs(t, 40, "-ex", "thread apply all bt", elf, core)
		live := gdbThreadBTs(t, 40, "-ex", "target remote | "+bin+" gdbserver --stdio --elf "+elf+" "+dump, "-ex", "thread apply all bt", elf)
		var names []string
		lwp := 0
		for _, th := range r.Threads {
			if th.Error != "" {
				continue
			}
			lwp++
			names = append(names, th.Name)
			var want []string
			for _, f := range th.Frames {
				switch f.Kind {
				case "exception":
					want = append(want, "<signal handler called>")
				case "gap":
				default:
					want = append(want, f.Function)
				}
			}
			got, ok := bts[strconv.Itoa(lwp)]
			if !ok {
				t.Errorf("%s: GDB lists no LWP %d (thread %s)", build, lwp, th.Name)
				continue
			}
			if l := live[th.Name]; !slices.Equal(got, l) {
				t.Errorf("%s: thread %s: GDB on the core\n%q\nthrough gdbserver\n%q", build, th.Name, got, l)
			}
			if len(want) < 2 || len(got) < len(want) || got[0] != want[0] || !isSubsequence(want, got) {
				t.Errorf("%s: thread %s (LWP %d): GDB\n%q\nfaultline\n%q", build, th.Name, lwp, got, want)
			}
		}
		if len(bts) != lwp || lwp < 3 {
			t.Errorf("%s: GDB lists %d threads, faultline %d", build, len(bts), lwp)
		}
		d, err := crashdump.Load(core)
		if err != nil {
			t.Fatal(err)
		}
		var back []string
		for _, th := range d.Threads {
			back = append(back, th.Name)
		}
		if !slices.Equal(back, names) {
			t.Errorf("%s: the core read back lists %q, want %q", build, back, names)
		}
	}
}
