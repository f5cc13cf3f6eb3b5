// Package web is the crash server's web pages (design.md, "Fleet server"):
// the bucket list (/), a bucket (/buckets/{signature}), a dump
// (/dumps/{id}, and its full HTML report at /dumps/{id}/report) and the
// uploaded symbols (/symbols). The pages are rendered on the server with
// html/template from embedded templates, so every value read from the
// store (device names, versions, file names, error texts) is escaped;
// they need no JavaScript but one line that sizes the embedded report to
// its content. The bucket list and the bucket page filter by firmware
// version and device with a plain GET form.
//
// The pages only read: they take the read side of the store (Source) and
// a Reporter that renders one decoded dump's report with the analysis
// package's HTML renderer, the page `faultline analyze --format html`
// writes.
package web

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
)

// Source is what the pages read from the store; store.Store satisfies it.
type Source interface {
	Symbols(ctx context.Context) ([]store.Symbol, error)
	SymbolsByBuildID(ctx context.Context, buildID string) ([]store.Symbol, error)
	Dump(ctx context.Context, id string) (store.Dump, error)
	Dumps(ctx context.Context, q store.DumpQuery) ([]store.Dump, error)
	Buckets(ctx context.Context, f store.BucketFilter) ([]store.Bucket, error)
	Bucket(ctx context.Context, signature string, f store.BucketFilter) (store.Bucket, error)
}

// A Reporter writes the self-contained HTML report of a decoded dump
// (the page of htmlout.Write) to w.
type Reporter func(ctx context.Context, d store.Dump, w io.Writer) error

// Options configure the pages.
type Options struct {
	Store Source
	// Report renders a decoded dump's full report; nil: the pages show
	// the backtrace of the stored analysis only.
	Report Reporter
	// Now is the clock for the 30-day sparklines (nil: time.Now).
	Now func() time.Time
}

// Limits on what one page lists, so that a page stays readable and its
// cost bounded whatever the store holds.
const (
	maxBuckets      = 500 // buckets listed (the most dumps first)
	maxBucketDumps  = 500 // dumps listed on a bucket page
	maxPendingDumps = 50  // dumps per state in the list's "not decoded" section
	maxShownValues  = 4   // devices or versions named in a bucket list row
	maxFilterValue  = 256 // bytes of a version or device filter value
	maxFrames       = 64  // frames of the compact backtrace on a dump page
)

// Pages serves the web pages. Register them on a mux with Register, or
// serve them alone (Pages is an http.Handler).
type Pages struct {
	opt    Options
	pages  map[string]*template.Template
	mux    *http.ServeMux
	facets facetCache
}

//go:embed templates/*.html
var templateFS embed.FS

// New parses the templates.
func New(opt Options) (*Pages, error) {
	if opt.Store == nil {
		return nil, errors.New("web: no store")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	p := &Pages{opt: opt, pages: map[string]*template.Template{}}
	for _, name := range []string{"buckets", "bucket", "dump", "symbols", "error"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		p.pages[name] = t
	}
	p.mux = http.NewServeMux()
	p.Register(p.mux)
	return p, nil
}

// Register adds the pages' routes to mux: GET /, /buckets/{signature},
// /dumps/{id}, /dumps/{id}/report and /symbols.
func (p *Pages) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", p.buckets)
	mux.HandleFunc("GET /buckets/{signature}", p.bucket)
	mux.HandleFunc("GET /dumps/{id}", p.dump)
	mux.HandleFunc("GET /dumps/{id}/report", p.report)
	mux.HandleFunc("GET /symbols", p.symbols)
}

func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// filter is the version/device selection of a page, from its query.
type filter struct {
	Version, Device string
}

func (f filter) Active() bool { return f.Version != "" || f.Device != "" }

// Query is the filter as a URL query ("?version=..&device=.."), "" when
// none is set.
func (f filter) Query() string {
	v := url.Values{}
	if f.Version != "" {
		v.Set("version", f.Version)
	}
	if f.Device != "" {
		v.Set("device", f.Device)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func readFilter(r *http.Request) (filter, error) {
	q := r.URL.Query()
	f := filter{Version: q.Get("version"), Device: q.Get("device")}
	if len(f.Version) > maxFilterValue || len(f.Device) > maxFilterValue {
		return filter{}, fmt.Errorf("a version or device filter is longer than %d bytes", maxFilterValue)
	}
	return f, nil
}

func (p *Pages) storeFilter(f filter) store.BucketFilter {
	return store.BucketFilter{Version: f.Version, Device: f.Device, Now: p.opt.Now()}
}

// choices is one filter's select: the values offered and the one chosen.
type choices struct {
	Values   []string
	Selected string
}

// facets lists the versions and devices of every decoded dump (from the
// unfiltered buckets, each bounded by store.MaxListed), sorted; a value
// selected but no longer listed is kept so that the form shows it.
func facets(all []store.Bucket, f filter) (versions, devices choices) {
	vs, ds := map[string]bool{}, map[string]bool{}
	for _, b := range all {
		for _, v := range b.Versions {
			vs[v] = true
		}
		for _, d := range b.Devices {
			ds[d] = true
		}
	}
	if f.Version != "" {
		vs[f.Version] = true
	}
	if f.Device != "" {
		ds[f.Device] = true
	}
	keys := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	return choices{keys(vs), f.Version}, choices{keys(ds), f.Device}
}

// facetTTL is how long the filter selects' values are reused: listing
// them means aggregating every decoded dump (store.Buckets), a quarter
// of a second for 10,000 dumps.
const facetTTL = 10 * time.Second

type facetCache struct {
	mu      sync.Mutex
	buckets []store.Bucket
	at      time.Time
}

func (p *Pages) keepFacets(all []store.Bucket, now time.Time) {
	p.facets.mu.Lock()
	p.facets.buckets, p.facets.at = all, now
	p.facets.mu.Unlock()
}

// allFacets gives the versions and devices of every bucket.
func (p *Pages) allFacets(ctx context.Context, f filter, now time.Time) (versions, devices choices, err error) {
	p.facets.mu.Lock()
	all, at := p.facets.buckets, p.facets.at
	p.facets.mu.Unlock()
	if all == nil || now.Sub(at) > facetTTL || now.Before(at) {
		if all, err = p.opt.Store.Buckets(ctx, store.BucketFilter{Now: now}); err != nil {
			return choices{}, choices{}, err
		}
		p.keepFacets(all, now)
	}
	versions, devices = facets(all, f)
	return versions, devices, nil
}

// bucketRow is one bucket of the list or the head of a bucket page.
type bucketRow struct {
	store.Bucket
	Link      string
	Sparkline template.HTML
}

func (p *Pages) row(b store.Bucket, f filter, now time.Time, big bool) bucketRow {
	w, h := 150, 28
	if big {
		w, h = 300, 48
	}
	return bucketRow{
		Bucket:    b,
		Link:      "/buckets/" + url.PathEscape(b.Signature) + f.Query(),
		Sparkline: sparkline(b.Daily, now, w, h), // now: the store's, so that the days agree
	}
}

type pendingGroup struct {
	Status store.Status
	Dumps  []store.Dump
	More   bool
}

func (p *Pages) buckets(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, err := readFilter(r)
	if err != nil {
		p.fail(w, r, http.StatusBadRequest, err)
		return
	}
	sf := p.storeFilter(f)
	list, err := p.opt.Store.Buckets(ctx, sf)
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var versions, devices choices
	if f.Active() {
		// The selects offer every version and device, not only the
		// filtered ones: those of all buckets, computed again at most
		// every facetTTL (the figures of the list itself are never
		// cached).
		if versions, devices, err = p.allFacets(ctx, f, sf.Now); err != nil {
			p.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	} else {
		versions, devices = facets(list, f)
		p.keepFacets(list, sf.Now)
	}
	total := 0
	for _, b := range list {
		total += b.Count
	}
	hidden := max(0, len(list)-maxBuckets)
	list = list[:len(list)-hidden]
	rows := make([]bucketRow, len(list))
	for i, b := range list {
		rows[i] = p.row(b, f, sf.Now, false)
	}
	var pending []pendingGroup
	for _, st := range []store.Status{store.StatusWaiting, store.StatusQueued, store.StatusFailed} {
		ds, err := p.opt.Store.Dumps(ctx, store.DumpQuery{Status: st, Version: f.Version, Device: f.Device, Limit: maxPendingDumps + 1})
		if err != nil {
			p.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		if len(ds) > 0 {
			g := pendingGroup{Status: st, Dumps: ds, More: len(ds) > maxPendingDumps}
			if g.More {
				g.Dumps = ds[:maxPendingDumps]
			}
			pending = append(pending, g)
		}
	}
	p.render(w, r, http.StatusOK, "buckets", map[string]any{
		"Title": "Crash buckets", "Nav": "buckets",
		"Filter": f, "Action": "/", "Versions": versions, "Devices": devices,
		"Buckets": rows, "Hidden": hidden, "Total": total, "Pending": pending,
	})
}

func (p *Pages) bucket(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sig := r.PathValue("signature")
	f, err := readFilter(r)
	if err != nil {
		p.fail(w, r, http.StatusBadRequest, err)
		return
	}
	sf := p.storeFilter(f)
	b, err := p.opt.Store.Bucket(ctx, sig, sf)
	if errors.Is(err, store.ErrNotFound) && f.Active() {
		// The bucket exists, but no dump of it matches the filter: say
		// so rather than "no such bucket".
		if whole, err2 := p.opt.Store.Bucket(ctx, sig, store.BucketFilter{Now: sf.Now}); err2 == nil {
			b, err = whole, nil
			b.Count, b.Devices, b.DeviceCount, b.Versions, b.VersionCount = 0, nil, 0, nil, 0
			b.FirstSeen, b.LastSeen, b.Daily = time.Time{}, time.Time{}, [store.Days]int{}
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		p.fail(w, r, http.StatusNotFound, fmt.Errorf("no bucket has the signature %q", sig))
		return
	}
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	all := b
	if f.Active() {
		if all, err = p.opt.Store.Bucket(ctx, sig, store.BucketFilter{Now: sf.Now}); err != nil {
			p.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	versions, devices := facets([]store.Bucket{all}, f)
	dumps, err := p.opt.Store.Dumps(ctx, store.DumpQuery{Bucket: sig, Version: f.Version, Device: f.Device, Limit: maxBucketDumps + 1})
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	more := len(dumps) > maxBucketDumps
	if more {
		dumps = dumps[:maxBucketDumps]
	}
	// The representative crash: the newest decoded dump the filter
	// selects.
	var example *store.Dump
	for i := range dumps {
		if dumps[i].Status == store.StatusDecoded {
			example = &dumps[i]
			break
		}
	}
	p.render(w, r, http.StatusOK, "bucket", map[string]any{
		"Title": b.Title, "Nav": "buckets",
		"Filter": f, "Action": "/buckets/" + url.PathEscape(sig), "Versions": versions, "Devices": devices,
		"Bucket": p.row(b, f, sf.Now, true), "Dumps": dumps, "More": more, "Limit": maxBucketDumps,
		"Example": example, "Reports": p.opt.Report != nil,
	})
}

// analysisView is the part of a stored faultline.analysis/1 document the
// dump page shows above the full report: the fault and the backtrace.
type analysisView struct {
	Fault struct {
		Exception string `json:"exception"`
		Address   string `json:"address"`
	} `json:"fault"`
	Frames []struct {
		Index    int    `json:"index"`
		PC       string `json:"pc"`
		Function string `json:"function"`
		Symbol   string `json:"symbol"`
		File     string `json:"file"`
		Line     int    `json:"line"`
		Kind     string `json:"kind"`
	} `json:"frames"`
	Stop string `json:"stop"`
}

func (p *Pages) dump(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, err := p.opt.Store.Dump(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		p.fail(w, r, http.StatusNotFound, fmt.Errorf("no dump has the id %q", id))
		return
	}
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	data := map[string]any{
		"Title": "Dump " + d.ID, "Nav": "dump", "Dump": d, "Reports": p.opt.Report != nil,
	}
	if y, ok := symbolOf(r.Context(), p.opt.Store, d.ELF, d.BuildID); ok {
		data["ELF"] = y
	}
	if d.Bucket != "" {
		if b, err := p.opt.Store.Bucket(r.Context(), d.Bucket, p.storeFilter(filter{})); err == nil {
			data["Bucket"] = b
		}
	}
	if len(d.Analysis) > 0 {
		var a analysisView
		if err := json.Unmarshal(d.Analysis, &a); err != nil {
			data["AnalysisError"] = "the stored analysis is not valid JSON: " + err.Error()
		} else {
			if len(a.Frames) > maxFrames {
				data["MoreFrames"] = len(a.Frames) - maxFrames
				a.Frames = a.Frames[:maxFrames]
			}
			data["Analysis"] = a
		}
	}
	if d.Status == store.StatusQueued {
		data["Refresh"] = 5 // seconds: the page reloads until the dump is decoded
	}
	p.render(w, r, http.StatusOK, "dump", data)
}

func (p *Pages) report(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, err := p.opt.Store.Dump(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		p.fail(w, r, http.StatusNotFound, fmt.Errorf("no dump has the id %q", id))
		return
	case err != nil:
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	case d.Status != store.StatusDecoded:
		p.fail(w, r, http.StatusNotFound, fmt.Errorf("dump %s is not decoded (%s): it has no report", d.ID, d.Status))
		return
	case p.opt.Report == nil:
		p.fail(w, r, http.StatusNotFound, errors.New("this server renders no HTML reports"))
		return
	}
	var buf bytes.Buffer
	if err := p.opt.Report(r.Context(), d, &buf); err != nil {
		p.fail(w, r, http.StatusInternalServerError, fmt.Errorf("rendering the report of dump %s: %w", d.ID, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Frame-Options", "SAMEORIGIN")
	w.Write(buf.Bytes())
}

// awaited is a build ID that dumps wait for.
type awaited struct {
	BuildID string
	Count   int
	Latest  time.Time
}

func (p *Pages) symbols(w http.ResponseWriter, r *http.Request) {
	syms, err := p.opt.Store.Symbols(r.Context())
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	waiting, err := p.opt.Store.Dumps(r.Context(), store.DumpQuery{Status: store.StatusWaiting, Limit: 10000})
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	by := map[string]*awaited{}
	var want []*awaited
	for _, d := range waiting {
		a := by[d.BuildID]
		if a == nil {
			a = &awaited{BuildID: d.BuildID}
			by[d.BuildID] = a
			want = append(want, a)
		}
		a.Count++
		if d.Received.After(a.Latest) {
			a.Latest = d.Received
		}
	}
	slices.SortStableFunc(want, func(a, b *awaited) int { return b.Count - a.Count })
	p.render(w, r, http.StatusOK, "symbols", map[string]any{
		"Title": "Symbols", "Nav": "symbols", "Symbols": syms, "Awaited": want, "Waiting": len(waiting),
	})
}

func (p *Pages) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	p.render(w, r, code, "error", map[string]any{
		"Title": http.StatusText(code), "Code": code, "Error": err.Error(),
	})
}

// render executes a page into a buffer first, so that a template error
// gives a clean 500 rather than half a page.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, code int, page string, data map[string]any) {
	var buf bytes.Buffer
	if err := p.pages[page].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		http.Error(w, "web: rendering "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-src 'self'; script-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"iso": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"size": func(n int64) string {
		switch {
		case n >= 10<<20:
			return fmt.Sprintf("%d MiB", n>>20)
		case n >= 10<<10:
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%d B", n)
	},
	// first returns the first n values and how many more there are.
	"first": func(vals []string, total int) map[string]any {
		n := min(len(vals), maxShownValues)
		return map[string]any{"Shown": vals[:n], "More": total - n}
	},
	"statusClass": func(s store.Status) string {
		return strings.ReplaceAll(string(s), "-", "")
	},
	"statusText": func(s store.Status) string {
		switch s {
		case store.StatusWaiting:
			return "waiting for symbols"
		}
		return string(s)
	},
	"plural": func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	},
	"add": func(a, b int) int { return a + b },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	// why is a dump's error without the dump's id the engine starts it
	// with (the page names the dump already).
	"why":      func(d store.Dump) string { return strings.TrimPrefix(d.Error, d.ID+": ") },
	"dumpLink": func(id string) string { return "/dumps/" + url.PathEscape(id) },
	"bucketLink": func(sig string) string {
		return "/buckets/" + url.PathEscape(sig)
	},
}
