package emu

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// patchWord writes v at the file offset of vaddr in a copy of src.
func patchWord(t *testing.T, src string, vaddr uint32, v uint32) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && uint64(vaddr) >= p.Vaddr && uint64(vaddr)+4 <= p.Vaddr+p.Filesz {
			binary.LittleEndian.PutUint32(data[p.Off+uint64(vaddr)-p.Vaddr:], v)
			out := filepath.Join(t.TempDir(), "patched.elf")
			if err := os.WriteFile(out, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("%s: no loaded bytes at %#x", src, vaddr)
	return ""
}

// A reset vector without the Thumb bit is named as the vector table's
// slot it was read from (issue 23: "entry point 0x14 is not Thumb code"
// left the user guessing where 0x14 came from).
func TestResetVectorNotThumbNamesSlot(t *testing.T) {
	skipWithoutCgo(t)
	elfPath := patchWord(t, "testdata/fw-m4.elf", 4, 0x14)
	_, err := Run(context.Background(), Config{ELF: elfPath, MaxInsns: 1000, Timeout: time.Minute})
	if err == nil {
		t.Fatal("no error for an even reset vector")
	}
	for _, want := range []string{"reset vector", "0x00000004", "vector table at 0x00000000", "0x14"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
