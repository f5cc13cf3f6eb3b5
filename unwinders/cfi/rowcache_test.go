package cfi

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/faultline-dev/faultline/elfsym"
)

// The per-address row cache answers what running the FDE answers, and
// stays bounded.
func TestRowCache(t *testing.T) {
	f, err := elfsym.Open(filepath.Join("..", "..", "firmware-samples", "build", "gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	addr, code, ok := f.Section(".text")
	if !ok {
		t.Fatal("no .text")
	}
	checked := 0
	for pc := addr; pc < addr+uint32(len(code)); pc += 2 {
		for range 2 { // the second answer comes from the cache
			fde, row, err := tab.rowAt(pc)
			want, found := tab.Lookup(pc)
			if fde != want || (fde == nil) == found {
				t.Fatalf("0x%x: FDE %v, want %v", pc, fde, want)
			}
			if !found {
				continue
			}
			wrow, werr := want.RowAt(uint64(pc))
			if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(*row, wrow)) {
				t.Fatalf("0x%x: row %+v, %v; want %+v, %v", pc, row, err, wrow, werr)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no address with an FDE")
	}
	for pc := range uint32(rowCacheMax + 100) {
		tab.rowAt(pc)
	}
	if n := len(tab.rows.m); n > rowCacheMax {
		t.Errorf("cache holds %d rows, more than %d", n, rowCacheMax)
	}
}
