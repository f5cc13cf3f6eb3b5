package gdbserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/faultline-dev/faultline/internal/testtool"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/gdbserver"
	"github.com/faultline-dev/faultline/gdbserver/gdbtest"
)

// threadOracle is fixtures/rtos-zephyr/<build>.threads.json (or, for
// FreeRTOS, fixtures/rtos/freertos/<build>.tasks.json with "tasks"): each
// thread's GDB backtrace in QEMU from its saved context.
type threadOracle struct {
	Threads []oracleThread `json:"threads"`
	Tasks   []oracleThread `json:"tasks"`
}

type oracleThread struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Frames  []struct {
		Function string `json:"function"`
	} `json:"frames"`
	// HandlerFrames: a crash inside PendSV (the FreeRTOS-like hook
	// builds): GDB's frames from the crash to PendSV_Handler, where GDB
	// stops (it cannot unstack onto the PSP), in QEMU as through the server.
	HandlerFrames []struct {
		Function string `json:"function"`
	} `json:"handler_frames"`
}

// rtosCase is one RTOS dump served to GDB.
type rtosCase struct {
	name, elf, dump string
	// handler: the current thread's dump holds the HardFault handler's
	// registers, so GDB's backtrace starts HardFault_Handler,
	// <signal handler called> before the thread's own frames.
	handler bool
	// strict: past the oracle's frames GDB may show at most one frame
	// without a function (the thread entry's return address 0, Zephyr);
	// otherwise (FreeRTOS, whose oracle stops at the task function or at
	// prvTaskExitError while GDB goes on) anything may follow.
	strict bool
	oracle threadOracle
	// command, when set, is the faultline binary GDB runs with --stdio
	// instead of connecting to a server in the test process.
	command string
}

func rtosCases(t *testing.T) []rtosCase {
	var cases []rtosCase
	dir := filepath.Join(repoRoot, "fixtures", "rtos-zephyr")
	oracles, err := filepath.Glob(filepath.Join(dir, "*.threads.json"))
	if err != nil || len(oracles) == 0 {
		t.Fatalf("no fixtures/rtos-zephyr/*.threads.json: %v", err)
	}
	for _, p := range oracles {
		build := strings.TrimSuffix(filepath.Base(p), ".threads.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var o threadOracle
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		elf := filepath.Join(repoRoot, "firmware-samples", "rtos-zephyr", "build", build+".elf")
		cases = append(cases,
			rtosCase{name: "zephyr-" + build + "-native", elf: elf, dump: filepath.Join(dir, build+".json"), handler: true, strict: true, oracle: o},
			rtosCase{name: "zephyr-" + build + "-coredump", elf: elf, dump: filepath.Join(dir, build+".zephyr.log"), strict: true, oracle: o})
	}
	fdir := filepath.Join(repoRoot, "fixtures", "rtos", "freertos")
	tasks, _ := filepath.Glob(filepath.Join(fdir, "*.tasks.json"))
	for _, p := range tasks {
		build := strings.TrimSuffix(filepath.Base(p), ".tasks.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var o threadOracle
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		o.Threads = o.Tasks
		elf := filepath.Join(repoRoot, "firmware-samples", "rtos-freertos", "build", build+".elf")
		cases = append(cases, rtosCase{name: "freertos-" + build, elf: elf, dump: filepath.Join(fdir, build+".json"), handler: true, oracle: o})
	}
	return cases
}

var (
	threadHeader = regexp.MustCompile(`(?m)^Thread (\d+) \(Thread \d+ "([^"]*)"`)
	infoThread   = regexp.MustCompile(`(?m)^[* ] +(\d+) +Thread \d+ "([^"]*)"`)
)

// TestGDBThreads is the acceptance test of the thread support: the real
// gdb-multiarch, connected to faultline's server of each RTOS dump (the
// Zephyr-like kernel's native dump at the HardFault and the Zephyr
// coredump its firmware wrote, the latter through `faultline gdbserver
// --stdio`; the FreeRTOS-like kernel's dumps), must list every thread in
// "info threads", and "thread apply all bt" must give, for every thread,
// the backtrace GDB gave in QEMU from that thread's saved context
// (fixtures/rtos-zephyr, fixtures/rtos/freertos), for Zephyr ending at the
// thread entry (GDB may add one frame at the entry's return address 0).
func TestGDBThreads(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it)")
	}
	cases := rtosCases(t)
	// The Zephyr coredumps go through the faultline command itself
	// (`target remote | faultline gdbserver --stdio`), the other dumps
	// through a server in this process.
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "github.com/faultline-dev/faultline/cmd/faultline")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var matched, threads int
	t.Run("dumps", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if strings.HasSuffix(c.dump, ".zephyr.log") {
					c.command = bin
				}
				n, err := checkThreads(t, c)
				if err != nil {
					t.Fatal(err)
				}
				matched++
				threads += n
			})
		}
	})
	t.Logf("%d of %d dumps (Zephyr-like and FreeRTOS-like kernels): GDB lists all threads and every backtrace (%d threads) matches the QEMU+GDB oracle", matched, len(cases), threads)
}

func checkThreads(t *testing.T, c rtosCase) (int, error) {
	elf, err := elfsym.Open(c.elf)
	if err != nil {
		return 0, err
	}
	defer elf.Close()
	d, err := crashdump.Load(c.dump)
	if err != nil {
		return 0, err
	}
	tgt, err := gdbserver.NewTarget(d, elf)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	target := fmt.Sprintf("| '%s' gdbserver --stdio --elf '%s' '%s'", c.command, c.elf, c.dump)
	if c.command == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		target = l.Addr().String()
		go func() {
			done <- gdbserver.NewServer(tgt, gdbserver.Config{Logf: t.Logf, IdleTimeout: time.Minute}).Serve(ctx, l, 1)
		}()
	} else {
		done <- nil
	}
	const sep = "@@faultline-threads@@"
	cmd := exec.CommandContext(ctx, gdbtest.GDB, "-batch", "-nx",
		"-ex", "set osabi none", "-ex", "set width 0", "-ex", "set pagination off",
		"-ex", "set backtrace limit 64",
		"-ex", "target remote "+target,
		"-ex", "echo "+sep+"\\n", "-ex", "info threads",
		"-ex", "echo "+sep+"\\n", "-ex", "thread apply all bt",
		"-ex", "echo "+sep+"\\n", c.elf)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("gdb: %v\n%s", err, buf.String())
	}
	if err := <-done; err != nil {
		t.Errorf("server: %v", err)
	}
	parts := strings.Split(buf.String(), sep+"\n")
	if len(parts) < 4 {
		return 0, fmt.Errorf("GDB printed %d of 3 separators:\n%s", len(parts)-1, buf.String())
	}
	info, all := parts[1], parts[2]
	listed := map[string]bool{}
	for _, m := range infoThread.FindAllStringSubmatch(info, -1) {
		listed[m[2]] = true
	}
	if len(listed) != len(c.oracle.Threads) {
		return 0, fmt.Errorf("info threads lists %d threads, the oracle %d:\n%s", len(listed), len(c.oracle.Threads), info)
	}
	// Split "thread apply all bt" by its thread headers.
	bts := map[string]string{}
	locs := threadHeader.FindAllStringSubmatchIndex(all, -1)
	for i, m := range locs {
		end := len(all)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		bts[all[m[4]:m[5]]] = all[m[0]:end]
	}
	var problems []string
	for _, ot := range c.oracle.Threads {
		if !listed[ot.Name] {
			problems = append(problems, fmt.Sprintf("thread %q is not in info threads", ot.Name))
			continue
		}
		bt, ok := bts[ot.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("thread %q has no backtrace", ot.Name))
			continue
		}
		got := gdbtest.ParseBacktrace(bt)
		if ot.Current && c.handler {
			if len(got) < 2 || got[0].Function != "HardFault_Handler" || !got[1].Exception {
				problems = append(problems, fmt.Sprintf("current thread %q: want HardFault_Handler, <signal handler called> first:\n%s", ot.Name, bt))
				continue
			}
			got = got[2:]
		}
		var want []string
		for _, f := range ot.Frames {
			want = append(want, f.Function)
		}
		if ot.Current && len(ot.HandlerFrames) > 0 {
			want = want[:0]
			for _, f := range ot.HandlerFrames {
				want = append(want, f.Function)
			}
		}
		if fix, ok := oracleFixes[c.name+"/"+ot.Name]; ok {
			t.Logf("%s thread %q: the oracle says %q; checked against the source's call chain %q instead", c.name, ot.Name, want, fix)
			want = fix
		}
		if err := matchFrames(want, got, c.strict); err != nil {
			problems = append(problems, fmt.Sprintf("thread %q: %v\n%s", ot.Name, err, bt))
		}
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return len(c.oracle.Threads), nil
}

// oracleFixes replaces oracle backtraces that are wrong. The crashing
// "net" task of the clang builds of firmware-samples/rtos-freertos: the
// oracle (GDB in QEMU, the PSP frame stitched by the oracle script) has
// net_store < net_parse < tx_push < tx_task, but src/app.c calls net_parse
// only from net_receive, called only from net_task, and the dump's stack
// holds net_receive's return address (0x107e in clang-m0-Os) above
// net_parse's frame. clang-m3-Os tail-calls net_parse from net_receive
// (b.w net_parse at 0x11ea), so net_receive has no frame there.
var oracleFixes = map[string][]string{
	"freertos-clang-m0-Os/net":  {"net_store", "net_parse", "net_receive", "net_task"},
	"freertos-clang-m3-Os/net":  {"net_store", "net_parse", "net_task"},
	"freertos-clang-m4f-O0/net": {"net_store", "net_parse", "net_receive", "net_task"},
}

// matchFrames checks GDB's frames against the oracle's function names: the
// same names in order (an oracle frame without a name, at PC 0, matches any
// frame), then, when strict, at most one frame GDB has no function for
// (the return address 0 of the thread entry).
func matchFrames(want []string, got []gdbtest.Frame, strict bool) error {
	for i, w := range want {
		if i >= len(got) {
			return fmt.Errorf("%d frames, want %d: #%d %s missing", len(got), len(want), i, w)
		}
		if w == "" && !got[i].Exception {
			continue
		}
		if got[i].Exception || got[i].Function != w {
			return fmt.Errorf("frame #%d: %q, want %s", i, got[i].Line, w)
		}
	}
	if !strict {
		return nil
	}
	rest := got[len(want):]
	if len(rest) > 1 || (len(rest) == 1 && rest[0].Function != "") {
		return fmt.Errorf("%d frames past the thread entry, from %q", len(rest), rest[0].Line)
	}
	return nil
}
