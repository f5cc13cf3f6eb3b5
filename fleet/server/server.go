// Package server is the crash server's HTTP API (design.md, "Fleet
// server"):
//
//	POST /api/v1/symbols          body: an ELF -> 201 {"build_id", "sha256"}
//	POST /api/v1/dumps            body: a dump -> 202 {"id", "status"}
//	GET  /api/v1/dumps/{id}       the dump's status, metadata and analysis
//	GET  /api/v1/buckets          [?version=V&device=D] the buckets, most dumps first
//	GET  /api/v1/buckets/{sig}    one bucket with its dumps
//	GET  /api/v1/symbols          the uploaded ELFs
//
// Every other path goes to Config.Pages (the web UI), with the read role.
// Uploads are checked by the engine before anything is stored: a body
// that is not a dump (or not Cortex-M firmware) is refused with 422 and
// the engine's message, a body over the limit with 413. A dump's id is
// the SHA-256 of its bytes, so uploading the same bytes again gives the
// same id and stores nothing new.
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/analysis/symstore"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/fleet/store"
)

// Default body limits.
const (
	DefaultMaxDump = crashdump.MaxManifestSize // what the engine reads of one dump file
	DefaultMaxELF  = 256 << 20
)

// Metadata headers of a dump upload, and the optional name of an
// uploaded file (shown instead of its hash).
const (
	HeaderDevice  = "X-Faultline-Device"
	HeaderVersion = "X-Faultline-Version"
	HeaderName    = "X-Faultline-Name"
	maxMetaLen    = 256
)

// Config sets up a Server. Store and Blobs are required.
type Config struct {
	Store store.Store
	Blobs blobs.Store
	// Tokens, when not nil, is required on every request (see Tokens).
	Tokens *Tokens
	// MaxDump and MaxELF bound request bodies (0: DefaultMaxDump,
	// DefaultMaxELF).
	MaxDump int64
	MaxELF  int64
	// Notify is called after an upload that queued work (the in-process
	// workers' Pool.Notify).
	Notify func()
	// Pages serves every path outside /api/ (the web UI); nil: 404.
	// Requests reach it authenticated with the read role.
	Pages http.Handler
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logf, when set, receives one line per server-side error.
	Logf func(format string, args ...any)
}

// Server is the HTTP handler of the API.
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New makes the handler.
func New(cfg Config) *Server {
	if cfg.MaxDump <= 0 {
		cfg.MaxDump = DefaultMaxDump
	}
	if cfg.MaxELF <= 0 {
		cfg.MaxELF = DefaultMaxELF
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /api/v1/symbols", s.role(RoleUpload, s.postSymbol))
	s.mux.HandleFunc("GET /api/v1/symbols", s.role(RoleRead, s.getSymbols))
	s.mux.HandleFunc("POST /api/v1/dumps", s.role(RoleUpload, s.postDump))
	s.mux.HandleFunc("GET /api/v1/dumps/{id}", s.role(RoleRead, s.getDump))
	s.mux.HandleFunc("GET /api/v1/buckets", s.role(RoleRead, s.getBuckets))
	s.mux.HandleFunc("GET /api/v1/buckets/{signature}", s.role(RoleRead, s.getBucket))
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: no such API endpoint", r.Method, r.URL.Path))
	})
	s.mux.HandleFunc("/", s.role(RoleRead, func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Pages == nil {
			http.NotFound(w, r)
			return
		}
		s.cfg.Pages.ServeHTTP(w, r)
	}))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.cfg.Logf("fleet server: %s %s: internal error: %v", r.Method, r.URL.Path, p)
			writeError(w, http.StatusInternalServerError, "internal error")
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// role wraps h with the token check of a role.
func (s *Server) role(need Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Tokens != nil {
			roles, ok := s.cfg.Tokens.Check(r)
			if !ok {
				if strings.HasPrefix(r.URL.Path, "/api/") {
					w.Header().Set("WWW-Authenticate", `Bearer realm="faultline"`)
				} else {
					// A browser asks for the token as a password.
					w.Header().Set("WWW-Authenticate", `Basic realm="faultline"`)
				}
				writeError(w, http.StatusUnauthorized, "this server needs a token: send Authorization: Bearer TOKEN")
				return
			}
			if !roles.Has(need) {
				writeError(w, http.StatusForbidden, fmt.Sprintf("the token does not have the %s role", need))
				return
			}
		}
		h(w, r)
	}
}

type errorJSON struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorJSON{Error: msg})
}

// storeError answers a Store failure.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.cfg.Logf("fleet server: %s %s: %v", r.Method, r.URL.Path, err)
	writeError(w, http.StatusServiceUnavailable, "the database failed: "+err.Error())
}

// readBody reads the whole body, at most limit bytes; it answers the
// request itself (413, 400) when it returns false.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, bool) {
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the %s is %d bytes, more than the server's limit of %d", what, r.ContentLength, limit))
		return nil, false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the %s is more than the server's limit of %d bytes", what, limit))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the %s: %v", what, err))
		return nil, false
	case len(data) == 0:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the request has no body: send the %s as the body", what))
		return nil, false
	}
	return data, true
}

// meta reads an optional metadata header: printable UTF-8, bounded.
func meta(r *http.Request, name string) (string, error) {
	v := strings.TrimSpace(r.Header.Get(name))
	if len(v) > maxMetaLen {
		return "", fmt.Errorf("header %s: %d bytes, more than %d", name, len(v), maxMetaLen)
	}
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("header %s: not UTF-8", name)
	}
	for _, c := range v {
		if !unicode.IsPrint(c) {
			return "", fmt.Errorf("header %s: holds %U, a character that is not printable", name, c)
		}
	}
	return v, nil
}

func sum256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// SymbolJSON is the answer to an ELF upload (and an item of GET
// /api/v1/symbols).
type SymbolJSON struct {
	BuildID  string `json:"build_id"`
	SHA256   string `json:"sha256"`
	Name     string `json:"name,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Received string `json:"received,omitempty"`
}

func (s *Server) postSymbol(w http.ResponseWriter, r *http.Request) {
	name, err := meta(r, HeaderName)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	data, ok := readBody(w, r, s.cfg.MaxELF, "ELF")
	if !ok {
		return
	}
	label := name
	if label == "" {
		label = "the uploaded ELF"
	}
	f, err := symstore.NewFirmware(bytes.NewReader(data), label)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	buildID := f.BuildID()
	f.Close()
	sum, size, err := s.cfg.Blobs.Put(bytes.NewReader(data), 0)
	if err != nil {
		s.cfg.Logf("fleet server: storing an ELF: %v", err)
		writeError(w, http.StatusInternalServerError, "storing the file: "+err.Error())
		return
	}
	y, _, woken, err := s.cfg.Store.PutSymbol(r.Context(), store.Symbol{SHA256: sum, BuildID: buildID, Size: size, Name: name, Received: s.cfg.Now()})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if woken > 0 {
		s.cfg.Notify()
	}
	writeJSON(w, http.StatusCreated, SymbolJSON{BuildID: y.BuildID, SHA256: y.SHA256, Name: y.Name, Size: y.Size, Received: stamp(y.Received)})
}

func (s *Server) getSymbols(w http.ResponseWriter, r *http.Request) {
	ys, err := s.cfg.Store.Symbols(r.Context())
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	out := struct {
		Symbols []SymbolJSON `json:"symbols"`
	}{Symbols: []SymbolJSON{}}
	for _, y := range ys {
		out.Symbols = append(out.Symbols, SymbolJSON{BuildID: y.BuildID, SHA256: y.SHA256, Name: y.Name, Size: y.Size, Received: stamp(y.Received)})
	}
	writeJSON(w, http.StatusOK, out)
}

// UploadJSON is the answer to a dump upload.
type UploadJSON struct {
	ID     string       `json:"id"`
	Status store.Status `json:"status"`
}

func (s *Server) postDump(w http.ResponseWriter, r *http.Request) {
	device, err := meta(r, HeaderDevice)
	if err == nil {
		var version, name string
		version, err = meta(r, HeaderVersion)
		if err == nil {
			name, err = meta(r, HeaderName)
		}
		if err == nil {
			s.storeDump(w, r, device, version, name)
			return
		}
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func (s *Server) storeDump(w http.ResponseWriter, r *http.Request, device, version, name string) {
	data, ok := readBody(w, r, s.cfg.MaxDump, "dump")
	if !ok {
		return
	}
	label := name
	if label == "" {
		label = "the uploaded dump"
	}
	var format, buildID string
	d, err := crashdump.Parse(data, label, nil)
	if err == nil {
		format, buildID = strings.TrimSpace(d.Format), d.BuildID
		err = symstore.CheckDumpRegisters(d)
		d.Close()
	}
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "no directory to read region files from") {
			msg += ": upload a self-contained dump (faultline upload inlines the region files)"
		}
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	sum, size, err := s.cfg.Blobs.Put(bytes.NewReader(data), 0)
	if err != nil {
		s.cfg.Logf("fleet server: storing a dump: %v", err)
		writeError(w, http.StatusInternalServerError, "storing the file: "+err.Error())
		return
	}
	stored, created, err := s.cfg.Store.AddDump(r.Context(), store.NewDump{ID: sum, SHA256: sum, Size: size, Format: format,
		BuildID: buildID, Device: device, Version: version, Received: s.cfg.Now()})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if created {
		s.cfg.Notify()
	}
	writeJSON(w, http.StatusAccepted, UploadJSON{ID: stored.ID, Status: stored.Status})
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// DumpJSON is GET /api/v1/dumps/{id}.
type DumpJSON struct {
	ID       string          `json:"id"`
	Status   store.Status    `json:"status"`
	Bucket   string          `json:"bucket"`
	Device   string          `json:"device"`
	Version  string          `json:"version"`
	Received string          `json:"received"`
	Analysis json.RawMessage `json:"analysis"`
	Error    string          `json:"error"`
	// Added fields.
	Format  string `json:"format"`
	BuildID string `json:"build_id"`
	Size    int64  `json:"size"`
	ELF     string `json:"elf"`
	Updated string `json:"updated"`
}

func (s *Server) getDump(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Store.Dump(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	out := DumpJSON{ID: d.ID, Status: d.Status, Bucket: d.Bucket, Device: d.Device, Version: d.Version,
		Received: stamp(d.Received), Analysis: json.RawMessage("null"), Error: d.Error,
		Format: d.Format, BuildID: d.BuildID, Size: d.Size, ELF: d.ELF, Updated: stamp(d.Updated)}
	if len(d.Analysis) > 0 {
		out.Analysis = d.Analysis
	}
	writeJSON(w, http.StatusOK, out)
}

// BucketJSON is one bucket of GET /api/v1/buckets.
type BucketJSON struct {
	Signature string   `json:"signature"`
	Title     string   `json:"title"`
	Count     int      `json:"count"`
	Devices   []string `json:"devices"`
	Versions  []string `json:"versions"`
	FirstSeen string   `json:"first_seen"`
	LastSeen  string   `json:"last_seen"`
	// Added fields: the exact numbers of distinct devices and versions
	// (the lists stop at store.MaxListed), the dumps per UTC day of the
	// last 30 days (today last), the signature text.
	DeviceCount  int             `json:"device_count"`
	VersionCount int             `json:"version_count"`
	Daily        [store.Days]int `json:"daily"`
	Key          string          `json:"key"`
	Dumps        []string        `json:"dumps,omitempty"`
}

func bucketJSON(b store.Bucket) BucketJSON {
	return BucketJSON{Signature: b.Signature, Title: b.Title, Count: b.Count, Devices: b.Devices, Versions: b.Versions,
		FirstSeen: stamp(b.FirstSeen), LastSeen: stamp(b.LastSeen), DeviceCount: b.DeviceCount, VersionCount: b.VersionCount,
		Daily: b.Daily, Key: b.Key}
}

func filter(r *http.Request, now time.Time) store.BucketFilter {
	q := r.URL.Query()
	return store.BucketFilter{Version: q.Get("version"), Device: q.Get("device"), Now: now}
}

func (s *Server) getBuckets(w http.ResponseWriter, r *http.Request) {
	bs, err := s.cfg.Store.Buckets(r.Context(), filter(r, s.cfg.Now()))
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	out := struct {
		Buckets []BucketJSON `json:"buckets"`
	}{Buckets: []BucketJSON{}}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, bucketJSON(b))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getBucket(w http.ResponseWriter, r *http.Request) {
	f := filter(r, s.cfg.Now())
	b, err := s.cfg.Store.Bucket(r.Context(), r.PathValue("signature"), f)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	ds, err := s.cfg.Store.Dumps(r.Context(), store.DumpQuery{Bucket: b.Signature, Status: store.StatusDecoded, Version: f.Version, Device: f.Device})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	out := bucketJSON(b)
	out.Dumps = []string{}
	for _, d := range ds {
		out.Dumps = append(out.Dumps, d.ID)
	}
	writeJSON(w, http.StatusOK, out)
}
