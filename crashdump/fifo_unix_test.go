//go:build unix

package crashdump

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadFIFO: a FIFO would block a reader that opened it, so a region
// file (or manifest) that is one is refused from its mode, never read.
func TestLoadFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.bin"), 0o644); err != nil {
		t.Skip(err)
	}
	writeFiles(t, dir, map[string]string{"fifo.json": manifest(`{"address": 0, "file": "fifo.bin"}`)})
	path := filepath.Join(dir, "fifo.json")
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+`: memory[0].file: cannot read "fifo.bin": not a regular file`) {
		t.Errorf("got %v", err)
	}
	fifo := filepath.Join(dir, "fifo.bin")
	if _, err := Load(fifo); err == nil || err.Error() != fifo+": cannot read: not a regular file" {
		t.Errorf("got %v", err)
	}
}
