package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/jackc/pgx/v5"
)

// Blobs keeps the uploaded files (ELFs, dumps) in the database, content
// addressed by SHA-256 like fleet/blobs' directory, so that workers on
// other machines read them from the one database they share, with no
// shared file system. A file is inserted in its own transaction that
// commits before Put returns, so a dump or symbol row (committed after)
// always finds its bytes.
type Blobs struct {
	s *Store
	// Timeout bounds each database call (Put and ReadFile take no
	// context); 0 means 5 minutes.
	Timeout time.Duration
}

var _ blobs.Store = (*Blobs)(nil)

// Blobs returns the file store in s's database.
func (s *Store) Blobs() *Blobs { return &Blobs{s: s} }

const blobsSchema = `
CREATE TABLE IF NOT EXISTS blobs (
	sha256 text PRIMARY KEY,
	size   bigint NOT NULL,
	data   bytea NOT NULL
);
`

func (b *Blobs) ctx() (context.Context, context.CancelFunc) {
	t := b.Timeout
	if t <= 0 {
		t = 5 * time.Minute
	}
	return context.WithTimeout(context.Background(), t)
}

// Put stores the bytes of r, at most limit of them (limit <= 0: no
// limit), and returns their SHA-256 and size. More than limit bytes is
// blobs.ErrTooLarge and stores nothing.
func (b *Blobs) Put(r io.Reader, limit int64) (string, int64, error) {
	src := r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return "", 0, fmt.Errorf("postgres: blobs: reading the body: %w", err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return "", 0, fmt.Errorf("postgres: blobs: more than %d bytes: %w", limit, blobs.ErrTooLarge)
	}
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	ctx, cancel := b.ctx()
	defer cancel()
	if _, err := b.s.pool.Exec(ctx, `INSERT INTO blobs (sha256, size, data) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING`,
		sum, int64(len(data)), data); err != nil {
		return "", 0, fmt.Errorf("postgres: blobs: storing %s: %w", sum, err)
	}
	return sum, int64(len(data)), nil
}

// ReadFile returns the bytes of that SHA-256, at most limit of them
// (limit <= 0: no limit; more is blobs.ErrTooLarge); blobs.ErrNotFound
// when there is no such file.
func (b *Blobs) ReadFile(sum string, limit int64) ([]byte, error) {
	if !blobs.ValidSHA256(sum) {
		return nil, fmt.Errorf("postgres: blobs: %q is not a SHA-256 in hex", sum)
	}
	ctx, cancel := b.ctx()
	defer cancel()
	var size int64
	var data []byte
	// The size is checked before the bytes are fetched: a limit protects
	// the reader's memory.
	err := b.s.pool.QueryRow(ctx, `SELECT size, CASE WHEN $2 > 0 AND size > $2 THEN NULL ELSE data END FROM blobs WHERE sha256 = $1`,
		sum, limit).Scan(&size, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: blobs: %s: %w", sum, blobs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: blobs: reading %s: %w", sum, err)
	}
	if limit > 0 && size > limit {
		return nil, fmt.Errorf("postgres: blobs: %s: more than %d bytes: %w", sum, limit, blobs.ErrTooLarge)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}
