package elfsym

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to NewFile and, when it succeeds, calls
// every accessor. The corpus is seeded with every ELF under testdata.
func FuzzOpen(f *testing.F) {
	var seeds []string
	for _, pat := range []string{"testdata/*.elf", "testdata/bad/*"} {
		m, _ := filepath.Glob(pat)
		seeds = append(seeds, m...)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := NewFile(bytes.NewReader(data), "fuzz.elf")
		if err != nil {
			return
		}
		exercise(file)
		file.Close()
	})
}
