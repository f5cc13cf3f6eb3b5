package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/gdbserver"
	"github.com/faultline-dev/faultline/internal/mutate"
	"github.com/faultline-dev/faultline/unwinders"
)

// The mutation sweep (issue 23, deliver 2): every committed fixture of
// every input format, mutated deterministically (internal/mutate:
// truncations at the structure boundaries, bit flips, length and offset
// fields set to 0 or their maximum), goes through what analyze, convert,
// compare and a gdbserver session do, in-process. Any panic (caught
// internal errors included), an input that takes longer than
// sweepTimeout, or one that allocates more than sweepMaxAlloc fails the
// test; an error must name the input file.

const (
	sweepTimeout   = 30 * time.Second // per input, everything it goes through
	sweepMaxAlloc  = 64 << 20         // bytes allocated per input (the most measured: 4.4 MiB)
	sweepMaxMemory = 64 << 20         // LoadOptions.MaxMemory, as analyze --max-memory would give it
)

// sweepBase is a fixture and the firmware it goes with.
type sweepBase struct {
	path string // the fixture, relative to the repository
	elf  string // its firmware, relative to the repository
	// role: "dump" (loaded as a dump), "region" (a native manifest's
	// region file: the manifest stays), "regs" and "image" (Combine's
	// register text and memory image), "elf" (the firmware, with a good
	// dump).
	role  string
	other string // region: the manifest; regs: the image; image: the register text; elf: the dump
}

var sweepOnly = flag.String("sweep.only", "", "run the mutation sweep on the fixtures whose path contains this only")

func sweepBases() []sweepBase {
	const (
		m3    = "firmware-samples/build/gcc-m3-O2.elf"
		m4f   = "firmware-samples/build/gcc-m4f-O2.elf"
		imp   = "fixtures/import/"
		nwd   = "gcc-m3-O2-null_write_deep"
		psp   = "gcc-m3-O2-psp_thread"
		fpu   = "gcc-m4f-O2-fpu_crash"
		frtos = "firmware-samples/rtos-freertos/build/gcc-m3-O2.elf"
		zrtos = "firmware-samples/rtos-zephyr/build/gcc-m3-O2.elf"
	)
	bases := []sweepBase{
		{path: "fixtures/qemu/" + nwd + ".json", elf: m3, role: "dump"},
		{path: "fixtures/qemu/" + fpu + ".json", elf: m4f, role: "dump"},
		{path: "fixtures/qemu/" + nwd + ".ram.bin", elf: m3, role: "region", other: "fixtures/qemu/" + nwd + ".json"},
		{path: "fixtures/rtos/freertos/gcc-m3-O2.json", elf: frtos, role: "dump"},
		{path: "fixtures/rtos-zephyr/gcc-m3-O2.json", elf: zrtos, role: "dump"},
		{path: "fixtures/rtos-zephyr/gcc-m3-O2.zephyr.log", elf: zrtos, role: "dump"},
		{path: "fixtures/elfcore/" + nwd + ".gcore.elf", elf: m3, role: "dump"},
		{path: "fixtures/elfcore/" + fpu + ".gcore.elf", elf: m4f, role: "dump"},
		{path: "fixtures/elfcore/freertos-gcc-m3-O2.gcore.elf", elf: frtos, role: "dump"},
		{path: "fixtures/capture/gcc-m3-Os-capture-bin-null_write_deep.crashcatcher", elf: "firmware-samples/build/gcc-m3-Os.elf", role: "dump"},
		{path: "fixtures/capture/clang-m3-O0-capture-null_write_deep.crashcatcher.hex", elf: "firmware-samples/build/clang-m3-O0.elf", role: "dump"},
		{path: imp + nwd + ".regs.gdb.txt", elf: m3, role: "regs", other: imp + nwd + ".mem.hex"},
		{path: imp + nwd + ".regs.openocd.txt", elf: m3, role: "regs", other: imp + nwd + ".mem.srec"},
		{path: imp + nwd + ".mem.hex", elf: m3, role: "image", other: imp + nwd + ".regs.gdb.txt"},
		{path: imp + nwd + ".mem.srec", elf: m3, role: "image", other: imp + nwd + ".regs.gdb.txt"},
		{path: "firmware-samples/build/gcc-m3-O2-unwind.elf", elf: "firmware-samples/build/gcc-m3-O2-unwind.elf", role: "elf", other: "fixtures/qemu/gcc-m3-O2-unwind-null_write_deep.json"},
	}
	for _, src := range []struct{ name, elf string }{{nwd, m3}, {psp, m3}, {fpu, m4f}} {
		for _, ext := range []string{".crashcatcher.bin", ".crashcatcher-v2.bin", ".crashcatcher.txt", ".memfault.bin", ".zephyr.bin", ".zephyr.log"} {
			bases = append(bases, sweepBase{path: imp + src.name + ext, elf: src.elf, role: "dump"})
		}
	}
	probe, _ := filepath.Glob(filepath.Join(repo, imp, "probe-rs/*.coredump"))
	for _, p := range probe {
		elf := m3
		if strings.Contains(p, "m4f") {
			elf = m4f
		}
		rel, _ := filepath.Rel(repo, p)
		bases = append(bases, sweepBase{path: rel, elf: elf, role: "dump"})
	}
	return bases
}

// sweepFirmware caches each ELF and its analyzer.
type sweepFirmware struct {
	elf *elfsym.File
	an  *analysis.Analyzer
}

// allocated is the bytes the program has allocated so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sweepMutateOptions bound each fixture's mutants (about 300 each).
var sweepMutateOptions = mutate.Options{MaxTruncations: 100, Flips: 40, MaxFields: 60}

func TestMutationSweep(t *testing.T) {
	stride := 1
	switch {
	case testing.Short():
		stride = 8
	case raceEnabled:
		stride = 4 // the race detector makes each input about 5 times slower
	}
	start := time.Now()
	work := t.TempDir()
	firmware := map[string]*sweepFirmware{}
	defer func() {
		for _, f := range firmware {
			f.elf.Close()
		}
	}()
	fw := func(p string) *sweepFirmware {
		if f := firmware[p]; f != nil {
			return f
		}
		elf, err := openFirmware(filepath.Join(repo, p))
		if err != nil {
			t.Fatal(err)
		}
		an, err := analysis.NewAnalyzer(elf, analysis.Options{MaxFrames: 32})
		if err != nil {
			t.Fatal(err)
		}
		firmware[p] = &sweepFirmware{elf, an}
		return firmware[p]
	}
	var (
		total, decoded, refused, failures int
		slowest                           time.Duration
		slowestName, biggestName          string
		biggest                           uint64
	)
	perBase := map[string]int{}
	for _, b := range sweepBases() {
		if *sweepOnly != "" && !strings.Contains(b.path, *sweepOnly) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repo, b.path))
		if err != nil {
			t.Fatalf("fixture %s: %v", b.path, err)
		}
		f := fw(b.elf)
		dir := filepath.Join(work, strings.NewReplacer("/", "_", ".", "_").Replace(b.path))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if b.role == "region" || (b.role == "dump" && strings.HasSuffix(b.path, ".json")) {
			// A manifest's region files go beside the mutant.
			copyRegionFiles(t, filepath.Join(repo, b.path), filepath.Join(repo, b.other), dir)
		}
		mutants := mutate.All(data, sweepMutateOptions)
		for i, m := range mutants {
			if i%stride != 0 {
				continue
			}
			total++
			perBase[b.path]++
			in := sweepInput{base: b, mutant: m, dir: dir, fw: f, writeFiles: total%16 == 0}
			before := allocated()
			t0 := time.Now()
			res := runSweep(&in)
			if el := time.Since(t0); el > slowest {
				slowest, slowestName = el, b.path+" "+m.Name
			}
			if res.err != nil {
				failures++
				if failures <= 20 {
					t.Errorf("%s %s: %v", b.path, m.Name, res.err)
				}
				continue
			}
			n := allocated() - before
			if n > sweepMaxAlloc {
				// The counter is the process's: a goroutine another
				// test left running (or a previous input's abandoned
				// run) allocates into it too. An input that really
				// allocates without bound does so again: measure once
				// more and keep the smaller figure.
				before2 := allocated()
				if res2 := runSweep(&in); res2.err == nil {
					n = min(n, allocated()-before2)
				}
			}
			if n > sweepMaxAlloc {
				failures++
				t.Errorf("%s %s: allocated %d bytes, more than %d (measured twice)", b.path, m.Name, n, sweepMaxAlloc)
			}
			if n > biggest {
				biggest, biggestName = n, b.path+" "+m.Name
			}
			if res.decoded {
				decoded++
			} else {
				refused++
			}
		}
	}
	if failures > 20 {
		t.Errorf("... %d failures in all", failures)
	}
	t.Logf("mutation sweep: %d inputs from %d fixtures (every %d of their mutants), %d decoded, %d refused with an error, in %v; the slowest input took %v (%s), the most allocating %s (%s)",
		total, len(perBase), stride, decoded, refused, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), slowestName,
		crashdump.FormatBytes(int64(biggest)), biggestName)
	if stride == 1 && *sweepOnly == "" && total < 3000 {
		t.Errorf("only %d inputs: the sweep must run at least 3,000", total)
	}
}

// sweepInput is one mutant and where it is run.
type sweepInput struct {
	base   sweepBase
	mutant mutate.Mutant
	dir    string
	fw     *sweepFirmware
	// writeFiles: also write the native dump to files and read it back
	writeFiles bool
}

type sweepResult struct {
	decoded bool
	err     error
}

// runSweep runs one input with a time bound and catches panics.
func runSweep(in *sweepInput) sweepResult {
	done := make(chan sweepResult, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- sweepResult{err: fmt.Errorf("panic: %v\n%s", v, debug.Stack())}
			}
		}()
		decoded, err := sweepOne(in)
		done <- sweepResult{decoded: decoded, err: err}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(sweepTimeout):
		return sweepResult{err: fmt.Errorf("no result after %v: a hang", sweepTimeout)}
	}
}

// copyRegionFiles copies the region files of the manifest (manifest, or
// other for a region base) into dir.
func copyRegionFiles(t *testing.T, path, other, dir string) {
	t.Helper()
	man := path
	if strings.HasSuffix(path, ".bin") {
		man = other
	}
	d, err := crashdump.Load(man)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, f := range d.InputFiles()[1:] {
		copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
	}
	if strings.HasSuffix(path, ".bin") {
		copyFile(t, man, filepath.Join(dir, "dump.json"))
	}
}

// sweepOne runs one mutant through analyze, convert, compare and a
// gdbserver session. It reports whether the input decoded; an error is a
// failure of the contract (a load error that does not name the file, an
// internal error, an output that does not read back).
func sweepOne(in *sweepInput) (bool, error) {
	b, m := in.base, in.mutant
	var (
		d      *crashdump.Dump
		err    error
		path   string
		elf    = in.fw.elf
		an     = in.fw.an
		closer []func()
	)
	defer func() {
		for _, c := range closer {
			c()
		}
	}()
	switch b.role {
	case "dump":
		path = filepath.Join(in.dir, filepath.Base(b.path))
		if err := os.WriteFile(path, m.Data, 0o644); err != nil {
			return false, err
		}
		d, err = crashdump.LoadWith(path, crashdump.LoadOptions{MaxMemory: sweepMaxMemory})
	case "region":
		if err := os.WriteFile(filepath.Join(in.dir, filepath.Base(b.path)), m.Data, 0o644); err != nil {
			return false, err
		}
		path = filepath.Join(in.dir, "dump.json")
		d, err = crashdump.LoadWith(path, crashdump.LoadOptions{MaxMemory: sweepMaxMemory})
	case "regs", "image":
		path = filepath.Join(in.dir, filepath.Base(b.path))
		if err := os.WriteFile(path, m.Data, 0o644); err != nil {
			return false, err
		}
		regs, img := path, filepath.Join(repo, b.other)
		if b.role == "image" {
			regs, img = img, path
		}
		d, err = crashdump.Combine(regs, []string{img}, crashdump.CombineOptions{})
	case "elf":
		path = filepath.Join(in.dir, "fw.elf")
		if err := os.WriteFile(path, m.Data, 0o644); err != nil {
			return false, err
		}
		e, err := openFirmware(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				return false, fmt.Errorf("the error does not name the file: %v", err)
			}
			return false, nil
		}
		closer = append(closer, func() { e.Close() })
		elf = e
		if an, err = analysis.NewAnalyzer(e, analysis.Options{MaxFrames: 32}); err != nil {
			return false, nil
		}
		_ = e.Info()
		for _, a := range []uint32{0, 0x100, 0x1000, 0x2000, 0xffffffff} {
			_, _ = e.Symbolize(a) // symbolize
			_ = e.Describe(a)
		}
		dumpPath := filepath.Join(repo, b.other)
		if d, err = crashdump.Load(dumpPath); err != nil {
			return false, err
		}
		path = dumpPath
	}
	if err != nil {
		if !strings.Contains(err.Error(), filepath.Base(path)) && !strings.Contains(err.Error(), filepath.Base(b.other)) {
			return false, fmt.Errorf("the error does not name the file: %v", err)
		}
		return false, nil
	}
	closer = append(closer, func() { d.Close() })

	// analyze
	if err := checkDumpRegisters(d); err == nil {
		r, err := an.Analyze(d)
		if err == nil {
			if err := textout.Write(io.Discard, r); err != nil {
				return true, fmt.Errorf("analyze text: %v", err)
			}
			if _, err := json.Marshal(r); err != nil {
				return true, fmt.Errorf("analyze json: %v", err)
			}
		}
	}

	// convert: every output format; what is written must read back.
	var core bytes.Buffer
	if err := d.WriteELFCore(&core); err == nil {
		if _, err := crashdump.Parse(core.Bytes(), "back.core", nil); err != nil {
			return true, fmt.Errorf("convert --to elfcore does not read back: %v", err)
		}
	}
	var cc bytes.Buffer
	if err := d.WriteCrashCatcher(&cc); err == nil {
		if _, err := crashdump.Parse(cc.Bytes(), "back.crashcatcher", nil); err != nil {
			return true, fmt.Errorf("convert --to crashcatcher does not read back: %v", err)
		}
	}
	var self bytes.Buffer
	if err := d.WriteSelfContained(&self); err == nil {
		if _, err := crashdump.Parse(self.Bytes(), "back.json", nil); err != nil {
			return true, fmt.Errorf("convert --to native -o - does not read back: %v", err)
		}
	}
	if in.writeFiles {
		// Through the file writer (each file synced: not every input).
		out := filepath.Join(in.dir, "out", "back.json")
		os.MkdirAll(filepath.Dir(out), 0o755)
		if err := d.Write(out); err == nil {
			back, err := crashdump.Load(out)
			if err != nil {
				return true, fmt.Errorf("convert --to native does not read back: %v", err)
			}
			back.Close()
		}
	}

	// compare (every strategy), from the file as the command reads it
	if b.role == "dump" || b.role == "region" || b.role == "elf" {
		cj, cd, err := compareDump(elf, path, 32)
		var ie *internalError
		if errors.As(err, &ie) {
			return true, fmt.Errorf("compare: %v\n%s", err, ie.stack)
		}
		if err == nil {
			cd.Close()
			_ = cj
		}
	}

	// a gdbserver session
	tg, err := gdbserver.NewTarget(d, elf)
	if err != nil {
		return true, nil
	}
	sp := d.Regs.Value(unwinders.SP)
	var script bytes.Buffer
	for _, p := range []string{"qSupported:multiprocess+;xmlRegisters=arm", "?", "g", "qfThreadInfo", "qsThreadInfo",
		"qXfer:features:read:target.xml:0,3fff", "qXfer:memory-map:read::0,3fff", "qXfer:threads:read::0,3fff",
		fmt.Sprintf("m%x,100", sp), fmt.Sprintf("m%x,40", d.Regs.Value(unwinders.PC)&^1), "p19", "Hg2", "g", "D"} {
		script.Write(gdbserver.Frame([]byte(p)))
		script.WriteByte('+')
	}
	srv := gdbserver.NewServer(tg, gdbserver.Config{IdleTimeout: 10 * time.Second})
	if err := srv.ServeConn(context.Background(), stdioStream{&script, io.Discard}); err != nil {
		return true, fmt.Errorf("gdbserver session: %v", err)
	}
	return true, nil
}
