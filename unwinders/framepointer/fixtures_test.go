package framepointer_test

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
	"github.com/faultline-dev/faultline/unwinders/framepointer"
)

var printTable = flag.Bool("table", false, "print the per-build score table and every miss")

const (
	fixtureDir = "../../fixtures/qemu"
	elfDir     = "../../firmware-samples/build"
)

// fixture is one QEMU+GDB oracle dump with its ELF.
type fixture struct {
	name, build, scenario string
	dump                  *crashdump.Dump
	elf                   *elfsym.File
}

var (
	elfMu    sync.Mutex
	elfCache = map[string]*elfsym.File{}
)

func openELF(tb testing.TB, build string) *elfsym.File {
	tb.Helper()
	elfMu.Lock()
	defer elfMu.Unlock()
	if f, ok := elfCache[build]; ok {
		return f
	}
	f, err := elfsym.Open(filepath.Join(elfDir, build+".elf"))
	if err != nil {
		tb.Fatal(err)
	}
	elfCache[build] = f
	return f
}

func loadFixtures(tb testing.TB) []*fixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no fixtures in %s: %v", fixtureDir, err)
	}
	sort.Strings(paths)
	var out []*fixture
	for _, p := range paths {
		out = append(out, loadFixture(tb, p))
	}
	return out
}

// loadFixture loads <build>-<scenario>.json: the build is everything
// before the last '-'.
func loadFixture(tb testing.TB, path string) *fixture {
	tb.Helper()
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	i := strings.LastIndex(name, "-")
	if i < 0 {
		tb.Fatalf("%s: fixture name is not <build>-<scenario>", path)
	}
	d, err := crashdump.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	if d.Truth == nil {
		tb.Fatalf("%s: no truth", path)
	}
	return &fixture{name: name, build: name[:i], scenario: name[i+1:], dump: d, elf: openELF(tb, name[:i])}
}

func (fx *fixture) target(tb testing.TB) *unwinders.Target {
	tb.Helper()
	im := &unwinders.Image{}
	if err := im.AddLayer(fx.elf.Segments()...); err != nil {
		tb.Fatal(err)
	}
	if err := im.AddLayer(fx.dump.Memory...); err != nil {
		tb.Fatal(err)
	}
	info := fx.elf.Info()
	return &unwinders.Target{
		Mem: im, Prog: fx.elf, Profile: unwinders.ProfileOf(fx.dump.CPU),
		Stack:        unwinders.Range{Lo: 0x20000000, Hi: info.Vectors.InitialSP},
		ResetHandler: info.Vectors.Reset &^ 1,
	}
}

func (fx *fixture) walk(tb testing.TB, u unwinders.Unwinder) (*unwinders.Target, unwinders.Result) {
	t := fx.target(tb)
	return t, unwinders.Walk(t, fx.dump.Regs, []unwinders.Unwinder{u, unwinders.LinkRegister{}}, unwinders.Options{})
}

// truthNames is GDB's list from the faulting frame outwards: frames up to
// and including the first exception pseudo-frame dropped, exception frames
// removed (design.md, "Scoring against truth").
func truthNames(tr *crashdump.Truth) []string {
	start := 0
	for i, f := range tr.Frames {
		if f.Kind == "exception" {
			start = i + 1
			break
		}
	}
	var names []string
	for _, f := range tr.Frames[start:] {
		if f.Kind != "exception" {
			names = append(names, f.Function)
		}
	}
	return names
}

// candidate is one name of the walk's list and the frame it came from.
type candidate struct {
	name  string
	frame *unwinders.Frame
}

// candidates shapes a walk like truthNames, each frame expanded into its
// inlined levels (GDB lists those), outermost last.
func (fx *fixture) candidates(res unwinders.Result) []candidate {
	start := 0
	for i, f := range res.Frames {
		if f.Kind == unwinders.KindException {
			start = i + 1
			break
		}
	}
	var out []candidate
	for i := start; i < len(res.Frames); i++ {
		f := &res.Frames[i]
		if f.Kind == unwinders.KindException {
			continue
		}
		locs, _ := fx.elf.Symbolize(f.LookupPC())
		if len(locs) == 0 {
			out = append(out, candidate{"", f})
			continue
		}
		for _, l := range locs {
			out = append(out, candidate{l.Function, f})
		}
	}
	return out
}

type score struct {
	exact     bool
	prefix    int
	truth     int
	bogus     int
	bogusHigh int
}

func scoreWalk(truth []string, got []candidate) score {
	s := score{truth: len(truth)}
	for s.prefix < len(truth) && s.prefix < len(got) && truth[s.prefix] == got[s.prefix].name {
		s.prefix++
	}
	s.exact = len(truth) == len(got) && s.prefix == len(truth)
	for i, g := range got {
		if i >= len(truth) || truth[i] != g.name {
			s.bogus++
			if g.frame.Confidence == unwinders.ConfidenceHigh {
				s.bogusHigh++
			}
		}
	}
	return s
}

// Limitations: why the strategy cannot reproduce a whole backtrace. Every
// miss on a frame-pointer build must be explained by one of them.
const (
	// limitFramelessLeaf: the faulting function sets up no frame pointer at
	// all: clang's leaf functions (null_store, irq_touch_device, psp_store,
	// udf_assert_fail, fpu_store at every level, -fno-omit-frame-pointer
	// or not) keep the caller's r7 and LR in their registers, and so does
	// every function of GCC -Og/-O2/-Os. Frame-pointer unwinding has no
	// record to read and declines (ErrNoFramePointer); prologue analysis
	// can take such a frame.
	limitFramelessLeaf = "the faulting function sets up no frame pointer (frameless leaf)"
	// limitNotSetUp: the fault happened before the faulting function set
	// up its frame pointer: GCC -O2/-Os with -fno-omit-frame-pointer
	// schedules "add r7, sp, #0" late (gcc-m4f-Os-fp null_store faults
	// between push {r7, lr} and the add; gcc-m3-O2-fp div0_average sets r7
	// just before its epilogue, after the udiv that faults). The record is
	// not where r7 points yet, so the strategy declines.
	limitNotSetUp = "the fault is before the frame pointer is set up"
	// limitCallerNoFramePointer: a caller on the chain sets up no frame
	// pointer: in GCC -Og/-O2/-Os null_fnptr, LR gives fnptr_dispatch after
	// the call to address 0, and fnptr_dispatch has no frame pointer.
	limitCallerNoFramePointer = "a caller on the chain sets up no frame pointer"
)

// explain returns the limitation that ends the walk, or "" when the walk
// ended for a reason none of them covers.
func explain(t *unwinders.Target, res unwinders.Result) string {
	if res.Stop.Complete() {
		return ""
	}
	last := &res.Frames[len(res.Frames)-1]
	_, err := framepointer.New().Step(t, res.Frames)
	switch {
	case err == nil:
		return ""
	case errorsIs(err, framepointer.ErrNoFramePointer) && !last.ReturnAddress:
		return limitFramelessLeaf
	case errorsIs(err, framepointer.ErrNoFramePointer):
		return limitCallerNoFramePointer
	case errorsIs(err, framepointer.ErrNotSetUp) && !last.ReturnAddress:
		return limitNotSetUp
	}
	return ""
}

type buildRow struct {
	n, exact, bogus int
	acc             float64
	limits          map[string]int
}

// fpBuild reports whether a build's C code keeps frame pointers: every
// clang build (clang sets up r7 in Thumb code at every level), GCC -O0,
// and the GCC -fp variants (-fno-omit-frame-pointer). On these the
// strategy is expected to be exact except where a named limitation
// applies; on the others (GCC -Og/-O2/-Os) it should refuse.
func fpBuild(b string) bool {
	return strings.HasPrefix(b, "clang-") || strings.HasSuffix(b, "-fp") || strings.HasSuffix(b, "-O0")
}

// wantExact is the number of exact walks per frame-pointer build; every
// other case is a named limitation (see explain). clang: all (every
// scenario faults in a frameless leaf, stepped through LR: LayoutLeaf).
// GCC -O0: all. gcc-m3-O2-fp: all but div0, whose fault precedes the late
// "add r7, sp, #0" after LR was pushed; gcc-m4f-Os-fp: three faults
// precede the set-up. (irq_crash needs the walk to unstack a nested
// exception frame with the registers the step restored from the interrupt
// handler's record: walk.go does.)
var wantExact = map[string]int{
	"clang-m3-O0": 6, "clang-m3-O2": 6, "clang-m3-O2-fp": 6, "clang-m3-O2-unwind": 6, "clang-m3-Os": 6,
	"clang-m4f-O0": 7, "clang-m4f-O2": 7, "clang-m4f-O2-fp": 7, "clang-m4f-O2-unwind": 7, "clang-m4f-Os": 7,
	"gcc-m3-O0": 6, "gcc-m4f-O0": 7, "gcc-m3-O2-fp": 5, "gcc-m4f-Os-fp": 4,
}

// TestFixtures walks every QEMU+GDB oracle dump with framepointer (then
// LR) and scores the result against GDB's backtrace. It requires: no
// high-confidence bogus frame anywhere; every inexact result on a
// frame-pointer build explained by a named limitation; and a bogus-free
// walk (the strategy refuses instead of guessing) on the builds without
// frame pointers.
func TestFixtures(t *testing.T) {
	fxs := loadFixtures(t)
	rows := map[string]*buildRow{}
	var builds []string
	u := framepointer.New()
	var misses []string
	for _, fx := range fxs {
		tgt, res := fx.walk(t, u)
		truth := truthNames(fx.dump.Truth)
		got := fx.candidates(res)
		s := scoreWalk(truth, got)
		r := rows[fx.build]
		if r == nil {
			r = &buildRow{limits: map[string]int{}}
			rows[fx.build] = r
			builds = append(builds, fx.build)
		}
		r.n++
		r.acc += float64(s.prefix) / float64(s.truth)
		r.bogus += s.bogus
		if s.exact {
			r.exact++
		}
		if s.bogusHigh > 0 {
			t.Errorf("%s: %d bogus frame(s) with high confidence:\n%s", fx.name, s.bogusHigh, describe(truth, got, res))
		}
		if !fpBuild(fx.build) && s.bogus > 0 {
			t.Errorf("%s: %d bogus frame(s) on a build without frame pointers:\n%s", fx.name, s.bogus, describe(truth, got, res))
		}
		if s.exact {
			continue
		}
		why := explain(tgt, res)
		r.limits[why]++
		misses = append(misses, fmt.Sprintf("%s: %d/%d frames; %s [%s]", fx.name, s.prefix, s.truth, why, res.Stop))
		if why == "" && fpBuild(fx.build) {
			t.Errorf("%s: inexact and no named limitation explains it:\n%s", fx.name, describe(truth, got, res))
		}
	}
	for _, b := range builds {
		if w, ok := wantExact[b]; ok && rows[b].exact != w {
			t.Errorf("%s: %d/%d exact, want %d (update wantExact if this is an improvement)", b, rows[b].exact, rows[b].n, w)
		}
	}
	if *printTable {
		t.Logf("\n%s", table(builds, rows))
		t.Logf("misses:\n%s", strings.Join(misses, "\n"))
	}
}

func table(builds []string, rows map[string]*buildRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| build | exact | frame accuracy | bogus | misses by limitation |\n|---|---|---|---|---|\n")
	var all buildRow
	for _, name := range builds {
		r := rows[name]
		var lim []string
		for k, v := range r.limits {
			if k == "" {
				k = "other"
			}
			lim = append(lim, fmt.Sprintf("%d: %s", v, k))
		}
		sort.Strings(lim)
		fmt.Fprintf(&b, "| %s | %d/%d | %.0f%% | %d | %s |\n", name, r.exact, r.n, 100*r.acc/float64(r.n), r.bogus, strings.Join(lim, "; "))
		all.n += r.n
		all.exact += r.exact
		all.acc += r.acc
		all.bogus += r.bogus
	}
	fmt.Fprintf(&b, "| all | %d/%d | %.0f%% | %d | |\n", all.exact, all.n, 100*all.acc/float64(all.n), all.bogus)
	return b.String()
}

func describe(truth []string, got []candidate, res unwinders.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  truth: %s\n", strings.Join(truth, ", "))
	var names []string
	for _, g := range got {
		names = append(names, fmt.Sprintf("%s(%s,%s)", g.name, g.frame.Method, g.frame.Confidence))
	}
	fmt.Fprintf(&b, "  got:   %s\n  stop:  %s", strings.Join(names, ", "), res.Stop)
	return b.String()
}
