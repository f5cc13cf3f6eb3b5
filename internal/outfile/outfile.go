// Package outfile is how every faultline command writes an output file
// (docs/contracts.md, "Output files"):
//
//   - "-" is standard output, written through.
//   - A regular file, or a name that does not exist yet, is written to a
//     temporary file in the same directory, synced, and renamed into
//     place: a reader sees the old file or the whole new one, never a
//     partial file under the final name. A file that is replaced keeps its
//     permission bits; a new one gets 0644.
//   - A symbolic link is followed (a chain of them, at most 40): its
//     target is replaced as above, in the target's directory, and the
//     link stays a link. A dangling link creates its target.
//   - Anything else that exists (a FIFO, a character or block device, a
//     socket) is opened and written through, never replaced, and no file is
//     ever created beside it (Target.SideFiles is false).
//   - A directory is refused (ErrRefused).
//   - An output that is one of the command's inputs, by file identity
//     (os.SameFile: a hard link or a symbolic link to an input is that
//     input), is refused (CheckNotInput).
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrRefused marks an output the caller named wrongly (a directory, one of
// the inputs, side files next to a device): a usage error.
var ErrRefused = errors.New("output refused")

// refusedError is an ErrRefused with its reason.
type refusedError struct{ msg string }

func (e *refusedError) Error() string        { return e.msg }
func (e *refusedError) Is(target error) bool { return target == ErrRefused }

// Refusef returns an error that is ErrRefused, with the message given.
func Refusef(format string, args ...any) error {
	return &refusedError{fmt.Sprintf(format, args...)}
}

// Kind is what an output name refers to.
type Kind int

const (
	// Stdout is "-".
	Stdout Kind = iota
	// Regular is an existing regular file (perhaps through symbolic
	// links): replaced atomically.
	Regular
	// New is a name that does not exist yet (or a dangling link's
	// target): created atomically.
	New
	// Stream is a FIFO, a device or a socket: written through.
	Stream
)

// Target is a resolved output name.
type Target struct {
	Name string      // as the user gave it, for messages
	Path string      // the file written: symbolic links resolved for Regular and New
	Kind Kind        //
	Perm fs.FileMode // the permission bits the written file gets (Regular, New)
}

// SideFiles reports whether files may be written beside the target (a
// manifest's region files): only for a file in a directory, never beside
// a device, a FIFO or standard output.
func (t *Target) SideFiles() bool { return t.Kind == Regular || t.Kind == New }

// Dir is the directory the output (and its side files) lands in: the
// directory of the symbolic link's target, not of the link.
func (t *Target) Dir() string { return filepath.Dir(t.Path) }

// maxLinks bounds the symbolic links followed (Linux's own limit).
const maxLinks = 40

// Resolve says what name refers to. It refuses a directory, and a name
// whose directory does not exist.
func Resolve(name string) (*Target, error) {
	if name == "-" {
		return &Target{Name: name, Path: name, Kind: Stdout}, nil
	}
	if name == "" {
		return nil, Refusef("the output file name is empty")
	}
	st, err := os.Stat(name) // follows links
	switch {
	case err == nil && st.IsDir():
		return nil, Refusef("%s is a directory: give a file name", name)
	case err == nil && !st.Mode().IsRegular():
		// A FIFO or a device: opened through its name (a link to it
		// included, /dev/stdout -> /proc/self/fd/1 -> pipe:[N]).
		return &Target{Name: name, Path: name, Kind: Stream}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cannot write %s: %w", name, reason(err))
	}
	// A regular file or a new name: find the file itself, through links.
	p := name
	for i := 0; ; i++ {
		lst, lerr := os.Lstat(p)
		if lerr != nil {
			if !errors.Is(lerr, fs.ErrNotExist) {
				return nil, fmt.Errorf("cannot write %s: %w", name, reason(lerr))
			}
			break // a new file (or a dangling link's target)
		}
		if lst.Mode()&fs.ModeSymlink == 0 {
			break
		}
		if i == maxLinks {
			return nil, Refusef("cannot write %s: more than %d symbolic links", name, maxLinks)
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", name, reason(err))
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	t := &Target{Name: name, Path: p, Kind: New, Perm: 0o644}
	if err == nil {
		t.Kind, t.Perm = Regular, st.Mode().Perm()
	}
	if dst, derr := os.Stat(filepath.Dir(p)); derr != nil || !dst.IsDir() {
		if p != name {
			return nil, fmt.Errorf("cannot write %s: the directory of its link target %s does not exist", name, p)
		}
		return nil, fmt.Errorf("cannot write %s: directory %s does not exist", name, filepath.Dir(p))
	}
	return t, nil
}

// CheckNotInput refuses outputs that are one of the inputs, by file
// identity. flag names the option for the message ("-o", "--junit");
// outputs are file names (the ones that do not exist yet are no input);
// inputs may hold names that do not exist (skipped).
func CheckNotInput(flag string, outputs, inputs []string) error {
	for _, o := range outputs {
		if o == "-" {
			continue
		}
		so, err := os.Stat(o)
		if err != nil {
			continue
		}
		for _, in := range inputs {
			if in == "" || in == "-" {
				continue
			}
			si, err := os.Stat(in)
			if err != nil || !os.SameFile(so, si) {
				continue
			}
			if o == outputs[0] {
				return Refusef("%s %s is the input %s: writing would overwrite it; choose another name", flag, o, in)
			}
			return Refusef("%s %s would overwrite the input %s (as %s); choose another name", flag, outputs[0], in, o)
		}
	}
	return nil
}

// File is one output of a set written together: the content comes from
// Write.
type File struct {
	Target *Target
	Write  func(io.Writer) error
}

// WriteFile writes data to name (Resolve's rules; name must not be "-").
func WriteFile(name string, data []byte) error {
	return Write(name, nil, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes one output, whose content write produces; "-" goes to
// stdout.
func Write(name string, stdout io.Writer, write func(io.Writer) error) error {
	t, err := Resolve(name)
	if err != nil {
		return err
	}
	if t.Kind == Stdout {
		if stdout == nil {
			return Refusef("cannot write %s to standard output here", name)
		}
		return write(stdout)
	}
	return WriteAll([]File{{t, write}})
}

// WriteAll writes the files in order as one set: every regular or new
// file to a temporary file first, then all are renamed into place in
// order (so put the file that names the others last). On an error no
// temporary file is left and nothing more is renamed. Stream targets are
// written through, after the regular files are in place; Stdout targets
// are refused (write those yourself).
func WriteAll(files []File) error {
	tmps := make([]string, len(files))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	for i, f := range files {
		switch f.Target.Kind {
		case Stdout:
			return Refusef("cannot write %s to standard output here", f.Target.Name)
		case Regular, New:
			tmp, err := writeTemp(f.Target, f.Write)
			if err != nil {
				return err
			}
			tmps[i] = tmp
		}
	}
	for i, f := range files {
		if tmps[i] == "" {
			continue
		}
		if err := os.Rename(tmps[i], f.Target.Path); err != nil {
			return fmt.Errorf("cannot write %s: %w", f.Target.Name, reason(err))
		}
		tmps[i] = ""
	}
	for _, f := range files {
		if f.Target.Kind == Stream {
			if err := writeThrough(f.Target, f.Write); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTemp writes a new temporary file next to t.Path, synced, with t's
// permission bits, and returns its name. Errors name t, not the temporary
// file.
func writeTemp(t *Target, write func(io.Writer) error) (tmp string, err error) {
	f, err := os.CreateTemp(t.Dir(), "."+filepath.Base(t.Path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	if err := f.Chmod(t.Perm); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	return f.Name(), nil
}

// writeThrough opens a FIFO or a device for writing (never creating or
// truncating it) and writes to it.
func writeThrough(t *Target, write func(io.Writer) error) error {
	f, err := os.OpenFile(t.Path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	if st, err := f.Stat(); err == nil && (st.Mode().IsRegular() || st.IsDir()) {
		// It changed between Resolve and here: never write a regular file
		// in place.
		f.Close()
		return fmt.Errorf("cannot write %s: it changed while being written (now a %s)", t.Name, st.Mode().Type())
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", t.Name, reason(err))
	}
	return nil
}

// reason strips the operation and path that os errors carry (the
// temporary file's name among them), keeping what went wrong.
func reason(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &le):
		return le.Err
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &se):
		return se.Err
	}
	return err
}
