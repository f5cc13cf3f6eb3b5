// Package storetest is the conformance suite of fleet/store: every
// backend's tests call Run with a constructor of empty stores, so the
// SQLite and PostgreSQL backends are held to one behaviour.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
)

// NewStore returns an empty store; the suite closes it. It may call
// t.Skip (no database server available).
type NewStore func(t *testing.T) store.Store

// T0 is the suite's "now": a fixed UTC time well away from a day
// boundary.
var T0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// Run runs every conformance test against stores from newStore.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		f    func(*testing.T, store.Store)
	}{
		{"Symbols", testSymbols},
		{"AddDumpIdempotent", testAddDumpIdempotent},
		{"ClaimComplete", testClaimComplete},
		{"LeaseExpiry", testLeaseExpiry},
		{"WaitingWokenByELF", testWaitingWoken},
		{"ELFDuringDecode", testELFDuringDecode},
		{"Failed", testFailed},
		{"Provisional", testProvisional},
		{"Buckets", testBuckets},
		{"BucketFilters", testBucketFilters},
		{"DumpsQuery", testDumpsQuery},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ConcurrentUploads", testConcurrentUploads},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tc.f(t, s)
		})
	}
}

func sha(n int) string { return fmt.Sprintf("%064x", n) }

func newDump(i int, buildID, device, version string, at time.Time) store.NewDump {
	return store.NewDump{ID: fmt.Sprintf("d%04d", i), SHA256: sha(1000 + i), Size: int64(100 + i), Format: "native",
		BuildID: buildID, Device: device, Version: version, Received: at}
}

// result carries a (value, error) pair to a test: must(f()).ok(t).
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func add(t *testing.T, s store.Store, n store.NewDump) store.Dump {
	t.Helper()
	d, created, err := s.AddDump(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("AddDump(%s): created = false for a new dump", n.ID)
	}
	return d
}

func claim(t *testing.T, s store.Store, worker string, now time.Time) store.Job {
	t.Helper()
	j, ok, err := s.Claim(context.Background(), worker, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("Claim by %s: no job ready", worker)
	}
	return j
}

func noJob(t *testing.T, s store.Store, now time.Time) {
	t.Helper()
	j, ok, err := s.Claim(context.Background(), "w-check", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("Claim: got job %d for dump %s, want none ready", j.ID, j.DumpID)
	}
}

func complete(t *testing.T, s store.Store, id int64, r store.Result, now time.Time) bool {
	t.Helper()
	applied, err := s.Complete(context.Background(), id, r, now)
	if err != nil {
		t.Fatal(err)
	}
	return applied
}

func decoded(sig string) store.Result {
	return store.Result{Status: store.StatusDecoded, ELF: sha(1),
		Bucket:   store.BucketInfo{Signature: sig, Title: "HardFault in " + sig, Key: "v2|HardFault||" + sig + "|"},
		Analysis: []byte(`{"schema":"faultline.analysis/1","dump":"` + sig + `"}`)}
}

func status(t *testing.T, s store.Store, id string) store.Dump {
	t.Helper()
	return must(s.Dump(context.Background(), id)).ok(t)
}

func testSymbols(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := store.Symbol{SHA256: sha(1), BuildID: "aa11", Size: 10, Name: "fw.elf", Received: T0}
	got, created, woken, err := s.PutSymbol(ctx, a)
	if err != nil || !created || woken != 0 {
		t.Fatalf("PutSymbol: created=%v woken=%d err=%v, want created, none woken", created, woken, err)
	}
	if got.Seq <= 0 || got.SHA256 != a.SHA256 || got.BuildID != "aa11" || got.Size != 10 || got.Name != "fw.elf" || !got.Received.Equal(T0) {
		t.Fatalf("PutSymbol stored %+v", got)
	}
	again, created, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(1), BuildID: "aa11", Size: 10, Name: "other.elf", Received: T0.Add(time.Hour)})
	if err != nil || created {
		t.Fatalf("PutSymbol of the same bytes: created=%v err=%v, want the stored one", created, err)
	}
	if again.Seq != got.Seq || again.Name != "fw.elf" || !again.Received.Equal(T0) {
		t.Fatalf("PutSymbol of the same bytes changed the symbol: %+v, was %+v", again, got)
	}
	b := must(func() (store.Symbol, error) {
		y, _, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(2), BuildID: "aa11", Size: 20, Received: T0.Add(time.Minute)})
		return y, err
	}()).ok(t)
	c := must(func() (store.Symbol, error) {
		y, _, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(3), Size: 30, Received: T0.Add(2 * time.Minute)})
		return y, err
	}()).ok(t)
	if !(got.Seq < b.Seq && b.Seq < c.Seq) {
		t.Fatalf("Seq not increasing in arrival order: %d %d %d", got.Seq, b.Seq, c.Seq)
	}
	all := must(s.Symbols(ctx)).ok(t)
	if len(all) != 3 || all[0].SHA256 != sha(3) || all[2].SHA256 != sha(1) {
		t.Fatalf("Symbols = %+v, want 3 newest first", all)
	}
	byID := must(s.SymbolsByBuildID(ctx, "aa11")).ok(t)
	if len(byID) != 2 || byID[0].SHA256 != sha(1) || byID[1].SHA256 != sha(2) {
		t.Fatalf("SymbolsByBuildID(aa11) = %+v, want sha 1 then 2", byID)
	}
	if none := must(s.SymbolsByBuildID(ctx, "ffff")).ok(t); len(none) != 0 {
		t.Fatalf("SymbolsByBuildID(ffff) = %+v, want none", none)
	}
}

func testAddDumpIdempotent(t *testing.T, s store.Store) {
	ctx := context.Background()
	n := newDump(1, "aa11", "dev-1", "1.0", T0)
	d := add(t, s, n)
	if d.ID != n.ID || d.Status != store.StatusQueued || d.Device != "dev-1" || d.Version != "1.0" || d.BuildID != "aa11" ||
		d.Format != "native" || d.SHA256 != n.SHA256 || d.Size != n.Size || !d.Received.Equal(T0) || d.Bucket != "" || d.Analysis != nil {
		t.Fatalf("AddDump stored %+v", d)
	}
	n2 := n
	n2.Device, n2.Version, n2.Received = "dev-2", "2.0", T0.Add(time.Hour)
	again, created, err := s.AddDump(ctx, n2)
	if err != nil || created {
		t.Fatalf("AddDump of the same id again: created=%v err=%v", created, err)
	}
	if again.Device != "dev-1" || again.Version != "1.0" || !again.Received.Equal(T0) {
		t.Fatalf("AddDump again changed the first metadata: %+v", again)
	}
	if n := must(s.QueueLength(ctx)).ok(t); n != 1 {
		t.Fatalf("QueueLength = %d after one dump uploaded twice, want 1", n)
	}
	_, err = s.Dump(ctx, "nope")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Dump(unknown) error = %v, want ErrNotFound", err)
	}
	_, err = s.Bucket(ctx, "nope", store.BucketFilter{Now: T0})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Bucket(unknown) error = %v, want ErrNotFound", err)
	}
}

func testClaimComplete(t *testing.T, s store.Store) {
	ctx := context.Background()
	noJob(t, s, T0)
	add(t, s, newDump(1, "", "", "", T0))
	add(t, s, newDump(2, "", "", "", T0.Add(time.Second)))
	j1 := claim(t, s, "w1", T0)
	if j1.DumpID != "d0001" || j1.Attempts != 1 || j1.Worker != "w1" || !j1.LeaseUntil.Equal(T0.Add(time.Minute)) {
		t.Fatalf("first claim = %+v, want d0001 (oldest), attempt 1, leased to w1 for a minute", j1)
	}
	j2 := claim(t, s, "w2", T0)
	if j2.DumpID != "d0002" || j2.ID == j1.ID {
		t.Fatalf("second claim = %+v, want d0002", j2)
	}
	noJob(t, s, T0)
	if d := status(t, s, "d0001"); d.Status != store.StatusQueued {
		t.Fatalf("a claimed dump is %s, want queued until completed", d.Status)
	}
	r := decoded("sig1")
	if !complete(t, s, j1.ID, r, T0.Add(2*time.Second)) {
		t.Fatal("Complete: applied = false for a leased job")
	}
	d := status(t, s, "d0001")
	if d.Status != store.StatusDecoded || d.Bucket != "sig1" || d.ELF != sha(1) || string(d.Analysis) != string(r.Analysis) ||
		d.Error != "" || !d.Updated.Equal(T0.Add(2*time.Second)) {
		t.Fatalf("after Complete the dump is %+v", d)
	}
	// At-least-once: the same completion again changes nothing.
	if complete(t, s, j1.ID, decoded("other"), T0.Add(3*time.Second)) {
		t.Fatal("Complete of a completed job: applied = true")
	}
	if d := status(t, s, "d0001"); d.Bucket != "sig1" {
		t.Fatalf("a second Complete changed the bucket to %q", d.Bucket)
	}
	if n := must(s.QueueLength(ctx)).ok(t); n != 1 {
		t.Fatalf("QueueLength = %d, want 1 (job 2 still leased)", n)
	}
	if _, err := s.Complete(ctx, j2.ID, store.Result{Status: store.StatusDecoded}, T0); err == nil {
		t.Fatal("Complete accepted a decoded result without a bucket")
	}
	if _, err := s.Complete(ctx, j2.ID, store.Result{Status: store.StatusQueued}, T0); err == nil {
		t.Fatal("Complete accepted a result with status queued")
	}
	if d := status(t, s, "d0002"); d.Status != store.StatusQueued {
		t.Fatalf("a refused Complete changed the dump: %+v", d)
	}
	complete(t, s, j2.ID, decoded("sig1"), T0.Add(3*time.Second))
	if n := must(s.QueueLength(ctx)).ok(t); n != 0 {
		t.Fatalf("QueueLength = %d, want 0", n)
	}
	b := must(s.Bucket(ctx, "sig1", store.BucketFilter{Now: T0})).ok(t)
	if b.Count != 2 || b.Title != "HardFault in sig1" || b.Key != "v2|HardFault||sig1|" {
		t.Fatalf("bucket after two completions (one repeated) = %+v, want count 2", b)
	}
}

func testLeaseExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	add(t, s, newDump(1, "", "", "", T0))
	j := claim(t, s, "crashed", T0)
	if n := must(s.RequeueExpired(ctx, T0.Add(30*time.Second))).ok(t); n != 0 {
		t.Fatalf("RequeueExpired inside the lease requeued %d jobs", n)
	}
	noJob(t, s, T0.Add(30*time.Second))
	if n := must(s.RequeueExpired(ctx, T0.Add(2*time.Minute))).ok(t); n != 1 {
		t.Fatalf("RequeueExpired after the lease requeued %d jobs, want 1", n)
	}
	j2 := claim(t, s, "w2", T0.Add(2*time.Minute))
	if j2.ID != j.ID || j2.Attempts != 2 || j2.Worker != "w2" {
		t.Fatalf("reclaim = %+v, want job %d attempt 2 by w2", j2, j.ID)
	}
	// The stalled worker comes back first: its (identical) result is
	// taken, and the second completion is a no-op.
	if !complete(t, s, j.ID, decoded("sig"), T0.Add(3*time.Minute)) {
		t.Fatal("late completion by the first worker not applied")
	}
	if complete(t, s, j2.ID, decoded("sig"), T0.Add(4*time.Minute)) {
		t.Fatal("second completion applied")
	}
	if b := must(s.Bucket(ctx, "sig", store.BucketFilter{Now: T0})).ok(t); b.Count != 1 {
		t.Fatalf("count = %d after a job completed by two workers, want 1", b.Count)
	}
}

func testWaitingWoken(t *testing.T, s store.Store) {
	ctx := context.Background()
	add(t, s, newDump(1, "aa11", "", "", T0))
	add(t, s, newDump(2, "", "", "", T0))
	add(t, s, newDump(3, "cc33", "", "", T0))
	for range 3 {
		j := claim(t, s, "w", T0)
		complete(t, s, j.ID, store.Result{Status: store.StatusWaiting, Error: "no ELF", SymbolSeq: 0}, T0)
	}
	for _, id := range []string{"d0001", "d0002", "d0003"} {
		if d := status(t, s, id); d.Status != store.StatusWaiting || d.Error != "no ELF" {
			t.Fatalf("%s = %s %q, want waiting-for-symbols", id, d.Status, d.Error)
		}
	}
	noJob(t, s, T0)
	// An ELF of another build wakes only the dump without a build ID.
	_, _, woken, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(7), BuildID: "bb22", Received: T0})
	if err != nil || woken != 1 {
		t.Fatalf("PutSymbol(bb22) woke %d (err %v), want 1 (the dump without build ID)", woken, err)
	}
	if d := status(t, s, "d0002"); d.Status != store.StatusQueued {
		t.Fatalf("d0002 = %s after an ELF arrived, want queued", d.Status)
	}
	if d := status(t, s, "d0001"); d.Status != store.StatusWaiting {
		t.Fatalf("d0001 (build aa11) = %s after ELF bb22 arrived, want still waiting", d.Status)
	}
	j := claim(t, s, "w", T0)
	if j.DumpID != "d0002" {
		t.Fatalf("claimed %s, want d0002", j.DumpID)
	}
	complete(t, s, j.ID, store.Result{Status: store.StatusWaiting, Error: "no ELF pairs", SymbolSeq: 1 << 40}, T0)
	noJob(t, s, T0)
	// The same bytes again wake nothing.
	if _, _, woken, _ := s.PutSymbol(ctx, store.Symbol{SHA256: sha(7), BuildID: "bb22", Received: T0}); woken != 0 {
		t.Fatalf("the same ELF uploaded again woke %d dumps", woken)
	}
	_, _, woken, err = s.PutSymbol(ctx, store.Symbol{SHA256: sha(8), BuildID: "aa11", Received: T0})
	if err != nil || woken != 2 {
		t.Fatalf("PutSymbol(aa11) woke %d (err %v), want 2 (d0001 and d0002)", woken, err)
	}
	got := []string{claim(t, s, "w", T0).DumpID, claim(t, s, "w", T0).DumpID}
	sort.Strings(got)
	if !reflect.DeepEqual(got, []string{"d0001", "d0002"}) {
		t.Fatalf("woken jobs for %v, want d0001 and d0002", got)
	}
	noJob(t, s, T0)
}

func testELFDuringDecode(t *testing.T, s store.Store) {
	ctx := context.Background()
	y, _, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(1), BuildID: "other", Received: T0})
	if err != nil {
		t.Fatal(err)
	}
	add(t, s, newDump(1, "aa11", "", "", T0))
	j := claim(t, s, "w", T0)
	// The worker looked at the symbols (up to y.Seq); now the matching
	// ELF arrives while it decodes: the dump is queued, not waiting, so
	// the upload wakes nothing...
	if _, _, woken, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(2), BuildID: "aa11", Received: T0}); err != nil || woken != 0 {
		t.Fatalf("woken = %d err %v, want 0 (the dump is being decoded)", woken, err)
	}
	// ...and the worker's "waiting" answer must not strand it.
	complete(t, s, j.ID, store.Result{Status: store.StatusWaiting, SymbolSeq: y.Seq}, T0)
	if d := status(t, s, "d0001"); d.Status != store.StatusQueued {
		t.Fatalf("dump = %s, want queued again (its ELF arrived during the decode)", d.Status)
	}
	j2 := claim(t, s, "w", T0)
	if j2.DumpID != "d0001" {
		t.Fatalf("claimed %s", j2.DumpID)
	}
	// An unrelated ELF during a decode does not requeue a dump with a
	// build ID.
	all := must(s.Symbols(ctx)).ok(t)
	if _, _, _, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(3), BuildID: "zz", Received: T0}); err != nil {
		t.Fatal(err)
	}
	complete(t, s, j2.ID, store.Result{Status: store.StatusWaiting, SymbolSeq: all[0].Seq}, T0)
	if d := status(t, s, "d0001"); d.Status != store.StatusWaiting {
		t.Fatalf("dump = %s, want waiting (only an unrelated ELF arrived)", d.Status)
	}
}

func testFailed(t *testing.T, s store.Store) {
	ctx := context.Background()
	add(t, s, newDump(1, "", "dev", "1", T0))
	j := claim(t, s, "w", T0)
	complete(t, s, j.ID, store.Result{Status: store.StatusFailed, ELF: sha(1), Error: "d0001: offset 0x40: truncated"}, T0)
	d := status(t, s, "d0001")
	if d.Status != store.StatusFailed || d.Error != "d0001: offset 0x40: truncated" || d.Bucket != "" || d.Analysis != nil {
		t.Fatalf("failed dump = %+v", d)
	}
	if bs := must(s.Buckets(ctx, store.BucketFilter{Now: T0})).ok(t); len(bs) != 0 {
		t.Fatalf("a failed dump made buckets %+v", bs)
	}
	// A failed dump is not woken by a new ELF.
	if _, _, woken, _ := s.PutSymbol(ctx, store.Symbol{SHA256: sha(9), Received: T0}); woken != 0 {
		t.Fatalf("an ELF woke %d failed dumps", woken)
	}
}

// testProvisional: a decoded result that a later ELF may better is
// queued again by every new symbol (and by one that arrived during its
// decode); a final one never is.
func testProvisional(t *testing.T, s store.Store) {
	ctx := context.Background()
	add(t, s, newDump(1, "", "", "", T0))
	add(t, s, newDump(2, "", "", "", T0.Add(time.Second)))
	prov := decoded("sig")
	prov.Provisional = true
	j := claim(t, s, "w", T0)
	complete(t, s, j.ID, prov, T0)
	j = claim(t, s, "w", T0)
	complete(t, s, j.ID, decoded("sig"), T0)
	if b := must(s.Bucket(ctx, "sig", store.BucketFilter{Now: T0})).ok(t); b.Count != 2 {
		t.Fatalf("count %d, want 2", b.Count)
	}
	_, _, woken, err := s.PutSymbol(ctx, store.Symbol{SHA256: sha(1), BuildID: "anything", Received: T0})
	if err != nil || woken != 1 {
		t.Fatalf("PutSymbol woke %d (%v), want 1 (the provisional dump)", woken, err)
	}
	if d := status(t, s, "d0001"); d.Status != store.StatusQueued {
		t.Fatalf("the provisional dump is %s after an ELF arrived, want queued", d.Status)
	}
	if d := status(t, s, "d0002"); d.Status != store.StatusDecoded {
		t.Fatalf("the final dump is %s after an ELF arrived, want decoded", d.Status)
	}
	j = claim(t, s, "w", T0)
	if j.DumpID != "d0001" {
		t.Fatalf("claimed %s", j.DumpID)
	}
	noJob(t, s, T0)
	// An ELF arrives during the decode: the provisional answer is
	// queued again at once, a final one is kept.
	if _, _, woken, _ := s.PutSymbol(ctx, store.Symbol{SHA256: sha(2), Received: T0}); woken != 0 {
		t.Fatalf("an ELF woke %d dumps while the only provisional one was being decoded", woken)
	}
	prov.SymbolSeq = 1
	complete(t, s, j.ID, prov, T0)
	if d := status(t, s, "d0001"); d.Status != store.StatusQueued {
		t.Fatalf("a provisional answer older than the last ELF: %s, want queued", d.Status)
	}
	j = claim(t, s, "w", T0)
	final := decoded("sig")
	final.SymbolSeq = 1 // older than the last ELF too: final anyway
	complete(t, s, j.ID, final, T0)
	if d := status(t, s, "d0001"); d.Status != store.StatusDecoded {
		t.Fatalf("a final answer: %s, want decoded", d.Status)
	}
	if _, _, woken, _ := s.PutSymbol(ctx, store.Symbol{SHA256: sha(3), Received: T0}); woken != 0 {
		t.Fatalf("an ELF woke %d dumps, none is provisional any more", woken)
	}
	noJob(t, s, T0)
}

// decodeAll claims and completes every ready job with the bucket bySig
// gives for its dump.
func decodeAll(t *testing.T, s store.Store, bucketOf map[string]string) {
	t.Helper()
	for range 1000 {
		j, ok, err := s.Claim(context.Background(), "w", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		sig, known := bucketOf[j.DumpID]
		if !known {
			t.Fatalf("no bucket for %s", j.DumpID)
		}
		if sig == "" {
			complete(t, s, j.ID, store.Result{Status: store.StatusWaiting}, T0)
			continue
		}
		complete(t, s, j.ID, decoded(sig), T0)
	}
	t.Fatal("queue never emptied")
}

func testBuckets(t *testing.T, s store.Store) {
	ctx := context.Background()
	day := 24 * time.Hour
	type up struct {
		dev, ver string
		at       time.Time
		sig      string
	}
	ups := []up{
		{"dev-a", "1.0", T0.Add(-40 * day), "big"}, // outside the 30 days
		{"dev-a", "1.0", T0.Add(-29 * day), "big"}, // first day of the series
		{"dev-b", "1.1", T0.Add(-2 * day), "big"},
		{"dev-b", "1.1", T0.Add(-2*day + time.Hour), "big"},
		{"", "", T0.Add(-time.Hour), "big"}, // no metadata
		{"dev-c", "1.1", T0.Add(-3 * day), "small"},
		{"dev-c", "1.1", T0.Add(-day), "small"},
		{"dev-d", "2.0", T0.Add(-5 * day), "tie"}, // ties "small" on count, seen earlier
		{"dev-d", "2.0", T0.Add(-4 * day), "tie"},
		{"dev-z", "9.9", T0, ""}, // waiting: counts nowhere
	}
	bucketOf := map[string]string{}
	for i, u := range ups {
		n := newDump(i, "", u.dev, u.ver, u.at)
		add(t, s, n)
		bucketOf[n.ID] = u.sig
	}
	decodeAll(t, s, bucketOf)
	bs := must(s.Buckets(ctx, store.BucketFilter{Now: T0})).ok(t)
	var order []string
	for _, b := range bs {
		order = append(order, b.Signature)
	}
	if !reflect.DeepEqual(order, []string{"big", "tie", "small"}) {
		t.Fatalf("bucket order = %v, want big (5), tie (2, first seen earlier), small (2)", order)
	}
	big := bs[0]
	if big.Count != 5 || big.Title != "HardFault in big" {
		t.Fatalf("big = %+v", big)
	}
	if !reflect.DeepEqual(big.Devices, []string{"dev-a", "dev-b"}) || big.DeviceCount != 2 {
		t.Fatalf("big devices = %v (%d), want [dev-a dev-b] (empty device not listed)", big.Devices, big.DeviceCount)
	}
	if !reflect.DeepEqual(big.Versions, []string{"1.0", "1.1"}) || big.VersionCount != 2 {
		t.Fatalf("big versions = %v (%d)", big.Versions, big.VersionCount)
	}
	if !big.FirstSeen.Equal(T0.Add(-40*day)) || !big.LastSeen.Equal(T0.Add(-time.Hour)) {
		t.Fatalf("big seen %v .. %v", big.FirstSeen, big.LastSeen)
	}
	var want [store.Days]int
	want[0] = 1  // T0-29d
	want[27] = 2 // T0-2d, twice
	want[29] = 1 // today
	if big.Daily != want {
		t.Fatalf("big daily = %v, want %v", big.Daily, want)
	}
	// Devices ordered by count, then name.
	small := bs[2]
	if !reflect.DeepEqual(small.Devices, []string{"dev-c"}) || small.Count != 2 {
		t.Fatalf("small = %+v", small)
	}
	one := must(s.Bucket(ctx, "tie", store.BucketFilter{Now: T0})).ok(t)
	if one.Count != 2 || !reflect.DeepEqual(one.Versions, []string{"2.0"}) || one.Daily[24] != 1 || one.Daily[25] != 1 {
		t.Fatalf("Bucket(tie) = %+v", one)
	}
	// A later "now" shifts the series.
	later := must(s.Bucket(ctx, "big", store.BucketFilter{Now: T0.Add(day)})).ok(t)
	if later.Daily[28] != 1 || later.Daily[26] != 2 || later.Daily[29] != 0 {
		t.Fatalf("big daily a day later = %v", later.Daily)
	}
	if d := status(t, s, "d0009"); d.Status != store.StatusWaiting {
		t.Fatalf("d0009 = %s", d.Status)
	}
}

func testBucketFilters(t *testing.T, s store.Store) {
	ctx := context.Background()
	bucketOf := map[string]string{}
	for i := range 12 {
		n := newDump(i, "", fmt.Sprintf("dev-%d", i%3), fmt.Sprintf("v%d", i%2), T0.Add(time.Duration(i)*time.Minute))
		add(t, s, n)
		bucketOf[n.ID] = []string{"a", "b"}[i%4/3] // a: i%4 in 0,1,2; b: i%4 == 3
	}
	decodeAll(t, s, bucketOf)
	count := func(f store.BucketFilter) map[string]int {
		f.Now = T0
		m := map[string]int{}
		for _, b := range must(s.Buckets(ctx, f)).ok(t) {
			m[b.Signature] = b.Count
		}
		return m
	}
	if got := count(store.BucketFilter{}); !reflect.DeepEqual(got, map[string]int{"a": 9, "b": 3}) {
		t.Fatalf("no filter: %v", got)
	}
	// v1: i odd: 1,3,5,7,9,11 -> a: 1,5,9 ; b: 3,7,11
	if got := count(store.BucketFilter{Version: "v1"}); !reflect.DeepEqual(got, map[string]int{"a": 3, "b": 3}) {
		t.Fatalf("version v1: %v", got)
	}
	// dev-0: i = 0,3,6,9 -> a: 0,6,9 ; b: 3
	if got := count(store.BucketFilter{Device: "dev-0"}); !reflect.DeepEqual(got, map[string]int{"a": 3, "b": 1}) {
		t.Fatalf("device dev-0: %v", got)
	}
	// v0 and dev-0: i = 0,6 -> a
	if got := count(store.BucketFilter{Device: "dev-0", Version: "v0"}); !reflect.DeepEqual(got, map[string]int{"a": 2}) {
		t.Fatalf("device dev-0 version v0: %v", got)
	}
	if got := count(store.BucketFilter{Version: "nope"}); len(got) != 0 {
		t.Fatalf("unknown version: %v", got)
	}
	b := must(s.Bucket(ctx, "b", store.BucketFilter{Version: "v1", Now: T0})).ok(t)
	if b.Count != 3 || !reflect.DeepEqual(b.Versions, []string{"v1"}) {
		t.Fatalf("Bucket(b, v1) = %+v", b)
	}
	if _, err := s.Bucket(ctx, "b", store.BucketFilter{Version: "v0", Now: T0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Bucket(b, v0) error = %v, want ErrNotFound (no dump of b in v0)", err)
	}
}

func testDumpsQuery(t *testing.T, s store.Store) {
	ctx := context.Background()
	bucketOf := map[string]string{}
	for i := range 6 {
		n := newDump(i, "", fmt.Sprintf("dev-%d", i%2), "1", T0.Add(time.Duration(i)*time.Second))
		add(t, s, n)
		bucketOf[n.ID] = map[bool]string{true: "x", false: ""}[i < 4]
	}
	decodeAll(t, s, bucketOf)
	ids := func(q store.DumpQuery) []string {
		var out []string
		for _, d := range must(s.Dumps(ctx, q)).ok(t) {
			if d.Analysis != nil {
				t.Fatalf("Dumps returned an analysis for %s", d.ID)
			}
			out = append(out, d.ID)
		}
		return out
	}
	if got := ids(store.DumpQuery{}); !reflect.DeepEqual(got, []string{"d0005", "d0004", "d0003", "d0002", "d0001", "d0000"}) {
		t.Fatalf("all dumps = %v, want newest first", got)
	}
	if got := ids(store.DumpQuery{Bucket: "x", Device: "dev-1"}); !reflect.DeepEqual(got, []string{"d0003", "d0001"}) {
		t.Fatalf("bucket x dev-1 = %v", got)
	}
	if got := ids(store.DumpQuery{Status: store.StatusWaiting}); !reflect.DeepEqual(got, []string{"d0005", "d0004"}) {
		t.Fatalf("waiting = %v", got)
	}
	if got := ids(store.DumpQuery{Limit: 2}); !reflect.DeepEqual(got, []string{"d0005", "d0004"}) {
		t.Fatalf("limit 2 = %v", got)
	}
}

func testConcurrentClaims(t *testing.T, s store.Store) {
	ctx := context.Background()
	const jobs, workers = 60, 6
	for i := range jobs {
		add(t, s, newDump(i, "", "", "", T0))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs + 1 {
				j, ok, err := s.Claim(ctx, fmt.Sprintf("w%d", w), T0, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				seen[j.DumpID]++
				mu.Unlock()
				if _, err := s.Complete(ctx, j.ID, decoded("s"), T0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != jobs {
		t.Fatalf("%d distinct dumps claimed, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times within its lease", id, n)
		}
	}
	if b := must(s.Bucket(ctx, "s", store.BucketFilter{Now: T0})).ok(t); b.Count != jobs {
		t.Fatalf("count %d, want %d", b.Count, jobs)
	}
}

func testConcurrentUploads(t *testing.T, s store.Store) {
	ctx := context.Background()
	const clients, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every client uploads dump i: ten distinct dumps, each
				// uploaded eight times at once.
				if _, _, err := s.AddDump(ctx, newDump(i, "", fmt.Sprintf("c%d", c), "", T0)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := must(s.QueueLength(ctx)).ok(t); n != each {
		t.Fatalf("QueueLength = %d after %d uploads of %d dumps, want %d", n, clients*each, each, each)
	}
	if ds := must(s.Dumps(ctx, store.DumpQuery{})).ok(t); len(ds) != each {
		t.Fatalf("%d dumps stored, want %d", len(ds), each)
	}
}
