// Package sqlite is the crash server's default Store: one SQLite database
// file (in the --data directory), so `faultline serve --data DIR` needs
// no database server.
//
// The driver is modernc.org/sqlite, SQLite translated to pure Go: it
// needs no cgo, so the faultline binary still builds and cross-compiles
// with CGO_ENABLED=0 (cgo is only needed for the emulator) and nothing
// has to be installed on the machine; mattn/go-sqlite3, the cgo binding,
// would make every build of the server depend on a C compiler.
//
// The database runs in WAL mode (readers never block the writer, and a
// crash never leaves a torn write: an uncommitted transaction is simply
// absent after restart), with a busy timeout so concurrent writers wait
// for each other instead of failing, and every write transaction begins
// IMMEDIATE (takes the write lock up front, so two transactions never
// deadlock upgrading a read lock).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Store is a store.Store in an SQLite database file.
type Store struct {
	db *sql.DB
}

var _ store.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS symbols (
	seq      INTEGER PRIMARY KEY AUTOINCREMENT,
	sha256   TEXT NOT NULL UNIQUE,
	build_id TEXT NOT NULL,
	size     INTEGER NOT NULL,
	name     TEXT NOT NULL,
	received INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_build_id ON symbols(build_id);
CREATE TABLE IF NOT EXISTS buckets (
	signature TEXT PRIMARY KEY,
	title     TEXT NOT NULL,
	key       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dumps (
	id       TEXT PRIMARY KEY,
	sha256   TEXT NOT NULL,
	size     INTEGER NOT NULL,
	format   TEXT NOT NULL,
	build_id TEXT NOT NULL,
	device   TEXT NOT NULL,
	version  TEXT NOT NULL,
	received INTEGER NOT NULL,
	status   TEXT NOT NULL,
	bucket   TEXT NOT NULL,
	elf      TEXT NOT NULL,
	analysis BLOB,
	error    TEXT NOT NULL,
	updated  INTEGER NOT NULL,
	provisional INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS dumps_bucket ON dumps(status, bucket);
CREATE INDEX IF NOT EXISTS dumps_received ON dumps(received, id);
CREATE INDEX IF NOT EXISTS dumps_waiting ON dumps(status, build_id);
CREATE INDEX IF NOT EXISTS dumps_provisional ON dumps(status) WHERE provisional = 1;
CREATE TABLE IF NOT EXISTS jobs (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	dump_id     TEXT NOT NULL,
	leased      INTEGER NOT NULL DEFAULT 0,
	lease_until INTEGER NOT NULL DEFAULT 0,
	attempts    INTEGER NOT NULL DEFAULT 0,
	worker      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_dump ON jobs(dump_id);
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs(leased, id);
`

// Open opens (creating when missing) the database file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: no database path")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// A few connections: WAL lets readers run beside the one writer;
	// more would only queue on SQLite's write lock.
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: %s: creating the schema: %w", path, err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		db.Close()
		if err == nil {
			err = fmt.Errorf("journal mode is %q, not wal (is %s on a file system without shared memory?)", mode, path)
		}
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func ns(t time.Time) int64 { return t.UTC().UnixNano() }

func fromNS(v int64) time.Time { return time.Unix(0, v).UTC() }

// tx runs f in one IMMEDIATE transaction.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

const symbolCols = `seq, sha256, build_id, size, name, received`

func scanSymbol(sc interface{ Scan(...any) error }) (store.Symbol, error) {
	var y store.Symbol
	var rec int64
	err := sc.Scan(&y.Seq, &y.SHA256, &y.BuildID, &y.Size, &y.Name, &rec)
	y.Received = fromNS(rec)
	return y, err
}

// PutSymbol implements store.Store.
func (s *Store) PutSymbol(ctx context.Context, y store.Symbol) (store.Symbol, bool, int, error) {
	var out store.Symbol
	var created bool
	var woken int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO symbols (sha256, build_id, size, name, received) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (sha256) DO NOTHING`, y.SHA256, y.BuildID, y.Size, y.Name, ns(y.Received))
		if err != nil {
			return fmt.Errorf("sqlite: put symbol %s: %w", y.SHA256, err)
		}
		n, _ := res.RowsAffected()
		created = n == 1
		out, err = scanSymbol(tx.QueryRowContext(ctx, `SELECT `+symbolCols+` FROM symbols WHERE sha256 = ?`, y.SHA256))
		if err != nil {
			return fmt.Errorf("sqlite: put symbol %s: %w", y.SHA256, err)
		}
		if !created {
			return nil
		}
		woken, err = wake(ctx, tx, out.BuildID, out.Received)
		return err
	})
	if err != nil {
		return store.Symbol{}, false, 0, err
	}
	return out, created, woken, nil
}

// wake queues again the waiting dumps a symbol with buildID may match
// and the provisional decoded ones.
func wake(ctx context.Context, tx *sql.Tx, buildID string, now time.Time) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM dumps WHERE status = ? AND (build_id = ? OR build_id = '')
		UNION SELECT id FROM dumps WHERE status = ? AND provisional = 1`,
		store.StatusWaiting, buildID, store.StatusDecoded)
	if err != nil {
		return 0, fmt.Errorf("sqlite: waking waiting dumps: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlite: waking waiting dumps: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: waking waiting dumps: %w", err)
	}
	for _, id := range ids {
		if err := requeue(ctx, tx, id, now); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// requeue marks a dump queued and gives it a job (unless it has one).
func requeue(ctx context.Context, tx *sql.Tx, id string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE dumps SET status = ?, updated = ? WHERE id = ?`, store.StatusQueued, ns(now), id); err != nil {
		return fmt.Errorf("sqlite: queueing dump %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (dump_id) VALUES (?) ON CONFLICT (dump_id) DO NOTHING`, id); err != nil {
		return fmt.Errorf("sqlite: queueing dump %s: %w", id, err)
	}
	return nil
}

// Symbols implements store.Store.
func (s *Store) Symbols(ctx context.Context) ([]store.Symbol, error) {
	return s.symbols(ctx, `SELECT `+symbolCols+` FROM symbols ORDER BY seq DESC`)
}

// SymbolsByBuildID implements store.Store.
func (s *Store) SymbolsByBuildID(ctx context.Context, buildID string) ([]store.Symbol, error) {
	return s.symbols(ctx, `SELECT `+symbolCols+` FROM symbols WHERE build_id = ? ORDER BY seq`, buildID)
}

func (s *Store) symbols(ctx context.Context, q string, args ...any) ([]store.Symbol, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: symbols: %w", err)
	}
	defer rows.Close()
	out := []store.Symbol{}
	for rows.Next() {
		y, err := scanSymbol(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: symbols: %w", err)
		}
		out = append(out, y)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: symbols: %w", err)
	}
	return out, nil
}

const dumpCols = `id, sha256, size, format, build_id, device, version, received, status, bucket, elf, error, updated`

func scanDump(sc interface{ Scan(...any) error }, extra ...any) (store.Dump, error) {
	var d store.Dump
	var rec, upd int64
	var st string
	dst := append([]any{&d.ID, &d.SHA256, &d.Size, &d.Format, &d.BuildID, &d.Device, &d.Version, &rec, &st, &d.Bucket, &d.ELF, &d.Error, &upd}, extra...)
	err := sc.Scan(dst...)
	d.Received, d.Updated, d.Status = fromNS(rec), fromNS(upd), store.Status(st)
	return d, err
}

// AddDump implements store.Store.
func (s *Store) AddDump(ctx context.Context, n store.NewDump) (store.Dump, bool, error) {
	if n.ID == "" {
		return store.Dump{}, false, errors.New("sqlite: add dump: empty id")
	}
	var out store.Dump
	var created bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO dumps (id, sha256, size, format, build_id, device, version, received, status, bucket, elf, error, updated)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '', ?) ON CONFLICT (id) DO NOTHING`,
			n.ID, n.SHA256, n.Size, n.Format, n.BuildID, n.Device, n.Version, ns(n.Received), store.StatusQueued, ns(n.Received))
		if err != nil {
			return fmt.Errorf("sqlite: add dump %s: %w", n.ID, err)
		}
		k, _ := res.RowsAffected()
		created = k == 1
		if created {
			if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (dump_id) VALUES (?)`, n.ID); err != nil {
				return fmt.Errorf("sqlite: add dump %s: enqueue: %w", n.ID, err)
			}
		}
		out, err = scanDump(tx.QueryRowContext(ctx, `SELECT `+dumpCols+` FROM dumps WHERE id = ?`, n.ID))
		if err != nil {
			return fmt.Errorf("sqlite: add dump %s: %w", n.ID, err)
		}
		return nil
	})
	if err != nil {
		return store.Dump{}, false, err
	}
	return out, created, nil
}

// Dump implements store.Store.
func (s *Store) Dump(ctx context.Context, id string) (store.Dump, error) {
	var a []byte
	d, err := scanDump(s.db.QueryRowContext(ctx, `SELECT `+dumpCols+`, analysis FROM dumps WHERE id = ?`, id), &a)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Dump{}, fmt.Errorf("sqlite: dump %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Dump{}, fmt.Errorf("sqlite: dump %s: %w", id, err)
	}
	if len(a) > 0 {
		d.Analysis = a
	}
	return d, nil
}

// Dumps implements store.Store.
func (s *Store) Dumps(ctx context.Context, q store.DumpQuery) ([]store.Dump, error) {
	where, args := []string{"1=1"}, []any{}
	add := func(col, v string) {
		if v != "" {
			where = append(where, col+" = ?")
			args = append(args, v)
		}
	}
	add("bucket", q.Bucket)
	add("status", string(q.Status))
	add("version", q.Version)
	add("device", q.Device)
	query := `SELECT ` + dumpCols + ` FROM dumps WHERE ` + strings.Join(where, " AND ") + ` ORDER BY received DESC, id DESC`
	if q.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: dumps: %w", err)
	}
	defer rows.Close()
	out := []store.Dump{}
	for rows.Next() {
		d, err := scanDump(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: dumps: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: dumps: %w", err)
	}
	return out, nil
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, worker string, now time.Time, lease time.Duration) (store.Job, bool, error) {
	var j store.Job
	var ok bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var until int64
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET leased = 1, lease_until = ?, attempts = attempts + 1, worker = ?
			WHERE id = (SELECT id FROM jobs WHERE leased = 0 ORDER BY id LIMIT 1)
			RETURNING id, dump_id, attempts, worker, lease_until`, ns(now.Add(lease)), worker).
			Scan(&j.ID, &j.DumpID, &j.Attempts, &j.Worker, &until)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite: claim: %w", err)
		}
		j.LeaseUntil, ok = fromNS(until), true
		return nil
	})
	if err != nil || !ok {
		return store.Job{}, false, err
	}
	return j, true, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, jobID int64, r store.Result, now time.Time) (bool, error) {
	switch r.Status {
	case store.StatusDecoded:
		if r.Bucket.Signature == "" {
			return false, errors.New("sqlite: complete: a decoded result needs a bucket")
		}
	case store.StatusWaiting, store.StatusFailed:
	default:
		return false, fmt.Errorf("sqlite: complete: a result cannot be %q", r.Status)
	}
	applied := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var dumpID, buildID string
		err := tx.QueryRowContext(ctx, `SELECT j.dump_id, d.build_id FROM jobs j JOIN dumps d ON d.id = j.dump_id WHERE j.id = ?`, jobID).Scan(&dumpID, &buildID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // completed already: at-least-once delivery
		}
		if err != nil {
			return fmt.Errorf("sqlite: complete job %d: %w", jobID, err)
		}
		applied = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, jobID); err != nil {
			return fmt.Errorf("sqlite: complete job %d: %w", jobID, err)
		}
		if r.Status == store.StatusWaiting || r.Provisional {
			// An ELF that arrived while the worker decoded found the
			// dump queued, not waiting, and did not wake it: look now.
			var later int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM symbols WHERE seq > ? AND (build_id = ? OR ? = '')`,
				r.SymbolSeq, buildID, buildID).Scan(&later); err != nil {
				return fmt.Errorf("sqlite: complete job %d: %w", jobID, err)
			}
			if later > 0 {
				return requeue(ctx, tx, dumpID, now)
			}
		}
		if r.Status == store.StatusDecoded {
			if _, err := tx.ExecContext(ctx, `INSERT INTO buckets (signature, title, key) VALUES (?, ?, ?) ON CONFLICT (signature) DO NOTHING`,
				r.Bucket.Signature, r.Bucket.Title, r.Bucket.Key); err != nil {
				return fmt.Errorf("sqlite: complete job %d: bucket: %w", jobID, err)
			}
		}
		var a any
		if len(r.Analysis) > 0 {
			a = r.Analysis
		}
		bucket := ""
		if r.Status == store.StatusDecoded {
			bucket = r.Bucket.Signature
		}
		provisional := r.Status == store.StatusDecoded && r.Provisional
		if _, err := tx.ExecContext(ctx, `UPDATE dumps SET status = ?, bucket = ?, elf = ?, analysis = ?, error = ?, updated = ?, provisional = ? WHERE id = ?`,
			r.Status, bucket, r.ELF, a, r.Error, ns(now), provisional, dumpID); err != nil {
			return fmt.Errorf("sqlite: complete job %d: %w", jobID, err)
		}
		return nil
	})
	return applied, err
}

// RequeueExpired implements store.Store.
func (s *Store) RequeueExpired(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET leased = 0, lease_until = 0, worker = '' WHERE leased = 1 AND lease_until < ?`, ns(now))
		if err != nil {
			return fmt.Errorf("sqlite: requeue expired: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// QueueLength implements store.Store.
func (s *Store) QueueLength(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: queue length: %w", err)
	}
	return n, nil
}

// Buckets implements store.Store.
func (s *Store) Buckets(ctx context.Context, f store.BucketFilter) ([]store.Bucket, error) {
	return s.buckets(ctx, "", f)
}

// Bucket implements store.Store.
func (s *Store) Bucket(ctx context.Context, signature string, f store.BucketFilter) (store.Bucket, error) {
	bs, err := s.buckets(ctx, signature, f)
	if err != nil {
		return store.Bucket{}, err
	}
	if len(bs) == 0 {
		return store.Bucket{}, fmt.Errorf("sqlite: bucket %s: %w", signature, store.ErrNotFound)
	}
	return bs[0], nil
}

const dayNS = int64(24 * time.Hour)

func (s *Store) buckets(ctx context.Context, signature string, f store.BucketFilter) ([]store.Bucket, error) {
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	where := `d.status = 'decoded' AND (?1 = '' OR d.version = ?1) AND (?2 = '' OR d.device = ?2) AND (?3 = '' OR d.bucket = ?3)`
	args := []any{f.Version, f.Device, signature}
	rows, err := s.db.QueryContext(ctx, `SELECT d.bucket, b.title, b.key, COUNT(*), MIN(d.received), MAX(d.received),
			COUNT(DISTINCT NULLIF(d.device, '')), COUNT(DISTINCT NULLIF(d.version, ''))
		FROM dumps d JOIN buckets b ON b.signature = d.bucket WHERE `+where+`
		GROUP BY d.bucket ORDER BY COUNT(*) DESC, MIN(d.received), d.bucket`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: buckets: %w", err)
	}
	out := []store.Bucket{}
	index := map[string]int{}
	for rows.Next() {
		var b store.Bucket
		var first, last int64
		if err := rows.Scan(&b.Signature, &b.Title, &b.Key, &b.Count, &first, &last, &b.DeviceCount, &b.VersionCount); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: buckets: %w", err)
		}
		b.FirstSeen, b.LastSeen = fromNS(first), fromNS(last)
		b.Devices, b.Versions = []string{}, []string{}
		index[b.Signature] = len(out)
		out = append(out, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: buckets: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	for _, col := range []string{"device", "version"} {
		rows, err := s.db.QueryContext(ctx, `SELECT d.bucket, d.`+col+`, COUNT(*) FROM dumps d WHERE `+where+` AND d.`+col+` != ''
			GROUP BY d.bucket, d.`+col+` ORDER BY d.bucket, COUNT(*) DESC, d.`+col, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: bucket %ss: %w", col, err)
		}
		for rows.Next() {
			var sig, v string
			var n int
			if err := rows.Scan(&sig, &v, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: bucket %ss: %w", col, err)
			}
			i, ok := index[sig]
			if !ok {
				continue
			}
			b := &out[i]
			if col == "device" && len(b.Devices) < store.MaxListed {
				b.Devices = append(b.Devices, v)
			} else if col == "version" && len(b.Versions) < store.MaxListed {
				b.Versions = append(b.Versions, v)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: bucket %ss: %w", col, err)
		}
	}
	today := floorDiv(ns(now), dayNS)
	first := today - store.Days + 1
	// received is non-negative nanoseconds, so integer division is the
	// UTC day number.
	rows, err = s.db.QueryContext(ctx, `SELECT d.bucket, d.received / ?6, COUNT(*) FROM dumps d WHERE `+where+` AND d.received >= ?4 AND d.received < ?5
		GROUP BY 1, 2`, append(args, first*dayNS, (today+1)*dayNS, dayNS)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: bucket days: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sig string
		var day int64
		var n int
		if err := rows.Scan(&sig, &day, &n); err != nil {
			return nil, fmt.Errorf("sqlite: bucket days: %w", err)
		}
		if i, ok := index[sig]; ok {
			if d := day - first; d >= 0 && d < store.Days {
				out[i].Daily[d] += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: bucket days: %w", err)
	}
	return out, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
