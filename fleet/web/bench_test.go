package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/sqlite"
	"github.com/faultline-dev/faultline/fleet/web"
)

// benchDumps is the size of the fleet BenchmarkPages draws the pages of:
// the 10,000 uploads of the benchmark, all decoded, over 30
// days, 40 buckets, 200 devices and 8 versions (the SQLite store).
const benchDumps = 10000

// BenchmarkPages times the pages a user opens first over a store of
// benchDumps decoded dumps: the bucket list, the list filtered by a
// version, the biggest bucket's page and a dump's page. The store is
// filled through its API (upload, claim, complete) once.
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "fleet.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	start := time.Now()
	for i := range benchDumps {
		sum := sha256.Sum256(fmt.Appendf(nil, "dump %d", i))
		id := hex.EncodeToString(sum[:])
		// Bucket k gets dumps in proportion to 1/(k+1): a few big
		// buckets and a long tail, as crash fleets have.
		k := 0
		for r := i % 100; r > 100/(k+2) && k < 39; k++ {
			r -= 100 / (k + 2)
		}
		recv := now.Add(-time.Duration(i%(30*24)) * time.Hour)
		if _, _, err := st.AddDump(ctx, store.NewDump{ID: id, SHA256: id, Size: 20000, Format: "crashcatcher",
			Device: fmt.Sprintf("sensor-%03d", i%200), Version: fmt.Sprintf("1.%d", i%8), Received: recv}); err != nil {
			b.Fatal(err)
		}
		job, ok, err := st.Claim(ctx, "bench", now, time.Minute)
		if err != nil || !ok {
			b.Fatalf("claim: %v %v", ok, err)
		}
		sig := fmt.Sprintf("%012x", k)
		if _, err := st.Complete(ctx, job.ID, store.Result{Status: store.StatusDecoded, ELF: id,
			Bucket:   store.BucketInfo{Signature: sig, Title: fmt.Sprintf("HardFault in function_%d: CFSR.DACCVIOL, HFSR.FORCED", k), Key: "v2|" + sig},
			Analysis: []byte(`{"fault":{"exception":"HardFault"},"frames":[{"index":0,"pc":"0x08000100","function":"f","kind":"normal"}]}`)}, now); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("filled the store with %d decoded dumps in %v", benchDumps, time.Since(start).Round(time.Millisecond))
	pages, err := web.New(web.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(pages)
	defer srv.Close()
	one, err := st.Dumps(ctx, store.DumpQuery{Limit: 1})
	if err != nil || len(one) == 0 {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, path string }{
		{"list", "/"},
		{"list-version", "/?version=1.3"},
		{"bucket", "/buckets/000000000000"},
		{"dump", "/dumps/" + one[0].ID},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Get(srv.URL + p.path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s", p.path, resp.Status)
				}
				b.SetBytes(n)
			}
		})
	}
}
