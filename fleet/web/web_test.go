package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
)

// memStore is a Source over a list of dumps: the bucket figures are
// computed from the dumps the filter selects, as the Store contract says.
type memStore struct {
	dumps   []store.Dump
	symbols []store.Symbol
	titles  map[string]string
}

func (m *memStore) Symbols(context.Context) ([]store.Symbol, error) { return m.symbols, nil }

func (m *memStore) SymbolsByBuildID(_ context.Context, id string) ([]store.Symbol, error) {
	var out []store.Symbol
	for _, y := range m.symbols {
		if y.BuildID == id {
			out = append(out, y)
		}
	}
	return out, nil
}

func (m *memStore) Dump(_ context.Context, id string) (store.Dump, error) {
	for _, d := range m.dumps {
		if d.ID == id {
			return d, nil
		}
	}
	return store.Dump{}, fmt.Errorf("dump %s: %w", id, store.ErrNotFound)
}

func (m *memStore) Dumps(_ context.Context, q store.DumpQuery) ([]store.Dump, error) {
	var out []store.Dump
	for _, d := range m.dumps {
		if (q.Bucket == "" || d.Bucket == q.Bucket) && (q.Status == "" || d.Status == q.Status) &&
			(q.Version == "" || d.Version == q.Version) && (q.Device == "" || d.Device == q.Device) {
			d.Analysis = nil
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b store.Dump) int { return b.Received.Compare(a.Received) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (m *memStore) Buckets(ctx context.Context, f store.BucketFilter) ([]store.Bucket, error) {
	by := map[string]*store.Bucket{}
	var order []string
	for _, d := range m.dumps {
		if d.Status != store.StatusDecoded || (f.Version != "" && d.Version != f.Version) || (f.Device != "" && d.Device != f.Device) {
			continue
		}
		b := by[d.Bucket]
		if b == nil {
			b = &store.Bucket{BucketInfo: store.BucketInfo{Signature: d.Bucket, Title: m.titles[d.Bucket], Key: "v2|key of " + d.Bucket}}
			by[d.Bucket] = b
			order = append(order, d.Bucket)
		}
		b.Count++
		if d.Device != "" && !slices.Contains(b.Devices, d.Device) {
			b.Devices = append(b.Devices, d.Device)
			b.DeviceCount++
		}
		if d.Version != "" && !slices.Contains(b.Versions, d.Version) {
			b.Versions = append(b.Versions, d.Version)
			b.VersionCount++
		}
		if b.FirstSeen.IsZero() || d.Received.Before(b.FirstSeen) {
			b.FirstSeen = d.Received
		}
		if d.Received.After(b.LastSeen) {
			b.LastSeen = d.Received
		}
		day := int(f.Now.UTC().Truncate(24*time.Hour).Sub(d.Received.UTC().Truncate(24*time.Hour)) / (24 * time.Hour))
		if day >= 0 && day < store.Days {
			b.Daily[store.Days-1-day]++
		}
	}
	var out []store.Bucket
	for _, k := range order {
		out = append(out, *by[k])
	}
	slices.SortStableFunc(out, func(a, b store.Bucket) int { return b.Count - a.Count })
	return out, nil
}

func (m *memStore) Bucket(ctx context.Context, sig string, f store.BucketFilter) (store.Bucket, error) {
	all, _ := m.Buckets(ctx, f)
	for _, b := range all {
		if b.Signature == sig {
			return b, nil
		}
	}
	return store.Bucket{}, fmt.Errorf("bucket %s: %w", sig, store.ErrNotFound)
}

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

const hostile = `<script>alert("x")</script>`

func testStore() *memStore {
	day := 24 * time.Hour
	return &memStore{
		titles: map[string]string{
			"aaaaaaaaaaaa": "HardFault in null_store < deep4 < deep3",
			"bbbbbbbbbbbb": "UsageFault in " + hostile,
		},
		dumps: []store.Dump{
			{ID: "d1", Device: "dev-1", Version: "1.0", Received: now.Add(-2 * day), Status: store.StatusDecoded, Bucket: "aaaaaaaaaaaa", ELF: strings.Repeat("ab", 32),
				Analysis: []byte(`{"fault":{"exception":"HardFault","address":"0x00000000"},"frames":[{"index":0,"pc":"0x08000120","function":"null_store","file":"src/main.c","line":42,"kind":"normal"},{"index":1,"pc":"0x08000200","function":"deep4","file":"src/main.c","line":50,"kind":"normal"}],"stop":"end of stack"}`)},
			{ID: "d2", Device: "dev-2", Version: "1.0", Received: now.Add(-1 * day), Status: store.StatusDecoded, Bucket: "aaaaaaaaaaaa"},
			{ID: "d3", Device: "dev-2", Version: "1.1", Received: now.Add(-1 * time.Hour), Status: store.StatusDecoded, Bucket: "aaaaaaaaaaaa"},
			{ID: "d4", Device: hostile, Version: `"><img src=x onerror=alert(1)>`, Received: now.Add(-3 * day), Status: store.StatusDecoded, Bucket: "bbbbbbbbbbbb"},
			{ID: "w1", Device: "dev-3", Version: "1.2", BuildID: "0123456789abcdef", Received: now.Add(-time.Minute), Status: store.StatusWaiting,
				Error: "no ELF with build ID 0123456789abcdef"},
			{ID: "f1", Device: "dev-3", Version: "1.2", Received: now.Add(-2 * time.Minute), Status: store.StatusFailed, Error: "cannot decode: " + hostile},
		},
		symbols: []store.Symbol{{SHA256: strings.Repeat("ab", 32), BuildID: "fedcba9876543210", Size: 123456, Name: "fw " + hostile + ".elf", Received: now.Add(-time.Hour)}},
	}
}

func newServer(t *testing.T, s Source, rep Reporter) *httptest.Server {
	t.Helper()
	p, err := New(Options{Store: s, Report: rep, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestPagesEscape: a device name, a version, a title, an error and a file
// name holding markup reach every page escaped, never as markup.
func TestPagesEscape(t *testing.T) {
	srv := newServer(t, testStore(), nil)
	for _, path := range []string{"/", "/buckets/bbbbbbbbbbbb", "/dumps/d4", "/dumps/f1", "/symbols", "/?device=" + "%3Cscript%3E"} {
		code, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Errorf("%s: status %d", path, code)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: a stored value reached the page as markup:\n%s", path, body)
		}
		if path != "/dumps/f1" && path != "/?device=%3Cscript%3E" && !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
			t.Errorf("%s: the escaped value is missing", path)
		}
	}
}

// TestBucketList: the list shows each bucket's title, count, devices,
// versions, first and last seen, and the filter narrows it.
func TestBucketList(t *testing.T) {
	srv := newServer(t, testStore(), nil)
	_, body := get(t, srv, "/")
	rows := regexp.MustCompile(`(?s)<tr class="bucket" data-signature="(\w+)">.*?<td class="num count">(\d+)</td>`).FindAllStringSubmatch(body, -1)
	if len(rows) != 2 || rows[0][1] != "aaaaaaaaaaaa" || rows[0][2] != "3" || rows[1][2] != "1" {
		t.Fatalf("bucket rows %q, want aaaaaaaaaaaa with 3 dumps then bbbbbbbbbbbb with 1", rows)
	}
	for _, want := range []string{
		"HardFault in null_store &lt; deep4 &lt; deep3", "<span>dev-1</span>", "<span>1.1</span>",
		"2026-11-26 12:00 UTC", "2026-11-28 11:00 UTC", // first and last seen of aaaaaaaaaaaa
		`href="/dumps/w1"`, "waiting for symbols", "no ELF with build ID 0123456789abcdef",
		`<option value="1.1">1.1</option>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the bucket list lacks %q", want)
		}
	}
	_, body = get(t, srv, "/?version=1.1")
	rows = regexp.MustCompile(`(?s)<tr class="bucket" data-signature="(\w+)">.*?<td class="num count">(\d+)</td>`).FindAllStringSubmatch(body, -1)
	if len(rows) != 1 || rows[0][1] != "aaaaaaaaaaaa" || rows[0][2] != "1" {
		t.Fatalf("version 1.1: rows %q, want aaaaaaaaaaaa with 1 dump", rows)
	}
	if !strings.Contains(body, `<option value="1.1" selected>1.1</option>`) || !strings.Contains(body, `<option value="1.0">`) {
		t.Errorf("version 1.1: the select does not show 1.1 chosen among every version")
	}
	if !strings.Contains(body, `href="/buckets/aaaaaaaaaaaa?version=1.1"`) {
		t.Errorf("version 1.1: the bucket link does not keep the filter")
	}
	if strings.Contains(body, `href="/dumps/w1"`) {
		t.Errorf("version 1.1: the waiting dump of version 1.2 is listed")
	}
	_, body = get(t, srv, "/?device=dev-2&version=1.0")
	if !strings.Contains(body, `data-signature="aaaaaaaaaaaa"`) || strings.Contains(body, `data-signature="bbbbbbbbbbbb"`) ||
		!strings.Contains(body, `<td class="num count">1</td>`) {
		t.Errorf("device dev-2, version 1.0: want one bucket with one dump:\n%s", body)
	}
	if code, _ := get(t, srv, "/?version="+strings.Repeat("x", maxFilterValue+1)); code != http.StatusBadRequest {
		t.Errorf("an over-long filter: status %d, want 400", code)
	}
}

// TestBucketPage: the bucket's figures, every dump, the representative
// crash's report (the newest dump) and a filter that selects none.
func TestBucketPage(t *testing.T) {
	rep := func(_ context.Context, d store.Dump, w io.Writer) error {
		_, err := fmt.Fprintf(w, "<!doctype html><p>report of %s</p>", d.ID)
		return err
	}
	srv := newServer(t, testStore(), rep)
	code, body := get(t, srv, "/buckets/aaaaaaaaaaaa")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{"2 devices", "2 versions", `href="/dumps/d1"`, `href="/dumps/d2"`, `href="/dumps/d3"`,
		`<iframe class="report" src="/dumps/d3/report"`, "v2|key of aaaaaaaaaaaa"} {
		if !strings.Contains(body, want) {
			t.Errorf("the bucket page lacks %q", want)
		}
	}
	_, body = get(t, srv, "/buckets/aaaaaaaaaaaa?version=1.0")
	if strings.Contains(body, `href="/dumps/d3"`) || !strings.Contains(body, `src="/dumps/d2/report"`) {
		t.Errorf("version 1.0: want d1 and d2 only, d2 as the example")
	}
	code, body = get(t, srv, "/buckets/aaaaaaaaaaaa?device=nobody")
	if code != http.StatusOK || !strings.Contains(body, "No dump of this bucket matches the filter") {
		t.Errorf("a filter selecting no dump of the bucket: status %d, want 200 and a note", code)
	}
	if code, _ := get(t, srv, "/buckets/cccccccccccc"); code != http.StatusNotFound {
		t.Errorf("an unknown bucket: status %d, want 404", code)
	}
	code, body = get(t, srv, "/dumps/d3/report")
	if code != http.StatusOK || body != "<!doctype html><p>report of d3</p>" {
		t.Errorf("/dumps/d3/report: status %d body %q", code, body)
	}
	if code, _ := get(t, srv, "/dumps/w1/report"); code != http.StatusNotFound {
		t.Errorf("the report of a waiting dump: status %d, want 404", code)
	}
}

// TestDumpPage: a decoded dump shows its backtrace, a waiting one why it
// waits, a queued one reloads itself.
func TestDumpPage(t *testing.T) {
	s := testStore()
	s.dumps = append(s.dumps, store.Dump{ID: "q1", Received: now, Status: store.StatusQueued})
	srv := newServer(t, s, nil)
	_, body := get(t, srv, "/dumps/d1")
	for _, want := range []string{"null_store", "src/main.c:42", "deep4", "0x08000120", "HardFault", "end of stack", `href="/buckets/aaaaaaaaaaaa"`,
		"fw &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;.elf"} {
		if !strings.Contains(body, want) {
			t.Errorf("/dumps/d1 lacks %q", want)
		}
	}
	_, body = get(t, srv, "/dumps/w1")
	if !strings.Contains(body, "Waiting for symbols.") || !strings.Contains(body, "no ELF with build ID 0123456789abcdef") {
		t.Errorf("/dumps/w1 does not say why it waits")
	}
	_, body = get(t, srv, "/dumps/q1")
	if !strings.Contains(body, `<meta http-equiv="refresh" content="5">`) {
		t.Errorf("/dumps/q1 (queued) does not reload itself")
	}
	if code, _ := get(t, srv, "/dumps/nope"); code != http.StatusNotFound {
		t.Errorf("an unknown dump: status %d, want 404", code)
	}
}

// TestSymbolsPage lists the ELFs and the build IDs dumps wait for.
func TestSymbolsPage(t *testing.T) {
	srv := newServer(t, testStore(), nil)
	_, body := get(t, srv, "/symbols")
	for _, want := range []string{"fedcba9876543210", "120 KiB", "0123456789abcdef", "Dumps waiting for symbols"} {
		if !strings.Contains(body, want) {
			t.Errorf("/symbols lacks %q", want)
		}
	}
}

// TestSparkline: one bar per day, today last, heights scaled to the
// busiest day, a hairline for an empty day.
func TestSparkline(t *testing.T) {
	var daily [store.Days]int
	daily[store.Days-1] = 4 // today
	daily[store.Days-2] = 2
	svg := string(sparkline(daily, now, 150, 28))
	bars := regexp.MustCompile(`<rect class="(\w)" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"><title>([\d-]+): (\d+) dumps?</title></rect>`).FindAllStringSubmatch(svg, -1)
	if len(bars) != store.Days {
		t.Fatalf("%d bars, want %d:\n%s", len(bars), store.Days, svg)
	}
	last, prev, first := bars[store.Days-1], bars[store.Days-2], bars[0]
	if last[3] != "2026-11-28" || last[4] != "4" || last[2] != "26.0" || last[1] != "d" {
		t.Errorf("today's bar %q, want 2026-11-28, 4 dumps, full height 26", last)
	}
	if prev[3] != "2026-11-27" || prev[2] != "13.0" {
		t.Errorf("yesterday's bar %q, want 2026-11-27 at half height 13", prev)
	}
	if first[3] != "2026-10-30" || first[4] != "0" || first[2] != "1.0" || first[1] != "z" {
		t.Errorf("the first day's bar %q, want 2026-10-30, 0 dumps, a 1px hairline", first)
	}
	if !strings.Contains(svg, `aria-label="6 dumps in the last 30 days, at most 4 a day"`) {
		t.Errorf("the label does not sum the days:\n%s", svg)
	}
}

// TestBucketListBound: past maxBuckets the list shows the biggest and
// says how many it left out.
func TestBucketListBound(t *testing.T) {
	s := &memStore{titles: map[string]string{}}
	for i := range maxBuckets + 2 {
		sig := fmt.Sprintf("%012x", i)
		s.dumps = append(s.dumps, store.Dump{ID: fmt.Sprint("d", i), Received: now, Status: store.StatusDecoded, Bucket: sig})
	}
	s.dumps = append(s.dumps, store.Dump{ID: "extra", Received: now, Status: store.StatusDecoded, Bucket: fmt.Sprintf("%012x", maxBuckets+1)})
	for i := range maxPendingDumps + 1 {
		s.dumps = append(s.dumps, store.Dump{ID: fmt.Sprint("w", i), Received: now, Status: store.StatusWaiting})
	}
	srv := newServer(t, s, nil)
	_, body := get(t, srv, "/")
	if n := strings.Count(body, `<tr class="bucket"`); n != maxBuckets {
		t.Errorf("%d rows, want %d", n, maxBuckets)
	}
	if !strings.Contains(body, "2 smaller buckets not listed") || !strings.Contains(body, fmt.Sprintf("%d decoded dumps in %d buckets", maxBuckets+3, maxBuckets+2)) {
		t.Errorf("the list does not say what it left out")
	}
	if !strings.Contains(body, fmt.Sprintf(`data-signature="%012x"`, maxBuckets+1)) {
		t.Errorf("the bucket with 2 dumps is not listed")
	}
	if !strings.Contains(body, fmt.Sprintf("more than %d dumps, the newest %d shown", maxPendingDumps, maxPendingDumps)) ||
		strings.Count(body, `<a href="/dumps/w`) != maxPendingDumps {
		t.Errorf("the waiting dumps past %d are not said to be left out", maxPendingDumps)
	}
}
