package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/storetest"
	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestConformance holds the PostgreSQL store to the behaviour of every
// store (fleet/store/storetest), on a real server: each subtest gets its
// own empty database.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestOpenConcurrently: processes starting together against an empty
// database (a server and its workers) all create the schema without
// tripping over each other's CREATE TABLE IF NOT EXISTS.
func TestOpenConcurrently(t *testing.T) {
	dsn := pgtest.DSN(t)
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := Open(context.Background(), dsn)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitingRacesELFUpload: a worker's "no ELF matches" answer and the
// upload of the matching ELF run at the same moment, many times over.
// Whichever commits first, the dump must not be left waiting while its
// ELF is there.
func TestWaitingRacesELFUpload(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const rounds = 150
	stranded := 0
	for i := range rounds {
		buildID := fmt.Sprintf("b%04d", i)
		id := fmt.Sprintf("race%04d", i)
		if _, _, err := s.AddDump(ctx, store.NewDump{ID: id, SHA256: fmt.Sprintf("%064x", i), BuildID: buildID, Format: "native", Received: storetest.T0}); err != nil {
			t.Fatal(err)
		}
		j, ok, err := s.Claim(ctx, "w", storetest.T0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim: ok=%v err=%v", ok, err)
		}
		syms, err := s.Symbols(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var seen int64
		if len(syms) > 0 {
			seen = syms[0].Seq
		}
		start := make(chan struct{})
		errs := make(chan error, 2)
		go func() {
			<-start
			_, err := s.Complete(ctx, j.ID, store.Result{Status: store.StatusWaiting, SymbolSeq: seen}, storetest.T0)
			errs <- err
		}()
		go func() {
			<-start
			_, _, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: fmt.Sprintf("%064x", 1<<20+i), BuildID: buildID, Received: storetest.T0})
			errs <- err
		}()
		close(start)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		d, err := s.Dump(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == store.StatusWaiting {
			stranded++
			continue
		}
		// Drain the dump's job so the next round claims its own.
		j2, ok, err := s.Claim(ctx, "w", storetest.T0, time.Minute)
		if err != nil || !ok || j2.DumpID != id {
			t.Fatalf("round %d: dump %s is %s but its job is not ready (ok=%v err=%v job=%+v)", i, id, d.Status, ok, err, j2)
		}
		if _, err := s.Complete(ctx, j2.ID, store.Result{Status: store.StatusDecoded, Bucket: store.BucketInfo{Signature: "sig", Title: "t", Key: "k"}}, storetest.T0); err != nil {
			t.Fatal(err)
		}
	}
	if stranded > 0 {
		t.Fatalf("%d of %d dumps left waiting for symbols although their ELF was uploaded", stranded, rounds)
	}
}

// TestOpenBesideBusyWorkers: a process that starts (Open) while others
// claim, complete and requeue jobs on the same database must neither
// fail nor make them fail (DDL on a busy table takes locks that
// deadlock with row updates). Several reapers run at once, as every
// worker process has one.
func TestOpenBesideBusyWorkers(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const dumps = 400
	for i := range dumps {
		if _, _, err := s.AddDump(ctx, store.NewDump{ID: fmt.Sprintf("busy%04d", i), SHA256: fmt.Sprintf("%064x", i), Format: "native", Received: storetest.T0}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() { // a worker whose jobs mostly expire: claims pile up for the reapers
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				now := time.Now()
				j, ok, err := s.Claim(ctx, fmt.Sprintf("w%d", w), now, time.Millisecond)
				if err != nil {
					errs <- err
					return
				}
				if ok && n%2 == 0 {
					if _, err := s.Complete(ctx, j.ID, store.Result{Status: store.StatusDecoded,
						Bucket: store.BucketInfo{Signature: "s", Title: "t", Key: "k"}}, now); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
		go func() { // its process's reaper
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.RequeueExpired(ctx, time.Now()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 15 {
		o, err := Open(ctx, dsn)
		if err != nil {
			errs <- err
			break
		}
		o.Close()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A deadlock that a retry hid still counts: PostgreSQL's statistics
	// (flushed by each backend within a second) must show none.
	s.Close()
	time.Sleep(1500 * time.Millisecond)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var deadlocks int64
	if err := conn.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&deadlocks); err != nil {
		t.Fatal(err)
	}
	if deadlocks != 0 {
		t.Errorf("PostgreSQL detected %d deadlocks", deadlocks)
	}
}
