// Package client is a Go client of the crash server's API (fleet/server):
// what `faultline upload` uses, and what a gateway or a CI job written in
// Go can use. Uploads are retried with exponential backoff when the
// server cannot be reached or answers 5xx or 429; any other refusal is
// returned at once with the server's message.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/fleet/server"
)

// Client talks to one server.
type Client struct {
	// Base is the server's URL (http://host:port).
	Base string
	// Token, when set, is sent as Authorization: Bearer.
	Token string
	// HTTP is the client used (default: one with a 2 minute timeout).
	HTTP *http.Client
	// Attempts bounds the tries of one request (default 6).
	Attempts int
	// Backoff is the wait before the second try, doubled before each
	// next one up to 30 s (default 500 ms).
	Backoff time.Duration
	// Sleep waits (default: time.Sleep honouring the context).
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told about each failed try that is retried.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// HTTPError is a refusal by the server.
type HTTPError struct {
	Status  int
	Message string // the server's "error", or the body's start
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("the server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// New checks base and makes a client.
func New(base, token string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT", base)
	}
	return &Client{Base: strings.TrimRight(base, "/"), Token: token}, nil
}

// ReadTokenFile reads a client's token: the first line that is not blank
// or a # comment; a server token file's "ROLES TOKEN" line works too.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		return fields[len(fields)-1], nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return "", fmt.Errorf("%s: no token in the file", path)
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 2 * time.Minute}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether a failed try may succeed later.
func retryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status >= 500 || he.Status == http.StatusTooManyRequests
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// do sends a request (again on retryable failures) and decodes a JSON
// answer of status want into out.
func (c *Client) do(ctx context.Context, method, path string, body []byte, header http.Header, want int, out any) error {
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 6
	}
	wait := c.Backoff
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	sleep := c.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	var err error
	for try := 1; ; try++ {
		err = c.once(ctx, method, path, body, header, want, out)
		if err == nil || !retryable(err) || try >= attempts {
			break
		}
		if c.OnRetry != nil {
			c.OnRetry(try, err, wait)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return serr
		}
		wait = min(2*wait, 30*time.Second)
	}
	if err != nil && retryable(err) && attempts > 1 {
		return fmt.Errorf("%w (gave up after %d tries)", err, attempts)
	}
	return err
}

func (c *Client) once(ctx context.Context, method, path string, body []byte, header http.Header, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(data[:min(len(data), 300)]))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &HTTPError{Status: resp.StatusCode, Message: msg}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("the answer to %s %s is not the expected JSON: %w", method, path, err)
		}
	}
	return nil
}

// UploadSymbol uploads an ELF; name labels it on the server (a file
// name), may be "".
func (c *Client) UploadSymbol(ctx context.Context, elf []byte, name string) (server.SymbolJSON, error) {
	h := http.Header{}
	if name != "" {
		h.Set(server.HeaderName, name)
	}
	var out server.SymbolJSON
	err := c.do(ctx, http.MethodPost, "/api/v1/symbols", elf, h, http.StatusCreated, &out)
	return out, err
}

// UploadDump uploads a dump with its metadata (each may be "").
func (c *Client) UploadDump(ctx context.Context, dump []byte, name, device, version string) (server.UploadJSON, error) {
	h := http.Header{}
	for k, v := range map[string]string{server.HeaderName: name, server.HeaderDevice: device, server.HeaderVersion: version} {
		if v != "" {
			h.Set(k, v)
		}
	}
	var out server.UploadJSON
	err := c.do(ctx, http.MethodPost, "/api/v1/dumps", dump, h, http.StatusAccepted, &out)
	return out, err
}

// Dump reads a dump's status and analysis.
func (c *Client) Dump(ctx context.Context, id string) (server.DumpJSON, error) {
	var out server.DumpJSON
	err := c.do(ctx, http.MethodGet, "/api/v1/dumps/"+url.PathEscape(id), nil, nil, http.StatusOK, &out)
	return out, err
}

func query(version, device string) string {
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	if device != "" {
		q.Set("device", device)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Buckets lists the buckets (version and device filter when not "").
func (c *Client) Buckets(ctx context.Context, version, device string) ([]server.BucketJSON, error) {
	var out struct {
		Buckets []server.BucketJSON `json:"buckets"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/buckets"+query(version, device), nil, nil, http.StatusOK, &out)
	return out.Buckets, err
}

// Bucket reads one bucket with its dumps.
func (c *Client) Bucket(ctx context.Context, signature, version, device string) (server.BucketJSON, error) {
	var out server.BucketJSON
	err := c.do(ctx, http.MethodGet, "/api/v1/buckets/"+url.PathEscape(signature)+query(version, device), nil, nil, http.StatusOK, &out)
	return out, err
}
