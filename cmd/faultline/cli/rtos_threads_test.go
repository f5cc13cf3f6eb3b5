package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/scenario"
)

// gdbTasks is a QEMU+GDB RTOS fixture's task list: FreeRTOS's
// <build>.tasks.json ("tasks") or Zephyr's <build>.threads.json
// ("threads"), each task with GDB's backtrace from its saved context.
type gdbTasks struct {
	Tasks   []gdbTask `json:"tasks"`
	Threads []gdbTask `json:"threads"`
}

type gdbTask struct {
	Name   string            `json:"name"`
	Frames []oracleTaskFrame `json:"frames"`
	// HandlerFrames: a crash inside PendSV (the FreeRTOS-like hook
	// builds): GDB's frames from the crash to PendSV_Handler, before the
	// task's own.
	HandlerFrames []oracleTaskFrame `json:"handler_frames"`
}

type oracleTaskFrame struct {
	Function string `json:"function"`
	Kind     string `json:"kind"`
}

// rtosBuild is one RTOS test kernel build with its QEMU+GDB fixture.
type rtosBuild struct {
	kernel, build, elf, dump, tasks string
}

func rtosBuilds(t *testing.T) []rtosBuild {
	t.Helper()
	var out []rtosBuild
	for _, k := range []struct{ kernel, fixtures, elfs, suffix string }{
		{"freertos", "fixtures/rtos/freertos", "firmware-samples/rtos-freertos/build", ".tasks.json"},
		{"zephyr", "fixtures/rtos-zephyr", "firmware-samples/rtos-zephyr/build", ".threads.json"},
	} {
		paths, _ := filepath.Glob(filepath.Join(repo, k.fixtures, "*"+k.suffix))
		if len(paths) == 0 {
			t.Fatalf("no fixtures in %s", k.fixtures)
		}
		slices.Sort(paths)
		for _, p := range paths {
			b := strings.TrimSuffix(filepath.Base(p), k.suffix)
			out = append(out, rtosBuild{k.kernel, b, filepath.Join(repo, k.elfs, b+".elf"),
				filepath.Join(repo, k.fixtures, b+".json"), p})
		}
	}
	return out
}

// TestRTOSThreadAccuracyTwoTruths scores auto's walk of every task of the
// RTOS test kernels twice: against the emulator's true stack of each task
// (the kernel run to its crash in faultline's emulator; truth.threads) and
// against GDB's backtrace of the same task in the QEMU fixture (its
// tail-call frames left out: GDB synthesizes them from DWARF call-site
// information, no return-address walk or shadow stack sees them). The two
// must agree task by task: a task exact against one is exact against the
// other. Tasks that never ran have no emulator truth and are counted
// apart. With -v it prints the README's per-task table.
func TestRTOSThreadAccuracyTwoTruths(t *testing.T) {
	skipWithoutEmulator(t)
	var rows []string
	var tot struct{ tasks, emuN, emuExact, gdbExact, noTruth int }
	for _, b := range rtosBuilds(t) {
		elf, err := elfsym.Open(b.elf)
		if err != nil {
			t.Fatal(err)
		}
		// Against the emulator's truth.
		res, err := emu.Run(context.Background(), emu.Config{ELF: b.elf, MaxInsns: 50_000_000, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", b.build, err)
		}
		d := scenario.Dump(res)
		r, err := analysis.Analyze(elf, d, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		scores, noTruth := score.ThreadScores(r, d.Truth)
		emuExact := map[string]bool{}
		var emuAcc float64
		for _, s := range scores {
			emuExact[s.Thread] = s.Exact
			emuAcc += s.FrameAccuracy
			if !s.Exact {
				t.Logf("%s/%s: task %s: auto %v, emulator truth %v", b.kernel, b.build, s.Thread, s.Frames, s.Truth)
			}
		}
		// Against GDB.
		qd, err := crashdump.Load(b.dump)
		if err != nil {
			t.Fatal(err)
		}
		qr, err := analysis.Analyze(elf, qd, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		elf.Close()
		var o gdbTasks
		data, err := os.ReadFile(b.tasks)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		tasks := append(o.Tasks, o.Threads...)
		byName := map[string]report.ThreadJSON{}
		for _, th := range qr.Threads {
			byName[th.Name] = th
		}
		gdbExact := 0
		var gdbAcc float64
		for _, task := range tasks {
			th, ok := byName[task.Name]
			if !ok {
				t.Errorf("%s/%s: task %s: not found in the QEMU dump", b.kernel, b.build, task.Name)
				continue
			}
			var want []string
			for _, f := range append(task.HandlerFrames, task.Frames...) {
				if f.Kind != "tailcall" && f.Kind != "exception" {
					want = append(want, f.Function)
				}
			}
			got := score.CandidateNames(th.Frames, true)
			sc := score.ScoreNames(want, got)
			gdbAcc += sc.FrameAccuracy
			if sc.Exact {
				gdbExact++
			} else {
				t.Logf("%s/%s: task %s: auto %v, GDB %v", b.kernel, b.build, task.Name, got, want)
			}
			if e, ok := emuExact[task.Name]; ok && e != sc.Exact {
				t.Errorf("%s/%s: task %s: exact against the emulator's truth %v, against GDB %v: the two truths disagree", b.kernel, b.build, task.Name, e, sc.Exact)
			}
		}
		if len(scores)+len(noTruth) != len(tasks) {
			t.Errorf("%s/%s: %d tasks scored or without truth, GDB lists %d", b.kernel, b.build, len(scores)+len(noTruth), len(tasks))
		}
		n := 0
		for _, e := range emuExact {
			if e {
				n++
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d of %d (%.1f%%) | %d of %d (%.1f%%) | %s |", b.kernel, b.build, len(tasks),
			n, len(scores), 100*emuAcc/float64(max(len(scores), 1)), gdbExact, len(tasks), 100*gdbAcc/float64(max(len(tasks), 1)), namesOrDash(noTruth)))
		tot.tasks += len(tasks)
		tot.emuN += len(scores)
		tot.emuExact += n
		tot.gdbExact += gdbExact
		tot.noTruth += len(noTruth)
	}
	t.Logf("\n| kernel | build | tasks | = emulator's true stack (frame accuracy) | = GDB (frame accuracy) | no emulator truth (never ran) |\n|---|---|---|---|---|---|\n%s\n| all | | %d | %d of %d | %d of %d | %d |",
		strings.Join(rows, "\n"), tot.tasks, tot.emuExact, tot.emuN, tot.gdbExact, tot.tasks, tot.noTruth)
	if tot.emuExact != tot.emuN || tot.gdbExact != tot.tasks {
		t.Errorf("auto: %d of %d tasks equal the emulator's truth, %d of %d GDB's (want all)", tot.emuExact, tot.emuN, tot.gdbExact, tot.tasks)
	}
}

func namesOrDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// compare scores every strategy's thread walks against the emulator's
// thread truths: JSON thread_scores per strategy, text a thread table.
func TestCompareThreadScores(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	elf := filepath.Join(repo, "firmware-samples/rtos-zephyr/build/gcc-m3-O2.elf")
	dump := filepath.Join(dir, "z.json")
	if _, errOut, code := run(t, "", "emulate", "--elf", elf, "-o", dump); code != 0 {
		t.Fatalf("emulate: %d %s", code, errOut)
	}
	out, errOut, code := run(t, "", "compare", "--elf", elf, "--format", "json", dump)
	if code != 0 {
		t.Fatalf("compare: %d %s", code, errOut)
	}
	var c compareJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Truth.Threads) != 5 || !slices.Equal(c.ThreadsWithoutTruth, []string{"deferred", "idle"}) {
		t.Errorf("truth threads %d, without truth %q", len(c.Truth.Threads), c.ThreadsWithoutTruth)
	}
	auto, fp := c.ThreadScores["auto"], c.ThreadScores["framepointer"]
	if tot := score.TotalOf(auto); len(auto) != 6 || tot.Exact != 6 || !auto[0].Current || auto[0].Thread != "net_rx" {
		t.Errorf("auto thread scores: %+v", auto)
	}
	if tot := score.TotalOf(fp); tot.Threads != 6 || tot.Exact == 6 {
		t.Errorf("framepointer thread scores (gcc -O2 has no frame pointer): %+v", fp)
	}
	for _, s := range fp {
		if !s.Exact && (len(s.Truth) == 0 || s.Truth[len(s.Truth)-1] != "z_thread_entry") {
			t.Errorf("framepointer, thread %s: truth %v", s.Thread, s.Truth)
		}
	}
	text, _, code := run(t, "", "compare", "--elf", elf, dump)
	if code != 0 || !strings.Contains(text, "Threads: 6 threads with a true stack; not scored (no true stack: never switched out): deferred, idle") ||
		!strings.Contains(text, "auto          6/6    100%      0") {
		t.Errorf("compare text:\n%s", text)
	}
}
