package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
)

// TestBlobs: files go in and come back by their SHA-256 (as
// sha256sum computes it), the same bytes twice are one file, limits
// refuse without storing, and a file stored through one connection pool
// is read through another (a worker on another machine).
func TestBlobs(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s1, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	up, down := s1.Blobs(), s2.Blobs()
	body := bytes.Repeat([]byte("\x00\x01crash\xff"), 100000)
	want := sha256.Sum256(body)
	sum, size, err := up.Put(bytes.NewReader(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum != hex.EncodeToString(want[:]) || size != int64(len(body)) {
		t.Fatalf("Put = %s %d, want %x %d", sum, size, want, len(body))
	}
	if again, _, err := up.Put(bytes.NewReader(body), 0); err != nil || again != sum {
		t.Fatalf("Put of the same bytes = %s, %v", again, err)
	}
	got, err := down.ReadFile(sum, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadFile through another pool: %d bytes, err %v; want the %d stored", len(got), err, len(body))
	}
	if _, err := down.ReadFile(sum, int64(len(body))-1); !errors.Is(err, blobs.ErrTooLarge) {
		t.Fatalf("ReadFile over its limit: err %v, want ErrTooLarge", err)
	}
	if _, _, err := up.Put(strings.NewReader("12345"), 4); !errors.Is(err, blobs.ErrTooLarge) {
		t.Fatalf("Put over its limit: err %v, want ErrTooLarge", err)
	}
	small := sha256.Sum256([]byte("12345"))
	if _, err := down.ReadFile(hex.EncodeToString(small[:]), 0); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("a refused Put stored its bytes: ReadFile err %v, want ErrNotFound", err)
	}
	empty, _, err := up.Put(strings.NewReader(""), 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := down.ReadFile(empty, 0); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %q %v", b, err)
	}
	if _, err := down.ReadFile("../etc/passwd", 0); err == nil {
		t.Fatal("ReadFile accepted a name that is not a SHA-256")
	}
}
