package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/fleet/client"
	"github.com/faultline-dev/faultline/fleet/server"
)

// The crash server's "done when" check (issue 26): a fresh server given
// our sample ELFs and the QEMU oracle dumps of our samples, as native,
// CrashCatcher and ELF core files, gives the same buckets and the same
// analysis per dump as `analyze --symbols --summary` and `analyze
// --format json` on the same files. The oracle is the analyze command,
// run on the files as a user has them (a native manifest beside its RAM
// file; the server gets it self-contained from upload).

// fleetFamilies are the QEMU oracle fixture directories and the
// firmware each was made from.
var fleetFamilies = []struct{ fixtures, elfs, prefix string }{
	{"fixtures/qemu", "firmware-samples/build", "samples"},
	{"fixtures/qemu-cxx", "firmware-samples/cxx/build", "cxx"},
	{"fixtures/qemu-dispatch", "firmware-samples/dispatch/build", "dispatch"},
	{"fixtures/qemu-excentry", "firmware-samples/excentry/build", "excentry"},
}

// fleetCase is the files of one check: the symbols directory (flat, so
// that --symbols' path order is the upload order) and the dumps, in
// upload order.
type fleetCase struct {
	symdir string
	elfs   []string
	dumps  []string
	// natives are the dumps uploaded before any ELF (they wait for
	// symbols, then an ELF upload wakes them).
	natives int
}

// commandRunner runs faultline (in-process or the binary).
type commandRunner func(t *testing.T, args ...string) (stdout, stderr string, code int)

func inProcess(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, "", args...)
}

// makeFleetCase copies the ELFs of the families into one directory and
// converts each native dump to CrashCatcher and ELF core with convert
// (in-process: the conversion is not what is checked).
func makeFleetCase(t *testing.T, families []int) fleetCase {
	t.Helper()
	dir := t.TempDir()
	c := fleetCase{symdir: filepath.Join(dir, "symbols")}
	conv := filepath.Join(dir, "converted")
	for _, d := range []string{c.symdir, conv} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var converted []string
	for _, fi := range families {
		fam := fleetFamilies[fi]
		elfs, _ := filepath.Glob(filepath.Join(repo, fam.elfs, "*.elf"))
		dumps, _ := filepath.Glob(filepath.Join(repo, fam.fixtures, "*.json"))
		if len(elfs) == 0 || len(dumps) == 0 {
			t.Fatalf("%s: %d ELFs, %s: %d dumps", fam.elfs, len(elfs), fam.fixtures, len(dumps))
		}
		for _, e := range elfs {
			b, err := os.ReadFile(e)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(c.symdir, fam.prefix+"-"+filepath.Base(e))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range dumps {
			c.dumps = append(c.dumps, d)
			base := fam.prefix + "-" + strings.TrimSuffix(filepath.Base(d), ".json")
			for _, to := range []string{"crashcatcher", "elfcore"} {
				out := filepath.Join(conv, base+"."+to)
				if _, stderr, code := inProcess(t, "convert", "--to", to, d, "-o", out); code != 0 {
					t.Fatalf("convert --to %s %s: exit %d: %s", to, d, code, stderr)
				}
				converted = append(converted, out)
			}
		}
	}
	c.natives = len(c.dumps)
	c.dumps = append(c.dumps, converted...)
	c.elfs, _ = filepath.Glob(filepath.Join(c.symdir, "*.elf"))
	sort.Strings(c.elfs)
	return c
}

var uploadLine = regexp.MustCompile(`^(.*): (?:dump ([0-9a-f]{64}) (\S+)|symbols (\S+|\(no build ID\)) \(sha256 ([0-9a-f]{64})\))$`)

// upload runs the upload command on files and returns the dump ids by
// file.
func uploadFiles(t *testing.T, run commandRunner, url string, files []string, extra ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for len(files) > 0 {
		n := min(len(files), 200) // bounded command lines
		args := append([]string{"upload", "--server", url}, extra...)
		stdout, stderr, code := run(t, append(args, files[:n]...)...)
		if code != 0 {
			t.Fatalf("upload: exit %d: %s", code, stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			m := uploadLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("upload printed %q", line)
			}
			if m[2] != "" {
				ids[m[1]] = m[2]
			}
		}
		files = files[n:]
	}
	return ids
}

// checkFleet uploads c to the server at url (natives, then the ELFs,
// then the converted dumps), waits for every dump to be decoded, and
// compares with analyze.
func checkFleet(t *testing.T, run commandRunner, url string, c fleetCase) {
	ctx := context.Background()
	cl, err := client.New(url, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := uploadFiles(t, run, url, c.dumps[:c.natives], "--device", "qemu", "--version", "1")
	// Nothing can decode yet: every native waits for its symbols.
	waitFor(t, cl, ids, c.dumps[:c.natives], func(d server.DumpJSON) bool { return d.Status != "queued" })
	for _, p := range c.dumps[:c.natives] {
		d, err := cl.Dump(ctx, ids[p])
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != "waiting-for-symbols" {
			t.Fatalf("%s uploaded before any ELF: %s (%s), want waiting-for-symbols", p, d.Status, d.Error)
		}
	}
	uploadFiles(t, run, url, c.elfs)
	for k, v := range uploadFiles(t, run, url, c.dumps[c.natives:], "--device", "qemu", "--version", "2") {
		ids[k] = v
	}
	// Every ELF is in: a dump that is not queued has its final answer.
	waitFor(t, cl, ids, c.dumps, func(d server.DumpJSON) bool { return d.Status != "queued" })

	// The oracle: analyze on the same files, in the same order.
	stdout, stderr, code := run(t, append([]string{"analyze", "--symbols", c.symdir, "--format", "json"}, c.dumps...)...)
	if code != 0 && code != ExitInput {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	var reports []json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &reports); err != nil {
		t.Fatalf("analyze --format json: %v", err)
	}
	reportOf := map[string]json.RawMessage{}
	for _, r := range reports {
		var head struct {
			Dump string `json:"dump"`
		}
		if err := json.Unmarshal(r, &head); err != nil {
			t.Fatal(err)
		}
		reportOf[head.Dump] = r
	}
	stdout, stderr, code = run(t, append([]string{"analyze", "--symbols", c.symdir, "--summary", "--format", "json"}, c.dumps...)...)
	if code != 0 && code != ExitInput {
		t.Fatalf("analyze --summary: exit %d: %s", code, stderr)
	}
	var sum bucket.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Decoded != len(reports) || sum.Decoded+sum.Undecodable.Count != len(c.dumps) {
		t.Fatalf("analyze --summary: %d decoded + %d undecodable of %d dumps; analyze --format json gave %d reports",
			sum.Decoded, sum.Undecodable.Count, len(c.dumps), len(reports))
	}
	errorOf := map[string]string{}
	for _, e := range sum.Undecodable.Errors {
		errorOf[e.Dump] = e.Error
	}

	// Per dump: the server's analysis is analyze's; a dump analyze cannot
	// pair with any ELF waits for symbols on the server, with the same
	// reason.
	bucketOf := map[string]string{} // file -> bucket id
	for _, b := range sum.Buckets {
		for _, d := range b.Dumps {
			bucketOf[d] = b.ID
		}
	}
	mismatches, waiting := 0, 0
	for _, p := range c.dumps {
		d, err := cl.Dump(ctx, ids[p])
		if err != nil {
			t.Fatal(err)
		}
		if msg, failed := errorOf[p]; failed {
			want := strings.ReplaceAll(strings.ReplaceAll(msg, p, "DUMP"), c.symdir, "the uploaded symbols")
			// Identical ELF files are one symbol on the server.
			want = strings.ReplaceAll(want, fmt.Sprintf("(%d tried,", len(c.elfs)), fmt.Sprintf("(%d tried,", distinctFiles(t, c.elfs)))
			got := strings.ReplaceAll(d.Error, ids[p], "DUMP")
			if d.Status != "waiting-for-symbols" || got != want {
				t.Errorf("%s: analyze cannot decode it (%s); the server says %s (%s)", p, msg, d.Status, d.Error)
				mismatches++
			}
			waiting++
			continue
		}
		if d.Status != "decoded" {
			t.Errorf("%s: %s (%s), analyze decoded it", p, d.Status, d.Error)
			mismatches++
			continue
		}
		if d.Bucket != bucketOf[p] {
			t.Errorf("%s: bucket %s, analyze --summary says %s", p, d.Bucket, bucketOf[p])
		}
		want := normalizeReport(t, reportOf[p], p, c.symdir, ids[p])
		got := normalizeReport(t, d.Analysis, ids[p], c.symdir, ids[p])
		if !reflect.DeepEqual(got, want) {
			mismatches++
			if mismatches <= 3 {
				gb, _ := json.MarshalIndent(got, "", " ")
				wb, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("%s: the server's analysis differs from analyze's:\n%s", p, firstLineDiff(string(gb), string(wb)))
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d dumps differ", mismatches, len(c.dumps))
	}

	// The buckets: the same, in the same order, with the same dumps
	// (identical files are one dump on the server).
	got, err := cl.Buckets(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sum.Buckets) {
		t.Fatalf("%d buckets on the server, analyze --summary has %d", len(got), len(sum.Buckets))
	}
	// analyze orders buckets by files, then by the first file's position;
	// the server counts identical files once, and its first_seen is the
	// first upload of those bytes.
	firstAt := map[string]int{} // dump id -> first upload position
	for i, p := range c.dumps {
		if _, ok := firstAt[ids[p]]; !ok {
			firstAt[ids[p]] = i
		}
	}
	type ranked struct {
		b        *bucket.Bucket
		distinct int
		first    int
	}
	var order []ranked
	for _, wb := range sum.Buckets {
		r := ranked{b: wb, first: len(c.dumps)}
		seen := map[string]bool{}
		for _, p := range wb.Dumps {
			if !seen[ids[p]] {
				seen[ids[p]] = true
				r.distinct++
				r.first = min(r.first, firstAt[ids[p]])
			}
		}
		order = append(order, r)
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].distinct != order[j].distinct {
			return order[i].distinct > order[j].distinct
		}
		return order[i].first < order[j].first
	})
	for i, r := range order {
		wb := r.b
		gb := got[i]
		want := map[string]bool{}
		for _, p := range wb.Dumps {
			want[ids[p]] = true
		}
		if gb.Signature != wb.ID || gb.Count != len(want) || gb.Key != wb.Signature.Key() {
			t.Errorf("bucket #%d: server %s (%d dumps, %s), analyze %s (%d distinct dumps, %s)", i+1, gb.Signature, gb.Count, gb.Key, wb.ID, len(want), wb.Signature.Key())
			continue
		}
		full, err := cl.Bucket(ctx, gb.Signature, "", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range full.Dumps {
			if !want[id] {
				t.Errorf("bucket %s: dump %s is not in analyze's bucket", gb.Signature, id)
			}
		}
		if len(full.Dumps) != len(want) {
			t.Errorf("bucket %s lists %d dumps, want %d", gb.Signature, len(full.Dumps), len(want))
		}
	}
	// The version filter splits natives (1) from conversions (2).
	v1, err := cl.Buckets(ctx, "1", "")
	if err != nil {
		t.Fatal(err)
	}
	n1 := 0
	for _, b := range v1 {
		n1 += b.Count
		if !reflect.DeepEqual(b.Versions, []string{"1"}) || !reflect.DeepEqual(b.Devices, []string{"qemu"}) {
			t.Errorf("bucket %s with version=1: versions %v devices %v", b.Signature, b.Versions, b.Devices)
		}
	}
	distinct := map[string]bool{}
	for _, p := range c.dumps[:c.natives] {
		distinct[ids[p]] = true
	}
	if n1 != len(distinct) {
		t.Errorf("version 1 counts %d dumps, %d were uploaded as version 1", n1, len(distinct))
	}
	t.Logf("%d dumps (%d distinct), %d ELFs, %d buckets, %d dumps no ELF pairs with: the server agrees with analyze", len(c.dumps), len(uniq(ids)), len(c.elfs), len(got), waiting)
}

// distinctFiles counts the different contents among files.
func distinctFiles(t *testing.T, files []string) int {
	t.Helper()
	seen := map[[32]byte]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen[sha256.Sum256(b)] = true
	}
	return len(seen)
}

func uniq(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}

// normalizeReport makes an analysis comparable across the CLI and the
// server: the dump's name (a path, or the id) and the ELF's (a path in
// the symbols directory, or its upload name) are the only differences
// allowed.
func normalizeReport(t *testing.T, raw json.RawMessage, dumpName, symdir, id string) any {
	t.Helper()
	s := string(raw)
	s = strings.ReplaceAll(s, jsonText(symdir+string(filepath.Separator)), "")
	s = strings.ReplaceAll(s, jsonText(dumpName), "DUMP")
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", dumpName, err)
	}
	return v
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func firstLineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  server:  %s\n  analyze: %s", i+1, x, y)
		}
	}
	return "(no difference in the text)"
}

// waitFor polls until done holds for every file's dump.
func waitFor(t *testing.T, cl *client.Client, ids map[string]string, files []string, done func(server.DumpJSON) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	pending := append([]string(nil), files...)
	for len(pending) > 0 {
		var still []string
		for _, p := range pending {
			d, err := cl.Dump(context.Background(), ids[p])
			if err != nil {
				t.Fatal(err)
			}
			if !done(d) {
				still = append(still, p)
			}
		}
		pending = still
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dumps still not done after 5 minutes, e.g. %s", len(pending), pending[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

// startServeInProcess runs the serve command in-process and returns its
// URL; the test's end stops it.
func startServeInProcess(t *testing.T, args ...string) string {
	t.Helper()
	var stderr syncBuffer
	root := NewRoot(strings.NewReader(""), io.Discard, &stderr)
	root.SetArgs(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop within 30 s of its context")
		}
	})
	for range 200 {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v\n%s", err, stderr.String())
		case <-time.After(25 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not say where it listens:\n%s", stderr.String())
	return ""
}

// TestServeMatchesAnalyze is the check in-process, on fixtures/qemu (the
// binary test takes every family).
func TestServeMatchesAnalyze(t *testing.T) {
	c := makeFleetCase(t, []int{0})
	url := startServeInProcess(t, "--data", t.TempDir(), "--workers", "2")
	checkFleet(t, inProcess, url, c)
}

// TestServeBinary runs the real binary: faultline serve, upload and
// analyze as separate processes, on the QEMU oracle families the
// in-process test does not take (C++, dispatch, exception entry).
func TestServeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and decodes every QEMU oracle dump three times")
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "./cmd/faultline")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runBin := func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	// The in-process test has fixtures/qemu; this one the other
	// families (FAULTLINE_FLEET_ALL=1: every family, 1284 dumps).
	families := []int{1, 2, 3}
	if os.Getenv("FAULTLINE_FLEET_ALL") == "1" {
		families = []int{0, 1, 2, 3}
	}
	c := makeFleetCase(t, families)
	serve := exec.Command(bin, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--workers", "2")
	pr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- serve.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited with %v after SIGINT", err)
			}
		case <-time.After(30 * time.Second):
			serve.Process.Kill()
			t.Errorf("serve did not stop within 30 s of SIGINT")
		}
	})
	lines := bufio.NewScanner(pr)
	url := ""
	for lines.Scan() {
		if m := listeningRE.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("serve did not say where it listens")
	}
	go io.Copy(io.Discard, pr)
	checkFleet(t, runBin, url, c)
}

// TestServeRefusesRemoteWithoutTokens: without a token file only
// loopback is accepted, before anything is opened.
func TestServeRefusesRemoteWithoutTokens(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:8080", "example.com:8080"} {
		_, stderr, code := run(t, "", "serve", "--data", data, "--listen", addr)
		if code != ExitUsage || !strings.Contains(stderr, "loopback") {
			t.Errorf("serve --listen %s: exit %d, %q; want a usage error naming loopback", addr, code, stderr)
		}
	}
	if _, err := os.Stat(data); err == nil {
		t.Error("serve created the data directory before refusing the address")
	}
	tok := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tok, []byte("upload short\n"), 0o600)
	if _, stderr, code := run(t, "", "serve", "--data", data, "--token-file", tok); code != ExitUsage || !strings.Contains(stderr, "at least 16") {
		t.Errorf("a 5-character token: exit %d, %q", code, stderr)
	}
}

// TestServeTokens: with a token file, each endpoint needs its role.
func TestServeTokens(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tok, []byte("# roles\nupload uploader-0123456789\nread reader-0123456789ab\n"), 0o600)
	url := startServeInProcess(t, "--data", t.TempDir(), "--workers", "1", "--token-file", tok)
	elf := filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf")
	dump := filepath.Join(repo, "fixtures/fleet/gcc-m3-O2-div0.json")
	if _, stderr, code := run(t, "", "upload", "--server", url, "--retries", "0", elf); code != ExitInput || !strings.Contains(stderr, "401") {
		t.Errorf("upload without a token: exit %d, %q; want 401", code, stderr)
	}
	readTok := filepath.Join(t.TempDir(), "read")
	os.WriteFile(readTok, []byte("reader-0123456789ab\n"), 0o600)
	if _, stderr, code := run(t, "", "upload", "--server", url, "--token-file", readTok, elf); code != ExitInput || !strings.Contains(stderr, "403") {
		t.Errorf("upload with a read token: exit %d, %q; want 403", code, stderr)
	}
	stdout, stderr, code := run(t, "", "upload", "--server", url, "--token-file", tok, elf, dump)
	if code != 0 {
		t.Fatalf("upload with the upload token: exit %d, %s", code, stderr)
	}
	id := uploadLine.FindStringSubmatch(strings.Split(strings.TrimSpace(stdout), "\n")[1])[2]
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"nope-nope-nope-nope", 401}, {"uploader-0123456789", 403}, {"reader-0123456789ab", 200}} {
		req, _ := http.NewRequest("GET", url+"/api/v1/dumps/"+id, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET with token %q: %d, want %d", c.token, resp.StatusCode, c.want)
		}
	}
	// A browser sends the token as a Basic password.
	req, _ := http.NewRequest("GET", url+"/api/v1/buckets", nil)
	req.SetBasicAuth("me", "reader-0123456789ab")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("Basic auth with the read token: %v %v", resp.StatusCode, err)
	}
}
