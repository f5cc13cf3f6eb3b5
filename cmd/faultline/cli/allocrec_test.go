package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
)

// The device-side allocation recorder (firmware-samples/capture/
// faultline_allocrec.c) round trip: the sample firmware of
// firmware-samples/capture/recorder allocates at known sites, frees some
// blocks, leaks the others and faults; the capture handler dumps RAM with
// the recorder's table. analyze must name exactly the planted sites, in
// the dump QEMU wrote (fixtures/allocrec, run-qemu.sh) and in the dump of
// the same ELF run in faultline's emulator, and agree with `faultline
// heap` (the emulator's own allocator tracking) on the live blocks.

const recorderDir = "firmware-samples/capture/recorder"

// recorderBuilds lists the recorder sample's ELFs.
func recorderBuilds(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(repo, recorderDir, "build", "*.elf"))
	if len(m) < 6 {
		t.Fatalf("recorder sample ELFs missing in %s/build (make -C %s): %q", recorderDir, recorderDir, m)
	}
	var out []string
	for _, p := range m {
		if b := strings.TrimSuffix(filepath.Base(p), ".elf"); !strings.HasSuffix(b, "-strip") {
			out = append(out, b)
		}
	}
	return out
}

// TestAllocRecStripped: with the ELF stripped of its debugging information
// (gcc-m3-O2-strip, objcopy --strip-debug) analyze takes the table's
// layout from its header and still finds the same sites and blocks, named
// by symbol.
func TestAllocRecStripped(t *testing.T) {
	dump := filepath.Join(repo, "fixtures/allocrec/gcc-m3-O2.crashcatcher.hex")
	full := captureAnalyze(t, filepath.Join(repo, recorderDir, "build/gcc-m3-O2.elf"), dump)
	stripped := captureAnalyze(t, filepath.Join(repo, recorderDir, "build/gcc-m3-O2-strip.elf"), dump)
	a := stripped.Allocations
	if a == nil || a.Error != "" || a.Layout != "header" || full.Allocations == nil || full.Allocations.Layout != "DWARF" {
		t.Fatalf("stripped %+v, full %+v", a, full.Allocations)
	}
	if g, w := siteBlocks(stripped), siteBlocks(full); !slices.Equal(g, w) || len(g) != 6 {
		t.Errorf("blocks differ:\n stripped %q\n DWARF    %q", g, w)
	}
	for _, s := range a.Sites {
		if s.File != "" || s.Line != 0 || s.Stack[0].Method != "lr" {
			t.Errorf("site %+v: file:line without debugging information", s)
		}
	}
}

// plantedSite is one allocation site of the sample that keeps blocks live
// at the crash: the function that calls the allocator, the source text of
// the call (the oracle for its line: found in the source file,
// independent of faultline's symbolizer) and the sizes of its live blocks.
type plantedSite struct {
	function string
	call     string
	sizes    []uint32
}

// planted is what a build of the sample leaves live: its source file and
// sites. The -cxx builds run src/main_cxx.cpp (operator new, new[], the
// nothrow new and malloc from C++), the -rtos builds src/main_rtos.c
// (pvPortMalloc/vPortFree of a heap_4-style allocator), the others
// src/main.c.
func planted(build string) (string, []plantedSite) {
	if strings.HasSuffix(build, "-cxx") {
		return "src/main_cxx.cpp", []plantedSite{
			{"make_buffer", "b = new uint8_t[n];", []uint32{300}},
			{"make_widget", "w = new Widget;", []uint32{40, 40}},
			{"raw_copy", "p = static_cast<char *>(std::malloc(20));", []uint32{20}},
			{"try_sample", "s = new (std::nothrow) Sample;", []uint32{16}},
		}
	}
	if strings.HasSuffix(build, "-rtos") {
		return "src/main_rtos.c", []plantedSite{
			{"stack_new", "s = pvPortMalloc(256);", []uint32{256}},
			{"queue_new", "q = pvPortMalloc(60);", []uint32{60, 60}},
			{"timer_new", "t = pvPortMalloc(24);", []uint32{24}},
		}
	}
	return "src/main.c", []plantedSite{
		{"frame_buffer_new", "fb = malloc(512);", []uint32{512}},
		{"msg_new", "m = malloc(sizeof *m);", []uint32{44, 44, 44}},
		{"table_grow", "g = realloc(t, n * sizeof *t);", []uint32{96}},
		{"name_copy", "p = malloc(n);", []uint32{9}},
	}
}

// sourceLine is the 1-based line of the sample's file that contains text.
func sourceLine(t *testing.T, file, text string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(repo, recorderDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), text) {
			return n
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// baseName is a function name without its C++ parameter list.
func baseName(fn string) string {
	name, _, _ := strings.Cut(fn, "(")
	return name
}

// checkPlanted checks that the report's allocations are exactly the
// planted sites, each at its source line, with the ret[0] frame exact.
func checkPlanted(t *testing.T, build string, r report.Report, what string) {
	t.Helper()
	file, sites := planted(build)
	blocks := 0
	for _, p := range sites {
		blocks += len(p.sizes)
	}
	a := r.Allocations
	if a == nil {
		t.Fatalf("%s: no allocations section", what)
	}
	if a.Error != "" || a.Layout != "DWARF" || a.Version != 1 || a.Dropped != 0 || a.UnknownFrees != 0 || !a.StackScan || len(a.Problems) != 0 || len(a.Notes) != 0 {
		t.Errorf("%s: table %+v", what, *a)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "allocation recorder") || strings.Contains(w, "heap") {
			t.Errorf("%s: warning %q", what, w)
		}
	}
	got := map[string]report.AllocSiteJSON{}
	var total uint64
	for _, s := range a.Sites {
		if _, dup := got[baseName(s.Function)]; dup {
			t.Errorf("%s: site %s twice", what, s.Function)
		}
		got[baseName(s.Function)] = s
		total += s.Bytes
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	var want []string
	for _, p := range sites {
		want = append(want, p.function)
	}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("%s: sites %q, want exactly %q", what, names, want)
	}
	for _, p := range sites {
		s, ok := got[p.function]
		if !ok {
			continue
		}
		var sizes []uint32
		for _, b := range s.List {
			sizes = append(sizes, b.Size)
		}
		if !slices.Equal(sizes, p.sizes) || s.Blocks != len(p.sizes) {
			t.Errorf("%s: %s has blocks %v, want %v", what, p.function, sizes, p.sizes)
		}
		if line := sourceLine(t, file, p.call); s.Line != line || !strings.HasSuffix(s.File, file) {
			t.Errorf("%s: %s at %s:%d, want %s:%d (%s)", what, p.function, s.File, s.Line, file, line, p.call)
		}
		if len(s.Stack) < 2 || s.Stack[0].Method != "lr" || s.Stack[0].Confidence != "high" {
			t.Errorf("%s: %s stack %+v", what, p.function, s.Stack)
		}
		for _, f := range s.Stack[1:] {
			if f.Method != "stack-scan" || f.Confidence != "low" {
				t.Errorf("%s: %s scanned frame %+v", what, p.function, f)
			}
		}
	}
	if a.LiveBytes != total || a.LiveBlocks != blocks || a.Count != blocks {
		t.Errorf("%s: live %d bytes in %d blocks (count %d), sites hold %d", what, a.LiveBytes, a.LiveBlocks, a.Count, total)
	}
	if len(r.Heap) != 1 || r.Heap[0].Corrupt != "" || len(r.Heap[0].Notes) != 0 || r.Heap[0].UsedBlocks != blocks {
		t.Errorf("%s: heap walk %+v", what, r.Heap)
	}
}

// siteBlocks is a report's blocks as "function address size" lines.
func siteBlocks(r report.Report) []string {
	var out []string
	if r.Allocations == nil {
		return nil
	}
	for _, s := range r.Allocations.Sites {
		for _, b := range s.List {
			out = append(out, fmt.Sprintf("%s %s %d", s.Function, b.Address, b.Size))
		}
	}
	sort.Strings(out)
	return out
}

// stackPCs is the distinct PCs of a symbolized stack (inline levels share
// their PC).
func stackPCs(fs []report.FrameJSON) []string {
	var out []string
	for _, f := range fs {
		if len(out) == 0 || out[len(out)-1] != f.PC {
			out = append(out, f.PC)
		}
	}
	return out
}

// TestAllocRecQEMUFixtures analyzes the dumps QEMU wrote.
func TestAllocRecQEMUFixtures(t *testing.T) {
	for _, b := range recorderBuilds(t) {
		t.Run(b, func(t *testing.T) {
			elf := filepath.Join(repo, recorderDir, "build", b+".elf")
			dump := filepath.Join(repo, "fixtures/allocrec", b+".crashcatcher.hex")
			r := captureAnalyze(t, elf, dump)
			checkPlanted(t, b, r, "QEMU")
			if fns := reportFunctions(r); len(fns) < 3 || fns[0] != "fault_now" || fns[1] != "process" || fns[2] != "main" {
				t.Errorf("backtrace %q", fns)
			}
			stdout, _, code := run(t, "", "analyze", "--elf", elf, dump)
			want := "132 bytes in 3 blocks allocated in msg_new (./src/main.c:"
			switch {
			case strings.HasSuffix(b, "-cxx"):
				want = "80 bytes in 2 blocks allocated in make_widget(unsigned "
			case strings.HasSuffix(b, "-rtos"):
				want = "120 bytes in 2 blocks allocated in queue_new (./src/main_rtos.c:"
			}
			if code != 0 || !strings.Contains(stdout, "Allocations recorded on the device (fl_allocrec at 0x") || !strings.Contains(stdout, want) {
				t.Errorf("text report (exit %d):\n%s", code, stdout)
			}
		})
	}
}

// heapJSON is the part of faultline.heap/1 the round trip compares.
type heapJSON struct {
	LiveBytes  uint64 `json:"live_bytes"`
	LiveBlocks int    `json:"live_blocks"`
	Sites      []struct {
		Bytes     uint64   `json:"bytes"`
		Blocks    int      `json:"blocks"`
		Addresses []string `json:"addresses"`
		Frames    []struct {
			PC       string `json:"pc"`
			Function string `json:"function"`
		} `json:"frames"`
	} `json:"sites"`
}

// TestAllocRecEmulator runs each build in the emulator: analyze of the
// emulator's dump at the fault names the same sites and blocks (the same
// addresses: both runs are deterministic) as the QEMU dump, and `faultline
// heap` on the same ELF tracks exactly the recorded live blocks, each
// allocated at the recorded return address, with the same callers as the
// recorder's stack scan found.
func TestAllocRecEmulator(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	for _, b := range recorderBuilds(t) {
		t.Run(b, func(t *testing.T) {
			elf := filepath.Join(repo, recorderDir, "build", b+".elf")
			harness := filepath.Join(dir, b+".json")
			if stdout, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", harness, "--max-insns", "1000000"); code != 0 {
				t.Fatalf("emulate: exit %d\n%s\n%s", code, captureTail(stdout), stderr)
			}
			emu := captureAnalyze(t, elf, harness)
			checkPlanted(t, b, emu, "emulator")
			qemu := captureAnalyze(t, elf, filepath.Join(repo, "fixtures/allocrec", b+".crashcatcher.hex"))
			if g, w := siteBlocks(emu), siteBlocks(qemu); !slices.Equal(g, w) {
				t.Errorf("blocks differ:\n emulator %q\n QEMU     %q", g, w)
			}

			stdout, stderr, code := run(t, "", "heap", "--elf", elf, "--format", "json", "--max-insns", "1000000")
			if code != 0 && code != 1 {
				t.Fatalf("heap: exit %d: %s", code, stderr)
			}
			var h heapJSON
			if err := json.Unmarshal([]byte(stdout), &h); err != nil {
				t.Fatalf("heap JSON: %v\n%s", err, stdout)
			}
			a := emu.Allocations
			if a == nil {
				return
			}
			if h.LiveBytes != a.LiveBytes || h.LiveBlocks != a.LiveBlocks {
				t.Errorf("heap: %d bytes in %d blocks live, the recorder %d in %d", h.LiveBytes, h.LiveBlocks, a.LiveBytes, a.LiveBlocks)
			}
			// Every block the tracker holds live, with its call stack
			// from the allocator's caller out (frame 0 is the recorder's
			// own C part, which called the real allocator), against the
			// recorded block and its return addresses: ret[0] exact, the
			// rest from the stack scan, which finds the same callers as
			// the emulator's shadow stack in this sample (no stale return
			// addresses on its stacks).
			type block struct{ addr, stack string }
			var tracked, recorded []block
			for _, s := range h.Sites {
				if len(s.Frames) < 2 || !strings.HasPrefix(s.Frames[0].Function, "fl_allocrec_") {
					t.Errorf("heap site %+v: not allocated through the recorder", s)
					continue
				}
				var pcs []string
				for _, f := range s.Frames[1:] {
					pcs = append(pcs, f.PC)
				}
				for _, ad := range s.Addresses {
					tracked = append(tracked, block{ad, strings.Join(pcs, " ")})
				}
			}
			for _, s := range a.Sites {
				for _, bl := range s.List {
					recorded = append(recorded, block{bl.Address, strings.Join(bl.Returns, " ")})
					if len(bl.Returns) == 0 || bl.Returns[0] != s.Stack[0].PC {
						t.Errorf("%s: block %s returns %q, the site's stack starts at %s", s.Function, bl.Address, bl.Returns, s.Stack[0].PC)
					}
				}
				if got, want := stackPCs(s.Stack), s.List[0].Returns; !slices.Equal(got, want) {
					t.Errorf("%s: the site's stack %q is not its largest block's return addresses %q", s.Function, got, want)
				}
			}
			less := func(x, y block) int { return strings.Compare(x.addr+x.stack, y.addr+y.stack) }
			slices.SortFunc(tracked, less)
			slices.SortFunc(recorded, less)
			if !slices.Equal(tracked, recorded) {
				t.Errorf("live blocks (address, call stack):\n heap     %v\n recorder %v", tracked, recorded)
			}
		})
	}
}

// costProbe counts the guest instructions each recorder wrapper runs
// outside the real allocator it calls: from the wrapper's entry to the
// real function's entry, plus from the real function's return to the
// wrapper's return to its caller (instruction counts are per translated
// block, so each figure is exact to a block).
type costProbe struct {
	wrap, real map[uint32]string
	open       []costCall
	costs      map[string][]uint64 // the recorder's own instructions
	inner      map[string][]uint64 // the real allocator's
	err        error
}

type costCall struct {
	fn            string
	ret, realRet  uint32
	a, b, c       uint64
	inReal, outOK bool
}

func (p *costProbe) Start(r *emu.ProbeRun) error {
	p.wrap, p.real, p.costs, p.inner = map[uint32]string{}, map[uint32]string{}, map[string][]uint64{}, map[string][]uint64{}
	if err := r.Attach(0, 0); err != nil {
		return err
	}
	for _, n := range []string{"malloc", "free", "calloc", "realloc"} {
		for name, m := range map[string]map[uint32]string{"__wrap_" + n: p.wrap, n: p.real} {
			addr, _, fn, ok := r.Symbol(name)
			if !ok || !fn {
				return fmt.Errorf("no function %s", name)
			}
			m[addr&^1] = n
			if err := r.Watch(addr&^1, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchReturn watches a return address; inner says it returns from the
// real allocator (whose own calls are skipped until then).
func (p *costProbe) watchReturn(r *emu.ProbeRun, ret uint32, inner bool) {
	if err := r.Watch(ret, true); err != nil && p.err == nil {
		p.err = err
	}
	if inner {
		r.ExpectReturn(ret, r.Reg(uc.RegSP), true)
	}
}

func (p *costProbe) Block(r *emu.ProbeRun, addr uint32) {
	n := len(p.open)
	switch {
	case p.wrap[addr] != "":
		c := costCall{fn: p.wrap[addr], ret: r.Reg(uc.RegLR) &^ 1, a: r.Insns()}
		p.open = append(p.open, c)
		p.watchReturn(r, c.ret, false)
	case p.real[addr] != "" && n > 0 && !p.open[n-1].inReal:
		c := &p.open[n-1]
		c.inReal, c.b, c.realRet = true, r.Insns(), r.Reg(uc.RegLR)&^1
		p.watchReturn(r, c.realRet, true)
	case n > 0 && p.open[n-1].inReal && !p.open[n-1].outOK && addr == p.open[n-1].realRet:
		p.open[n-1].c, p.open[n-1].outOK = r.Insns(), true
		r.Inside(false)
		if addr == p.open[n-1].ret {
			p.done(r) // the C part tail-called the real function
		}
	case n > 0 && p.open[n-1].outOK && addr == p.open[n-1].ret:
		p.done(r)
	}
}

// done ends the innermost call at its return to the caller.
func (p *costProbe) done(r *emu.ProbeRun) {
	n := len(p.open)
	c := p.open[n-1]
	p.costs[c.fn] = append(p.costs[c.fn], (c.b-c.a)+(r.Insns()-c.c))
	p.inner[c.fn] = append(p.inner[c.fn], c.c-c.b)
	p.open = p.open[:n-1]
}

func (p *costProbe) Access(*emu.ProbeRun, emu.ProbeAccess) {}
func (p *costProbe) Checkpoint()                           {}
func (p *costProbe) Restore(*emu.ProbeRun) error           { return nil }

// TestAllocRecCost measures what the recorder adds to each allocator call
// in the sample (guest instructions, from the emulator): the table update,
// and for allocations the bounded stack scan. It fails if a call costs
// more than the scan's bound allows (FL_ALLOCREC_SCAN_WORDS = 96 words at
// most 12 instructions each, plus 200 for the rest), so a change that
// makes the scan unbounded shows.
func TestAllocRecCost(t *testing.T) {
	skipWithoutEmulator(t)
	for _, b := range recorderBuilds(t) {
		if strings.HasSuffix(b, "-cxx") || strings.HasSuffix(b, "-rtos") {
			continue // the C sample calls each of the four
		}
		p := &costProbe{}
		_, err := emu.Run(context.Background(), emu.Config{ELF: filepath.Join(repo, recorderDir, "build", b+".elf"), Probe: p})
		if err != nil || p.err != nil {
			t.Fatalf("%s: %v %v", b, err, p.err)
		}
		var parts []string
		for _, fn := range []string{"malloc", "calloc", "realloc", "free"} {
			cs := p.costs[fn]
			if len(cs) == 0 {
				t.Errorf("%s: no %s call measured", b, fn)
				continue
			}
			lo, hi, sum := cs[0], cs[0], uint64(0)
			for _, c := range cs {
				lo, hi, sum = min(lo, c), max(hi, c), sum+c
				if c > 96*12+200 {
					t.Errorf("%s: a %s call cost %d instructions in the recorder", b, fn, c)
				}
			}
			var real uint64
			for _, c := range p.inner[fn] {
				real += c
			}
			parts = append(parts, fmt.Sprintf("%s x%d: %d-%d (mean %d; the real %s's mean %d)", fn, len(cs), lo, hi, sum/uint64(len(cs)), fn, real/uint64(len(cs))))
		}
		t.Logf("%s: instructions the recorder adds per call: %s", b, strings.Join(parts, "; "))
	}
}
