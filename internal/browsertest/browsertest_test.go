package browsertest

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestNew loads a page from an httptest server into the browser and reads
// back what the page's script wrote: the browser really ran the page.
func TestNew(t *testing.T) {
	const want = "<escaped & computed>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>t</title><p id="in">%s</p><p id="out"></p>
<script>document.getElementById("out").textContent = document.getElementById("in").textContent.split("").reverse().join("")</script>`,
			html.EscapeString(reverse(want)))
	}))
	defer srv.Close()
	ctx := New(t, Options{})
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#out")))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("the page's script wrote %q, want %q", got, want)
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return strings.TrimSpace(string(r))
}

// TestFindRequired: with FAULTLINE_REQUIRE_TOOLS=1 and no browser on
// PATH, Find fails the test instead of skipping it.
func TestFindRequired(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("FAULTLINE_REQUIRE_TOOLS", "1")
	ft := &fakeTB{TB: t}
	func() {
		defer func() { recover() }() // Fatalf ends the fake test's goroutine with a panic here
		Find(ft)
	}()
	if !ft.failed || ft.skipped {
		t.Fatalf("missing browser with FAULTLINE_REQUIRE_TOOLS=1: failed=%v skipped=%v, want a failure", ft.failed, ft.skipped)
	}
	t.Setenv("FAULTLINE_REQUIRE_TOOLS", "")
	ft = &fakeTB{TB: t}
	func() {
		defer func() { recover() }()
		Find(ft)
	}()
	if ft.failed || !ft.skipped {
		t.Fatalf("missing browser without FAULTLINE_REQUIRE_TOOLS: failed=%v skipped=%v, want a skip", ft.failed, ft.skipped)
	}
}

type fakeTB struct {
	testing.TB
	failed, skipped bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	panic("fatal")
}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = true
	panic("skip")
}
