package blobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutOpen(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("a crash dump")
	want := sha256.Sum256(body)
	sum, size, err := d.Put(bytes.NewReader(body), 100)
	if err != nil {
		t.Fatal(err)
	}
	if sum != hex.EncodeToString(want[:]) || size != int64(len(body)) {
		t.Fatalf("Put = %s %d", sum, size)
	}
	p, _ := d.Path(sum)
	if !strings.HasSuffix(p, filepath.Join("files", sum[:2], sum)) {
		t.Fatalf("path %s", p)
	}
	// Again: same address, still readable.
	if sum2, _, err := d.Put(bytes.NewReader(body), 100); err != nil || sum2 != sum {
		t.Fatalf("second Put = %s %v", sum2, err)
	}
	got, err := d.ReadFile(sum, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadFile = %q %v", got, err)
	}
	if _, err := d.ReadFile(sum, 3); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over the limit: %v", err)
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(filepath.Join(filepath.Dir(p), ".."))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".upload-") {
			t.Fatalf("temporary file %s left", e.Name())
		}
	}
}

func TestPutTooLarge(t *testing.T) {
	dir := t.TempDir()
	d, _ := Open(dir)
	_, _, err := d.Put(strings.NewReader("0123456789"), 9)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put of 10 bytes with limit 9: %v", err)
	}
	if _, _, err := d.Put(strings.NewReader("0123456789"), 10); err != nil {
		t.Fatalf("Put of 10 bytes with limit 10: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "files"))
	for _, e := range ents {
		if !e.IsDir() {
			t.Fatalf("left %s", e.Name())
		}
	}
}

func TestNeverReplacesNonRegular(t *testing.T) {
	dir := t.TempDir()
	d, _ := Open(dir)
	body := []byte("elf bytes")
	s := sha256.Sum256(body)
	sum := hex.EncodeToString(s[:])
	p, _ := d.Path(sum)
	os.MkdirAll(filepath.Dir(p), 0o755)
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("keep me"), 0o644)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Put(bytes.NewReader(body), 0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Put over a symlink: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if _, err := d.Open(sum); err == nil {
		t.Fatal("Open followed a symlink")
	}
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
}

func TestPathValidation(t *testing.T) {
	d, _ := Open(t.TempDir())
	for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63)} {
		if _, err := d.Path(bad); err == nil {
			t.Errorf("Path(%q) accepted", bad)
		}
	}
	if _, err := d.Open(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open(missing) = %v", err)
	}
}
