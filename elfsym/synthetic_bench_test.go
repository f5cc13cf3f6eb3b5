package elfsym

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The synthetic firmware (firmware-samples/synthetic/gen.go: 50,000
// functions, about 14 MB of DWARF) is too large to commit. The benchmarks
// below use $FAULTLINE_SYNTHETIC_ELF when it is set; otherwise, when
// arm-none-eabi-gcc is installed, they generate it once (a few minutes)
// into the user cache directory, keyed by the generator's hash, and reuse
// it; without the toolchain they skip.

var synthetic struct {
	once sync.Once
	path string
	err  error
}

func syntheticELF(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("FAULTLINE_SYNTHETIC_ELF"); p != "" {
		return p
	}
	synthetic.once.Do(func() {
		if _, err := exec.LookPath("arm-none-eabi-gcc"); err != nil {
			synthetic.err = err
			return
		}
		gen, err := filepath.Abs("../firmware-samples/synthetic/gen.go")
		if err != nil {
			synthetic.err = err
			return
		}
		src, err := os.ReadFile(gen)
		if err != nil {
			synthetic.err = err
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		sum := sha256.Sum256(src)
		dir := filepath.Join(cache, "faultline", "synthetic-"+hex.EncodeToString(sum[:6]))
		elf := filepath.Join(dir, "synthetic.elf")
		if _, err := os.Stat(elf); err == nil {
			synthetic.path = elf
			return
		}
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "run", gen, "-o", dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			synthetic.err = &os.PathError{Op: "generate", Path: dir, Err: errorString(string(out) + err.Error())}
			return
		}
		synthetic.path = elf
	})
	if synthetic.err != nil {
		b.Skipf("no synthetic firmware (set FAULTLINE_SYNTHETIC_ELF, or install arm-none-eabi-gcc): %v", synthetic.err)
	}
	return synthetic.path
}

type errorString string

func (e errorString) Error() string { return string(e) }

// liveHeapMB returns the bytes in use after a full collection, in MiB.
func liveHeapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// BenchmarkSyntheticOpen measures the index build of the synthetic
// firmware: NewFile on its bytes (headers, symbol indexes, unit index; no
// line table or function tree is decoded). live-MB is the heap the File
// holds, the ELF bytes included.
func BenchmarkSyntheticOpen(b *testing.B) {
	name := syntheticELF(b)
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var f *File
	for b.Loop() {
		if f, err = NewFile(bytes.NewReader(data), name); err != nil {
			b.Fatal(err)
		}
	}
	data = nil
	b.ReportMetric(liveHeapMB(), "live-MB")
	runtime.KeepAlive(f)
}

// BenchmarkSyntheticSymbolizeCold opens the synthetic firmware and
// symbolizes one address in every function, which decodes the line table
// and function tree of every unit: the cost of a first pass over the whole
// image. live-MB is the heap the File holds afterwards.
func BenchmarkSyntheticSymbolizeCold(b *testing.B) {
	name := syntheticELF(b)
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var f *File
	var locs []Location
	for b.Loop() {
		if f, err = NewFile(bytes.NewReader(data), name); err != nil {
			b.Fatal(err)
		}
		for _, s := range f.syms.funcs.items {
			locs, _ = f.AppendSymbolize(locs[:0], s.start+2)
		}
	}
	data = nil
	b.ReportMetric(liveHeapMB(), "live-MB")
	runtime.KeepAlive(f)
}

// BenchmarkSyntheticSymbolizeWarm symbolizes addresses spread over the
// synthetic firmware once every unit is decoded, as addr2line -f -i text.
func BenchmarkSyntheticSymbolizeWarm(b *testing.B) {
	name := syntheticELF(b)
	f, err := Open(name)
	if err != nil {
		b.Fatal(err)
	}
	items := f.syms.funcs.items
	var locs []Location
	for _, s := range items {
		locs, _ = f.AppendSymbolize(locs[:0], s.start+2)
	}
	var text []byte
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := items[(i*7919)%len(items)]
		locs, _ = f.AppendSymbolize(locs[:0], s.start+(uint32(i)%max(s.size, 2))&^1)
		text = AppendAddr2Line(text[:0], locs, false)
		i++
	}
}
