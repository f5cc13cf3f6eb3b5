package crashdump

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseFile makes a file of size bytes that holds data at its start and
// zeros (a hole, no disk blocks) after it.
func sparseFile(t *testing.T, path string, data []byte, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestLoadMapsLargeRegions loads two 512 MiB regions (1 GiB, more than
// MaxTotalSize may read) plus an SCB hex block: large region files are
// mapped, not read, so they do not count against the per-dump limit, and
// their bytes read back through the dump's memory; Close unmaps them.
func TestLoadMapsLargeRegions(t *testing.T) {
	dir := t.TempDir()
	sparseFile(t, filepath.Join(dir, "ram.bin"), []byte{1, 2, 3, 4}, MaxRegionSize)
	sparseFile(t, filepath.Join(dir, "ext.bin"), nil, MaxRegionSize)
	// The last page of ext.bin holds a marker.
	f, err := os.OpenFile(filepath.Join(dir, "ext.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("END!"), MaxRegionSize-4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := filepath.Join(dir, "d.json")
	writeFiles(t, dir, map[string]string{"d.json": manifest(`{"address": "0x20000000", "file": "ram.bin"}, {"address": "0x60000000", "file": "ext.bin"}, {"address": "0xe000ed28", "hex": "00820000"}`)})
	d, err := LoadWith(path, LoadOptions{MaxMemory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Memory) != 3 || len(d.Memory[0].Data) != MaxRegionSize || len(d.Memory[1].Data) != MaxRegionSize {
		t.Fatalf("memory: %d regions", len(d.Memory))
	}
	im, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	if err := im.Read(0x20000000, b[:]); err != nil || b != [4]byte{1, 2, 3, 4} {
		t.Errorf("ram: %v %x", err, b)
	}
	if err := im.Read(0x60000000+MaxRegionSize-4, b[:]); err != nil || string(b[:]) != "END!" {
		t.Errorf("ext end: %v %q", err, b)
	}
	if len(d.unmap) != 2 {
		t.Errorf("%d regions mapped, want 2", len(d.unmap))
	}
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if d.Memory != nil {
		t.Error("memory still set after Close")
	}
	if err := d.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestLoadPerDumpLimit: what a dump reads into memory (the manifest,
// counted DecodeFactor times, and region files too small to map) is held
// to LoadOptions.MaxMemory, and the error names the limit.
func TestLoadPerDumpLimit(t *testing.T) {
	dir := t.TempDir()
	small := strings.Repeat("x", MapThreshold-1)
	writeFiles(t, dir, map[string]string{
		"a.bin": small, "b.bin": small, "c.bin": small,
		"three.json": manifest(`{"address": "0x20000000", "file": "a.bin"}, {"address": "0x20100000", "file": "b.bin"}, {"address": "0x20200000", "file": "c.bin"}`),
	})
	path := filepath.Join(dir, "three.json")
	limit := int64(2*MapThreshold + 4096)
	_, err := LoadWith(path, LoadOptions{MaxMemory: limit})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), `memory[2].file: cannot read "c.bin": too large: 262143 bytes, more than the`) ||
		!strings.Contains(err.Error(), "of the per-dump limit of 528384 bytes") || strings.Contains(err.Error(), "limit 0") {
		t.Errorf("got %v", err)
	}
	if _, err := LoadWith(path, LoadOptions{MaxMemory: 4 << 20}); err != nil {
		t.Errorf("with room: %v", err)
	}

	// The dump file itself, from its size, before it is read.
	big := filepath.Join(dir, "big.json")
	sparseFile(t, big, []byte(manifest("")), 1<<20)
	_, err = LoadWith(big, LoadOptions{MaxMemory: 2 << 20})
	if !errors.Is(err, ErrTooLarge) || err.Error() != big+": 1048576 bytes: decoding it needs about 3145728 bytes of memory, more than the per-dump limit of 2 MiB" {
		t.Errorf("got %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 4096: "4096 bytes", 1 << 20: "1 MiB", 3 << 29: "1.5 GiB", 512 << 20: "512 MiB", 1<<30 + 1<<20: "1 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
