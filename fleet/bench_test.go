package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet"
	"github.com/faultline-dev/faultline/fleet/client"
	"github.com/faultline-dev/faultline/fleet/store"
)

const repo = ".."

// BenchmarkUploads10k is issue 26's load check for the SQLite set-up:
// one `serve` (in-process, over real loopback TCP, its workers on every
// CPU) receives 10,000 distinct dumps from 8 concurrent clients, and
// every one of them is decoded. It reports the upload rate, the p50 and
// p99 upload latency (the client's view: request sent to 202 read), and
// the rate of the whole run (first upload to last dump decoded).
//
//	go test -run '^$' -bench Uploads10k -benchtime 1x ./fleet
//
// Each dump is fixtures/fleet/gcc-m3-O2-div0 (self-contained, 35 KB)
// with a different r12, so no two have the same bytes, all fall into one
// bucket, and all are decoded with the ELF of their build ID.
func BenchmarkUploads10k(b *testing.B) {
	const (
		uploads = 10000
		clients = 8
	)
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/fleet/gcc-m3-O2-div0.json"))
	if err != nil {
		b.Fatal(err)
	}
	var base bytes.Buffer
	if err := d.WriteSelfContained(&base); err != nil {
		b.Fatal(err)
	}
	d.Close()
	const reg = `"r12": "0x0000001c"`
	if bytes.Count(base.Bytes(), []byte(reg)) != 1 {
		b.Fatalf("the dump does not hold %s once", reg)
	}
	i := bytes.Index(base.Bytes(), []byte(reg))
	head, tail := base.Bytes()[:i], base.Bytes()[i+len(reg):]
	body := func(n int) []byte {
		var out bytes.Buffer
		out.Grow(base.Len())
		out.Write(head)
		fmt.Fprintf(&out, `"r12": "0x%08x"`, n)
		out.Write(tail)
		return out.Bytes()
	}
	elf, err := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	if err != nil {
		b.Fatal(err)
	}
	workers := runtime.NumCPU()
	for range b.N {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		in, err := fleet.Open(ctx, fleet.Config{Data: b.TempDir(), Workers: workers, Poll: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(in.Handler)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.RunWorkers(ctx)
		}()
		cl, _ := client.New(srv.URL, "")
		if _, err := cl.UploadSymbol(ctx, elf, "gcc-m3-O2.elf"); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, uploads)
		var next atomic.Int64
		var failed atomic.Int64
		b.StartTimer()
		start := time.Now()
		var up sync.WaitGroup
		for c := range clients {
			up.Add(1)
			go func() {
				defer up.Done()
				cl, _ := client.New(srv.URL, "")
				for {
					n := int(next.Add(1)) - 1
					if n >= uploads {
						return
					}
					data := body(n)
					t0 := time.Now()
					if _, err := cl.UploadDump(ctx, data, "", fmt.Sprintf("dev-%d", c), "1.0"); err != nil {
						failed.Add(1)
						b.Errorf("upload %d: %v", n, err)
						continue
					}
					lat[n] = time.Since(t0)
				}
			}()
		}
		up.Wait()
		uploaded := time.Since(start)
		// Then until every dump is decoded.
		for {
			n, err := in.Store.QueueLength(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		total := time.Since(start)
		b.StopTimer()
		bs, err := in.Store.Buckets(ctx, store.BucketFilter{})
		if err != nil {
			b.Fatal(err)
		}
		decoded := 0
		for _, bk := range bs {
			decoded += bk.Count
		}
		if decoded != uploads || len(bs) != 1 || failed.Load() != 0 {
			b.Fatalf("%d of %d dumps decoded in %d buckets (%d uploads failed)", decoded, uploads, len(bs), failed.Load())
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(uploads)/uploaded.Seconds(), "uploads/s")
		b.ReportMetric(float64(lat[uploads/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[uploads*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(uploads)/total.Seconds(), "decoded/s")
		b.ReportMetric(float64(workers), "workers")
		srv.Close()
		cancel()
		wg.Wait()
		in.Close()
	}
}
