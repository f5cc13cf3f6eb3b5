package analysis

import (
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

// A dump that lists its own threads (an ELF core's NT_PRSTATUS notes) of
// firmware without an RTOS: each thread is walked from its registers,
// the first being the crash's. The second thread here starts from the
// registers the crash's walk recovered at its frame 3, so its frames must
// be the crash's from frame 3 on.
func TestDumpThreads(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	base, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if base.RTOS != nil || len(base.Threads) != 0 || len(base.Walk.Frames) < 6 {
		t.Fatalf("rtos %v, %d threads, %d frames", base.RTOS, len(base.Threads), len(base.Walk.Frames))
	}
	from := base.Walk.Frames[3]
	d.Threads = []crashdump.Thread{{ID: 1, Regs: d.Regs}, {ID: 7, Name: "worker", Regs: from.Regs}}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.RTOS == nil || r.RTOS.Kind != "core" || len(r.Threads) != 2 {
		t.Fatalf("rtos %+v, %d threads", r.RTOS, len(r.Threads))
	}
	if !r.Threads[0].Current || r.Threads[0].Name != "thread 1" || !slices.Equal(fnNames(r.Threads[0].Frames), fnNames(r.Frames)) {
		t.Errorf("thread 0: %+v", r.Threads[0])
	}
	w := r.Threads[1]
	if w.Current || w.Name != "worker" || w.ID != "0x00000007" {
		t.Errorf("thread 1: name %q id %q current %v", w.Name, w.ID, w.Current)
	}
	if got, want := fnNames(w.Frames), fnNames(base.Frames[3:]); !slices.Equal(got, want) {
		t.Errorf("thread 1 frames %q, want the crash's from frame 3: %q", got, want)
	}
}

func fnNames(fs []report.FrameJSON) []string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Kind+":"+f.Function)
	}
	return n
}
