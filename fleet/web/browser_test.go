package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/fleet"
	"github.com/faultline-dev/faultline/fleet/server"
	"github.com/faultline-dev/faultline/internal/browsertest"
	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
)

// TestMain stops the throwaway PostgreSQL cluster, if the tests started one.
func TestMain(m *testing.M) { pgtest.Main(m) }

// The fleet of fixtures/fleet: three builds of the sample firmware (the
// ELFs with a build ID), each crashed three ways in QEMU with GDB's
// backtrace as truth. A build is a firmware version; the devices are
// given per dump, one of them with markup in its name.
var (
	fleetBuilds    = []string{"gcc-m3-O2", "gcc-m3-O2-fp", "gcc-m3-Os"}
	fleetVersions  = map[string]string{"gcc-m3-O2": "1.0", "gcc-m3-O2-fp": "1.1", "gcc-m3-Os": "1.2"}
	fleetScenarios = []string{"udf", "div0", "null_write_deep"}
)

const hostileDevice = `lab <rack 3> & "b"`

func fleetDevice(build, scenario string) string {
	switch {
	case scenario == "udf":
		return "sensor-A"
	case scenario == "div0":
		return "sensor-B"
	case build == "gcc-m3-O2":
		return "sensor-A"
	case build == "gcc-m3-Os":
		return hostileDevice
	}
	return "sensor-C"
}

type fleetDump struct {
	build, scenario, version, device string
	body                             []byte // the dump as one self-contained faultline.dump/1 manifest
	truth                            []string
	id                               string // given by the server
}

func loadFleet(t *testing.T, root string) []*fleetDump {
	t.Helper()
	var out []*fleetDump
	for _, b := range fleetBuilds {
		for _, s := range fleetScenarios {
			d, err := crashdump.Load(filepath.Join(root, "fixtures/fleet", b+"-"+s+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := d.WriteSelfContained(&buf); err != nil {
				t.Fatal(err)
			}
			fd := &fleetDump{build: b, scenario: s, version: fleetVersions[b], device: fleetDevice(b, s), body: buf.Bytes()}
			for _, f := range d.Truth.Frames {
				if f.Kind != "exception" && f.Function != "" {
					fd.truth = append(fd.truth, f.Function)
				}
			}
			d.Close()
			out = append(out, fd)
		}
	}
	return out
}

// expectedBucket is what `analyze --symbols --summary` says of the fleet:
// computed here with the library over the same files, independently of
// the server's upload, queue, worker and store.
type expectedBucket struct {
	Signature string
	Function  string
	Dumps     []*fleetDump
}

func expectBuckets(t *testing.T, root string, dumps []*fleetDump) map[string]*expectedBucket {
	t.Helper()
	out := map[string]*expectedBucket{}
	for _, fd := range dumps {
		elf, err := elfsym.Open(filepath.Join(root, "firmware-samples/buildid/build", fd.build+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := crashdump.Parse(fd.body, fd.build+"-"+fd.scenario, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(elf, d, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sig := bucket.SignatureOf(r)
		b := out[sig.ID()]
		if b == nil {
			b = &expectedBucket{Signature: sig.ID(), Function: sig.Function}
			out[sig.ID()] = b
		}
		b.Dumps = append(b.Dumps, fd)
		d.Close()
		elf.Close()
	}
	return out
}

func post(t *testing.T, u string, body []byte, hdr map[string]string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", u, resp.Status, data)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("POST %s: not JSON: %s", u, data)
	}
	return v
}

// bucketRow is a row of the bucket list as the browser shows it.
type bucketRow struct {
	Signature string   `json:"signature"`
	Title     string   `json:"title"`
	Href      string   `json:"href"`
	Count     int      `json:"count"`
	Devices   []string `json:"devices"`
	Versions  []string `json:"versions"`
	Bars      []string `json:"bars"` // the sparkline's tooltips, "DATE: N dumps"
}

const readBucketRows = `[...document.querySelectorAll("table.buckets tr.bucket")].map(r => ({
	signature: r.dataset.signature,
	title: r.querySelector("td.title a").textContent,
	href: r.querySelector("td.title a").getAttribute("href"),
	count: +r.querySelector("td.count").textContent,
	devices: [...r.querySelectorAll("td.devices .vals span")].map(s => s.textContent),
	versions: [...r.querySelectorAll("td.versions .vals span")].map(s => s.textContent),
	bars: [...r.querySelectorAll("svg.spark rect title")].map(x => x.textContent),
}))`

// poll reloads the page at u until cond holds, at most timeout.
func poll(t *testing.T, ctx context.Context, u string, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not %s after %v; the page shows: %s", u, what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// text reads the text of the element sel selects, waiting at most 30 s
// for it to appear.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// TestBrowser drives the crash server's pages in headless Chromium as a
// user would, against a real server (the SQLite store and
// content-addressed files, then PostgreSQL; decoding workers): dumps uploaded before their ELFs wait for
// symbols; the ELFs uploaded late turn them into decoded dumps in the
// buckets `analyze --summary` gives; a bucket and a dump page show the
// crash with GDB's backtrace; the version and device filters narrow the
// list.
func TestBrowser(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testBrowser(t, startServer(t, "")) })
	// The same pages over PostgreSQL, the uploaded files in the database.
	t.Run("postgres", func(t *testing.T) { testBrowser(t, startServer(t, pgtest.DSN(t))) })
}

func testBrowser(t *testing.T, base string) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t, browsertest.Options{Timeout: 8 * time.Minute})

	dumps := loadFleet(t, root)
	want := expectBuckets(t, root, dumps)
	if len(want) != 3 {
		t.Fatalf("analyze buckets the fleet in %d buckets, want 3", len(want))
	}

	// 1. The dumps arrive before any ELF.
	for _, fd := range dumps {
		v := post(t, base+"/api/v1/dumps", fd.body, map[string]string{"X-Faultline-Device": fd.device, "X-Faultline-Version": fd.version})
		fd.id, _ = v["id"].(string)
		if fd.id == "" {
			t.Fatalf("upload of %s-%s: no id in %v", fd.build, fd.scenario, v)
		}
	}
	// Each one's page says it waits for symbols (with and without a
	// build ID in the dump).
	for _, fd := range []*fleetDump{dumps[0], dumps[2]} {
		poll(t, ctx, base+"/dumps/"+url.PathEscape(fd.id), 2*time.Minute, "waiting for symbols", func() (bool, string) {
			s := text(t, ctx, "#status")
			return s == "waiting for symbols", s
		})
		if why := text(t, ctx, ".why"); !strings.Contains(why, "Waiting for symbols.") {
			t.Errorf("dump %s: the page does not say why it waits: %q", fd.id, why)
		}
	}
	// The list has no bucket yet, and names every dump as waiting.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	if rows := eval[[]bucketRow](t, ctx, readBucketRows); len(rows) != 0 {
		t.Fatalf("buckets before any ELF: %+v", rows)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("section.pending.waitingforsymbols tbody tr").length`); n != len(dumps) {
		t.Errorf("the list names %d dumps as waiting for symbols, want %d", n, len(dumps))
	}

	shot(t, ctx, "waiting")

	// 2. The ELFs arrive late, one version first: its dumps are decoded
	// (those without a build ID paired by content), the other versions'
	// keep waiting.
	uploadELF := func(build string) {
		t.Helper()
		elf, err := os.ReadFile(filepath.Join(root, "firmware-samples/buildid/build", build+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		post(t, base+"/api/v1/symbols", elf, map[string]string{"X-Faultline-Name": build + ".elf"})
	}
	var rows []bucketRow
	waitDecoded := func(decoded, waiting int) {
		t.Helper()
		poll(t, ctx, base+"/", 3*time.Minute, fmt.Sprintf("%d dumps decoded", decoded), func() (bool, string) {
			rows = eval[[]bucketRow](t, ctx, readBucketRows)
			n := 0
			for _, r := range rows {
				n += r.Count
			}
			w := eval[int](t, ctx, `document.querySelectorAll("section.pending.waitingforsymbols tbody tr").length`)
			other := eval[int](t, ctx, `document.querySelectorAll("section.pending:not(.waitingforsymbols) tbody tr").length`)
			return n == decoded && w == waiting && other == 0, fmt.Sprintf("%d dumps in %d buckets, %d waiting, %d queued or failed", n, len(rows), w, other)
		})
	}
	uploadELF(fleetBuilds[0])
	waitDecoded(3, 6)
	for _, fd := range dumps {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/dumps/"+url.PathEscape(fd.id))); err != nil {
			t.Fatal(err)
		}
		want := "waiting for symbols"
		if fd.build == fleetBuilds[0] {
			want = "decoded"
		}
		if s := text(t, ctx, "#status"); s != want {
			t.Errorf("%s-%s after the ELF of %s: %q, want %q", fd.build, fd.scenario, fleetBuilds[0], s, want)
		}
	}
	for _, b := range fleetBuilds[1:] {
		uploadELF(b)
	}
	waitDecoded(len(dumps), 0)

	// 3. The bucket list: analyze's buckets, counts, devices, versions,
	// a sparkline with today's bar.
	now := time.Now().UTC()
	today, yesterday := now.Format("2006-01-02"), now.AddDate(0, 0, -1).Format("2006-01-02")
	if len(rows) != len(want) {
		t.Fatalf("%d buckets, want %d: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		w := want[r.Signature]
		if w == nil {
			t.Errorf("bucket %s (%q) is not one of analyze's", r.Signature, r.Title)
			continue
		}
		if r.Count != len(w.Dumps) {
			t.Errorf("bucket %s: count %d, want %d", r.Signature, r.Count, len(w.Dumps))
		}
		if !strings.Contains(r.Title, w.Function) {
			t.Errorf("bucket %s: title %q does not name the faulting function %s", r.Signature, r.Title, w.Function)
		}
		var devs, vers []string
		for _, fd := range w.Dumps {
			if !slices.Contains(devs, fd.device) {
				devs = append(devs, fd.device)
			}
			if !slices.Contains(vers, fd.version) {
				vers = append(vers, fd.version)
			}
		}
		sort.Strings(devs)
		sort.Strings(vers)
		gotDevs, gotVers := slices.Sorted(slices.Values(r.Devices)), slices.Sorted(slices.Values(r.Versions))
		if !slices.Equal(gotDevs, devs) || !slices.Equal(gotVers, vers) {
			t.Errorf("bucket %s: devices %q versions %q, want %q and %q", r.Signature, gotDevs, gotVers, devs, vers)
		}
		// The sparkline: 30 days ending today (yesterday when the day
		// turned since the page was drawn), every dump counted once.
		sum := 0
		for _, b := range r.Bars {
			var day string
			var n int
			if _, err := fmt.Sscanf(strings.Replace(b, ":", " ", 1), "%s %d", &day, &n); err != nil {
				t.Errorf("bucket %s: a sparkline bar says %q", r.Signature, b)
			}
			sum += n
		}
		if len(r.Bars) != 30 || sum != len(w.Dumps) || !(strings.HasPrefix(r.Bars[29], today+":") || strings.HasPrefix(r.Bars[29], yesterday+":")) {
			t.Errorf("bucket %s: sparkline %q, want 30 days ending %s counting %d dumps", r.Signature, r.Bars, today, len(w.Dumps))
		}
	}
	shot(t, ctx, "buckets")

	// 4. Open the null_store bucket from the list, as a user clicks.
	var nullSig string
	for sig, w := range want {
		if w.Function == "null_store" {
			nullSig = sig
		}
	}
	if nullSig == "" {
		t.Fatalf("analyze found no null_store bucket")
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr.bucket[data-signature="`+nullSig+`"] td.title a`)),
		chromedp.WaitVisible(chromedp.CSS("h1.bucket-title")),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "dd.count"); got != "3" {
		t.Errorf("bucket page: %q dumps, want 3", got)
	}
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll("section.dumps tr.dump a")].map(a => a.textContent)`)
	var wantIDs []string
	for _, fd := range want[nullSig].Dumps {
		wantIDs = append(wantIDs, fd.id[:min(12, len(fd.id))])
	}
	if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(wantIDs))) {
		t.Errorf("bucket page lists dumps %q, want %q", ids, wantIDs)
	}
	if devs := text(t, ctx, "dd.devices"); !strings.Contains(devs, hostileDevice) || !strings.Contains(devs, "3 devices") {
		t.Errorf("bucket page: devices %q, want 3 with %q as text", devs, hostileDevice)
	}
	// The representative crash is the analysis package's HTML report.
	report := iframeText(t, ctx, "section.example iframe.report", "null_store")
	for _, fn := range want[nullSig].Dumps[0].truth {
		if !strings.Contains(report, fn) {
			t.Errorf("bucket page: the representative report lacks %s of GDB's backtrace", fn)
		}
	}
	shot(t, ctx, "bucket")

	// 5. Open a dump from the bucket page: its backtrace is GDB's.
	fd := want[nullSig].Dumps[0]
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`section.dumps a[href="/dumps/`+fd.id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("section.backtrace")),
	); err != nil {
		t.Fatal(err)
	}
	if s := text(t, ctx, "#status"); s != "decoded" {
		t.Errorf("dump %s: status %q, want decoded", fd.id, s)
	}
	fns := eval[[]string](t, ctx, `[...document.querySelectorAll("table.bt tbody tr:not(.exc) td.fn")].map(td => td.textContent)`)
	if !slices.Equal(fns, fd.truth) {
		t.Errorf("dump %s: backtrace %q, want GDB's %q", fd.id, fns, fd.truth)
	}
	for _, want := range []string{fd.version, fd.device} {
		if meta := text(t, ctx, "section.meta"); !strings.Contains(meta, want) {
			t.Errorf("dump %s: the metadata lack %q", fd.id, want)
		}
	}
	if r := iframeText(t, ctx, "iframe.report", "null_store"); !strings.Contains(r, "scenario_null_write_deep") {
		t.Errorf("dump %s: the full report lacks the backtrace", fd.id)
	}
	shot(t, ctx, "dump")

	// 6. Filter by version, then by device, with the form.
	filter := func(version, device string) []bucketRow {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Navigate(base+"/"),
			chromedp.SetValue(chromedp.CSS(`select[name="version"]`), version),
			chromedp.SetValue(chromedp.CSS(`select[name="device"]`), device),
			chromedp.Click(chromedp.CSS(`form.filter button`)),
			chromedp.WaitVisible(chromedp.CSS(`form.filter a`)), // "clear the filter": the filtered page
		); err != nil {
			t.Fatal(err)
		}
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		u, _ := url.Parse(loc)
		if u.Query().Get("version") != version || u.Query().Get("device") != device {
			t.Errorf("the filter form went to %s, want version=%q device=%q", loc, version, device)
		}
		return eval[[]bucketRow](t, ctx, readBucketRows)
	}
	count := func(rows []bucketRow) map[string]int {
		m := map[string]int{}
		for _, r := range rows {
			m[r.Signature] = r.Count
		}
		return m
	}
	expect := func(keep func(*fleetDump) bool) map[string]int {
		m := map[string]int{}
		for sig, w := range want {
			for _, fd := range w.Dumps {
				if keep(fd) {
					m[sig]++
				}
			}
		}
		return m
	}
	for _, c := range []struct{ version, device string }{{"1.1", ""}, {"", "sensor-A"}, {"", hostileDevice}, {"1.0", "sensor-B"}} {
		got := count(filter(c.version, c.device))
		w := expect(func(fd *fleetDump) bool {
			return (c.version == "" || fd.version == c.version) && (c.device == "" || fd.device == c.device)
		})
		if !mapsEqual(got, w) {
			t.Errorf("filter version=%q device=%q: buckets %v, want %v", c.version, c.device, got, w)
		}
		if c.device == "sensor-A" {
			shot(t, ctx, "filtered")
		}
	}

	// 7. The symbols page lists the three ELFs by build ID.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/symbols")); err != nil {
		t.Fatal(err)
	}
	syms := text(t, ctx, "table.symbols")
	for _, b := range fleetBuilds {
		f, err := elfsym.Open(filepath.Join(root, "firmware-samples/buildid/build", b+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		if id := f.BuildID(); id == "" || !strings.Contains(syms, id) {
			t.Errorf("the symbols page lacks %s's build ID %q", b, id)
		}
		f.Close()
	}
	shot(t, ctx, "symbols")
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// iframeText waits for the iframe's document to hold marker and returns
// its text.
func iframeText(t *testing.T, ctx context.Context, sel, marker string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const f = document.querySelector(%q); const d = f && f.contentDocument; return d && d.body ? d.body.innerText : "" })()`, sel)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := eval[string](t, ctx, js)
		if strings.Contains(s, marker) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report in %s never showed %q: %.300q", sel, marker, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shot saves a full-page screenshot into $FAULTLINE_SCREENSHOTS, when set
// (to look at the pages; never committed).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("FAULTLINE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(t.Name())+"-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServer runs the crash server as `faultline serve --data DIR
// [--db DB]` does (fleet.Open: the SQLite store and the uploaded files
// under a fresh directory, or PostgreSQL at db; the API and these pages)
// with two decoding workers, on a loopback port.
func startServer(t *testing.T, db string) string {
	t.Helper()
	return startServerTokens(t, db, nil)
}

func startServerTokens(t *testing.T, db string, tokens *server.Tokens) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in, err := fleet.Open(ctx, fleet.Config{Data: t.TempDir(), DB: db, Tokens: tokens, Workers: 2, Poll: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := httptest.NewServer(in.Handler)
	done := make(chan error, 1)
	go func() { done <- in.RunWorkers(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("workers: %v", err)
		}
		in.Close()
	})
	return srv.URL
}

// TestBrowserToken: behind a token file the pages need the read role.
// The browser asks for the token as a password (HTTP Basic), as a user
// would type it into the prompt: without one the answer is 401, with an
// upload-only token 403, and with a read token the pages and the
// embedded report as usual.
func TestBrowserToken(t *testing.T) {
	const readToken, uploadToken = "eng-8a2d4f6b0c1e3a57", "ci-3b1f0c9e5d7a4e21"
	tokens, err := server.ParseTokens([]byte("read "+readToken+"\nupload "+uploadToken+"\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	base := startServerTokens(t, "", tokens)
	fd := loadFleet(t, root)[2] // gcc-m3-O2 null_write_deep
	auth := map[string]string{"Authorization": "Bearer " + uploadToken, "X-Faultline-Device": fd.device, "X-Faultline-Version": fd.version}
	fd.id, _ = post(t, base+"/api/v1/dumps", fd.body, auth)["id"].(string)
	elf, err := os.ReadFile(filepath.Join(root, "firmware-samples/buildid/build", fd.build+".elf"))
	if err != nil {
		t.Fatal(err)
	}
	post(t, base+"/api/v1/symbols", elf, auth)

	for _, c := range []struct {
		token string
		want  int64
	}{{"", http.StatusUnauthorized}, {uploadToken, http.StatusForbidden}} {
		ctx := browserWithPassword(t, c.token)
		for _, p := range []string{"/", "/symbols", "/dumps/" + fd.id, "/dumps/" + fd.id + "/report"} {
			resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(base+p))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if resp.Status != c.want {
				t.Errorf("%s with the password %q: status %d, want %d", p, c.token, resp.Status, c.want)
			}
		}
	}
	ctx := browserWithPassword(t, readToken)
	poll(t, ctx, base+"/dumps/"+fd.id, time.Minute, "decoded", func() (bool, string) {
		s := text(t, ctx, "#status")
		return s == "decoded", s
	})
	if r := iframeText(t, ctx, "iframe.report", "null_store"); !strings.Contains(r, "scenario_null_write_deep") {
		t.Errorf("the report behind the token lacks the backtrace")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	if rows := eval[[]bucketRow](t, ctx, readBucketRows); len(rows) != 1 || rows[0].Count != 1 {
		t.Errorf("the bucket list behind the token: %+v, want one bucket of one dump", rows)
	}
}

// browserWithPassword starts a browser that answers every HTTP
// authentication prompt with password (no user name), or cancels it when
// password is "".
func browserWithPassword(t *testing.T, password string) context.Context {
	t.Helper()
	ctx := browsertest.New(t, browsertest.Options{})
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	prompts := chromedp.Events(ctx, fetch.AuthRequired)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range prompts {
			if err != nil {
				return
			}
			answer := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if password != "" {
				answer = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Password: password}
			}
			chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: answer})
		}
	}()
	yes := true
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes}); err != nil {
		t.Fatal(err)
	}
	return ctx
}
