package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/fleet/server"
	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/faultline-dev/faultline/fleet/store/postgres"
	"github.com/faultline-dev/faultline/fleet/store/sqlite"
	"github.com/faultline-dev/faultline/fleet/web"
	"github.com/faultline-dev/faultline/fleet/worker"
)

// DBFile is the SQLite database's name in the data directory.
const DBFile = "fleet.db"

// Config sets up a crash server.
type Config struct {
	// Data is the data directory (created when missing): the uploaded
	// files, and the SQLite database unless DB is set. With PostgreSQL
	// the files are in the database and Data is not used.
	Data string
	// DB is the database: "" for DIR/fleet.db, a path to an SQLite file,
	// or a postgres:// URL.
	DB string
	// Workers is how many dumps this process decodes at once (0: none;
	// another process's workers do it).
	Workers int
	// Tokens, when not nil, guard every request (server.Tokens).
	Tokens *server.Tokens
	// Pages serves the web UI (server.Config.Pages); nil: the pages of
	// fleet/web over this server's store, with the dumps' reports
	// rendered by the engine with Options.
	Pages http.Handler
	// Options are the engine's (zero: analyze's defaults).
	Options analysis.Options
	// Lease and Poll tune the workers (zero: worker's defaults).
	Lease, Poll time.Duration
	// Logf receives one line per problem (default: none).
	Logf func(format string, args ...any)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Instance is an open crash server: its Store, files, workers and HTTP
// handler.
type Instance struct {
	Store   store.Store
	Blobs   blobs.Store
	Pool    *worker.Pool
	Handler http.Handler
	workers int
}

// IsPostgres reports whether a --db value names a PostgreSQL database.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Open opens (creating when missing) the data directory and database.
// With PostgreSQL the uploaded files are kept in the database too
// (fleet/store/postgres.Blobs), so processes on other machines sharing
// it need no shared directory, and Data is not used.
func Open(ctx context.Context, cfg Config) (*Instance, error) {
	if cfg.Data == "" && !IsPostgres(cfg.DB) {
		return nil, errors.New("fleet: no data directory")
	}
	var (
		st  store.Store
		bl  blobs.Store
		err error
	)
	switch {
	case IsPostgres(cfg.DB):
		// The files live in the database too: workers on other machines
		// share them without a shared file system.
		var pg *postgres.Store
		if pg, err = postgres.Open(ctx, cfg.DB); err != nil {
			return nil, fmt.Errorf("fleet: --db %s: %w", redact(cfg.DB), err)
		}
		st, bl = pg, pg.Blobs()
	default:
		if err := os.MkdirAll(cfg.Data, 0o755); err != nil {
			return nil, fmt.Errorf("fleet: data directory: %w", err)
		}
		dir, derr := blobs.Open(cfg.Data)
		if derr != nil {
			return nil, derr
		}
		path := cfg.DB
		if path == "" {
			path = filepath.Join(cfg.Data, DBFile)
		}
		if st, err = sqlite.Open(ctx, path); err != nil {
			return nil, err
		}
		bl = dir
	}
	pool := worker.New(worker.Config{Store: st, Blobs: bl, Options: cfg.Options, Workers: cfg.Workers,
		Lease: cfg.Lease, Poll: cfg.Poll, Logf: cfg.Logf, Now: cfg.Now})
	pages := cfg.Pages
	if pages == nil {
		p, err := web.New(web.Options{Store: st, Report: web.FileReporter(bl, st, pool.Options()), Now: cfg.Now})
		if err != nil {
			st.Close()
			return nil, err
		}
		pages = p
	}
	h := server.New(server.Config{Store: st, Blobs: bl, Tokens: cfg.Tokens, Notify: pool.Notify, Pages: pages,
		Now: cfg.Now, Logf: cfg.Logf})
	return &Instance{Store: st, Blobs: bl, Pool: pool, Handler: h, workers: cfg.Workers}, nil
}

// RunWorkers decodes dumps until ctx ends (nothing when Config.Workers
// is 0).
func (in *Instance) RunWorkers(ctx context.Context) error {
	if in.workers <= 0 {
		<-ctx.Done()
		return nil
	}
	return in.Pool.Run(ctx)
}

// Close closes the database.
func (in *Instance) Close() error { return in.Store.Close() }

// redact hides a URL's password.
func redact(db string) string {
	i := strings.Index(db, "://")
	at := strings.LastIndex(db, "@")
	if i < 0 || at < i {
		return db
	}
	cred := db[i+3 : at]
	if j := strings.IndexByte(cred, ':'); j >= 0 {
		return db[:i+3] + cred[:j] + ":***" + db[at:]
	}
	return db
}
