package analysis

import (
	"testing"
)

// TestNoreturnCalleeClobbers: newlib's __assert_func (built by gcc, which
// drops the callee-saved promise of a noreturn function) moves its line
// and function name into r4 and r5 before its PUSH {lr}. In the clang -O2
// assert sample fill_queue keeps q in r5 and count in r4 across its call
// to queue_push, which does not touch them, so the registers the walk
// carries out to fill_queue hold __assert_func's values: GDB (CFI's
// default "same value" rule) prints q=0x45 <vector_table+69>, count=13887,
// the assertion's line and a string's address. faultline must call them
// unknown, and keep every argument __assert_func's own frame proves.
func TestNoreturnCalleeClobbers(t *testing.T) {
	r := assertFixture(t, "clang-m3-O2-assert_newlib", Options{})
	seen := 0
	for _, f := range r.Frames {
		switch f.Function {
		case "fill_queue":
			seen++
			if len(f.Args) != 2 {
				t.Fatalf("fill_queue args %+v, want q and count", f.Args)
			}
			for _, a := range f.Args {
				if a.Value != "" || !a.OptimizedOut {
					t.Errorf("fill_queue %s = %q: __assert_func overwrote the register without saving it, so the value is not the caller's", a.Name, a.Value)
				}
			}
		case "__assert_func":
			seen++
			found := false
			for _, a := range f.Args {
				if a.Name == "line" && a.Value == "69" {
					found = true
				}
			}
			if !found {
				t.Errorf("__assert_func lost its line argument: %+v", f.Args)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("frames fill_queue and __assert_func not both found: %+v", r.Frames)
	}
}

// TestCalleeClobberDecode checks the decoder of the rule on the same ELF:
// __assert_func up to its call to abort saves only LR and writes r4, r5
// (and r6) unsaved; queue_push up to its BL saves r7 and writes none of
// r4-r11; fill_queue saves r4-r7 and r11 before it writes them (its
// later STR r4/r5 to the stack are no saves: written first).
func TestCalleeClobberDecode(t *testing.T) {
	elf, d := openFixture(t, verdictFixture{repo + "/fixtures/qemu-assert/clang-m3-O2-assert_newlib.json", repo + "/firmware-samples/assert/build/clang-m3-O2.elf"})
	defer elf.Close()
	tg, _, err := NewTarget(elf, d)
	if err != nil {
		t.Fatal(err)
	}
	mem := tg.Mem
	for _, c := range []struct {
		pc             uint32
		saved, written uint16
	}{
		{0x7e0, 0, 1<<4 | 1<<5 | 1<<6}, // __assert_func at abort's return address
		{0x290, 0x80, 0},               // queue_push after its BL: PUSH {r7, lr}
		{0x2aa, 0x8f0, 0},              // fill_queue: PUSH {r4-r7, lr}, PUSH {r11}
	} {
		s, w, ok := calleeClobber(elf, mem, c.pc-2, c.pc)
		if !ok || s != c.saved || w != c.written {
			t.Errorf("0x%08x: saved %#x written %#x ok %v, want saved %#x written %#x", c.pc, s, w, ok, c.saved, c.written)
		}
	}
}
