package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 23, item 10: an emulated lockup (unbounded recursion on a
// Cortex-M0 runs the stack below SRAM; the HardFault entry cannot stack)
// is recorded in the dump, and analyze names it and explains the SP below
// RAM, instead of "Thread mode, IPSR is 0".
func TestEmulatedLockupExplained(t *testing.T) {
	skipWithoutEmulator(t)
	elf := filepath.Join(repo, "emu/testdata/lockup-m0.elf")
	dump := filepath.Join(t.TempDir(), "d.json")
	out, errOut, code := run(t, "", "emulate", "--elf", elf, "-o", dump)
	if code != 0 || !strings.Contains(out, "locked up") {
		t.Fatalf("emulate: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, errOut)
	}
	var r struct {
		Fault struct {
			Exception string
			Notes     []string
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Fault.Notes, "\n")
	if r.Fault.Exception != "Lockup" {
		t.Errorf("exception %q, want Lockup", r.Fault.Exception)
	}
	for _, want := range []string{"The core locked up: a HardFault at 0x", "SP is 0x1ff", "below 0x20000000, where the firmware's RAM starts"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "no exception was active") {
		t.Errorf("a lockup explained as no exception being active:\n%s", notes)
	}
	text, _, _ := run(t, "", "analyze", "--elf", elf, dump)
	if !strings.Contains(text, "\nLockup\n") {
		t.Errorf("text report does not name the lockup:\n%.600s", text)
	}
}
