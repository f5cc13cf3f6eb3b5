//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/faultline-dev/faultline/internal/testtool"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis/report"
)

// The colours the page uses (analysis/render/htmlout/html.go, pageCSS). Chromium paints
// flat fills exactly, so the screenshot holds these values as they are.
const (
	pxBackground = 0xf6f7f9 // body
	pxCard       = 0xffffff // section cards
	pxHeader     = 0x1d2330 // the dark header band
	pxSavedLR    = 0xcdeed8 // rect.w.lr: a saved return address
	pxException  = 0xffe9c7 // rect.w.exc: a hardware-stacked register
	pxFP         = 0xece6fb // rect.w.fp: the FP area of an extended frame
	pxPad        = 0xe9ebef // rect.w.pad: the alignment pad
	pxFaulting   = 0xfde7e4 // rect.w.faulting: the frame the fault interrupted
	pxMark       = 0x0b57d0 // the SP/MSP/PSP arrows
)

// browserTimeout bounds one Chromium run; a browser that hangs is killed
// with its whole process group.
const browserTimeout = 90 * time.Second

// findChromium returns Debian's chromium (or a compatible browser), or
// skips the test.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testtool.Missing(t, "chromium is not installed (apt-get install chromium, or .ci/install-deps.sh --toolchain): skipping the HTML screenshot test")
	return ""
}

// runBrowser runs headless Chromium with args after the common flags, in
// a process group of its own that is killed when the run times out (and
// after it ends, for any helper left behind). It returns stdout.
func runBrowser(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + filepath.Join(home, "profile"),
	}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	}
	if ctx.Err() != nil {
		t.Fatalf("chromium did not finish within %v (killed): %v\n%s", browserTimeout, err, stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// shoot renders page at width x height and decodes the PNG.
func shoot(t *testing.T, browser, page, out string, width, height int) image.Image {
	t.Helper()
	runBrowser(t, browser, "--screenshot="+out, fmt.Sprintf("--window-size=%d,%d", width, height), "file://"+page)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", out, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), width, height)
	}
	return img
}

func rgb(img image.Image, x, y int) uint32 {
	r, g, b, _ := img.At(x, y).RGBA()
	return (r>>8)<<16 | (g>>8)<<8 | b>>8
}

// band is a run of pixel rows [Y0, Y1) of one colour, and the horizontal
// extent [X0, X1] of that colour in them.
type band struct{ Y0, Y1, X0, X1 int }

// bands finds the pixel rows where colour c covers at least minPixels
// pixels and merges rows at most 3 pixels apart (the 1px borders between
// two words of a stack column) into bands. A legend swatch (12px) or a
// glyph never reaches minPixels; a word of the stack picture (448px wide,
// some of it under its text) does.
func bands(img image.Image, c uint32, minPixels int) []band {
	b := img.Bounds()
	var out []band
	for y := b.Min.Y; y < b.Max.Y; y++ {
		n, x0, x1 := 0, b.Max.X, -1
		for x := b.Min.X; x < b.Max.X; x++ {
			if rgb(img, x, y) == c {
				n++
				x0, x1 = min(x0, x), max(x1, x)
			}
		}
		if n < minPixels {
			continue
		}
		if k := len(out) - 1; k >= 0 && y-out[k].Y1 <= 3 {
			out[k].Y1 = y + 1
			out[k].X0, out[k].X1 = min(out[k].X0, x0), max(out[k].X1, x1)
			continue
		}
		out = append(out, band{Y0: y, Y1: y + 1, X0: x0, X1: x1})
	}
	return out
}

// pageColours counts the distinct colours of img and the share of the
// most common one.
func pageColours(img image.Image) (int, float64) {
	counts := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[rgb(img, x, y)]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	return len(counts), float64(top) / float64(b.Dx()*b.Dy())
}

// near reports whether two colours differ by at most d in every channel.
func near(a, b uint32, d int) bool {
	for s := 0; s < 24; s += 8 {
		x, y := int(a>>s&0xff), int(b>>s&0xff)
		if x-y > d || y-x > d {
			return false
		}
	}
	return true
}

// htmlCase is one page of the screenshot test and what its stack picture
// must show.
type htmlCase struct {
	elf, dump string
	columns   []string // the stacks drawn, in order
	excBlocks int      // hardware-stacked exception frames on the picture
	fp, pad   bool     // an FP area / an alignment pad is drawn
	nested    bool     // saved return addresses lie between two exception frames
}

// TestHTMLChromium renders the page of representative crashes in headless
// Chromium and checks what a reader would see:
//
//   - the viewport screenshot (1280x2000) is a valid PNG of that size, not
//     blank, with the dark header band on top and the content laid out in
//     centred cards at the window's width (nothing overflows sideways);
//   - a full-height screenshot (1280x4000) shows the stack picture: the
//     saved-LR, exception-frame, FP, pad and faulting-frame fills as wide
//     rows in the stack column (left of the frame titles, right of the
//     SP arrows), in the expected order from high to low addresses, with
//     an SP arrow beside the column, and the page ends before 4000px;
//   - the DOM Chromium builds (--dump-dom) holds one SVG per stack, one
//     bracket title per walk frame and a backtrace table listing every
//     frame of the analysis in order.
//
// FAULTLINE_SCREENSHOT_DIR keeps the pages and screenshots for a human to
// look at.
func TestHTMLChromium(t *testing.T) {
	browser := findChromium(t)
	keep := os.Getenv("FAULTLINE_SCREENSHOT_DIR")
	for _, c := range []htmlCase{
		// A deep call chain on the main stack.
		{elf: "gcc-m3-O2", dump: "gcc-m3-O2-null_write_deep", columns: []string{"MSP"}, excBlocks: 1},
		// A thread on the process stack, the handler on the main stack.
		{elf: "gcc-m3-O2", dump: "gcc-m3-O2-psp_thread", columns: []string{"MSP", "PSP"}, excBlocks: 1},
		// An extended frame: lazily stacked FP registers and the pad.
		{elf: "clang-m4f-O0", dump: "clang-m4f-O0-fpu_crash", columns: []string{"MSP"}, excBlocks: 1, fp: true, pad: true},
		// A fault in an IRQ handler that interrupted thread code.
		{elf: "gcc-m3-O2", dump: "gcc-m3-O2-irq_crash", columns: []string{"MSP"}, excBlocks: 2, nested: true},
	} {
		t.Run(c.dump, func(t *testing.T) {
			dir := t.TempDir()
			if keep != "" {
				dir = keep
			}
			elf := filepath.Join(repo, "firmware-samples/build", c.elf+".elf")
			dump := filepath.Join(repo, "fixtures/qemu", c.dump+".json")
			out, errs, code := run(t, "", "analyze", "--format", "html", "--elf", elf, dump)
			if code != 0 {
				t.Fatalf("analyze --format html: exit %d: %s", code, errs)
			}
			js, errs, code := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
			if code != 0 {
				t.Fatalf("analyze --format json: exit %d: %s", code, errs)
			}
			var rep report.Report
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatal(err)
			}
			page, err := filepath.Abs(filepath.Join(dir, c.dump+".html"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			checkViewport(t, shoot(t, browser, page, filepath.Join(dir, c.dump+".png"), 1280, 2000))
			checkStackPicture(t, c, shoot(t, browser, page, filepath.Join(dir, c.dump+"-full.png"), 1280, 4000))
			checkDOM(t, c, &rep, string(runBrowser(t, browser, "--dump-dom", "file://"+page)))
		})
	}
}

// checkViewport checks the first screen of the page.
func checkViewport(t *testing.T, img image.Image) {
	t.Helper()
	// Not blank: text, badges, source highlights.
	if n, top := pageColours(img); n < 200 || top > 0.9 {
		t.Errorf("%d distinct colours, %.0f%% of the pixels the most common one: the page looks blank", n, top*100)
	}
	// The header band: the top rows are the header's dark blue, apart
	// from its text.
	dark, all := 0, 0
	for y := 4; y < 60; y++ {
		for x := 0; x < 1280; x += 2 {
			all++
			if rgb(img, x, y) == pxHeader {
				dark++
			}
		}
	}
	if float64(dark) < 0.75*float64(all) {
		t.Errorf("header band: %d of %d pixels are #%06x", dark, all, pxHeader)
	}
	// The cards are centred in the 1280px window: main is 1240px wide
	// with 28px padding, so a card spans x = 48..1232 and the page
	// background shows on both sides.
	found := false
	for y := 80; y < 600 && !found; y++ {
		if rgb(img, 60, y) != pxCard || rgb(img, 1220, y) != pxCard {
			continue
		}
		found = true
		if l, r := rgb(img, 30, y), rgb(img, 1250, y); l != pxBackground || r != pxBackground {
			t.Errorf("row %d: margins #%06x / #%06x, want the background #%06x: the layout is not 1280px wide", y, l, r, pxBackground)
		}
	}
	if !found {
		t.Errorf("no card spanning x = 60..1220 in the first 600 rows: the page is not laid out at 1280px")
	}
}

// checkStackPicture checks the colours of the stack picture and where
// they are.
func checkStackPicture(t *testing.T, c htmlCase, img image.Image) {
	t.Helper()
	const minPixels = 150
	lr := bands(img, pxSavedLR, minPixels)
	exc := bands(img, pxException, minPixels)
	fp := bands(img, pxFP, minPixels)
	pad := bands(img, pxPad, minPixels)
	fault := bands(img, pxFaulting, minPixels)
	// Every fill is a row of the stack column: left of the frame titles
	// (the column is 448px wide, starting after 58px of SP arrows in a
	// card that starts at x = 69) and wide.
	colX0, colX1 := 1280, 0
	for name, bs := range map[string][]band{"saved LR": lr, "exception": exc, "FP": fp, "pad": pad, "faulting": fault} {
		for _, b := range bs {
			if b.X0 < 69 || b.X0 > 200 || b.X1 > 700 || b.X1-b.X0 < 400 {
				t.Errorf("%s fill at y %d..%d spans x %d..%d: want a row of the stack column (x from ~127, 400-600px wide)", name, b.Y0, b.Y1, b.X0, b.X1)
			}
			colX0, colX1 = min(colX0, b.X0), max(colX1, b.X1)
		}
	}
	if len(lr) == 0 {
		t.Fatalf("no saved return address (#%06x) drawn", pxSavedLR)
	}
	if len(fault) == 0 {
		t.Errorf("the faulting frame (#%06x) is not drawn", pxFaulting)
	}
	// Exception frames: one band each (their words are adjacent), the FP
	// area and pad next to them.
	if len(exc) != c.excBlocks {
		t.Errorf("%d exception-frame bands (#%06x), want %d: %+v", len(exc), pxException, c.excBlocks, exc)
	}
	if c.fp != (len(fp) > 0) || c.pad != (len(pad) > 0) {
		t.Errorf("FP area drawn %v (want %v), pad drawn %v (want %v)", len(fp) > 0, c.fp, len(pad) > 0, c.pad)
	}
	if c.fp && len(fp) > 0 && len(exc) > 0 {
		// 18 words of FP area sit right above r0..xPSR.
		if f, e := fp[len(fp)-1], exc[len(exc)-1]; f.Y1 > e.Y0+3 || f.Y1-f.Y0 < 17*20 {
			t.Errorf("FP area at y %d..%d, exception frame at y %d..%d: want 18 words right above it", f.Y0, f.Y1, e.Y0, e.Y1)
		}
	}
	if c.pad && len(pad) > 0 && len(fp) > 0 && pad[0].Y1 > fp[0].Y0+3 {
		t.Errorf("pad at y %d..%d is not above the FP area (y %d..)", pad[0].Y0, pad[0].Y1, fp[0].Y0)
	}
	// Addresses grow upwards: the callers' saved LRs are above the
	// innermost exception frame.
	if len(exc) > 0 && len(c.columns) == 1 {
		last := exc[len(exc)-1]
		for _, b := range lr {
			if b.Y0 > last.Y0 {
				t.Errorf("saved LR at y %d is below the innermost exception frame (y %d)", b.Y0, last.Y0)
			}
		}
	}
	if c.nested && len(exc) >= 2 {
		// The IRQ handler's own frames (with saved LRs) lie between the
		// exception frame that entered it and the one of the fault.
		between := 0
		for _, b := range lr {
			if b.Y0 > exc[0].Y1 && b.Y1 < exc[1].Y0 {
				between++
			}
		}
		if between == 0 {
			t.Errorf("no saved LR between the two exception frames (y %d..%d, %d..%d)", exc[0].Y0, exc[0].Y1, exc[1].Y0, exc[1].Y1)
		}
	}
	// An SP arrow beside the column.
	marks := 0
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 69; x < colX0; x++ {
			if near(rgb(img, x, y), pxMark, 24) {
				marks++
			}
		}
	}
	if marks < 20 {
		t.Errorf("%d pixels of the SP arrows (#%06x) left of the stack column: want an arrow", marks, pxMark)
	}
	// The whole page fits in 4000px: the last rows are background.
	for y := 3950; y < 4000; y++ {
		for x := 0; x < 1280; x += 8 {
			if p := rgb(img, x, y); p != pxBackground {
				t.Fatalf("pixel (%d,%d) is #%06x: the page is taller than 4000px", x, y, p)
			}
		}
	}
}

var (
	reSVG   = regexp.MustCompile(`<svg[^>]*class="stack"[^>]*aria-label="([A-Z]+) stack"`)
	reTitle = regexp.MustCompile(`<text class="title"[^>]*>([^<]*)`)
	reFn    = regexp.MustCompile(`<td class="fn">([^<]*)`)
)

// checkDOM checks the document Chromium built from the page.
func checkDOM(t *testing.T, c htmlCase, rep *report.Report, dom string) {
	t.Helper()
	if !strings.Contains(dom, `<table class="bt">`) {
		t.Fatalf("no backtrace table in the DOM:\n%.2000s", dom)
	}
	var cols []string
	for _, m := range reSVG.FindAllStringSubmatch(dom, -1) {
		cols = append(cols, m[1])
	}
	if strings.Join(cols, ",") != strings.Join(c.columns, ",") {
		t.Errorf("stack columns %v, want %v", cols, c.columns)
	}
	// One bracket title per frame of the walk (inlined frames share their
	// caller's span), each naming its frame's index.
	var want []string
	for _, f := range rep.Frames {
		if f.Kind != "inlined" {
			want = append(want, fmt.Sprintf("#%d ", f.Index))
		}
	}
	titles := reTitle.FindAllStringSubmatch(dom, -1)
	if len(titles) != len(want) {
		t.Errorf("%d frame titles in the stack picture, want %d", len(titles), len(want))
	}
	seen := map[string]bool{}
	for _, m := range titles {
		if i := strings.IndexByte(m[1], ' '); i > 0 {
			seen[m[1][:i+1]] = true
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no stack-picture title for frame %s", w)
		}
	}
	// The backtrace table lists every frame in order.
	fns := reFn.FindAllStringSubmatch(dom, -1)
	if len(fns) != len(rep.Frames) {
		t.Fatalf("%d backtrace rows, want %d", len(fns), len(rep.Frames))
	}
	for i, f := range rep.Frames {
		got := html.UnescapeString(fns[i][1])
		switch {
		case f.Kind == "exception":
			if got != "exception frame" {
				t.Errorf("row %d: %q, want the exception frame", i, got)
			}
		case f.Function != "" && !strings.HasPrefix(got, f.Function):
			t.Errorf("row %d: %q, want %s", i, got, f.Function)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Error("the page has a script")
	}
}
