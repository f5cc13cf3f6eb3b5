package emu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/emu"
)

// oracleThread is one task of a QEMU+GDB RTOS fixture: FreeRTOS's
// <build>.tasks.json ("tasks", "regs") or Zephyr's <build>.threads.json
// ("threads", "registers"). GDB's backtrace is taken with the registers
// set from the context the kernel saved.
type oracleThread struct {
	Name      string            `json:"name"`
	Current   bool              `json:"current"`
	Regs      map[string]string `json:"regs"`
	Registers map[string]string `json:"registers"`
	Frames    []struct {
		PC       string `json:"pc"`
		Function string `json:"function"`
		Kind     string `json:"kind"`
	} `json:"frames"`
}

// TestThreadTruthsMatchGDB runs every RTOS test kernel to its crash and
// compares the emulator's true stack of every switched-out thread
// (Result.Threads) with GDB's backtrace of the same task in the QEMU
// fixture, PC for PC. The thread is matched by the SP its saved context
// restores. GDB's tail-call frames (synthesized from DWARF call-site
// information: the function is no longer on the stack) are not calls a
// shadow stack can see and are left out. The crashing task's own stack is
// Result.Truth, which TestOracleMatch compares.
//
// Two differences are accepted, each checked narrowly and counted:
//   - notStarted: a thread that never ran has no switched-out stack (the
//     kernel built its first frame, no exception switched it out); GDB's
//     backtrace of it is then its entry function alone.
//   - tickPoint: a thread preempted in a busy loop by the timer tick was
//     interrupted at another instruction of the same function (QEMU's
//     SysTick counts virtual time, the emulator's one per instruction);
//     every other frame matches PC for PC.
func TestThreadTruthsMatchGDB(t *testing.T) {
	oracleSkip(t)
	corpora := []struct{ name, fixtures, elfs, suffix string }{
		{"freertos", "../fixtures/rtos/freertos", "../firmware-samples/rtos-freertos/build", ".tasks.json"},
		{"zephyr", "../fixtures/rtos-zephyr", "../firmware-samples/rtos-zephyr/build", ".threads.json"},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %-8s %5s %6s %6s %10s %9s\n", "build", "kernel", "tasks", "truths", "= GDB", "notStarted", "tickPoint")
	total, matched, accepted := 0, 0, 0
	for _, c := range corpora {
		paths, _ := filepath.Glob(filepath.Join(c.fixtures, "*"+c.suffix))
		if len(paths) == 0 {
			t.Fatalf("%s: no fixtures", c.fixtures)
		}
		slices.Sort(paths)
		for _, p := range paths {
			build := strings.TrimSuffix(filepath.Base(p), c.suffix)
			var o struct {
				Tasks   []oracleThread `json:"tasks"`
				Threads []oracleThread `json:"threads"`
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &o); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			tasks := append(o.Tasks, o.Threads...)
			res, err := emu.Run(context.Background(), emu.Config{ELF: filepath.Join(c.elfs, build+".elf"), MaxInsns: 50_000_000, Timeout: time.Minute})
			if err != nil {
				t.Errorf("%s/%s: %v", c.name, build, err)
				continue
			}
			bySP := map[uint32]emu.ThreadTruth{}
			for _, th := range res.Threads {
				bySP[th.SP] = th
			}
			n, ok, notStarted, tickPoint := 0, 0, 0, 0
			for _, task := range tasks {
				if task.Current {
					continue
				}
				regs := task.Regs
				if regs == nil {
					regs = task.Registers
				}
				sp, err := strconv.ParseUint(regs["sp"], 0, 32)
				if err != nil {
					t.Errorf("%s/%s: task %s: sp %q", c.name, build, task.Name, regs["sp"])
					continue
				}
				n++
				var want, wantFn []string
				for _, f := range task.Frames {
					if f.Kind == "tailcall" {
						continue
					}
					pc, _ := strconv.ParseUint(f.PC, 0, 32)
					want = append(want, fmt.Sprintf("%#x", pc&^1))
					wantFn = append(wantFn, f.Function)
				}
				th, found := bySP[uint32(sp)]
				if !found && len(want) == 1 {
					notStarted++
					t.Logf("accepted notStarted: %s/%s: task %s (GDB: %s only)", c.name, build, task.Name, wantFn[0])
					continue
				}
				if !found {
					t.Errorf("%s/%s: task %s (sp %#x): the emulator has no switched-out thread with that SP", c.name, build, task.Name, sp)
					continue
				}
				var got []string
				for _, f := range th.Frames {
					got = append(got, fmt.Sprintf("%#x", f.PC&^1))
				}
				if len(got) == len(want) && len(got) > 1 && got[0] != want[0] && slices.Equal(got[1:], want[1:]) &&
					strings.TrimSuffix(th.Frames[0].Function, ".constprop.0") == wantFn[0] {
					tickPoint++
					t.Logf("accepted tickPoint: %s/%s: task %s interrupted in %s at %s, under QEMU at %s", c.name, build, task.Name, wantFn[0], got[0], want[0])
					continue
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s/%s: task %s:\n emulator %s\n GDB      %s", c.name, build, task.Name, strings.Join(got, " < "), strings.Join(want, " < "))
					continue
				}
				ok++
			}
			total += n
			matched += ok
			accepted += notStarted + tickPoint
			fmt.Fprintf(&table, "%-22s %-8s %5d %6d %6d %10d %9d\n", build, c.name, n, len(res.Threads), ok, notStarted, tickPoint)
		}
	}
	fmt.Fprintf(&table, "%d tasks besides the crashing one: %d with the emulator's true stack equal to GDB's backtrace PC for PC, %d accepted differences\n", total, matched, accepted)
	t.Log("\n" + table.String())
}

// TestRTOSMemoryMatchesQEMU compares the whole RAM of every FreeRTOS test
// kernel at the first instruction of the HardFault handler with QEMU's at
// the same point (fixtures/rtos/freertos/<build>.json), byte for byte: the
// saved context of every task, its stack and the kernel's lists. On the
// FPU builds this needs the lazy FP state preservation (lazyfp.go: the
// context switch's VSTMDB stores the switched-out task's s0-s15 into its
// frame) and, on ARMv8-M, RETPSR.SFPA in each stacked xPSR.
func TestRTOSMemoryMatchesQEMU(t *testing.T) {
	oracleSkip(t)
	paths, _ := filepath.Glob("../fixtures/rtos/freertos/*.tasks.json")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		build := strings.TrimSuffix(filepath.Base(p), ".tasks.json")
		d, err := crashdump.Load(strings.TrimSuffix(p, ".tasks.json") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		res, err := emu.Run(context.Background(), emu.Config{ELF: "../firmware-samples/rtos-freertos/build/" + build + ".elf", MaxInsns: 50_000_000, Timeout: time.Minute})
		if err != nil {
			t.Errorf("%s: %v", build, err)
			d.Close()
			continue
		}
		compared, differ := 0, 0
		var first []string
		for _, q := range d.Memory {
			if q.Addr >= 0xE0000000 {
				continue // the SCB: compared by TestOracleMatch
			}
			for i, want := range q.Data {
				a := q.Addr + uint32(i)
				got, ok := byteAt(res, a)
				if !ok {
					continue
				}
				compared++
				if got != want {
					differ++
					if len(first) < 8 {
						first = append(first, fmt.Sprintf("%#x: %#02x, QEMU %#02x", a, got, want))
					}
				}
			}
		}
		d.Close()
		if compared < 1024 {
			t.Errorf("%s: only %d RAM bytes compared", build, compared)
		}
		if differ > 0 {
			t.Errorf("%s: %d of %d RAM bytes differ from QEMU's: %s", build, differ, compared, strings.Join(first, "; "))
		}
	}
}

func byteAt(res *emu.Result, a uint32) (byte, bool) {
	for _, m := range res.Memory {
		if a >= m.Addr && uint64(a) < uint64(m.Addr)+uint64(len(m.Data)) {
			return m.Data[a-m.Addr], true
		}
	}
	return 0, false
}
