package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
)

// TestKillWorkers runs the crash server as it scales out: one `faultline
// serve --db postgres://... --workers 0` process takes the uploads and
// three `faultline serve --worker --db postgres://...` processes decode
// them from the shared queue. While 8 clients upload, a worker is killed
// with SIGKILL in the middle of a decode (all workers frozen with SIGSTOP
// at a random moment until one holds a leased job; twice, a new worker
// started in its place each time), and the server itself is killed once
// mid-upload and started again.
// Every dump must end decoded exactly once: as many dump rows as
// distinct uploads, each decoded into the bucket `faultline analyze
// --symbols` gives its original, bucket counts adding up to the uploads,
// no job left. A third of the dumps arrive before any ELF, so they wait
// for symbols and are woken by the ELF uploads while workers run.
func TestKillWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	bin := buildFaultline(t, dir)
	bases, elfs := loadFleet(t, bin)
	n := 900
	if testing.Short() {
		n = 180
	}
	ups := makeUploads(bases, n)
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	addr := freePort(t)
	base := "http://" + addr
	serverArgs := []string{"serve", "--db", dsn, "--listen", addr, "--workers", "0"}
	srv := startProc(t, bin, dir, "server", serverArgs...)
	defer func() { srv.stop() }()
	waitHTTP(t, base, srv)

	workerArgs := []string{"serve", "--worker", "--db", dsn, "--workers", "2", "--lease", "2s"}
	var workers []*proc
	seq := 0
	startWorker := func() *proc {
		seq++
		w := startProc(t, bin, dir, fmt.Sprintf("worker%d", seq), workerArgs...)
		w.waitLog(t, "decoding from PostgreSQL")
		return w
	}
	for range 3 {
		workers = append(workers, startWorker())
	}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()

	// A third before any ELF: they wait for symbols.
	third := n / 3
	if _, err := uploadAll(ctx, base, ups[:third], 8); err != nil {
		t.Fatal(err)
	}
	if err := uploadELFs(ctx, base, elfs); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := uploadAll(ctx, base, ups[third:], 8)
		done <- err
	}()

	// A worker, frozen mid-decode: all workers are stopped (SIGSTOP) at
	// a random moment until one of them is caught holding a leased job,
	// which is then killed (SIGKILL) before it can move on; the others
	// go on (SIGCONT) and a new worker takes its place.
	killedLeased := 0
	killWorker := func() {
		t.Helper()
		for attempt := 0; attempt < 1000; attempt++ {
			for _, w := range workers {
				w.signal(syscall.SIGSTOP)
			}
			var holders []int
			held := map[int]int{}
			for i, w := range workers {
				var k int
				if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE leased AND worker LIKE $1`,
					"%-"+strconv.Itoa(w.pid())+"-%").Scan(&k); err != nil {
					t.Fatal(err)
				}
				if k > 0 {
					holders = append(holders, i)
					held[i] = k
				}
			}
			if len(holders) > 0 {
				i := holders[rand.IntN(len(holders))]
				victim := workers[i]
				victim.kill9()
				for _, w := range workers {
					w.signal(syscall.SIGCONT)
				}
				t.Logf("kill -9 %s (pid %d) frozen with %d leased jobs", victim.name, victim.pid(), held[i])
				killedLeased += held[i]
				workers[i] = startWorker()
				return
			}
			for _, w := range workers {
				w.signal(syscall.SIGCONT)
			}
			var jobs int
			if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&jobs); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				if jobs == 0 {
					t.Fatal("all the work was done before a worker could be killed mid-decode")
				}
				done <- nil
			default:
			}
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		}
		t.Fatal("no worker was caught holding a job in 1000 tries")
	}
	killWorker()

	// The server, mid-upload: clients retry until it is back.
	for {
		var stored int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM dumps`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored >= third+(n-third)/3 {
			srv.kill9()
			if stored >= n {
				t.Fatalf("every upload was in before the server was killed: the test killed nothing mid-upload")
			}
			t.Logf("kill -9 server with %d of %d dumps stored", stored, n)
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	srv = startProc(t, bin, dir, "server", serverArgs...)
	waitHTTP(t, base, srv)
	killWorker()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitDecoded(ctx, st, n, append([]*proc{srv}, workers...)); err != nil {
		t.Fatal(err)
	}

	// Exactly once: one row per distinct upload, each decoded into its
	// original's bucket.
	ds, err := st.Dumps(ctx, store.DumpQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != n {
		t.Fatalf("%d dumps stored, want %d", len(ds), n)
	}
	want := map[string]int{}
	for _, u := range ups {
		want[u.bucket]++
		d, err := st.Dump(ctx, u.id)
		if err != nil {
			t.Fatalf("upload %s: %v", u.id, err)
		}
		if d.Status != store.StatusDecoded || d.Bucket != u.bucket || d.Device != u.device || d.Version != u.version {
			t.Fatalf("dump %s: status %s bucket %s device %q version %q, want decoded into %s from %q %q (error %q)",
				u.id, d.Status, d.Bucket, d.Device, d.Version, u.bucket, u.device, u.version, d.Error)
		}
		var a struct{ Schema string }
		if err := json.Unmarshal(d.Analysis, &a); err != nil || a.Schema != "faultline.analysis/1" {
			t.Fatalf("dump %s: analysis is not faultline.analysis/1 (%v)", u.id, err)
		}
	}
	// The API's buckets add up to the uploads.
	resp, err := http.Get(base + "/api/v1/buckets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var bs struct {
		Buckets []struct {
			Signature string
			Count     int
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&bs); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, b := range bs.Buckets {
		got[b.Signature] = b.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bucket counts %v, want %v", got, want)
	}
	t.Logf("%d dumps in %d buckets, each decoded once; %d jobs were leased to killed workers", n, len(got), killedLeased)
}
