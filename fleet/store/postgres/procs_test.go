package postgres

// The crash server as separate processes on one PostgreSQL database:
// `faultline serve --db` takes the uploads, `faultline serve --worker
// --db` processes decode them. Shared by TestKillWorkers and
// BenchmarkFleetPostgres.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the module root (this package is three levels down).
func repoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// buildFaultline builds the faultline binary into dir.
func buildFaultline(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "faultline")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/faultline")
	cmd.Dir = repoRoot(tb)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/faultline: %v\n%s", err, out)
	}
	return bin
}

// proc is one faultline process with its output in a log file.
type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startProc(tb testing.TB, bin, dir, name string, args ...string) *proc {
	tb.Helper()
	p := &proc{name: name, args: args, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(f, "== %s %s\n", bin, strings.Join(args, " "))
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// If the test binary dies, so do its servers.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill9 sends SIGKILL and waits for the process to be gone.
func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill9()
	}
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// waitLog waits (up to a minute) until the process's output holds
// substr; it fails when the process exits first.
func (p *proc) waitLog(tb testing.TB, substr string) {
	tb.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), substr) {
			return
		}
		if p.exited() {
			tb.Fatalf("%s exited: %v\n%s", p.name, p.err, p.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s did not say %q within a minute\n%s", p.name, substr, p.tail())
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitHTTP waits until the server at base answers.
func waitHTTP(tb testing.TB, base string, p *proc) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/buckets")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if p.exited() {
			tb.Fatalf("%s exited: %v\n%s", p.name, p.err, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("%s does not answer at %s within 60 s\n%s", p.name, base, p.tail())
}

// fleetBase is one of the QEMU oracle dumps of fixtures/fleet, made
// self-contained (its RAM file inlined as hex), with the bucket
// `faultline analyze --symbols` gives it.
type fleetBase struct {
	name    string
	version string // the build, as the dump's firmware version
	doc     map[string]any
	bucket  string
}

// loadFleet reads fixtures/fleet and asks `faultline analyze --symbols
// firmware-samples/buildid/build --summary --format json` (the CLI, on
// the original files) for each dump's bucket: what the server must
// find for every upload of it.
func loadFleet(tb testing.TB, bin string) (bases []*fleetBase, elfs []string) {
	tb.Helper()
	root := repoRoot(tb)
	fixDir := filepath.Join(root, "fixtures", "fleet")
	elfDir := filepath.Join(root, "firmware-samples", "buildid", "build")
	elfs, _ = filepath.Glob(filepath.Join(elfDir, "*.elf"))
	if len(elfs) == 0 {
		tb.Fatalf("no ELFs in %s", elfDir)
	}
	cmd := exec.Command(bin, "analyze", "--symbols", elfDir, fixDir, "--summary", "--format", "json")
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v", cmd, err)
	}
	var sum struct {
		Buckets []struct {
			ID    string   `json:"id"`
			Dumps []string `json:"dumps"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		tb.Fatalf("analyze --summary --format json: %v", err)
	}
	bucketOf := map[string]string{}
	for _, b := range sum.Buckets {
		for _, d := range b.Dumps {
			bucketOf[filepath.Base(d)] = b.ID
		}
	}
	files, _ := filepath.Glob(filepath.Join(fixDir, "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		mem, _ := doc["memory"].([]any)
		for _, m := range mem {
			r, _ := m.(map[string]any)
			if rel, ok := r["file"].(string); ok {
				data, err := os.ReadFile(filepath.Join(fixDir, rel))
				if err != nil {
					tb.Fatal(err)
				}
				delete(r, "file")
				r["hex"] = hex.EncodeToString(data)
			}
		}
		base := filepath.Base(f)
		if bucketOf[base] == "" {
			tb.Fatalf("analyze put %s in no bucket", base)
		}
		name := strings.TrimSuffix(base, ".json")
		version := name[:strings.LastIndex(name, "-")]
		bases = append(bases, &fleetBase{name: name, version: version, doc: doc, bucket: bucketOf[base]})
	}
	if len(bases) != 9 {
		tb.Fatalf("%d dumps in %s, want 9", len(bases), fixDir)
	}
	return bases, elfs
}

// variant is copy n of base: the same crash with 4 more bytes of memory
// (the number n, at 0x60000000, an address the firmware never uses), so
// its bytes, hence its id, differ from every other copy's while its
// analysis and bucket stay those of the base.
func (b *fleetBase) variant(n int) []byte {
	doc := map[string]any{}
	for k, v := range b.doc {
		doc[k] = v
	}
	mem, _ := b.doc["memory"].([]any)
	doc["memory"] = append(append([]any{}, mem...), map[string]any{"address": "0x60000000", "hex": fmt.Sprintf("%08x", n)})
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// upload is one dump to send.
type upload struct {
	body    []byte
	id      string
	device  string
	version string
	bucket  string
}

func makeUploads(bases []*fleetBase, n int) []upload {
	ups := make([]upload, n)
	for i := range ups {
		b := bases[i%len(bases)]
		body := b.variant(i)
		ups[i] = upload{body: body, id: sha256Hex(body), device: fmt.Sprintf("dev-%03d", i%97), version: b.version, bucket: b.bucket}
	}
	return ups
}

var client = &http.Client{Timeout: 60 * time.Second}

// post sends one body; it retries connection errors and 5xx answers
// (the server may be restarting) until deadline, and returns the time
// the successful request took.
func post(ctx context.Context, url string, body []byte, hdr map[string]string, want int) (time.Duration, []byte, error) {
	var last error
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("%s: %v (last: %v)", url, ctx.Err(), last)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			rb, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode == want && rerr == nil {
				return took, rb, nil
			}
			last = fmt.Errorf("status %d: %s", resp.StatusCode, rb)
			if resp.StatusCode < 500 {
				return 0, nil, fmt.Errorf("%s: %v", url, last)
			}
		} else {
			last = err
		}
		time.Sleep(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second))
	}
}

// uploadAll sends every dump from clients concurrent clients and returns
// each successful request's latency.
func uploadAll(ctx context.Context, base string, ups []upload, clients int) ([]time.Duration, error) {
	lat := make([]time.Duration, len(ups))
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := ups[i]
				took, rb, err := post(ctx, base+"/api/v1/dumps", u.body,
					map[string]string{"X-Faultline-Device": u.device, "X-Faultline-Version": u.version}, http.StatusAccepted)
				if err != nil {
					errs <- err
					return
				}
				var ans struct{ ID string }
				if err := json.Unmarshal(rb, &ans); err != nil || ans.ID != u.id {
					errs <- fmt.Errorf("upload %d: answer %s, want id %s", i, rb, u.id)
					return
				}
				lat[i] = took
			}
		}()
	}
	var err error
feed:
	for i := range ups {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return lat, err
}

func uploadELFs(ctx context.Context, base string, elfs []string) error {
	for _, e := range elfs {
		data, err := os.ReadFile(e)
		if err != nil {
			return err
		}
		if _, _, err := post(ctx, base+"/api/v1/symbols", data, map[string]string{"X-Faultline-Name": filepath.Base(e)}, http.StatusCreated); err != nil {
			return err
		}
	}
	return nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// queueState counts the dumps by status and the jobs left.
func queueState(ctx context.Context, s *Store) (map[string]int, int, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM dumps GROUP BY status`)
	if err != nil {
		return nil, 0, err
	}
	byStatus := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, 0, err
		}
		byStatus[st] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	jobs, err := s.QueueLength(ctx)
	return byStatus, jobs, err
}

// waitDecoded waits until want dumps are decoded and no job is left; it
// gives up when nothing changed for a minute (work lost: a job nobody
// will take, a dump without a job).
func waitDecoded(ctx context.Context, s *Store, want int, procs []*proc) error {
	last, since := "", time.Now()
	for {
		by, jobs, err := queueState(ctx, s)
		if err != nil {
			return err
		}
		if by["decoded"] == want && jobs == 0 {
			return nil
		}
		if now := fmt.Sprint(by, jobs); now != last {
			last, since = now, time.Now()
		} else if time.Since(since) > time.Minute {
			return fmt.Errorf("no progress for a minute: dumps %v, %d jobs left, want %d decoded", by, jobs, want)
		}
		if by["failed"] > 0 {
			return fmt.Errorf("%d dumps failed: %v", by["failed"], by)
		}
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not all decoded: %v, %d jobs left: %w", by, jobs, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func envInt(name string) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0
	}
	return v
}

// waitDecodedAPI waits until the server's buckets count want dumps (a
// server whose database this test cannot read: SQLite).
func waitDecodedAPI(ctx context.Context, base string, want int, procs []*proc) error {
	last, since := -1, time.Now()
	for {
		resp, err := http.Get(base + "/api/v1/buckets")
		if err != nil {
			return err
		}
		var bs struct{ Buckets []struct{ Count int } }
		err = json.NewDecoder(resp.Body).Decode(&bs)
		resp.Body.Close()
		if err != nil {
			return err
		}
		got := 0
		for _, b := range bs.Buckets {
			got += b.Count
		}
		if got == want {
			return nil
		}
		if got != last {
			last, since = got, time.Now()
		} else if time.Since(since) > time.Minute {
			return fmt.Errorf("no progress for a minute: %d of %d dumps decoded", got, want)
		}
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d decoded: %w", got, want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
