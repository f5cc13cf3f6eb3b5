package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "fleet.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestReopen checks that what was committed survives closing the
// database, leased jobs included (their lease still runs).
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fleet.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := storetest.T0
	for _, id := range []string{"a", "b"} {
		if _, _, err := s.AddDump(ctx, store.NewDump{ID: id, SHA256: id, Received: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.Claim(ctx, "w", t0, time.Minute); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.QueueLength(ctx); err != nil || n != 2 {
		t.Fatalf("QueueLength after reopen = %d, %v; want 2", n, err)
	}
	j, ok, err := s.Claim(ctx, "w", t0, time.Minute)
	if err != nil || !ok || j.DumpID != "b" {
		t.Fatalf("claim after reopen = %+v %v %v, want b (a is still leased)", j, ok, err)
	}
	if n, _ := s.RequeueExpired(ctx, t0.Add(time.Hour)); n != 2 {
		t.Fatalf("RequeueExpired = %d, want 2", n)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), ""); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "missing", "dir", "fleet.db")); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}
