package thumb

import (
	"debug/elf"
	"testing"
)

// functionBytes returns the code of a function symbol of an ELF.
func functionBytes(tb testing.TB, path, name string) ([]byte, uint32) {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != name || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		addr := uint32(s.Value) &^ 1
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR == 0 || uint64(addr) < sec.Addr || uint64(addr)+s.Size > sec.Addr+sec.Size {
				continue
			}
			data, err := sec.Data()
			if err != nil {
				tb.Fatal(err)
			}
			off := uint64(addr) - sec.Addr
			return data[off : off+s.Size], addr
		}
	}
	tb.Fatalf("%s: no function %s", path, name)
	return nil, 0
}
