package elfsym

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func openT(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestImagesDispatch: every function of every image of our two-image
// samples is found through the Images as its own file finds it, and the claims
// follow the images' load segments (readelf -l of these ELFs: the
// bootloader's 0x0-, the application's 0x10000-, the Secure image's
// 0x10000000- with its veneers at 0x1003f000, the Non-secure 0x200000-).
func TestImagesDispatch(t *testing.T) {
	for _, pair := range [][2]string{
		{"../firmware-samples/multiimage/build/gcc-m3-O2-boot.elf", "../firmware-samples/multiimage/build/gcc-m3-O2-app.elf"},
		{"../firmware-samples/multiimage/build/clang-m3-O2-boot.elf", "../firmware-samples/multiimage/build/clang-m3-O2-app.elf"},
		{"../firmware-samples/trustzone/build/gcc-O2-s.elf", "../firmware-samples/trustzone/build/gcc-O2-ns.elf"},
	} {
		t.Run(filepath.Base(pair[1]), func(t *testing.T) {
			a, b := openT(t, pair[0]), openT(t, pair[1])
			m, err := NewImages(a, b)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range m.Files() {
				n := 0
				for _, s := range f.syms.funcs.items {
					if s.size == 0 {
						continue
					}
					n++
					j, ok := m.Index(s.start)
					if !ok || j != i {
						t.Errorf("%s (0x%08x) of image %d: Index says %d, %v", s.name, s.start, i, j, ok)
						continue
					}
					last := s.start + s.size - 1
					fn, ok := m.FuncAt(last)
					own, _ := f.FuncAt(last)
					if !ok || fn != own {
						t.Errorf("FuncAt(0x%08x) = %+v, %v: want %+v (its image's own answer)", last, fn, ok, own)
					}
				}
				if n < 5 {
					t.Errorf("image %d: only %d functions", i, n)
				}
			}
			if _, ok := m.Index(0x30000010); ok {
				t.Error("0x30000010 (unmapped on the board) is claimed")
			}
		})
	}
	s := openT(t, "../firmware-samples/trustzone/build/gcc-O2-s.elf")
	ns := openT(t, "../firmware-samples/trustzone/build/gcc-O2-ns.elf")
	m, err := NewImages(s, ns)
	if err != nil {
		t.Fatal(err)
	}
	// The Non-secure image's import library defines s_checksum as an
	// absolute symbol at its veneer: the code there is the Secure image's.
	v, ok := ns.Symbol("s_checksum")
	if !ok {
		t.Fatal("no s_checksum in the Non-secure image")
	}
	if f, ok := m.FileAt(v); !ok || f != s {
		t.Errorf("veneer 0x%08x: FileAt says %v", v, f)
	}
	if !m.IsCode(v) {
		t.Errorf("veneer 0x%08x is not code", v)
	}
}

// TestImagesOverlap: two images that claim the same flash are refused,
// naming both files and the range.
func TestImagesOverlap(t *testing.T) {
	a := openT(t, "../firmware-samples/multiimage/build/gcc-m3-O2-boot.elf")
	b := openT(t, "../firmware-samples/multiimage/build/gcc-m3-O0-boot.elf")
	app := openT(t, "../firmware-samples/multiimage/build/gcc-m3-O2-app.elf")
	_, err := NewImages(a, app, b)
	if !errors.Is(err, ErrOverlap) {
		t.Fatalf("err = %v, want ErrOverlap", err)
	}
	for _, want := range []string{"gcc-m3-O2-boot.elf", "gcc-m3-O0-boot.elf", "0x00000000-"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := NewImages(a, a); !errors.Is(err, ErrOverlap) {
		t.Errorf("the same image twice: err = %v", err)
	}
	if _, err := NewImages(); err == nil {
		t.Error("no image: no error")
	}
}
