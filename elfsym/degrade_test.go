package elfsym

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// withSectionSize returns the ELF with the size of its section name set
// to size (a corrupt section header).
func withSectionSize(t *testing.T, data []byte, name string, size uint32) []byte {
	t.Helper()
	f, err := NewFile(bytes.NewReader(data), "x.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	le := binary.LittleEndian
	shoff := le.Uint32(data[32:])
	for _, s := range f.Sections() {
		if s.Name == name {
			out := bytes.Clone(data)
			le.PutUint32(out[shoff+uint32(s.Index)*40+20:], size)
			return out
		}
	}
	t.Fatalf("no section %s", name)
	return nil
}

// One corrupt debug section (its size runs past the end of the file)
// leaves the ELF usable, as addr2line and nm find: a warning names the
// section, and symbolization goes on with what is left (the symbol table
// names the function; the line table, when it is intact, the file and
// line) (issue 23 item 7: the whole ELF was refused). A corrupt section
// the program loads, or the section name table, is still an error.
func TestCorruptDebugSectionDegrades(t *testing.T) {
	data, err := os.ReadFile("../firmware-samples/build/gcc-m3-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	good, err := NewFile(bytes.NewReader(data), "good.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	addr, ok := good.Symbol("null_store")
	if !ok {
		t.Fatal("no null_store")
	}
	addr &^= 1
	for _, sec := range []string{".debug_info", ".debug_line", ".debug_frame", ".debug_abbrev", ".debug_str"} {
		bad := withSectionSize(t, data, sec, 0xfffffff0)
		f, err := NewFile(bytes.NewReader(bad), "bad.elf")
		if err != nil {
			t.Errorf("%s: %v", sec, err)
			continue
		}
		warned := false
		for _, w := range f.Warnings() {
			warned = warned || (strings.Contains(w, "("+sec+") ignored") && strings.Contains(w, "runs past the end of the file"))
		}
		if !warned {
			t.Errorf("%s: no warning naming the section: %q", sec, f.Warnings())
		}
		locs, err := f.Symbolize(addr + 6)
		if err != nil || len(locs) == 0 || locs[len(locs)-1].Function != "null_store" {
			t.Errorf("%s: symbolize: %+v %v", sec, locs, err)
		}
		f.Close()
	}
	// .symtab gone: DWARF still names the function.
	f, err := NewFile(bytes.NewReader(withSectionSize(t, data, ".symtab", 0xfffffff0)), "bad.elf")
	if err != nil {
		t.Fatal(err)
	}
	if locs, err := f.Symbolize(addr + 6); err != nil || len(locs) == 0 || locs[len(locs)-1].Function != "null_store" {
		t.Errorf(".symtab: symbolize: %+v %v", locs, err)
	}
	f.Close()
	for _, sec := range []string{".text", ".shstrtab"} {
		if _, err := NewFile(bytes.NewReader(withSectionSize(t, data, sec, 0xfffffff0)), "bad.elf"); err == nil || !strings.Contains(err.Error(), "runs past the end of the file") {
			t.Errorf("%s: %v, want the error", sec, err)
		}
	}
}
