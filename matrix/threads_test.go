package matrix

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The RTOS cases of the sample matrix score every thread: auto gets all 13
// tasks of the FreeRTOS-lookalike kernel; framepointer (no frame pointer
// at -O2) misses callers in most tasks, which fails it (known or new) like
// a crash that is not exact. The text and markdown outputs add the thread
// table.
func TestRunnerThreads(t *testing.T) {
	skipWithoutEmulator(t)
	s, err := LoadSpec(filepath.Join(repo, "firmware-samples/matrix/matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Cases(Filter{Build: "freertos-gcc-m3-O2", Scenario: "freertos_crash"})
	if len(cases) != 1 {
		t.Fatalf("%d cases", len(cases))
	}
	rep := (&Runner{Jobs: 1}).Run(context.Background(), cases)
	c := rep.Cases[0]
	if c.Invalid() {
		t.Fatalf("invalid: %s", c.Error)
	}
	auto, fp := c.Results["auto"], c.Results["framepointer"]
	if auto.Threads == nil || auto.Threads.Threads != 13 || auto.Threads.Exact != 13 || auto.Fails() {
		t.Errorf("auto: %+v", auto.Threads)
	}
	if fp.Threads == nil || fp.Threads.Exact == 13 || !fp.Fails() || len(fp.ThreadFailures) == 0 {
		t.Errorf("framepointer: %+v %+v", fp.Threads, fp.ThreadFailures)
	}
	for _, f := range fp.ThreadFailures {
		if f.Current || f.Exact || len(f.Truth) == 0 {
			t.Errorf("framepointer thread failure %+v", f)
		}
	}
	rep.ApplyKnown(nil, true)
	if !rep.Cases[0].Results["framepointer"].New {
		t.Error("a thread that is not exact is not a failure")
	}
	var text, md bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Thread unwinding (RTOS cases)") || !strings.Contains(text.String(), "13/13, 100%, 0") ||
		!strings.Contains(text.String(), "thread logger: truth: rtk_exit_critical < log_format < log_flush < logger_task") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "| freertos-gcc-m3-O2 | 13/13, 100%, 0 |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if h := page.String(); !strings.Contains(h, "<h2>Thread unwinding (RTOS cases)</h2>") || !strings.Contains(h, "13/13 · 100%") ||
		!strings.Contains(h, "threads not exact") {
		t.Errorf("HTML page lacks the thread table or the thread failures")
	}
}
