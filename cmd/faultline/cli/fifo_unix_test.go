//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

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
