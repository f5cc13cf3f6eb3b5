package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/storetest"
	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
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
