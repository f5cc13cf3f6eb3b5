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
	benchFleet(b, func(b *testing.B) (dsn string, server []string, workers [][]string) {
		dsn = pgtest.DSN(b)
		w := []string{"serve", "--worker", "--db", dsn, "--workers", "2"}
		return dsn, []string{"serve", "--db", dsn, "--workers", "0"}, [][]string{w, w, w}
	})
}

// BenchmarkFleetSQLite is the same load on the one-machine set-up, the
// baseline: one `faultline serve --data DIR --workers 2` process (its
// SQLite database and files in DIR) takes the uploads and decodes them.
//
//	go test -run '^$' -bench FleetSQLite -benchtime 1x ./fleet/store/postgres
func BenchmarkFleetSQLite(b *testing.B) {
	benchFleet(b, func(b *testing.B) (string, []string, [][]string) {
		return "", []string{"serve", "--data", b.TempDir(), "--workers", "2"}, nil
	})
}

// benchFleet runs the load against the processes setup gives: the server's
// arguments (--listen is added) and each worker process's. dsn, when not
// "", is the PostgreSQL database to watch; else the server's API is.
func benchFleet(b *testing.B, setup func(b *testing.B) (dsn string, server []string, workers [][]string)) {
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
		dsn, serverArgs, workerArgs := setup(b)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		addr := freePort(b)
		base := "http://" + addr
		srv := startProc(b, bin, dir, fmt.Sprintf("bench-server-%d", i), append(serverArgs, "--listen", addr)...)
		waitHTTP(b, base, srv)
		procs := []*proc{srv}
		for w, args := range workerArgs {
			procs = append(procs, startProc(b, bin, dir, fmt.Sprintf("bench-worker-%d-%d", i, w), args...))
		}
		var st *Store
		if dsn != "" {
			var err error
			if st, err = Open(ctx, dsn); err != nil {
				b.Fatal(err)
			}
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
		if st != nil {
			err = waitDecoded(ctx, st, n, procs)
		} else {
			err = waitDecodedAPI(ctx, base, n, procs)
		}
		if err != nil {
			b.Fatal(err)
		}
		decoded := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(n)/uploaded.Seconds(), "uploads/s")
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(n)/decoded.Seconds(), "decoded/s")
		for _, p := range procs[1:] {
			p.stop()
		}
		srv.stop()
		if st != nil {
			st.Close()
		}
		cancel()
	}
}
