package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/fleet/server"
	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/sqlite"
	"github.com/faultline-dev/faultline/fleet/worker"
)

const repo = "../.."

type env struct {
	url   string
	st    store.Store
	pool  *worker.Pool
	stats *int
}

func newEnv(t *testing.T, cfg server.Config) env {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bl, err := blobs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := worker.New(worker.Config{Store: st, Blobs: bl, Workers: 1, Poll: 10 * time.Millisecond})
	cfg.Store, cfg.Blobs, cfg.Notify = st, bl, pool.Notify
	cfg.Logf = t.Logf
	ts := httptest.NewServer(server.New(cfg))
	t.Cleanup(ts.Close)
	return env{url: ts.URL, st: st, pool: pool}
}

func post(t *testing.T, url string, body io.Reader, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s: %d, not JSON: %q", url, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %q", url, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A self-contained dump: a CrashCatcher file.
func crashCatcher(t *testing.T) []byte {
	return read(t, "fixtures/import/gcc-m3-O2-null_write_deep.crashcatcher.bin")
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, server.Config{MaxDump: 4096, MaxELF: 1 << 20})
	cases := []struct {
		name, path string
		body       io.Reader
		header     map[string]string
		status     int
		msg        string
	}{
		{"not a dump", "/api/v1/dumps", strings.NewReader("hello, world"), nil, 422, "unknown dump format"},
		{"empty body", "/api/v1/dumps", strings.NewReader(""), nil, 400, "no body"},
		{"broken JSON dump", "/api/v1/dumps", strings.NewReader(`{"schema": "faultline.dump/1", "registers": {"pc": `), nil, 422, "the uploaded dump"},
		{"named in messages", "/api/v1/dumps", strings.NewReader("hello, world"), map[string]string{server.HeaderName: "crash.bin"}, 422, "crash.bin"},
		{"native with region files", "/api/v1/dumps", strings.NewReader(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000100"}, "memory": [{"address": "0x20000000", "file": "ram.bin"}]}`), nil, 422, "self-contained"},
		{"no registers", "/api/v1/dumps", strings.NewReader(`{"schema": "faultline.dump/1", "memory": [{"address": "0x20000000", "hex": "00000000"}]}`), nil, 422, "holds no registers"},
		{"oversized dump (length known)", "/api/v1/dumps", bytes.NewReader(make([]byte, 5000)), nil, 413, "limit"},
		{"oversized dump (chunked)", "/api/v1/dumps", io.MultiReader(strings.NewReader(`{"schema": "faultline.dump/1"`), strings.NewReader(strings.Repeat(" ", 5000))), nil, 413, "limit"},
		{"unprintable device", "/api/v1/dumps", strings.NewReader("x"), map[string]string{server.HeaderDevice: "a\u200bb"}, 400, "not printable"},
		{"device too long", "/api/v1/dumps", strings.NewReader("x"), map[string]string{server.HeaderVersion: strings.Repeat("v", 300)}, 400, "more than 256"},
		{"ELF: not an ELF", "/api/v1/symbols", strings.NewReader("MZ not an elf"), nil, 422, "ELF"},
		{"ELF: a relocatable object", "/api/v1/symbols", bytes.NewReader(relocatable(t)), map[string]string{server.HeaderName: "x.o"}, 422, "relocatable object"},
		{"ELF: a core file", "/api/v1/symbols", bytes.NewReader(read(t, "fixtures/elfcore/gcc-m3-O2-null_write_deep.gcore.elf")), nil, 422, "core"},
		{"ELF: oversized", "/api/v1/symbols", bytes.NewReader(make([]byte, 2<<20)), nil, 413, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, out := post(t, e.url+c.path, c.body, c.header)
			msg, _ := out["error"].(string)
			if status != c.status || !strings.Contains(msg, c.msg) {
				t.Errorf("%d %q, want %d and a message with %q", status, msg, c.status, c.msg)
			}
		})
	}
	if ds, _ := e.st.Dumps(context.Background(), store.DumpQuery{}); len(ds) != 0 {
		t.Errorf("refused uploads stored %d dumps", len(ds))
	}
	for _, p := range []string{"/api/v1/dumps/" + strings.Repeat("0", 64), "/api/v1/buckets/nope", "/api/v1/nothing"} {
		if status, out := get(t, e.url+p); status != 404 || out["error"] == "" {
			t.Errorf("GET %s: %d %v, want 404 with an error", p, status, out)
		}
	}
	if resp, err := http.Get(e.url + "/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GET / without pages: %v %v, want 404", resp.StatusCode, err)
	}
}

// relocatable makes an ET_REL header out of a sample ELF.
func relocatable(t *testing.T) []byte {
	b := append([]byte(nil), read(t, "firmware-samples/buildid/build/gcc-m3-O2.elf")...)
	b[16], b[17] = 1, 0
	return b
}

// TestHostileBodies: every file of the hostile corpus, as a dump and as
// an ELF, is answered with a status and JSON, never a 5xx or a dropped
// connection.
func TestHostileBodies(t *testing.T) {
	e := newEnv(t, server.Config{})
	n := 0
	filepath.WalkDir(filepath.Join(repo, "fixtures/hostile"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || n >= 400 {
			return nil
		}
		st, _ := d.Info()
		if st == nil || st.Size() > 8<<20 {
			return nil
		}
		b, _ := os.ReadFile(p)
		n++
		for _, path := range []string{"/api/v1/dumps", "/api/v1/symbols"} {
			status, out := post(t, e.url+path, bytes.NewReader(b), nil)
			if status >= 500 || (status >= 400 && out["error"] == "") {
				t.Errorf("%s to %s: %d %v", p, path, status, out)
			}
		}
		return nil
	})
	if n < 20 {
		t.Fatalf("only %d hostile files", n)
	}
	// Whatever was accepted decodes or fails; no worker panics.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		did, err := e.pool.Process(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !did {
			break
		}
	}
	t.Logf("%d hostile files posted", n)
}

func TestUploadIdempotent(t *testing.T) {
	e := newEnv(t, server.Config{})
	dump := read(t, "fixtures/fleet/gcc-m3-O2-div0.json")
	// The fixture's regions are files: inline them the way upload does.
	if status, _ := post(t, e.url+"/api/v1/dumps", bytes.NewReader(dump), nil); status != 422 {
		t.Fatalf("a manifest with region files: %d, want 422", status)
	}
	cc := crashCatcher(t)
	s1, a := post(t, e.url+"/api/v1/dumps", bytes.NewReader(cc), map[string]string{server.HeaderDevice: "d1", server.HeaderVersion: "1.0"})
	s2, b := post(t, e.url+"/api/v1/dumps", bytes.NewReader(cc), map[string]string{server.HeaderDevice: "d2"})
	if s1 != 202 || s2 != 202 || a["id"] != b["id"] || a["status"] != "queued" {
		t.Fatalf("two uploads of the same bytes: %d %v, %d %v", s1, a, s2, b)
	}
	id := a["id"].(string)
	status, d := get(t, e.url+"/api/v1/dumps/"+id)
	if status != 200 || d["device"] != "d1" || d["version"] != "1.0" || d["status"] != "queued" || d["analysis"] != nil {
		t.Fatalf("GET dump: %d %v", status, d)
	}
	for _, k := range []string{"id", "status", "bucket", "device", "version", "received", "analysis", "error"} {
		if _, ok := d[k]; !ok {
			t.Errorf("GET dump lacks %q (design.md)", k)
		}
	}
	elf := read(t, "firmware-samples/buildid/build/gcc-m3-O2.elf")
	status, y := post(t, e.url+"/api/v1/symbols", bytes.NewReader(elf), map[string]string{server.HeaderName: "fw.elf"})
	if status != 201 || y["build_id"] != "57dac794fb05f6051e02302940eb03bbd758fb12" || len(y["sha256"].(string)) != 64 {
		t.Fatalf("POST symbols: %d %v", status, y)
	}
	if status, _ := get(t, e.url+"/api/v1/symbols"); status != 200 {
		t.Fatalf("GET symbols: %d", status)
	}
}
