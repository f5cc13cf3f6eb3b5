package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
)

// BenchmarkFleetPostgres is the scale-out set-up under load: 10,000
// distinct dump uploads (the nine QEMU oracle dumps of fixtures/fleet,
// self-contained, 34 KB each, in 10,000 copies that differ by four bytes
// of memory) from 8 concurrent HTTP clients to one `faultline serve --db
// postgres://... --workers 0` process, decoded by three `faultline serve
// --worker` processes (each with --workers 2) on the same PostgreSQL,
// everything on this machine. The ELFs are uploaded first. It reports
// the upload rate (uploads/s), the upload latency (p50-ms, p99-ms: the
// time from sending a request to reading its 202), and the rate at which
// dumps end decoded (decoded/s: uploads divided by the time from the first
// upload to the last dump decoded). Run it once:
//
//	go test -run '^$' -bench FleetPostgres -benchtime 1x ./fleet/store/postgres
//
// FAULTLINE_BENCH_UPLOADS overrides the 10,000.
func BenchmarkFleetPostgres(b *testing.B) {
	n := 10000
	if v := envInt("FAULTLINE_BENCH_UPLOADS"); v > 0 {
		n = v
	}
	dir := b.TempDir()
	bin := buildFaultline(b, dir)
	bases, elfs := loadFleet(b, bin)
	ups := makeUploads(bases, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dsn := pgtest.DSN(b)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		st, err := Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		addr := freePort(b)
		base := "http://" + addr
		srv := startProc(b, bin, dir, fmt.Sprintf("bench-server-%d", i), "serve", "--db", dsn, "--listen", addr, "--workers", "0")
		waitHTTP(b, base, srv)
		var workers []*proc
		for w := range 3 {
			workers = append(workers, startProc(b, bin, dir, fmt.Sprintf("bench-worker-%d-%d", i, w), "serve", "--worker", "--db", dsn, "--workers", "2"))
		}
		if err := uploadELFs(ctx, base, elfs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		lat, err := uploadAll(ctx, base, ups, 8)
		if err != nil {
			b.Fatal(err)
		}
		uploaded := time.Since(start)
		if err := waitDecoded(ctx, st, n, append([]*proc{srv}, workers...)); err != nil {
			b.Fatal(err)
		}
		decoded := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(n)/uploaded.Seconds(), "uploads/s")
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(n)/decoded.Seconds(), "decoded/s")
		for _, w := range workers {
			w.stop()
		}
		srv.stop()
		st.Close()
		cancel()
	}
}
