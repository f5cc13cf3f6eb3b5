package analysis

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// Zephyr's cooperative threads have negative priorities, -1 the lowest of
// them: a thread at -1 or -16 must show that number, not "unknown". The
// Zephyr-like test kernel runs preemptive threads only, so the dump of
// clang-m3-O2 is changed in memory: a switched-out thread's base.prio
// (struct k_thread offset 14, checked against the priority read first)
// is set to -1, then -16. A thread whose priority cannot be read has none
// in the JSON and "?" in the text.
func TestZephyrCooperativePriority(t *testing.T) {
	root := filepath.Join("..")
	elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "rtos-zephyr", "build", "clang-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	load := func() *crashdump.Dump {
		d, err := crashdump.Load(filepath.Join(root, "fixtures", "rtos-zephyr", "clang-m3-O2.json"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	r, err := Analyze(elf, load(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var victim report.ThreadJSON
	for _, th := range r.Threads {
		if !th.Current && th.Priority != nil && *th.Priority > 0 {
			victim = th
			break
		}
	}
	if victim.Priority == nil {
		t.Fatal("no switched-out thread with a priority")
	}
	prioByte := func(d *crashdump.Dump) *byte {
		addr := victim.Raw.ID + 14
		for i := range d.Memory {
			m := &d.Memory[i]
			if addr >= m.Addr && addr-m.Addr < uint32(len(m.Data)) {
				return &m.Data[addr-m.Addr]
			}
		}
		t.Fatalf("%#x is not in the dump", addr)
		return nil
	}
	if got := *prioByte(load()); int8(got) != int8(*victim.Priority) {
		t.Fatalf("byte at thread+14 is %d, the thread's priority %d: the layout moved", int8(got), *victim.Priority)
	}
	for _, want := range []int8{-1, -16} {
		d := load()
		*prioByte(d) = byte(want)
		r, err := Analyze(elf, d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range r.Threads {
			if th.Raw.ID != victim.Raw.ID {
				continue
			}
			if th.Priority == nil || *th.Priority != int(want) || report.PriorityText(th) != itoa(int(want)) {
				t.Errorf("priority %d: thread %s shows %s", want, th.Name, report.PriorityText(th))
			}
			b, _ := json.Marshal(th)
			if !strings.Contains(string(b), `"priority":`+itoa(int(want))+`,`) {
				t.Errorf("priority %d: JSON %s", want, b)
			}
		}
	}
	unknown := report.ThreadJSON{}
	if report.PriorityText(unknown) != "?" {
		t.Errorf("unknown priority shows %q", report.PriorityText(unknown))
	}
	if b, _ := json.Marshal(unknown); strings.Contains(string(b), `"priority"`) {
		t.Errorf("unknown priority in JSON: %s", b)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
