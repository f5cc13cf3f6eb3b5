package crashdump

import (
	"path/filepath"
	"testing"
)

// TestLoadBuffers: dumps loaded one after the other with the same Buffers
// read their region files into the memory the closed ones gave back, and
// each sees its own bytes, however the sizes go (a smaller file after a
// larger one, a larger one after that).
func TestLoadBuffers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.bin":  "aaaaaaaaaaaaaaaa",
		"b.bin":  "bbbb",
		"c.bin":  "cccccccccccccccccccccccccccccccc",
		"a.json": manifest(`{"address": 0, "file": "a.bin"}`),
		"b.json": manifest(`{"address": 0, "file": "b.bin"}`),
		"c.json": manifest(`{"address": 0, "file": "c.bin"}, {"address": 4096, "file": "b.bin"}`),
	})
	var bufs Buffers
	seen := map[*byte]bool{} // the buffers used
	for _, name := range []string{"a", "b", "c", "a", "b", "c", "c"} {
		d, err := LoadWith(filepath.Join(dir, name+".json"), LoadOptions{Buffers: &bufs})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"a": "aaaaaaaaaaaaaaaa", "b": "bbbb", "c": "cccccccccccccccccccccccccccccccc"}[name]
		if got := string(d.Memory[0].Data); got != want {
			t.Fatalf("%s: memory %q, want %q", name, got, want)
		}
		if name == "c" && string(d.Memory[1].Data) != "bbbb" {
			t.Fatalf("c: second region %q", d.Memory[1].Data)
		}
		for _, r := range d.Memory {
			seen[&r.Data[:1][0]] = true
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if d.Memory != nil {
			t.Errorf("%s: Memory kept after Close", name)
		}
	}
	// a and b fit in a's buffer, c needs one more: the loads after the
	// first three reuse those.
	if len(seen) != 2 || len(bufs.free) != 2 {
		t.Errorf("%d buffers used, %d kept; want 2 and 2", len(seen), len(bufs.free))
	}
}

// TestBuffersBounds: a Buffers keeps a bounded number of buffers, none
// larger than a region that is read rather than mapped.
func TestBuffersBounds(t *testing.T) {
	var b Buffers
	for range 2 * buffersMaxKept {
		b.put(make([]byte, 16))
	}
	b.put(make([]byte, buffersMaxSize+1))
	if len(b.free) != buffersMaxKept {
		t.Errorf("%d kept, want %d", len(b.free), buffersMaxKept)
	}
	for _, f := range b.free {
		if cap(f) > buffersMaxSize {
			t.Errorf("kept a buffer of %d bytes", cap(f))
		}
	}
	if got := b.get(8); len(got) != 8 {
		t.Errorf("get(8): %d bytes", len(got))
	}
	if got := b.get(64); len(got) != 64 {
		t.Errorf("get(64): %d bytes", len(got))
	}
	var nilBufs *Buffers
	if got := nilBufs.get(4); len(got) != 4 {
		t.Errorf("nil get(4): %d bytes", len(got))
	}
	nilBufs.put(make([]byte, 4))
}
