package prologue_test

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
	"github.com/faultline-dev/faultline/unwinders/prologue"
)

var showTable = flag.Bool("table", false, "print the per-build score table and every miss")

const (
	fixtureDir = "../../fixtures/qemu"
	elfDir     = "../../firmware-samples/build"
)

// fixture is one QEMU+GDB oracle dump with its ELF.
type fixture struct {
	name, build, scenario string
	dump                  *crashdump.Dump
	elf                   *elfsym.File
	truth                 []string
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
	out := make([]*fixture, 0, len(paths))
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
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		tb.Fatalf("%s: name is not <build>-<scenario>", path)
	}
	d, err := crashdump.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	if d.Truth == nil {
		tb.Fatalf("%s: no truth", path)
	}
	fx := &fixture{name: name, build: name[:i], scenario: name[i+1:], dump: d, elf: openELF(tb, name[:i])}
	var tf []string
	var kinds []bool
	for _, f := range d.Truth.Frames {
		tf = append(tf, f.Function)
		kinds = append(kinds, f.Kind == "exception")
	}
	fx.truth = outwards(tf, kinds)
	return fx
}

// outwards applies the scoring rule: from the faulting frame outwards,
// i.e. drop every frame up to and including the first exception
// pseudo-frame (the HardFault handler and its exception frame), then drop
// exception frames.
func outwards(names []string, exc []bool) []string {
	first := -1
	for i, e := range exc {
		if e {
			first = i
			break
		}
	}
	var out []string
	for i := first + 1; i < len(names); i++ {
		if !exc[i] {
			out = append(out, names[i])
		}
	}
	return out
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

func (fx *fixture) walk(tb testing.TB) unwinders.Result {
	return unwinders.Walk(fx.target(tb), fx.dump.Regs, []unwinders.Unwinder{prologue.New(), unwinders.LinkRegister{}}, unwinders.Options{})
}

// names symbolizes a walk outwards from the faulting frame, each frame
// expanded into its inlined frames (innermost first, as GDB lists them);
// conf holds the confidence of the frame each name came from.
func (fx *fixture) names(res unwinders.Result) (names []string, conf []unwinders.Confidence, frames []int) {
	var all []string
	var exc []bool
	var cs []unwinders.Confidence
	var idx []int
	for i, f := range res.Frames {
		if f.Kind == unwinders.KindException {
			all, exc, cs, idx = append(all, ""), append(exc, true), append(cs, f.Confidence), append(idx, i)
			continue
		}
		for _, n := range fx.symbolize(f.LookupPC()) {
			all, exc, cs, idx = append(all, n), append(exc, false), append(cs, f.Confidence), append(idx, i)
		}
	}
	first := -1
	for i, e := range exc {
		if e {
			first = i
			break
		}
	}
	for i := first + 1; i < len(all); i++ {
		if !exc[i] {
			names, conf, frames = append(names, all[i]), append(conf, cs[i]), append(frames, idx[i])
		}
	}
	return names, conf, frames
}

// symbolize names the functions at addr, inlined ones first; "" when no
// function symbol holds addr (PC 0 after a call through a NULL pointer,
// which GDB's truth also leaves empty).
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

type score struct {
	exact     bool
	prefix    int
	accuracy  float64
	bogus     int
	bogusHigh int
}

func scoreNames(truth, got []string, conf []unwinders.Confidence) score {
	var s score
	for s.prefix < len(truth) && s.prefix < len(got) && truth[s.prefix] == got[s.prefix] {
		s.prefix++
	}
	if len(truth) > 0 {
		s.accuracy = float64(s.prefix) / float64(len(truth))
	}
	s.exact = len(truth) == len(got) && s.prefix == len(truth)
	for i, g := range got {
		if i >= len(truth) || truth[i] != g {
			s.bogus++
			if conf[i] == unwinders.ConfidenceHigh {
				s.bogusHigh++
			}
		}
	}
	return s
}

type buildScore struct {
	n, exact, bogus, bogusHigh int
	acc                        float64
	misses                     []string
}

func scoreAll(t *testing.T) (map[string]*buildScore, []string) {
	byBuild := map[string]*buildScore{}
	var order []string
	for _, fx := range loadFixtures(t) {
		res := fx.walk(t)
		got, conf, idx := fx.names(res)
		s := scoreNames(fx.truth, got, conf)
		b := byBuild[fx.build]
		if b == nil {
			b = &buildScore{}
			byBuild[fx.build] = b
			order = append(order, fx.build)
		}
		b.n++
		b.acc += s.accuracy
		b.bogus += s.bogus
		b.bogusHigh += s.bogusHigh
		if s.exact {
			b.exact++
			continue
		}
		var detail strings.Builder
		fmt.Fprintf(&detail, "%s: truth %v\n\tgot   %v\n\tstop  %v\n", fx.scenario, fx.truth, got, res.Stop)
		for k, i := range idx {
			f := res.Frames[i]
			fmt.Fprintf(&detail, "\t  #%d %-22s pc=0x%08x sp=0x%08x %s/%s %s\n", i, got[k], f.PC, f.SP, f.Method, f.Confidence, f.Note)
		}
		b.misses = append(b.misses, detail.String())
	}
	sort.Strings(order)
	return byBuild, order
}

// knownMisses lists the fixtures the chain {prologue, lr} does not unwind
// exactly, each with the understood limitation that explains it. It is
// empty: every one of the 149 fixtures is exact.
var knownMisses = map[string]string{}

// TestFixtures walks every QEMU+GDB oracle fixture with the chain
// {prologue, lr} and scores it against GDB's backtrace: every build must
// be exact on every scenario except knownMisses, with no bogus frame.
func TestFixtures(t *testing.T) {
	byBuild, order := scoreAll(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %5s %6s %8s %6s %10s\n", "build", "dumps", "exact", "accuracy", "bogus", "bogus-high")
	total := buildScore{}
	for _, b := range order {
		s := byBuild[b]
		fmt.Fprintf(&table, "%-22s %5d %6d %8.3f %6d %10d\n", b, s.n, s.exact, s.acc/float64(s.n), s.bogus, s.bogusHigh)
		total.n += s.n
		total.exact += s.exact
		total.acc += s.acc
		total.bogus += s.bogus
		total.bogusHigh += s.bogusHigh
		if s.bogusHigh > 0 {
			t.Errorf("%s: %d bogus frames with confidence high", b, s.bogusHigh)
		}
		for _, m := range s.misses {
			name := b + "-" + strings.SplitN(m, ":", 2)[0]
			if _, known := knownMisses[name]; !known {
				t.Errorf("%s is not exact:\n%s", name, m)
			}
		}
		if s.bogus > 0 && len(s.misses) == 0 {
			t.Errorf("%s: %d bogus frames", b, s.bogus)
		}
	}
	fmt.Fprintf(&table, "%-22s %5d %6d %8.3f %6d %10d\n", "total", total.n, total.exact, total.acc/float64(total.n), total.bogus, total.bogusHigh)
	if *showTable {
		t.Log("\n" + table.String())
		for _, b := range order {
			for _, m := range byBuild[b].misses {
				t.Logf("%s-%s", b, m)
			}
		}
	}
}

// TestFixturePCs is stricter than the name score: every frame's PC and
// kind (exception pseudo-frames included) must equal GDB's, frame for
// frame, and every frame but those at PC 0's caller must come from the
// prologue strategy (or the registers and exception frames).
func TestFixturePCs(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		res := fx.walk(t)
		tf := fx.dump.Truth.Frames
		if len(res.Frames) != len(tf) {
			t.Errorf("%s: %d frames, GDB has %d (stop %v)", fx.name, len(res.Frames), len(tf), res.Stop)
			continue
		}
		for i, f := range res.Frames {
			exc := tf[i].Kind == "exception"
			if exc != (f.Kind == unwinders.KindException) || f.PC != tf[i].PC {
				t.Errorf("%s: frame %d pc 0x%08x kind %v, GDB 0x%08x %q", fx.name, i, f.PC, f.Kind, tf[i].PC, tf[i].Kind)
			}
			if f.Method == unwinders.MethodLR && (i == 0 || res.Frames[i-1].PC != 0) {
				t.Errorf("%s: frame %d found by lr, not prologue", fx.name, i)
			}
		}
		if !res.Stop.Complete() {
			t.Errorf("%s: stop %v", fx.name, res.Stop)
		}
	}
}

// BenchmarkWalk is a full walk of one fixture with {prologue, lr}.
func BenchmarkWalk(b *testing.B) {
	for _, name := range []string{"gcc-m3-O2-null_write_deep", "clang-m4f-O0-irq_crash"} {
		fx := loadFixture(b, filepath.Join(fixtureDir, name+".json"))
		t := fx.target(b)
		chain := []unwinders.Unwinder{prologue.New(), unwinders.LinkRegister{}}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := unwinders.Walk(t, fx.dump.Regs, chain, unwinders.Options{})
				if !res.Stop.Complete() {
					b.Fatal(res.Stop)
				}
			}
		})
	}
}
