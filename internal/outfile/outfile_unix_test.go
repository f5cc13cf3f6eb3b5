//go:build unix

package outfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// A FIFO is written through and stays a FIFO; nothing is created beside it.
func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	tg, err := Resolve(p)
	if err != nil || tg.Kind != Stream || tg.SideFiles() {
		t.Fatalf("Resolve: %+v %v", tg, err)
	}
	if err := Write(p, nil, content("through the fifo")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the fifo" {
		t.Errorf("read %q", s)
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", st.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 1 {
		t.Errorf("files beside the FIFO: %v", m)
	}
}

// nullDevice returns a character device to write to: as root, a private
// null device node made in a temporary directory (so that a regression
// replaces that node, never the system's /dev/null); otherwise os.DevNull,
// whose directory an unprivileged user cannot change.
func nullDevice(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		return os.DevNull
	}
	if runtime.GOOS != "linux" {
		t.Skip("as root, a private null device is made on Linux only (major 1, minor 3)")
	}
	p := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("the device node cannot be opened here (nodev?): %v", err)
	}
	f.Close()
	return p
}

// A character device is written through and stays the same device: never
// replaced, nothing created beside it.
func TestCharDevice(t *testing.T) {
	dev := nullDevice(t)
	st, err := os.Stat(dev)
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s: %v %v", dev, st.Mode(), err)
	}
	before, _ := filepath.Glob(dev + "*")
	tg, err := Resolve(dev)
	if err != nil || tg.Kind != Stream || tg.SideFiles() {
		t.Fatalf("Resolve: %+v %v", tg, err)
	}
	if err := Write(dev, nil, content("discarded")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(dev)
	if err != nil || after.Mode()&fs.ModeCharDevice == 0 || !os.SameFile(st, after) {
		t.Fatalf("%s is no longer the same character device: %v", dev, after.Mode())
	}
	if now, _ := filepath.Glob(dev + "*"); len(now) != len(before) {
		t.Errorf("files beside %s: %v", dev, now)
	}
}
