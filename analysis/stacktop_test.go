package analysis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// stackTopOnly cuts d's memory to the n bytes above each stack pointer the
// dump has (SP, MSP, PSP), as a dump that saves only the top of each stack
// does, and returns the ranges kept.
func stackTopOnly(d *crashdump.Dump, n uint32) [][2]uint32 {
	var keep [][2]uint32
	for _, r := range []unwinders.Reg{unwinders.SP, unwinders.MSP, unwinders.PSP} {
		if sp, ok := d.Regs.Get(r); ok && sp != 0 {
			keep = append(keep, [2]uint32{sp &^ 3, (sp &^ 3) + n})
		}
	}
	var mem []unwinders.Region
	for _, m := range d.Memory {
		if m.Addr >= 0xE0000000 {
			mem = append(mem, m) // the system registers: not RAM
			continue
		}
		for _, k := range keep {
			lo, hi := max(uint64(k[0]), uint64(m.Addr)), min(uint64(k[1]), m.End())
			if lo >= hi {
				continue
			}
			dup := false
			for _, o := range mem {
				if uint64(o.Addr) == lo {
					dup = true
				}
			}
			if !dup {
				mem = append(mem, unwinders.Region{Name: m.Name, Addr: uint32(lo), Data: m.Data[lo-uint64(m.Addr) : hi-uint64(m.Addr)]})
			}
		}
	}
	// Overlapping pieces (SP == MSP) were dropped above when they start
	// at the same address; merge the rest into disjoint regions.
	d.Memory = disjoint(mem)
	return keep
}

func disjoint(rs []unwinders.Region) []unwinders.Region {
	var out []unwinders.Region
	for _, r := range rs {
		overl := false
		for i, o := range out {
			if uint64(r.Addr) < o.End() && r.End() > uint64(o.Addr) {
				lo := min(r.Addr, o.Addr)
				hi := max(r.End(), o.End())
				b := make([]byte, hi-uint64(lo))
				copy(b[o.Addr-lo:], o.Data)
				copy(b[r.Addr-lo:], r.Data)
				out[i] = unwinders.Region{Name: o.Name, Addr: lo, Data: b}
				overl = true
				break
			}
		}
		if !overl {
			out = append(out, r)
		}
	}
	return out
}

var notCaptured = regexp.MustCompile(`memory at (0x[0-9a-f]{8}) not captured`)

// Issue 24, item 5: a dump holding only the top of each stack decodes as
// far as it goes. For every QEMU oracle dump of firmware-samples/build, cut
// to the 256 and the 512 bytes above each SP: the frames found are the full
// dump's (a prefix), no argument or local has a value the full dump does
// not give it, and a walk that ends early says which address was not
// captured, outside what the dump holds, and how much of the stack it holds.
func TestStackTopOnlyDumps(t *testing.T) {
	fs := verdictFixtures(t, "fixtures/qemu", "firmware-samples/build")
	if len(fs) < 140 {
		t.Fatalf("%d fixtures", len(fs))
	}
	short := 0
	for _, f := range fs {
		elf, d := openFixture(t, f)
		full, err := Analyze(elf, d, Options{Locals: true})
		elf.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []uint32{64, 256, 512} {
			elf, d := openFixture(t, f)
			keep := stackTopOnly(d, n)
			r, err := Analyze(elf, d, Options{Locals: true})
			elf.Close()
			if err != nil {
				t.Fatalf("%s cut to %d: %v", f.dump, n, err)
			}
			name := fmt.Sprintf("%s cut to %d bytes", f.dump, n)
			if len(r.Frames) > len(full.Frames) {
				t.Errorf("%s: %d frames, the full dump %d", name, len(r.Frames), len(full.Frames))
				continue
			}
			for i, fr := range r.Frames {
				g := full.Frames[i]
				// A frame found with less than high confidence (a stack
				// scan over the memory the dump holds) is a guess: its
				// code must be the full dump's, its SP may not be.
				sure := fr.Confidence == "high"
				if fr.PC != g.PC || fr.Function != g.Function || fr.Kind != g.Kind || (sure && fr.SP != g.SP) {
					t.Errorf("%s: frame %d is %s %s sp %s (%s, %s), the full dump's %s %s sp %s (%s)", name, i, fr.PC, fr.Function, fr.SP, fr.Kind, fr.Confidence, g.PC, g.Function, g.SP, g.Kind)
					break
				}
				checkVars(t, name, i, "arg", fr.Args, g.Args)
				checkVars(t, name, i, "local", fr.Locals, g.Locals)
			}
			if len(r.Frames) < len(full.Frames) || !strings.HasPrefix(r.Stop, strings.SplitN(full.Stop, ":", 2)[0]) {
				short++
				m := notCaptured.FindStringSubmatch(r.Stop)
				if m == nil {
					t.Errorf("%s: the walk stops early (%d of %d frames) with %q, which names no uncaptured address", name, len(r.Frames), len(full.Frames), r.Stop)
					continue
				}
				a, _ := strconv.ParseUint(m[1][2:], 16, 32)
				for _, k := range keep {
					if uint32(a) >= k[0] && uint32(a) < k[1] {
						t.Errorf("%s: stop %q names 0x%08x, which the dump holds", name, r.Stop, a)
					}
				}
				if !strings.Contains(r.Stop, "the dump holds") {
					t.Errorf("%s: stop %q does not say how much of the stack the dump holds", name, r.Stop)
				}
			}
		}
	}
	if short < len(fs)/2 { // most QEMU crashes run within 512 bytes of the stack top
		t.Errorf("only %d of %d cut dumps ended early: the cut does not cut", short, 3*len(fs))
	}
}

func openFixture(t *testing.T, f verdictFixture) (*elfsymFile, *crashdump.Dump) {
	t.Helper()
	elf, err := openELF(f.elf)
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(f.dump)
	if err != nil {
		t.Fatal(err)
	}
	return elf, d
}

// checkVars: a value the cut dump prints is the full dump's value.
func checkVars(t *testing.T, name string, i int, kind string, cut, full []report.VarJSON) {
	t.Helper()
	for _, v := range cut {
		if v.Value == "" {
			continue
		}
		found := false
		for _, g := range full {
			if g.Name == v.Name {
				found = true
				if g.Value != v.Value || g.Entry != v.Entry {
					t.Errorf("%s: frame %d %s %s = %q (entry %v), the full dump's %q (entry %v)", name, i, kind, v.Name, v.Value, v.Entry, g.Value, g.Entry)
				}
				break
			}
		}
		if !found {
			t.Errorf("%s: frame %d %s %s = %q, absent from the full dump", name, i, kind, v.Name, v.Value)
		}
	}
}

type elfsymFile = elfsym.File

func openELF(p string) (*elfsym.File, error) { return elfsym.Open(p) }
