package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/store"
)

// dirFiles is Files over a directory of files named by their SHA-256.
type dirFiles string

func (d dirFiles) ReadFile(sum string, limit int64) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(string(d), sum))
	if err == nil && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", sum, limit)
	}
	return b, err
}

func (d dirFiles) put(t *testing.T, data []byte) string {
	t.Helper()
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	if err := os.WriteFile(filepath.Join(string(d), sum), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestFileReporter renders the report of a QEMU oracle dump uploaded as
// one self-contained manifest: the page is the analysis package's HTML
// report and names every function of GDB's own backtrace (the fixture's
// truth, an independent oracle).
func TestFileReporter(t *testing.T) {
	const build, scenario = "gcc-m3-O2", "null_write_deep"
	src, err := crashdump.Load("../../fixtures/qemu/" + build + "-" + scenario + ".json")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var manifest bytes.Buffer
	if err := src.WriteSelfContained(&manifest); err != nil {
		t.Fatal(err)
	}
	elfBytes, err := os.ReadFile("../../firmware-samples/build/" + build + ".elf")
	if err != nil {
		t.Fatal(err)
	}
	files := dirFiles(t.TempDir())
	d := store.Dump{ID: "dump-1", SHA256: files.put(t, manifest.Bytes()), ELF: files.put(t, elfBytes), Status: store.StatusDecoded}
	var page bytes.Buffer
	if err := FileReporter(files, nil, analysis.Options{})(context.Background(), d, &page); err != nil {
		t.Fatal(err)
	}
	out := page.String()
	if !strings.HasPrefix(out, "<!DOCTYPE html>") && !strings.HasPrefix(out, "<!doctype html>") {
		t.Fatalf("not an HTML page: %.80q", out)
	}
	if src.Truth == nil || len(src.Truth.Frames) < 3 {
		t.Fatalf("the fixture has no GDB backtrace")
	}
	for _, f := range src.Truth.Frames {
		if f.Function == "" || f.Kind == "exception" {
			continue
		}
		if !strings.Contains(out, html.EscapeString(f.Function)) {
			t.Errorf("the report lacks %s of GDB's backtrace", f.Function)
		}
	}
	// An ELF that is not there is an error, not a page.
	d.ELF = strings.Repeat("0", 64)
	if err := FileReporter(files, nil, analysis.Options{})(context.Background(), d, &page); err == nil {
		t.Errorf("a missing ELF rendered a page")
	}
}
