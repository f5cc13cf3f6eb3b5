// Package blobs keeps the crash server's uploaded files (firmware ELFs,
// dumps) content-addressed under the --data directory: a file's name is
// the hex SHA-256 of its bytes, at DIR/files/ab/abcdef... (the first two
// hex digits fan the files out over 256 directories).
//
// A file is written to a temporary file beside its final place, synced
// to disk, then renamed into place and its directory synced: a crash at
// any moment leaves either no file or the whole file, never a torn one,
// so a database row that names a SHA-256 (committed after Put returns)
// always finds its bytes. An existing regular file of the same name
// already holds the same bytes and is kept; anything else at that name
// (a symbolic link, a directory, a device) is refused, never replaced.
package blobs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrTooLarge is returned (wrapped) when a body exceeds Put's limit.
var ErrTooLarge = errors.New("too large")

// ErrNotFound is returned (wrapped) when no file has that SHA-256.
var ErrNotFound = errors.New("no such file")

// Store is where the crash server keeps the uploaded files: a Dir, or,
// when workers on several machines share a PostgreSQL database, a table
// of it (fleet/store/postgres.Blobs). Both address a file by the hex
// SHA-256 of its bytes and fail with ErrTooLarge and ErrNotFound.
type Store interface {
	// Put stores the bytes of r, at most limit of them (limit <= 0: no
	// limit), and returns their SHA-256 and size; it returns once the
	// file is durable.
	Put(r io.Reader, limit int64) (sum string, size int64, err error)
	// ReadFile returns the bytes of that SHA-256, at most limit of them
	// (limit <= 0: no limit).
	ReadFile(sum string, limit int64) ([]byte, error)
}

var _ Store = (*Dir)(nil)

// Dir is a content-addressed file store rooted at a directory.
type Dir struct {
	root string // DIR/files
}

// Open makes (when missing) and opens the store under dir.
func Open(dir string) (*Dir, error) {
	root := filepath.Join(dir, "files")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	st, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("blobs: %s is not a directory", root)
	}
	return &Dir{root: root}, nil
}

// ValidSHA256 reports whether s is 64 lower-case hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Path is where the file of that SHA-256 lives (whether or not it
// exists).
func (d *Dir) Path(sum string) (string, error) {
	if !ValidSHA256(sum) {
		return "", fmt.Errorf("blobs: %q is not a SHA-256 in hex", sum)
	}
	return filepath.Join(d.root, sum[:2], sum), nil
}

// Put stores the bytes of r, at most limit of them (limit <= 0: no
// limit), and returns their SHA-256 and size. More than limit bytes is
// ErrTooLarge and stores nothing.
func (d *Dir) Put(r io.Reader, limit int64) (sum string, size int64, err error) {
	tmp, err := os.CreateTemp(d.root, ".upload-*")
	if err != nil {
		return "", 0, fmt.Errorf("blobs: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	src := r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	size, err = io.Copy(io.MultiWriter(tmp, h), src)
	if err != nil {
		return "", 0, fmt.Errorf("blobs: reading the body: %w", err)
	}
	if limit > 0 && size > limit {
		return "", 0, fmt.Errorf("blobs: more than %d bytes: %w", limit, ErrTooLarge)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("blobs: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("blobs: %w", err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if err := d.place(tmp.Name(), sum, size); err != nil {
		return "", 0, err
	}
	tmp = nil // renamed or no longer needed (place removed it)
	return sum, size, nil
}

// place moves the written temporary file to its content address.
func (d *Dir) place(tmpName, sum string, size int64) error {
	dst, _ := d.Path(sum)
	dir := filepath.Dir(dst)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		os.Remove(tmpName)
		return fmt.Errorf("blobs: %w", err)
	}
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		os.Remove(tmpName)
		return fmt.Errorf("blobs: %s is not a directory: refusing to store into it", dir)
	}
	st, err := os.Lstat(dst)
	switch {
	case err == nil && !st.Mode().IsRegular():
		os.Remove(tmpName)
		return fmt.Errorf("blobs: %s exists and is not a regular file (%s): refusing to replace it", dst, st.Mode().Type())
	case err == nil && st.Size() == size:
		// The same content is there already (its name is its hash).
		os.Remove(tmpName)
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		os.Remove(tmpName)
		return fmt.Errorf("blobs: %w", err)
	}
	// Missing, or a regular file of the wrong size (damaged outside the
	// server): the rename puts the right bytes in place atomically.
	if err := os.Rename(tmpName, dst); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("blobs: %w", err)
	}
	if f, err := os.Open(dir); err == nil {
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("blobs: syncing %s: %w", dir, err)
		}
	}
	return nil
}

// Open opens the file of that SHA-256 for reading; ErrNotFound when it
// is absent. Only a regular file is opened.
func (d *Dir) Open(sum string) (*os.File, error) {
	p, err := d.Path(sum)
	if err != nil {
		return nil, err
	}
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blobs: %s: %w", sum, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("blobs: %s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	return f, nil
}

// ReadFile returns the bytes of that SHA-256, at most limit of them
// (limit <= 0: no limit; more is ErrTooLarge).
func (d *Dir) ReadFile(sum string, limit int64) ([]byte, error) {
	f, err := d.Open(sum)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("blobs: reading %s: %w", sum, err)
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("blobs: %s: more than %d bytes: %w", sum, limit, ErrTooLarge)
	}
	return b, nil
}
