package elfsym

import (
	"reflect"
	"testing"
)

// The per-address cache gives the answers symbolizing without it gives,
// returns copies the caller may change, and stays bounded.
func TestSymbolizeCache(t *testing.T) {
	f := open(t, "gcc-inline-O2.elf")
	var text *SectionInfo
	for i, s := range f.Sections() {
		if s.Name == ".text" {
			text = &f.Sections()[i]
		}
	}
	if text == nil {
		t.Fatal("no .text")
	}
	for a := uint32(text.Addr); a < uint32(text.Addr)+uint32(text.Size); a += 2 {
		want, werr := f.appendSymbolizeOpt(nil, a, nil, true)
		for range 2 { // the second answer comes from the cache
			got, err := f.Symbolize(a)
			if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) {
				t.Fatalf("0x%x: %+v, %v; want %+v, %v", a, got, err, want, werr)
			}
			if len(got) > 0 {
				got[0].Function = "changed by the caller"
			}
		}
	}
	for a := range uint32(symCacheMax + 100) {
		f.Symbolize(a)
	}
	if n := len(f.symCache.m); n > symCacheMax {
		t.Errorf("cache holds %d entries, more than %d", n, symCacheMax)
	}
}
