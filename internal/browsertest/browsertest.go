// Package browsertest starts a real headless Chromium for tests and hands
// back a chromedp context driving one tab of it. A test that needs the
// browser calls New; where Chromium is not installed the test is skipped,
// or fails naming it when FAULTLINE_REQUIRE_TOOLS=1 (what `make test`
// sets after .ci/install-deps.sh --toolchain installed Debian's chromium).
package browsertest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/faultline-dev/faultline/internal/testtool"
)

// Names are the programs tried, in order, for the browser: Debian's
// package first, then the names other distributions give a compatible
// browser.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of the browser, or skips (fails when required)
// the test when none of Names is on PATH.
func Find(tb testing.TB) string {
	tb.Helper()
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	testtool.Missing(tb, "chromium is not installed (apt-get install chromium, or .ci/install-deps.sh --toolchain): the browser test needs it")
	return ""
}

// Options configure New.
type Options struct {
	// Width and Height are the window's size in CSS pixels (0: 1366x900,
	// a laptop screen).
	Width, Height int
	// Timeout bounds everything the test does in the browser (0: 3
	// minutes); past it the context is cancelled and the browser killed.
	Timeout time.Duration
}

// New starts headless Chromium with a fresh profile under t.TempDir()
// and returns a context for one tab. The browser runs as root too
// (--no-sandbox: Chromium refuses its sandbox as root) and is killed when
// the test ends. Actions run with chromedp.Run(ctx, ...) fail once the
// timeout has passed.
func New(t *testing.T, opt Options) context.Context {
	t.Helper()
	path := Find(t)
	if opt.Width == 0 {
		opt.Width, opt.Height = 1366, 900
	}
	if opt.Timeout == 0 {
		opt.Timeout = 3 * time.Minute
	}
	home := t.TempDir()
	flags := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(home+"/profile"),
		chromedp.WindowSize(opt.Width, opt.Height),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home),
	)
	ctx, cancelTime := context.WithTimeout(context.Background(), opt.Timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, flags...)
	tab, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit and its profile to go
		cancelTime()
	})
	// Start the browser now, so that a browser that cannot start fails
	// here, with its error, rather than in the test's first action.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return tab
}
