package worker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/sqlite"
)

const repo = "../.."

type fixture struct {
	st    store.Store
	bl    *blobs.Dir
	clock time.Time
}

func (f *fixture) now() time.Time { return f.clock }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bl, err := blobs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, bl: bl, clock: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)}
}

// addDump stores a fixtures/fleet dump self-contained.
func (f *fixture) addDump(t *testing.T, name string) string {
	t.Helper()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/fleet", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteSelfContained(&b); err != nil {
		t.Fatal(err)
	}
	sum, size, err := f.bl.Put(&b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.AddDump(context.Background(), store.NewDump{ID: sum, SHA256: sum, Size: size, BuildID: d.BuildID, Received: f.clock}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	return sum
}

func (f *fixture) addELF(t *testing.T, data []byte, name, buildID string) {
	t.Helper()
	sum, size, err := f.bl.Put(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.st.PutSymbol(context.Background(), store.Symbol{SHA256: sum, BuildID: buildID, Size: size, Name: name, Received: f.clock}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) status(t *testing.T, id string) store.Dump {
	t.Helper()
	d, err := f.st.Dump(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func drain(t *testing.T, p *Pool) int {
	t.Helper()
	n := 0
	for range 100 {
		did, err := p.Process(context.Background(), "w")
		if err != nil {
			t.Fatal(err)
		}
		if !did {
			return n
		}
		n++
	}
	t.Fatal("queue never emptied")
	return n
}

// TestCrashMidDecode: a worker that claimed a job and died leaves it
// leased; after the lease another worker's pool requeues and decodes it,
// and a late completion by the dead one changes nothing.
func TestCrashMidDecode(t *testing.T) {
	f := newFixture(t)
	elf, _ := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	f.addELF(t, elf, "gcc-m3-O2.elf", "57dac794fb05f6051e02302940eb03bbd758fb12")
	id := f.addDump(t, "gcc-m3-O2-div0")
	ctx := context.Background()
	dead, ok, err := f.st.Claim(ctx, "dead", f.clock, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	p := New(Config{Store: f.st, Blobs: f.bl, Now: f.now, Lease: time.Minute})
	if n := drain(t, p); n != 0 {
		t.Fatalf("a leased job was taken by another worker within its lease (%d jobs)", n)
	}
	if d := f.status(t, id); d.Status != store.StatusQueued {
		t.Fatalf("dump is %s mid-decode", d.Status)
	}
	f.clock = f.clock.Add(2 * time.Minute)
	if n, err := f.st.RequeueExpired(ctx, f.clock); err != nil || n != 1 {
		t.Fatalf("RequeueExpired = %d, %v", n, err)
	}
	if n := drain(t, p); n != 1 {
		t.Fatalf("%d jobs done after the lease ended, want 1", n)
	}
	d := f.status(t, id)
	if d.Status != store.StatusDecoded || d.Bucket == "" || !bytes.Contains(d.Analysis, []byte(`"div0_average"`)) {
		t.Fatalf("after the re-claim: %s %q %s", d.Status, d.Error, d.Analysis)
	}
	if applied, err := f.st.Complete(ctx, dead.ID, store.Result{Status: store.StatusFailed, Error: "late"}, f.clock); err != nil || applied {
		t.Fatalf("the dead worker's late completion: applied=%v err=%v", applied, err)
	}
	if d := f.status(t, id); d.Status != store.StatusDecoded {
		t.Fatalf("late completion changed the dump to %s", d.Status)
	}
}

// TestGivesUp: a job claimed MaxAttempts times without completing (it
// kills its worker each time) fails instead of looping for ever.
func TestGivesUp(t *testing.T) {
	f := newFixture(t)
	id := f.addDump(t, "gcc-m3-O2-div0")
	ctx := context.Background()
	p := New(Config{Store: f.st, Blobs: f.bl, Now: f.now, Lease: time.Minute, MaxAttempts: 3})
	for range 3 {
		if _, ok, err := f.st.Claim(ctx, "dies", f.clock, time.Minute); err != nil || !ok {
			t.Fatal(ok, err)
		}
		f.clock = f.clock.Add(2 * time.Minute)
		f.st.RequeueExpired(ctx, f.clock)
	}
	drain(t, p)
	d := f.status(t, id)
	if d.Status != store.StatusFailed || !strings.Contains(d.Error, "started 3 times") {
		t.Fatalf("after 4 claims: %s %q", d.Status, d.Error)
	}
}

// TestWaitingThenDecoded: without its ELF a dump waits; a wrong ELF
// leaves it waiting; its ELF decodes it; an ELF that faultline cannot use
// is reported, not fatal.
func TestWaitingThenDecoded(t *testing.T) {
	f := newFixture(t)
	p := New(Config{Store: f.st, Blobs: f.bl, Now: f.now})
	withID := f.addDump(t, "gcc-m3-Os-div0")               // carries a build ID
	byContent := f.addDump(t, "gcc-m3-Os-null_write_deep") // carries none
	drain(t, p)
	if d := f.status(t, withID); d.Status != store.StatusWaiting || !strings.Contains(d.Error, "waiting for the ELF of build ID 61824535e2bf9761c4ce2b8870ec5602a41a32c6") {
		t.Fatalf("without ELFs, a dump with a build ID: %s %q", d.Status, d.Error)
	}
	if d := f.status(t, byContent); d.Status != store.StatusWaiting || !strings.Contains(d.Error, "no usable firmware ELF has been uploaded yet") {
		t.Fatalf("without ELFs, a dump without a build ID: %s %q", d.Status, d.Error)
	}
	other, _ := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	f.addELF(t, other, "gcc-m3-O2.elf", "57dac794fb05f6051e02302940eb03bbd758fb12")
	f.addELF(t, []byte("\x7fELF but not really"), "broken.elf", "")
	// Only the dump without a build ID may pair with them: the other
	// is not even tried again.
	if n := drain(t, p); n != 1 {
		t.Fatalf("%d dumps decoded again after two ELFs of other builds arrived, want 1", n)
	}
	if d := f.status(t, withID); d.Status != store.StatusWaiting || !strings.Contains(d.Error, "waiting for the ELF of build ID 61824535e2bf9761c4ce2b8870ec5602a41a32c6") {
		t.Fatalf("the dump with a build ID: %s %q", d.Status, d.Error)
	}
	if d := f.status(t, byContent); d.Status != store.StatusWaiting || !strings.Contains(d.Error, "no ELF in the uploaded symbols pairs with the dump") || !strings.Contains(d.Error, "broken.elf") {
		t.Fatalf("the dump without a build ID, with other builds' ELFs: %s %q", d.Status, d.Error)
	}
	own, _ := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-Os.elf"))
	f.addELF(t, own, "gcc-m3-Os.elf", "61824535e2bf9761c4ce2b8870ec5602a41a32c6")
	drain(t, p)
	for _, id := range []string{withID, byContent} {
		d := f.status(t, id)
		if d.Status != store.StatusDecoded || !bytes.Contains(d.Analysis, []byte(`"path":"gcc-m3-Os.elf"`)) {
			t.Fatalf("with its ELF: %s %q %.200s", d.Status, d.Error, d.Analysis)
		}
	}
	// The dump without a build ID was paired by content without proof
	// (unverified): a later ELF may pair better, so it is decoded again;
	// the one decoded with the ELF of its build ID is final.
	third, _ := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2-fp.elf"))
	f.addELF(t, third, "gcc-m3-O2-fp.elf", "c86f05c5f989296d2d3988cf4cb8b72153d448ac")
	if d := f.status(t, byContent); d.Status != store.StatusQueued {
		t.Fatalf("the dump paired by content (unverified) is %s after another ELF arrived, want queued", d.Status)
	}
	if n := drain(t, p); n != 1 {
		t.Fatalf("%d dumps decoded again, want 1", n)
	}
	if d := f.status(t, byContent); d.Status != store.StatusDecoded || !bytes.Contains(d.Analysis, []byte(`"path":"gcc-m3-Os.elf"`)) {
		t.Fatalf("decoded again: %s %.200s", d.Status, d.Analysis)
	}
}

// panicky panics where the engine would, to check that a worker
// survives a bug.
type panicky struct{ store.Store }

func (p panicky) Dump(ctx context.Context, id string) (store.Dump, error) {
	var m map[string]int
	m["boom"]++ // a nil map write: a runtime panic
	return store.Dump{}, nil
}

func TestPanicFailsTheDump(t *testing.T) {
	f := newFixture(t)
	id := f.addDump(t, "gcc-m3-O2-div0")
	p := New(Config{Store: panicky{f.st}, Blobs: f.bl, Now: f.now})
	if n := drain(t, p); n != 1 {
		t.Fatalf("%d jobs done", n)
	}
	if d := f.status(t, id); d.Status != store.StatusFailed || !strings.Contains(d.Error, "internal error while decoding") {
		t.Fatalf("after a panic: %s %q", d.Status, d.Error)
	}
}
