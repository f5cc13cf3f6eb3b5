package mutate

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The same input gives the same mutants; an ELF core is cut at its
// program headers and notes, and its note sizes are set to 0 and to the
// maximum.
func TestDeterministicAndStructured(t *testing.T) {
	core, err := os.ReadFile("../../fixtures/elfcore/gcc-m3-O2-null_write_deep.gcore.elf")
	if err != nil {
		t.Fatal(err)
	}
	a, b := All(core, Options{}), All(core, Options{})
	if len(a) != len(b) || len(a) < 300 {
		t.Fatalf("%d and %d mutants", len(a), len(b))
	}
	names := map[string]bool{}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("mutant %d differs between runs: %s %s", i, a[i].Name, b[i].Name)
		}
		if bytes.Equal(a[i].Data, core) && !strings.HasPrefix(a[i].Name, "u") {
			t.Errorf("%s leaves the input as it is", a[i].Name)
		}
		names[a[i].Name] = true
	}
	// readelf -l: 6 program headers from 52, the notes at 0x1550 (5456);
	// the first note's descsz is at 5460.
	for _, want := range []string{"trunc@52", "trunc@84", "trunc@5456", "trunc@5468", "u32@5460=0xffffffff", "u32@5460=0x0", "u16@44=0xffff"} {
		if !names[want] {
			t.Errorf("no mutant %s", want)
		}
	}
	text := All([]byte("r0 0x00000001\nsp 0x20001000\npc 0x00000100\n"), Options{})
	var cut, num bool
	for _, m := range text {
		cut = cut || m.Name == "trunc@14"
		num = num || m.Name == "num@17=0xffffffff"
	}
	if !cut || !num {
		t.Errorf("register text: no line cut or no number set to its maximum")
	}
}
