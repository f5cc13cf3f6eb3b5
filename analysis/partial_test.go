package analysis

import (
	"strings"
	"testing"
)

// A dump cut short (its RAM ends below the top of the stack) is decoded as
// far as it goes: a warning says what is missing and the walk stops with
// the address it could not read.
func TestPartialDump(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	for i, r := range d.Memory {
		if r.Addr == 0x20000000 {
			d.Memory[i].Data = r.Data[:0x3f80]
		}
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Frames) < 5 || r.Frames[2].Function != "null_store" {
		t.Errorf("frames %q", names(r))
	}
	if !strings.HasPrefix(r.Stop, "memory at 0x20003fc8 not captured: the dump holds ") {
		t.Errorf("stop %q", r.Stop)
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "the dump's memory ends at 0x20003f80, below the initial stack pointer 0x20004000") {
		t.Errorf("warnings %q", w)
	}
}
