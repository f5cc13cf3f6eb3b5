package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func noSleep(context.Context, time.Duration) error { return nil }

func TestRetries5xxThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, `{"error": "the database failed: busy"}`, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"id": "abc", "status": "queued"}`))
	}))
	defer ts.Close()
	c, _ := New(ts.URL, "")
	c.Sleep = noSleep
	var waits []time.Duration
	c.OnRetry = func(_ int, _ error, d time.Duration) { waits = append(waits, d) }
	u, err := c.UploadDump(context.Background(), []byte("x"), "", "", "")
	if err != nil || u.ID != "abc" || calls.Load() != 3 {
		t.Fatalf("%+v %v after %d calls", u, err, calls.Load())
	}
	if len(waits) != 2 || waits[0] != 500*time.Millisecond || waits[1] != time.Second {
		t.Fatalf("backoff %v, want 500ms then 1s", waits)
	}
}

func TestNoRetryOn4xx(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(`{"error": "the uploaded dump: unknown dump format"}`))
	}))
	defer ts.Close()
	c, _ := New(ts.URL, "tok")
	c.Sleep = noSleep
	_, err := c.UploadDump(context.Background(), []byte("x"), "", "", "")
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 422 || !strings.Contains(err.Error(), "unknown dump format") || calls.Load() != 1 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
}

func TestGivesUpOnConnectionErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c, _ := New("http://"+addr, "")
	c.Sleep, c.Attempts = noSleep, 4
	tries := 0
	c.OnRetry = func(int, error, time.Duration) { tries++ }
	_, err = c.UploadSymbol(context.Background(), []byte("\x7fELF"), "fw.elf")
	if err == nil || !strings.Contains(err.Error(), "gave up after 4 tries") || tries != 3 {
		t.Fatalf("%v (%d retries)", err, tries)
	}
}

func TestNewChecksURL(t *testing.T) {
	for _, bad := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := New(bad, ""); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
