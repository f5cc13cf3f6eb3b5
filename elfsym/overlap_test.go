package elfsym

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOverlappingSequences: in testdata/overlap/gcc-overlap.elf one unit's
// line program has three sequences on top of each other (src/overlap.c,
// src/overlap.ld): ov_small starts where ov_big starts but is shorter, and
// ov_mid starts inside ov_big and runs past its end. At every halfword of
// them Symbolize must give the file:line addr2line gave (recorded in
// testdata/overlap/gcc-overlap.addr2line by the Makefile): the sequence
// that starts lowest wins, and of two with the same start the longest.
// Breaking either rule changes the answer at some of these addresses.
func TestOverlappingSequences(t *testing.T) {
	path := filepath.Join("testdata", "overlap", "gcc-overlap.elf")
	// The fixture still overlaps as described.
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sec := map[string]*elf.Section{}
	for _, s := range ef.Sections {
		sec[s.Name] = s
	}
	ef.Close()
	big, small, mid := sec[".ov_big"], sec[".ov_small"], sec[".ov_mid"]
	if big == nil || small == nil || mid == nil {
		t.Fatal("the fixture lacks .ov_big, .ov_small or .ov_mid")
	}
	if small.Addr != big.Addr || small.Size >= big.Size || mid.Addr <= big.Addr || mid.Addr >= big.Addr+big.Size || mid.Addr+mid.Size <= big.Addr+big.Size {
		t.Fatalf("the sections no longer overlap as src/overlap.ld says: big %#x+%#x small %#x+%#x mid %#x+%#x",
			big.Addr, big.Size, small.Addr, small.Size, mid.Addr, mid.Size)
	}

	f := open(t, filepath.Join("overlap", "gcc-overlap.elf"))
	rec, err := os.Open(filepath.Join("testdata", "overlap", "gcc-overlap.addr2line"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	sc := bufio.NewScanner(rec)
	n := 0
	var addr uint64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "0x"):
			if addr, err = strconv.ParseUint(line[2:], 16, 32); err != nil {
				t.Fatal(err)
			}
			continue
		}
		locs, err := f.Symbolize(uint32(addr))
		got := "??:0"
		if err == nil && len(locs) > 0 && locs[0].Line > 0 {
			got = fmt.Sprintf("%s:%d", locs[0].File, locs[0].Line)
		}
		if got != line {
			t.Errorf("0x%x: %s, addr2line %s", addr, got, line)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if want := int((mid.Addr + mid.Size - big.Addr) / 2); n != want {
		t.Errorf("%d addresses recorded, want %d (every halfword of the overlapping sections)", n, want)
	}
}
