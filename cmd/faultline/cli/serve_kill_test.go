package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/client"
)

// TestServeKill9SQLite: `faultline serve --data DIR` (SQLite) killed with
// SIGKILL three times while 4 clients upload and its workers
// decode, then started again on the same directory, loses no upload the
// server acknowledged (202) and leaves no dump half-decoded: once the
// leases of the killed workers end, every dump is decoded, each counted
// once in its bucket.
func TestServeKill9SQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it three times")
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "./cmd/faultline")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data := t.TempDir()
	var mu sync.Mutex
	var serve *exec.Cmd
	start := func() {
		cmd := exec.Command(bin, "serve", "--data", data, "--listen", addr, "--workers", "2", "--lease", "2s")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		serve = cmd
		mu.Unlock()
	}
	start()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		serve.Process.Kill()
		serve.Wait()
	})

	// 240 distinct dumps: one crash with a different r12 each.
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/fleet/gcc-m3-O2-div0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var base bytes.Buffer
	if err := d.WriteSelfContained(&base); err != nil {
		t.Fatal(err)
	}
	d.Close()
	const reg = `"r12": "0x0000001c"`
	if bytes.Count(base.Bytes(), []byte(reg)) != 1 {
		t.Fatalf("the dump does not hold %s once", reg)
	}
	body := func(n int) []byte {
		return bytes.Replace(base.Bytes(), []byte(reg), []byte(fmt.Sprintf(`"r12": "0x%08x"`, n)), 1)
	}
	newClient := func() *client.Client {
		c, _ := client.New("http://"+addr, "")
		c.Attempts, c.Backoff = 60, 50*time.Millisecond
		return c
	}
	ctx := context.Background()
	elf, _ := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	if _, err := newClient().UploadSymbol(ctx, elf, "gcc-m3-O2.elf"); err != nil {
		t.Fatal(err)
	}

	const uploads, clients = 400, 4
	ids := make([]string, uploads)
	var acked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, uploads)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient()
			for n := c; n < uploads; n += clients {
				u, err := cl.UploadDump(ctx, body(n), "", fmt.Sprintf("dev-%d", c), "1")
				if err != nil {
					errs <- fmt.Errorf("upload %d: %w", n, err)
					continue
				}
				ids[n] = u.ID
				acked.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// Kill it when a quarter, a half and three quarters of the uploads
	// are acknowledged, with uploads arriving and dumps being decoded.
	kills := 0
	for kills < 3 {
		for acked.Load() < int64((kills+1)*uploads/4) {
			time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond)
		}
		mu.Lock()
		serve.Process.Signal(syscall.SIGKILL)
		serve.Wait()
		mu.Unlock()
		kills++
		t.Logf("kill %d: %d uploads acknowledged", kills, acked.Load())
		start()
	}
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	cl := newClient()
	deadline := time.Now().Add(90 * time.Second)
	for n := 0; n < uploads; {
		dj, err := cl.Dump(ctx, ids[n])
		if err != nil {
			t.Fatalf("dump %d (%s), acknowledged before a kill: %v", n, ids[n], err)
		}
		switch {
		case dj.Status == "decoded" && dj.Bucket != "" && len(dj.Analysis) > 10:
			n++
			continue
		case dj.Status != "queued":
			t.Fatalf("dump %d: %s (%s)", n, dj.Status, dj.Error)
		case time.Now().After(deadline):
			t.Fatalf("dump %d still queued 90 s after the last kill (its lease is 2 s)", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	bs, err := cl.Buckets(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Count != uploads {
		t.Fatalf("buckets after %d kills: %+v, want one of %d dumps", kills, bs, uploads)
	}
	t.Logf("%d uploads from %d clients, the server killed %d times: all decoded, counted once", uploads, clients, kills)
}
