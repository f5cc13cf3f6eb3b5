package cfi_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
)

var verbose = flag.Bool("table", false, "print the per-build score table")

// The QEMU+GDB oracle fixtures (fixtures/qemu/README.md) and the ELFs
// they were taken from: <build>-<scenario>.json goes with <build>.elf.
const (
	fixtureDir = "../../fixtures/qemu"
	elfDir     = "../../firmware-samples/build"
)

type fixture struct {
	name, build, scenario string
	dump                  *crashdump.Dump
	elf                   *elfsym.File
}

var elfs = struct {
	sync.Mutex
	m map[string]*elfsym.File
}{m: map[string]*elfsym.File{}}

func sampleELF(tb testing.TB, build string) *elfsym.File {
	tb.Helper()
	elfs.Lock()
	defer elfs.Unlock()
	if f := elfs.m[build]; f != nil {
		return f
	}
	f, err := elfsym.Open(filepath.Join(elfDir, build+".elf"))
	if err != nil {
		tb.Fatal(err)
	}
	elfs.m[build] = f
	return f
}

func openFixture(tb testing.TB, path string) *fixture {
	tb.Helper()
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	cut := strings.LastIndexByte(name, '-')
	if cut < 0 {
		tb.Fatalf("%s: not named <build>-<scenario>.json", path)
	}
	d, err := crashdump.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	if d.Truth == nil {
		tb.Fatalf("%s: the fixture has no truth", path)
	}
	return &fixture{name: name, build: name[:cut], scenario: name[cut+1:], dump: d, elf: sampleELF(tb, name[:cut])}
}

func allFixtures(tb testing.TB) []*fixture {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if len(paths) == 0 {
		tb.Fatalf("no fixtures in %s", fixtureDir)
	}
	sort.Strings(paths)
	var out []*fixture
	for _, p := range paths {
		out = append(out, openFixture(tb, p))
	}
	return out
}

// target builds the Target the way the CLI does: the ELF's flash below the
// dump's memory, the main stack from RAM's start to the initial SP.
func (fx *fixture) target(tb testing.TB) *unwinders.Target {
	tb.Helper()
	var im unwinders.Image
	if err := im.AddLayer(fx.elf.Segments()...); err != nil {
		tb.Fatal(err)
	}
	if err := im.AddLayer(fx.dump.Memory...); err != nil {
		tb.Fatal(err)
	}
	info := fx.elf.Info()
	return &unwinders.Target{
		Mem: &im, Prog: fx.elf, Profile: unwinders.ProfileOf(fx.dump.CPU),
		Stack:        unwinders.Range{Lo: 0x20000000, Hi: info.Vectors.InitialSP},
		ResetHandler: info.Vectors.Reset &^ 1,
	}
}

// chain is the cfi strategy alone, closed as the CLI closes every single
// strategy: the LR step (a function at its entry, a call through a bad
// pointer) and the search for an exception frame behind a clobbered LR.
func chain() []unwinders.Unwinder {
	return []unwinders.Unwinder{cfi.New(), unwinders.LinkRegister{}, unwinders.ExceptionFallback{}}
}

func (fx *fixture) walk(tb testing.TB) unwinders.Result {
	return unwinders.Walk(fx.target(tb), fx.dump.Regs, chain(), unwinders.Options{})
}

// outwards applies the scoring rule of design.md: from the faulting frame
// outwards, i.e. everything up to and including the first exception
// pseudo-frame is dropped, and exception pseudo-frames are removed.
func outwards[T any](items []T, isExc func(T) bool) []T {
	start := 0
	for i, it := range items {
		if isExc(it) {
			start = i + 1
			break
		}
	}
	var out []T
	for _, it := range items[start:] {
		if !isExc(it) {
			out = append(out, it)
		}
	}
	return out
}

func (fx *fixture) truth() []string {
	fs := outwards(fx.dump.Truth.Frames, func(f crashdump.TruthFrame) bool { return f.Kind == "exception" })
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Function
	}
	return out
}

// named is one name of a symbolized walk: GDB lists inlined calls as frames
// of their own, so a frame expands to its inlined functions, innermost
// first, each carrying the frame's confidence.
type named struct {
	name  string
	frame int
	exc   bool
	conf  unwinders.Confidence
}

func (fx *fixture) names(res unwinders.Result) []named {
	var all []named
	for i, f := range res.Frames {
		if f.Kind == unwinders.KindException {
			all = append(all, named{frame: i, exc: true, conf: f.Confidence})
			continue
		}
		for _, n := range fx.symbolize(f.LookupPC()) {
			all = append(all, named{name: n, frame: i, conf: f.Confidence})
		}
	}
	return outwards(all, func(n named) bool { return n.exc })
}

// symbolize names the functions at addr, inlined ones first; "" where no
// function holds addr (PC 0 after a call through a NULL pointer, which
// GDB's truth leaves empty too).
func (fx *fixture) symbolize(addr uint32) []string {
	fn, ok := fx.elf.FuncAt(addr)
	if !ok {
		return []string{""}
	}
	locs, _ := fx.elf.Symbolize(addr)
	if len(locs) == 0 {
		return []string{fn.Name}
	}
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.Function
	}
	return out
}

// TestFixtures walks every QEMU+GDB oracle fixture with cfi alone and
// scores it against GDB's backtrace. GDB is itself a DWARF CFI unwinder,
// so wherever its backtrace reaches the reset handler (all 149 fixtures)
// the two must agree exactly: a difference is a bug in one of them. No
// frame may differ from the truth with high confidence.
func TestFixtures(t *testing.T) {
	type tally struct{ n, exact, bogus, bogusHigh int }
	by := map[string]*tally{}
	var order []string
	for _, fx := range allFixtures(t) {
		res := fx.walk(t)
		truth := fx.truth()
		got := fx.names(res)
		s := by[fx.build]
		if s == nil {
			s = &tally{}
			by[fx.build] = s
			order = append(order, fx.build)
		}
		s.n++
		exact := len(got) == len(truth)
		for i, g := range got {
			if i >= len(truth) || truth[i] != g.name {
				exact = false
				s.bogus++
				if g.conf == unwinders.ConfidenceHigh {
					s.bogusHigh++
					t.Errorf("%s: frame %d %q differs from GDB's %q with high confidence", fx.name, g.frame, g.name, at(truth, i))
				}
			}
		}
		reachesReset := strings.Contains(fx.dump.Truth.Stop, "reset") || len(truth) > 0 && truth[len(truth)-1] == "Reset_Handler"
		if exact {
			s.exact++
		} else if reachesReset {
			var b strings.Builder
			for _, g := range got {
				f := res.Frames[g.frame]
				fmt.Fprintf(&b, "\n\t#%d %-24s pc=0x%08x sp=0x%08x %s/%s", g.frame, g.name, f.PC, f.SP, f.Method, f.Confidence)
			}
			t.Errorf("%s: not exact\n\ttruth %q\n\tstop  %v%s", fx.name, truth, res.Stop, b.String())
		}
	}
	sort.Strings(order)
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %5s %6s %6s %10s\n", "build", "dumps", "exact", "bogus", "bogus-high")
	var tot tally
	for _, b := range order {
		s := by[b]
		fmt.Fprintf(&table, "%-22s %5d %6d %6d %10d\n", b, s.n, s.exact, s.bogus, s.bogusHigh)
		tot.n, tot.exact, tot.bogus, tot.bogusHigh = tot.n+s.n, tot.exact+s.exact, tot.bogus+s.bogus, tot.bogusHigh+s.bogusHigh
	}
	fmt.Fprintf(&table, "%-22s %5d %6d %6d %10d\n", "total", tot.n, tot.exact, tot.bogus, tot.bogusHigh)
	if *verbose {
		t.Log("\n" + table.String())
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(past the end)"
}

// TestFixturePCs is stricter than the name score: every frame's PC and
// kind, exception pseudo-frames included, must equal GDB's frame for
// frame; every frame found by a step must come from cfi, except the caller
// of a call through a NULL pointer (PC 0 has no FDE: the LR step finds
// it); and the walk must end complete.
func TestFixturePCs(t *testing.T) {
	for _, fx := range allFixtures(t) {
		res := fx.walk(t)
		tf := fx.dump.Truth.Frames
		if len(res.Frames) != len(tf) {
			t.Errorf("%s: %d frames, GDB %d (stop %v)", fx.name, len(res.Frames), len(tf), res.Stop)
			continue
		}
		for i, f := range res.Frames {
			exc := tf[i].Kind == "exception"
			if exc != (f.Kind == unwinders.KindException) || f.PC != tf[i].PC {
				t.Errorf("%s: frame %d pc 0x%08x kind %v, GDB 0x%08x %q", fx.name, i, f.PC, f.Kind, tf[i].PC, tf[i].Kind)
			}
			if i > 0 && f.Kind == unwinders.KindNormal && f.Method != cfi.Name && f.Method != unwinders.MethodException {
				if res.Frames[i-1].PC != 0 {
					t.Errorf("%s: frame %d found by %s, not cfi", fx.name, i, f.Method)
				}
			}
		}
		if !res.Stop.Complete() {
			t.Errorf("%s: stop %v", fx.name, res.Stop)
		}
	}
}
