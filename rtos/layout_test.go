package rtos

import (
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/elfsym"
)

// The sample firmware's struct fl_sysregs (firmware-samples/src/fw.h):
// eight uint32_t members in order; offsets and size as the C compiler laid
// them out, cross-checked with the variable's symbol size from readelf.
func TestLayoutSampleStruct(t *testing.T) {
	for _, name := range []string{"gcc-m3-O0", "clang-m4f-O2"} {
		f, err := elfsym.Open("../firmware-samples/build/" + name + ".elf")
		if err != nil {
			t.Fatal(err)
		}
		ts := NewTypes(f.DWARF())
		st, err := ts.Struct("fl_sysregs")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := ts.Variable("fl_sysregs")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Off != st.Off || v.Kind != "struct" {
			t.Errorf("%s: variable type %+v, want the struct at 0x%x", name, v, st.Off)
		}
		if st.Size != 4*uint32(len(st.Members)) || len(st.Members) < 4 {
			t.Errorf("%s: size %d with %d members", name, st.Size, len(st.Members))
		}
		for i, m := range st.Members {
			if m.Offset != uint32(4*i) || m.Size != 4 || m.Count != 0 {
				t.Errorf("%s: member %d %+v", name, i, m)
			}
		}
		if _, err := ts.Struct("no_such_struct"); !errors.Is(err, ErrNoType) {
			t.Errorf("%s: missing struct: %v", name, err)
		}
	}
	if _, err := NewTypes(nil).Struct("x"); !errors.Is(err, ErrNoType) {
		t.Errorf("nil DWARF: %v", err)
	}
}

// addrSet answers like a map, across its switch from array to map.
func TestAddrSet(t *testing.T) {
	var s addrSet
	m := map[uint32]bool{}
	for i := range uint32(100) {
		a := i * 0x9e3779b1 % 97 // repeats included
		if s.has(a) != m[a] {
			t.Fatalf("step %d: has(%d) = %v", i, a, s.has(a))
		}
		s.add(a)
		m[a] = true
		for b := range uint32(100) {
			if s.has(b) != m[b] {
				t.Fatalf("step %d: has(%d) = %v, want %v", i, b, s.has(b), m[b])
			}
		}
	}
}
