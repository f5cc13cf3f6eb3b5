package outfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func content(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemps fails when a temporary file is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	if len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// A new file and a replaced regular file: the whole content under the
// final name, a new inode (renamed into place), the old permission bits
// kept.
func TestRegularAndNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := Write(p, nil, content("one")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if readString(t, p) != "one" || st.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %q %v", readString(t, p), st.Mode())
	}
	os.Chmod(p, 0o600)
	before, _ := os.Stat(p)
	if err := Write(p, nil, content("two")); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if readString(t, p) != "two" || after.Mode().Perm() != 0o600 {
		t.Errorf("replaced: %q %v", readString(t, p), after.Mode())
	}
	if os.SameFile(before, after) {
		t.Error("written in place, not renamed into place")
	}
	noTemps(t, dir)
}

// A write that fails leaves the old file whole and no temporary file: never
// a partial file under the final name.
func TestFailedWriteLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	os.WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("boom")
	err := Write(p, nil, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("partial", 100000))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "cannot write "+p) || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("error %v", err)
	}
	if readString(t, p) != "old" {
		t.Error("the old file was changed")
	}
	noTemps(t, dir)
	// A set: the first file's failure renames nothing.
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	ta, _ := Resolve(a)
	tb, _ := Resolve(b)
	if err := WriteAll([]File{{ta, content("a")}, {tb, func(io.Writer) error { return boom }}}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); err == nil {
		t.Error("a was renamed into place although the set failed")
	}
	noTemps(t, dir)
}

// A symbolic link: its target is replaced, in the target's directory, and
// the link stays a link; a dangling link creates its target; a chain of
// links is followed.
func TestSymlink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	target := filepath.Join(other, "real.txt")
	os.WriteFile(target, []byte("old"), 0o640)
	link := filepath.Join(dir, "link.txt")
	os.Symlink(target, link)
	link2 := filepath.Join(dir, "link2.txt")
	os.Symlink("link.txt", link2) // relative, a chain
	tg, err := Resolve(link2)
	if err != nil || tg.Path != target || tg.Kind != Regular || tg.Dir() != other {
		t.Fatalf("Resolve: %+v %v", tg, err)
	}
	if err := Write(link2, nil, content("new")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, link2} {
		if st, _ := os.Lstat(l); st.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link", l)
		}
	}
	if st, _ := os.Stat(target); readString(t, target) != "new" || st.Mode().Perm() != 0o640 {
		t.Errorf("target: %q %v", readString(t, target), st.Mode())
	}
	noTemps(t, dir)
	noTemps(t, other)

	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(other, "created.txt"), dangling)
	if err := Write(dangling, nil, content("c")); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(other, "created.txt")) != "c" {
		t.Error("the dangling link's target was not created")
	}
	if st, _ := os.Lstat(dangling); st.Mode()&fs.ModeSymlink == 0 {
		t.Error("the dangling link was replaced")
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if _, err := Resolve(loop); err == nil {
		t.Error("a link loop resolved")
	}
}

func TestDirectoryAndStdout(t *testing.T) {
	dir := t.TempDir()
	if _, err := Resolve(dir); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := Resolve(filepath.Join(dir, "no/such/dir/x")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
	var b bytes.Buffer
	if err := Write("-", &b, content("out")); err != nil || b.String() != "out" {
		t.Errorf("stdout: %q %v", b.String(), err)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`a file named "-" was written`)
	}
}

// An output that is an input is refused by identity: the same name, a
// hard link, a symbolic link, a different spelling of the path.
func TestCheckNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "fw.elf")
	os.WriteFile(in, []byte("elf"), 0o644)
	hard := filepath.Join(dir, "hard.elf")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.elf")
	os.Symlink("fw.elf", sym)
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte("x"), 0o644)
	for _, o := range []string{in, hard, sym, filepath.Join(dir, ".", "sub", "..", "fw.elf")} {
		os.Mkdir(filepath.Join(dir, "sub"), 0o755)
		err := CheckNotInput("-o", []string{o}, []string{"", other, in})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is the input "+in) {
			t.Errorf("%s: %v", o, err)
		}
	}
	if err := CheckNotInput("-o", []string{filepath.Join(dir, "new.json"), other + ".bin"}, []string{in}); err != nil {
		t.Errorf("new names: %v", err)
	}
	// A side file (a region file) that is an input.
	err := CheckNotInput("-o", []string{filepath.Join(dir, "out.json"), hard}, []string{in})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "would overwrite the input "+in) {
		t.Errorf("side file: %v", err)
	}
	if readString(t, in) != "elf" {
		t.Error("the input changed")
	}
}
