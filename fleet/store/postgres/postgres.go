// Package postgres is the crash server's Store in PostgreSQL, for a fleet
// that outgrows one machine: `faultline serve --db postgres://...` and
// any number of `faultline serve --worker --db postgres://...` processes,
// on any number of machines, share one database, which is their only
// coordinator.
//
// The job queue is a table. A worker claims the oldest ready job with
// SELECT ... FOR UPDATE SKIP LOCKED inside the UPDATE that leases it, so
// concurrent workers never wait for each other and never take the same
// job; a job whose worker died stays leased until its lease ends and
// RequeueExpired makes it ready again (at-least-once). Completing a job
// deletes it and writes the dump's result in one transaction, so a
// process killed at any moment leaves either the job (decoded again
// later) or the result, never half of it; completing a job that is gone
// changes nothing (idempotent).
//
// Symbol uploads and the "waiting for symbols" answers of workers take
// one transaction-scoped advisory lock (symbolsLock): under READ
// COMMITTED an ELF committed while a worker decided that no ELF matched
// its dump would otherwise find the dump still queued (so wake nothing)
// while the worker's check had not yet seen the ELF, stranding the dump.
// The same lock makes Symbol.Seq follow commit order (a sequence hands
// out numbers at insert time, not at commit).
//
// Times are stored as int64 nanoseconds since the Unix epoch, UTC, as in
// the SQLite store, so both keep exactly the instants they are given.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Advisory lock keys (pg_advisory_xact_lock takes any bigint; these
// spell "fltschem" and "fltsymbl" in ASCII so they do not collide with
// another application's small integers).
const (
	schemaLock  int64 = 0x666c74736368656d
	symbolsLock int64 = 0x666c7473796d626c
)

const schema = `
CREATE TABLE IF NOT EXISTS symbols (
	seq      bigserial PRIMARY KEY,
	sha256   text NOT NULL UNIQUE,
	build_id text NOT NULL,
	size     bigint NOT NULL,
	name     text NOT NULL,
	received bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_build_id ON symbols (build_id);
CREATE TABLE IF NOT EXISTS buckets (
	signature text PRIMARY KEY,
	title     text NOT NULL,
	key       text NOT NULL
);
CREATE TABLE IF NOT EXISTS dumps (
	id       text PRIMARY KEY,
	sha256   text NOT NULL,
	size     bigint NOT NULL,
	format   text NOT NULL,
	build_id text NOT NULL,
	device   text NOT NULL,
	version  text NOT NULL,
	received bigint NOT NULL,
	status   text NOT NULL,
	bucket   text NOT NULL,
	elf      text NOT NULL,
	analysis bytea,
	error    text NOT NULL,
	updated  bigint NOT NULL,
	provisional boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS dumps_bucket ON dumps (status, bucket);
CREATE INDEX IF NOT EXISTS dumps_received ON dumps (received, id);
CREATE INDEX IF NOT EXISTS dumps_waiting ON dumps (status, build_id);
CREATE INDEX IF NOT EXISTS dumps_provisional ON dumps (status) WHERE provisional;
CREATE TABLE IF NOT EXISTS jobs (
	id          bigserial PRIMARY KEY,
	dump_id     text NOT NULL UNIQUE,
	leased      boolean NOT NULL DEFAULT false,
	lease_until bigint NOT NULL DEFAULT 0,
	attempts    integer NOT NULL DEFAULT 0,
	worker      text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (id) WHERE NOT leased;
CREATE INDEX IF NOT EXISTS jobs_leased ON jobs (lease_until) WHERE leased;
`

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string; pgxpool's pool_max_conns and the other pool
// parameters are accepted) and creates the schema when it is missing.
// Several processes may Open the same database at once.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included.
		return nil, errors.New("postgres: the connection string does not parse (postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=...)")
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's default (4 on this kind of machine) queues a
		// server's concurrent uploads behind each other; each request
		// holds a connection for one short transaction at a time.
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s@%s/%s: creating the schema: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return s, nil
}

// schemaVersion is the version of schema+blobsSchema that this code
// writes in faultline_schema.
const schemaVersion = 1

// migrate creates the schema unless the database records that it has
// it. The DDL is not run on a database that has it: CREATE INDEX IF NOT
// EXISTS takes its table's SHARE lock before it finds the index there,
// so a process starting beside busy workers (their row updates) could
// deadlock with them.
func (s *Store) migrate(ctx context.Context) error {
	if v, err := storedVersion(ctx, s.pool); err == nil && v >= schemaVersion {
		return nil
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLock); err != nil {
			return err
		}
		v, err := storedVersion(ctx, tx)
		if err != nil || v >= schemaVersion {
			return err
		}
		if _, err := tx.Exec(ctx, schema+blobsSchema+`CREATE TABLE IF NOT EXISTS faultline_schema (version integer NOT NULL);`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO faultline_schema (version) VALUES ($1)`, schemaVersion)
		return err
	})
}

// storedVersion is the schema version the database records, 0 when it
// records none.
func storedVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('faultline_schema') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM faultline_schema`).Scan(&v)
	return v, err
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

func ns(t time.Time) int64 { return t.UTC().UnixNano() }

func fromNS(v int64) time.Time { return time.Unix(0, v).UTC() }

// tx runs f in one READ COMMITTED transaction, retrying a few times when
// PostgreSQL reports a serialization failure or a deadlock (it aborted
// the transaction; running it again is the documented remedy).
func (s *Store) tx(ctx context.Context, f func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, f)
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || (pe.Code != "40001" && pe.Code != "40P01") {
			return err
		}
	}
	return err
}

const symbolCols = `seq, sha256, build_id, size, name, received`

func scanSymbol(row pgx.Row) (store.Symbol, error) {
	var y store.Symbol
	var rec int64
	err := row.Scan(&y.Seq, &y.SHA256, &y.BuildID, &y.Size, &y.Name, &rec)
	y.Received = fromNS(rec)
	return y, err
}

// PutSymbol implements store.Store.
func (s *Store) PutSymbol(ctx context.Context, y store.Symbol) (store.Symbol, bool, int, error) {
	var out store.Symbol
	var created bool
	var woken int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		created, woken = false, 0
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, symbolsLock); err != nil {
			return fmt.Errorf("postgres: put symbol %s: %w", y.SHA256, err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO symbols (sha256, build_id, size, name, received) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (sha256) DO NOTHING`, y.SHA256, y.BuildID, y.Size, y.Name, ns(y.Received))
		if err != nil {
			return fmt.Errorf("postgres: put symbol %s: %w", y.SHA256, err)
		}
		created = tag.RowsAffected() == 1
		out, err = scanSymbol(tx.QueryRow(ctx, `SELECT `+symbolCols+` FROM symbols WHERE sha256 = $1`, y.SHA256))
		if err != nil {
			return fmt.Errorf("postgres: put symbol %s: %w", y.SHA256, err)
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
// and the provisional decoded ones (the caller holds symbolsLock).
func wake(ctx context.Context, tx pgx.Tx, buildID string, now time.Time) (int, error) {
	rows, err := tx.Query(ctx, `UPDATE dumps SET status = $1, updated = $2
		WHERE (status = $3 AND (build_id = $4 OR build_id = '')) OR (status = $5 AND provisional) RETURNING id`,
		string(store.StatusQueued), ns(now), string(store.StatusWaiting), buildID, string(store.StatusDecoded))
	if err != nil {
		return 0, fmt.Errorf("postgres: waking waiting dumps: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("postgres: waking waiting dumps: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO jobs (dump_id) SELECT unnest($1::text[]) ORDER BY 1 ON CONFLICT (dump_id) DO NOTHING`, ids); err != nil {
		return 0, fmt.Errorf("postgres: waking waiting dumps: %w", err)
	}
	return len(ids), nil
}

// requeue marks a dump queued and gives it a job (unless it has one).
func requeue(ctx context.Context, tx pgx.Tx, id string, now time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE dumps SET status = $1, updated = $2 WHERE id = $3`, string(store.StatusQueued), ns(now), id); err != nil {
		return fmt.Errorf("postgres: queueing dump %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO jobs (dump_id) VALUES ($1) ON CONFLICT (dump_id) DO NOTHING`, id); err != nil {
		return fmt.Errorf("postgres: queueing dump %s: %w", id, err)
	}
	return nil
}

// Symbols implements store.Store.
func (s *Store) Symbols(ctx context.Context) ([]store.Symbol, error) {
	return s.symbols(ctx, `SELECT `+symbolCols+` FROM symbols ORDER BY seq DESC`)
}

// SymbolsByBuildID implements store.Store.
func (s *Store) SymbolsByBuildID(ctx context.Context, buildID string) ([]store.Symbol, error) {
	return s.symbols(ctx, `SELECT `+symbolCols+` FROM symbols WHERE build_id = $1 ORDER BY seq`, buildID)
}

func (s *Store) symbols(ctx context.Context, q string, args ...any) ([]store.Symbol, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: symbols: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Symbol, error) { return scanSymbol(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: symbols: %w", err)
	}
	if out == nil {
		out = []store.Symbol{}
	}
	return out, nil
}

const dumpCols = `id, sha256, size, format, build_id, device, version, received, status, bucket, elf, error, updated`

func scanDump(row pgx.Row, extra ...any) (store.Dump, error) {
	var d store.Dump
	var rec, upd int64
	var st string
	dst := append([]any{&d.ID, &d.SHA256, &d.Size, &d.Format, &d.BuildID, &d.Device, &d.Version, &rec, &st, &d.Bucket, &d.ELF, &d.Error, &upd}, extra...)
	err := row.Scan(dst...)
	d.Received, d.Updated, d.Status = fromNS(rec), fromNS(upd), store.Status(st)
	return d, err
}

// AddDump implements store.Store.
func (s *Store) AddDump(ctx context.Context, n store.NewDump) (store.Dump, bool, error) {
	if n.ID == "" {
		return store.Dump{}, false, errors.New("postgres: add dump: empty id")
	}
	var out store.Dump
	var created bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO dumps (id, sha256, size, format, build_id, device, version, received, status, bucket, elf, error, updated)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, '', '', '', $8) ON CONFLICT (id) DO NOTHING`,
			n.ID, n.SHA256, n.Size, n.Format, n.BuildID, n.Device, n.Version, ns(n.Received), string(store.StatusQueued))
		if err != nil {
			return fmt.Errorf("postgres: add dump %s: %w", n.ID, err)
		}
		created = tag.RowsAffected() == 1
		if created {
			if _, err := tx.Exec(ctx, `INSERT INTO jobs (dump_id) VALUES ($1)`, n.ID); err != nil {
				return fmt.Errorf("postgres: add dump %s: enqueue: %w", n.ID, err)
			}
		}
		out, err = scanDump(tx.QueryRow(ctx, `SELECT `+dumpCols+` FROM dumps WHERE id = $1`, n.ID))
		if err != nil {
			return fmt.Errorf("postgres: add dump %s: %w", n.ID, err)
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
	d, err := scanDump(s.pool.QueryRow(ctx, `SELECT `+dumpCols+`, analysis FROM dumps WHERE id = $1`, id), &a)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Dump{}, fmt.Errorf("postgres: dump %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Dump{}, fmt.Errorf("postgres: dump %s: %w", id, err)
	}
	if len(a) > 0 {
		d.Analysis = a
	}
	return d, nil
}

// Dumps implements store.Store.
func (s *Store) Dumps(ctx context.Context, q store.DumpQuery) ([]store.Dump, error) {
	where, args := []string{"true"}, []any{}
	add := func(col, v string) {
		if v != "" {
			args = append(args, v)
			where = append(where, fmt.Sprintf("%s = $%d", col, len(args)))
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
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: dumps: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Dump, error) { return scanDump(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: dumps: %w", err)
	}
	if out == nil {
		out = []store.Dump{}
	}
	return out, nil
}

// Claim implements store.Store: the oldest ready job not locked by
// another worker's claim in progress (FOR UPDATE SKIP LOCKED) is leased.
func (s *Store) Claim(ctx context.Context, worker string, now time.Time, lease time.Duration) (store.Job, bool, error) {
	var j store.Job
	var until int64
	err := s.pool.QueryRow(ctx, `UPDATE jobs SET leased = true, lease_until = $1, attempts = attempts + 1, worker = $2
		WHERE id = (SELECT id FROM jobs WHERE NOT leased ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, dump_id, attempts, worker, lease_until`, ns(now.Add(lease)), worker).
		Scan(&j.ID, &j.DumpID, &j.Attempts, &j.Worker, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Job{}, false, nil
	}
	if err != nil {
		return store.Job{}, false, fmt.Errorf("postgres: claim: %w", err)
	}
	j.LeaseUntil = fromNS(until)
	return j, true, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, jobID int64, r store.Result, now time.Time) (bool, error) {
	switch r.Status {
	case store.StatusDecoded:
		if r.Bucket.Signature == "" {
			return false, errors.New("postgres: complete: a decoded result needs a bucket")
		}
	case store.StatusWaiting, store.StatusFailed:
	default:
		return false, fmt.Errorf("postgres: complete: a result cannot be %q", r.Status)
	}
	applied := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		applied = false
		var dumpID string
		// Deleting the job takes its row lock: a concurrent Complete of
		// the same job waits here, then finds it gone.
		err := tx.QueryRow(ctx, `DELETE FROM jobs WHERE id = $1 RETURNING dump_id`, jobID).Scan(&dumpID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // completed already: at-least-once delivery
		}
		if err != nil {
			return fmt.Errorf("postgres: complete job %d: %w", jobID, err)
		}
		applied = true
		if r.Status == store.StatusWaiting || r.Provisional {
			// An ELF that arrived while the worker decoded found the
			// dump queued, not waiting, and did not wake it: look now,
			// under the lock every symbol upload takes.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, symbolsLock); err != nil {
				return fmt.Errorf("postgres: complete job %d: %w", jobID, err)
			}
			var later bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM symbols s, dumps d
				WHERE d.id = $1 AND s.seq > $2 AND (s.build_id = d.build_id OR d.build_id = ''))`,
				dumpID, r.SymbolSeq).Scan(&later); err != nil {
				return fmt.Errorf("postgres: complete job %d: %w", jobID, err)
			}
			if later {
				return requeue(ctx, tx, dumpID, now)
			}
		}
		bucket := ""
		if r.Status == store.StatusDecoded {
			bucket = r.Bucket.Signature
			if _, err := tx.Exec(ctx, `INSERT INTO buckets (signature, title, key) VALUES ($1, $2, $3) ON CONFLICT (signature) DO NOTHING`,
				r.Bucket.Signature, r.Bucket.Title, r.Bucket.Key); err != nil {
				return fmt.Errorf("postgres: complete job %d: bucket: %w", jobID, err)
			}
		}
		var a []byte
		if len(r.Analysis) > 0 {
			a = r.Analysis
		}
		provisional := r.Status == store.StatusDecoded && r.Provisional
		if _, err := tx.Exec(ctx, `UPDATE dumps SET status = $1, bucket = $2, elf = $3, analysis = $4, error = $5, updated = $6, provisional = $7 WHERE id = $8`,
			string(r.Status), bucket, r.ELF, a, r.Error, ns(now), provisional, dumpID); err != nil {
			return fmt.Errorf("postgres: complete job %d: %w", jobID, err)
		}
		return nil
	})
	return applied, err
}

// RequeueExpired implements store.Store.
func (s *Store) RequeueExpired(ctx context.Context, now time.Time) (int, error) {
	// The rows are taken in id order and any another reaper (every
	// worker process runs one) holds are skipped: two reapers updating
	// the same expired rows in different orders would deadlock.
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET leased = false, lease_until = 0, worker = ''
		WHERE id IN (SELECT id FROM jobs WHERE leased AND lease_until < $1 ORDER BY id FOR UPDATE SKIP LOCKED)`, ns(now))
	if err != nil {
		return 0, fmt.Errorf("postgres: requeue expired: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// QueueLength implements store.Store.
func (s *Store) QueueLength(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: queue length: %w", err)
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
		return store.Bucket{}, fmt.Errorf("postgres: bucket %s: %w", signature, store.ErrNotFound)
	}
	return bs[0], nil
}

const dayNS = int64(24 * time.Hour)

func (s *Store) buckets(ctx context.Context, signature string, f store.BucketFilter) ([]store.Bucket, error) {
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	// One read-only snapshot for the three queries, so a completion
	// between them cannot make the lists disagree with the counts.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("postgres: buckets: %w", err)
	}
	defer tx.Rollback(ctx)
	where := `d.status = 'decoded' AND ($1::text = '' OR d.version = $1) AND ($2::text = '' OR d.device = $2) AND ($3::text = '' OR d.bucket = $3)`
	args := []any{f.Version, f.Device, signature}
	rows, err := tx.Query(ctx, `SELECT b.signature, b.title, b.key, count(*), min(d.received), max(d.received),
			count(DISTINCT NULLIF(d.device, '')), count(DISTINCT NULLIF(d.version, ''))
		FROM dumps d JOIN buckets b ON b.signature = d.bucket WHERE `+where+`
		GROUP BY b.signature, b.title, b.key ORDER BY count(*) DESC, min(d.received), b.signature`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: buckets: %w", err)
	}
	out := []store.Bucket{}
	index := map[string]int{}
	for rows.Next() {
		var b store.Bucket
		var first, last int64
		if err := rows.Scan(&b.Signature, &b.Title, &b.Key, &b.Count, &first, &last, &b.DeviceCount, &b.VersionCount); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: buckets: %w", err)
		}
		b.FirstSeen, b.LastSeen = fromNS(first), fromNS(last)
		b.Devices, b.Versions = []string{}, []string{}
		index[b.Signature] = len(out)
		out = append(out, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: buckets: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	for _, col := range []string{"device", "version"} {
		// The first MaxListed values of each bucket, most dumps first
		// then by name.
		rows, err := tx.Query(ctx, `SELECT bucket, v FROM (
				SELECT d.bucket, d.`+col+` AS v, row_number() OVER (PARTITION BY d.bucket ORDER BY count(*) DESC, d.`+col+`) AS rank
				FROM dumps d WHERE `+where+` AND d.`+col+` <> ''
				GROUP BY d.bucket, d.`+col+`) ranked
			WHERE rank <= $4 ORDER BY bucket, rank`, append(args, store.MaxListed)...)
		if err != nil {
			return nil, fmt.Errorf("postgres: bucket %ss: %w", col, err)
		}
		for rows.Next() {
			var sig, v string
			if err := rows.Scan(&sig, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("postgres: bucket %ss: %w", col, err)
			}
			i, ok := index[sig]
			if !ok {
				continue
			}
			if col == "device" {
				out[i].Devices = append(out[i].Devices, v)
			} else {
				out[i].Versions = append(out[i].Versions, v)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("postgres: bucket %ss: %w", col, err)
		}
	}
	today := floorDiv(ns(now), dayNS)
	first := today - store.Days + 1
	// received is non-negative nanoseconds, so integer division is the
	// UTC day number.
	rows, err = tx.Query(ctx, `SELECT d.bucket, d.received / $6, count(*) FROM dumps d WHERE `+where+` AND d.received >= $4 AND d.received < $5
		GROUP BY 1, 2`, append(args, first*dayNS, (today+1)*dayNS, dayNS)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: bucket days: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sig string
		var day int64
		var n int
		if err := rows.Scan(&sig, &day, &n); err != nil {
			return nil, fmt.Errorf("postgres: bucket days: %w", err)
		}
		if i, ok := index[sig]; ok {
			if d := day - first; d >= 0 && d < store.Days {
				out[i].Daily[d] += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: bucket days: %w", err)
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
