package cli

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromium returns the headless browser, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install chromium): no screenshot test")
	return ""
}

// screenshot renders page in headless Chromium and returns the PNG.
func screenshot(t *testing.T, browser, page, png string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--screenshot="+png, "--window-size=1280,2000", "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
}

// TestHTMLScreenshot renders the page of two fixtures (a deep MSP chain;
// a lazily stacked FP frame with its alignment pad) in headless Chromium
// and checks the screenshot is a real page: a valid 1280x2000 PNG with
// many colours, most of them not the background. FAULTLINE_SCREENSHOT_DIR
// keeps the PNGs for a human to look at.
func TestHTMLScreenshot(t *testing.T) {
	browser := chromium(t)
	keep := os.Getenv("FAULTLINE_SCREENSHOT_DIR")
	for _, c := range []struct{ elf, dump string }{
		{"gcc-m3-O2", "gcc-m3-O2-null_write_deep"},
		{"clang-m4f-O0", "clang-m4f-O0-fpu_crash"},
	} {
		t.Run(c.dump, func(t *testing.T) {
			dir := t.TempDir()
			if keep != "" {
				dir = keep
			}
			elf := filepath.Join(repo, "firmware-samples/build", c.elf+".elf")
			out, errs, code := run(t, "", "analyze", "--format", "html", "--elf", elf, filepath.Join(repo, "fixtures/qemu", c.dump+".json"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			page, err := filepath.Abs(filepath.Join(dir, c.dump+".html"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(dir, c.dump+".png")
			screenshot(t, browser, page, shot)
			data, err := os.ReadFile(shot)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
				t.Errorf("screenshot is %v, want 1280x2000", b)
			}
			colours, background := colourStats(img)
			// A blank or error page has a handful of colours; this page has
			// text, a dark header, coloured badges and source highlights.
			if colours < 200 {
				t.Errorf("%d distinct colours: the page looks blank", colours)
			}
			if background > 0.9 {
				t.Errorf("%.0f%% of the pixels are the most common colour: the page looks empty", background*100)
			}
		})
	}
}

// colourStats counts the distinct colours of img and the share of its
// most common colour.
func colourStats(img image.Image) (int, float64) {
	counts := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[(r>>8)<<16|(g>>8)<<8|bl>>8]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	return len(counts), float64(top) / float64(b.Dx()*b.Dy())
}
