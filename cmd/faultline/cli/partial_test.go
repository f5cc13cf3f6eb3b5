package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copySizedDump copies a native dump and its region files into a new
// directory, adding each region file's "size", and
// returns the manifest's path there.
func copySizedDump(t *testing.T, manifest string) string {
	t.Helper()
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range m["memory"].([]any) {
		r := e.(map[string]any)
		f, ok := r["file"].(string)
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(manifest), f))
		if err != nil {
			t.Fatal(err)
		}
		r["size"] = len(b)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(manifest))
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Partial dumps (a region file cut short or deleted) decode as far as they
// go: a warning names the file and the addresses missing, and the walk
// stops at the first address it needs that the dump lacks.
func TestAnalyzePartialDump(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	src := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	full, _, code := run(t, "", "analyze", "--format", "json", "--elf", elf, src)
	if code != 0 {
		t.Fatal(code)
	}
	type report struct {
		Frames []struct {
			Function, Kind string
		}
		Stop     string
		Warnings []string
	}
	var whole report
	if err := json.Unmarshal([]byte(full), &whole); err != nil {
		t.Fatal(err)
	}
	ram := "gcc-m3-O2-null_write_deep.ram.bin"
	for _, c := range []struct {
		name    string
		cut     func(path string) error
		warning string
		stop    string
		frames  int // frames of the whole dump's walk that must come first
	}{
		{"cut short", func(p string) error { return os.Truncate(p, 0x3f80) },
			`memory[0]: region file "` + ram + `" holds 16256 of its 16384 bytes: memory 0x20003f80-0x20004000 is missing`,
			"memory at 0x20003fc8 not captured: ", 5},
		{"deleted", os.Remove,
			`memory[0]: region file "` + ram + `" (0x20000000-0x20004000) is missing: that memory is not in the dump`,
			"memory at 0x20003618 not captured", 1},
	} {
		p := copySizedDump(t, src)
		if err := c.cut(filepath.Join(filepath.Dir(p), ram)); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", elf, p)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, c.warning) {
			t.Errorf("%s: warnings\n%s\nwant %q", c.name, w, c.warning)
		}
		if !strings.HasPrefix(r.Stop, c.stop) {
			t.Errorf("%s: stop %q, want %q...", c.name, r.Stop, c.stop)
		}
		if len(r.Frames) < c.frames {
			t.Fatalf("%s: %d frames", c.name, len(r.Frames))
		}
		for i := 0; i < c.frames; i++ {
			if r.Frames[i] != whole.Frames[i] {
				t.Errorf("%s: frame %d %+v, the whole dump's %+v", c.name, i, r.Frames[i], whole.Frames[i])
			}
		}
	}
}
