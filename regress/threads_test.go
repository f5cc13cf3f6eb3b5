package regress

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Thread expectations on the FreeRTOS-lookalike kernel: named tasks in
// their state with their backtraces, and every task equal to its true
// stack; a wrong expectation and a strategy that misses callers fail with
// the thread named.
func TestRegressThreads(t *testing.T) {
	skipWithoutEmulator(t)
	elf, err := filepath.Abs(filepath.Join(samples, "rtos-freertos/build/gcc-m4f-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"schema": "faultline.regress/1", "elf": "` + elf + `", "scenarios": [
	  {"name": "tasks", "expect": {"frames": ["net_store", "net_parse", "net_task"], "match": "exact",
	     "threads": [{"name": "IDLE", "state": "ready", "frames": ["rtk_port_pend_tick", "prvIdleTask"], "match": "exact"},
	                 {"name": "hi", "state": "blocked", "frames": ["rtk_exit_critical", "*", "hi_task"]},
	                 {"name": "net", "state": "running", "frames": ["net_store", "net_parse"]}],
	     "threads_truth": true}},
	  {"name": "wrong", "expect": {"threads": [{"name": "IDLE", "state": "blocked", "frames": ["prvIdleTask"]}, {"name": "nosuch"}]}},
	  {"name": "fp", "unwinder": "framepointer", "expect": {"threads_truth": true}}
	]}`
	s, err := Parse([]byte(spec), "spec.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := Run(context.Background(), s, Options{})
	if len(sum.Results) != 3 {
		t.Fatalf("%d results", len(sum.Results))
	}
	if r := sum.Results[0]; r.Status != StatusPass {
		t.Errorf("tasks: %v\n%s", r.Status, r.Text(true))
	}
	r := sum.Results[1]
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.Summary)
	}
	want := []string{
		"thread IDLE: state ready, the spec expects blocked",
		"thread IDLE: backtrace: frame #0 is rtk_port_pend_tick (./src/port.c:55), the spec expects prvIdleTask",
		"thread nosuch: not found (freertos threads: net, logger, IDLE, Tmr Svc, rx, dsp, deep, isrwait, monitor, tx, hi, lo, oneshot)",
	}
	if r.Status != StatusFail || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("wrong: %v\n%s", r.Status, strings.Join(got, "\n"))
	}
	r = sum.Results[2]
	if r.Status != StatusFail || len(r.Problems) == 0 || !strings.HasPrefix(r.Problems[0].Summary, "thread ") ||
		!strings.Contains(r.Problems[0].Summary, "differs from the thread's true stack") || !strings.Contains(r.Details(), "truth:") {
		t.Errorf("framepointer: %v %+v", r.Status, r.Problems)
	}
}
