package elfsym

import (
	"path/filepath"
	"testing"
)

// The build IDs are those `readelf -n` prints for the committed ELFs
// (firmware-samples/buildid, GNU binutils 2.40); the sample builds have
// none.
func TestBuildID(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"firmware-samples/buildid/build/gcc-m3-O2.elf", "57dac794fb05f6051e02302940eb03bbd758fb12"},
		{"firmware-samples/buildid/build/gcc-m3-O2-fp.elf", "c86f05c5f989296d2d3988cf4cb8b72153d448ac"},
		{"firmware-samples/buildid/build/gcc-m3-Os.elf", "61824535e2bf9761c4ce2b8870ec5602a41a32c6"},
		{"firmware-samples/build/gcc-m3-O2.elf", ""},
	} {
		f, err := Open(filepath.Join("..", c.path))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.BuildID(); got != c.want {
			t.Errorf("%s: build-id %q, want %q", c.path, got, c.want)
		}
		if got := f.Info().BuildID; got != c.want {
			t.Errorf("%s: Info().BuildID %q, want %q", c.path, got, c.want)
		}
		f.Close()
	}
}

// Malformed note areas end the scan without a panic.
func TestFindBuildIDNoteHostile(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{4, 0, 0, 0},
		{4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 'G', 'N', 'U', 0},
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 3, 0, 0, 0},
		{4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0},
	} {
		if id, ok := FindBuildIDNote(b); ok {
			t.Errorf("% x: found %x", b, id)
		}
	}
	good := []byte{4, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xab, 0xcd, 0, 0}
	if id, ok := FindBuildIDNote(good); !ok || len(id) != 2 || id[0] != 0xab {
		t.Errorf("good note: %x %v", id, ok)
	}
}

func FuzzFindBuildIDNote(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xab, 0xcd, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, ok := FindBuildIDNote(b); ok && len(id) == 0 {
			t.Fatal("empty build ID reported")
		}
	})
}
