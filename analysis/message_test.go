package analysis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/unwinders"
)

// Issue 24, item 2 (Zephyr): the reason z_fatal_error was given, from the
// coredump header of every Zephyr look-alike scenario crashed in QEMU,
// checked against GDB's own dump of the same run: a k_panic/k_oops enters
// SVC_Handler with the reason in r0 (ARCH_EXCEPT), a fault is
// K_ERR_CPU_EXCEPTION; and against the firmware's log line.
func TestZephyrFatalReasonMessage(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join(repo, "fixtures/rtos-zephyr/scenarios/*.zephyr.log"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint32]string{0: "K_ERR_CPU_EXCEPTION", 3: "K_ERR_KERNEL_OOPS", 4: "K_ERR_KERNEL_PANIC"}
	words := map[string]string{"K_ERR_CPU_EXCEPTION": "ZEPHYR FATAL ERROR: CPU exception", "K_ERR_KERNEL_PANIC": "ZEPHYR FATAL ERROR: kernel panic"}
	panics := 0
	for _, l := range logs {
		base := strings.TrimSuffix(filepath.Base(l), ".zephyr.log")
		build := base[:strings.LastIndexByte(base, '-')]
		gdb, err := crashdump.Load(strings.TrimSuffix(l, ".zephyr.log") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		want := names[0]
		if gdb.Truth != nil && len(gdb.Truth.Frames) > 0 && gdb.Truth.Frames[0].Function == "SVC_Handler" {
			r0, _ := gdb.Regs.Get(unwinders.R0)
			want = names[r0]
			panics++
		}
		elf, d := openFixture(t, verdictFixture{l, filepath.Join(repo, "firmware-samples/rtos-zephyr/build", build+".elf")})
		r, err := Analyze(elf, d, Options{})
		elf.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.Message == nil || r.Message.Text != want || r.Message.Source != "Zephyr coredump reason" {
			t.Errorf("%s: message %+v, want %s", base, r.Message, want)
			continue
		}
		raw, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if w := words[want]; w == "" || !strings.Contains(string(raw), w) {
			t.Errorf("%s: the firmware's log does not say %q", base, w)
		}
		var b strings.Builder
		if err := textout.Write(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nMessage: "+want+" (read from the Zephyr coredump reason)\n") {
			t.Errorf("%s: text lacks the message", base)
		}
	}
	if len(logs) < 10 || panics < 4 {
		t.Errorf("%d coredumps, %d of them panics", len(logs), panics)
	}
}
