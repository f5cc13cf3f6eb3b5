package crashdump

import (
	"os"
	"path/filepath"
	"testing"
)

// Loading a native dump as a batch does: a QEMU oracle manifest with its
// truth and its RAM file padded to 64 KiB (BenchmarkLoad), and the
// manifest alone through the fast path and the precise reader, with the
// RAM served from memory (BenchmarkParseNative*).

// benchManifest copies fixtures/qemu/gcc-m3-O2-null_write_deep into a
// temporary directory with 64 KiB of RAM and returns the manifest's path.
func benchManifest(b *testing.B) string {
	b.Helper()
	src := filepath.Join("..", "fixtures", "qemu", "gcc-m3-O2-null_write_deep")
	man, err := os.ReadFile(src + ".json")
	if err != nil {
		b.Fatal(err)
	}
	ram, err := os.ReadFile(src + ".ram.bin")
	if err != nil {
		b.Fatal(err)
	}
	ram = append(ram, make([]byte, max(0, 64<<10-len(ram)))...)
	dir := b.TempDir()
	p := filepath.Join(dir, "gcc-m3-O2-null_write_deep.json")
	if err := os.WriteFile(p, man, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gcc-m3-O2-null_write_deep.ram.bin"), ram, 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkLoad(b *testing.B) {
	p := benchManifest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchParse(b *testing.B, parse func([]byte, string, func(string) ([]byte, error)) (*Dump, error)) {
	p := benchManifest(b)
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	files := dirFiles(filepath.Dir(p))
	ram, err := files("gcc-m3-O2-null_write_deep.ram.bin")
	if err != nil {
		b.Fatal(err)
	}
	readFile := func(string) ([]byte, error) { return ram, nil }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(data, p, readFile); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseNative is the fast path, as Parse takes it.
func BenchmarkParseNative(b *testing.B) { benchParse(b, parseNative) }

// BenchmarkParseNativePrecise is the precise reader alone, what Parse ran
// before the fast path.
func BenchmarkParseNativePrecise(b *testing.B) { benchParse(b, parseNativePrecise) }
