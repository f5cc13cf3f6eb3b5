package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// cie32 builds a version 1 .debug_frame CIE ("", cf=2, df=-4, ra=14,
// def_cfa r13+0) with extra initial instructions.
func cie32(aug string, extra ...byte) []byte {
	body := []byte{0xff, 0xff, 0xff, 0xff, 1}
	body = append(body, aug...)
	body = append(body, 0, 2, 0x7c, 14)
	if strings.HasPrefix(aug, "z") {
		body = append(body, 0) // augmentation data length
	}
	body = append(body, 0x0c, 13, 0)
	body = append(body, extra...)
	return withLength(body)
}

func withLength(body []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// fde32 builds an FDE pointing to the CIE at cieOff.
func fde32(cieOff, start, size uint32, insns ...byte) []byte {
	body := binary.LittleEndian.AppendUint32(nil, cieOff)
	body = binary.LittleEndian.AppendUint32(body, start)
	body = binary.LittleEndian.AppendUint32(body, size)
	return withLength(append(body, insns...))
}

func section(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rowsOf parses a one-CIE, one-FDE section and returns the FDE's rows or
// the error of parsing or of running the instructions.
func rowsOf(t *testing.T, data []byte) ([]Row, error) {
	t.Helper()
	s, err := Parse(DebugFrame, 0, data)
	if err != nil {
		return nil, err
	}
	if len(s.FDEs) != 1 {
		t.Fatalf("%d FDEs", len(s.FDEs))
	}
	return s.FDEs[0].Rows()
}

// Hostile call frame information ends with a clear error, quickly.
func TestHostile(t *testing.T) {
	remember := bytes.Repeat([]byte{cfaRememberState}, MaxRememberDepth+1)
	loop := bytes.Repeat([]byte{cfaRememberState, cfaRestoreState}, 10000)
	cases := []struct {
		name     string
		data     []byte
		sentinel error
		want     string
	}{
		{"remember_state too deep", section(cie32(""), fde32(0, 0x100, 0x10, remember...)), ErrLimit, "nested deeper than 64"},
		{"restore_state without remember", section(cie32(""), fde32(0, 0x100, 0x10, cfaRestoreState)), ErrFormat, "without a remembered state"},
		{"huge advance_loc4", section(cie32(""), fde32(0, 0x100, 0x10, cfaAdvanceLoc4, 0xff, 0xff, 0xff, 0xff)), ErrLimit, "past the 32-bit address space"},
		{"advance past the FDE", section(cie32(""), fde32(0, 0x100, 0x10, cfaAdvanceLoc2, 0x00, 0x10)), ErrFormat, "past the end of the FDE"},
		{"set_loc backwards", section(cie32(""), fde32(0, 0x100, 0x10, cfaSetLoc, 0x00, 0x01, 0, 0, cfaSetLoc, 0xfe, 0, 0, 0)), ErrFormat, "backwards"},
		{"advance in a CIE", section(cie32("", 0x41), fde32(0, 0x100, 0x10)), ErrFormat, "in a CIE's initial instructions"},
		{"truncated instruction", section(cie32(""), fde32(0, 0x100, 0x10, cfaDefCFA, 13)), ErrTruncated, "DW_CFA_def_cfa runs past the end"},
		{"truncated uleb", section(cie32(""), fde32(0, 0x100, 0x10, cfaOffset|4, 0x80, 0x80)), ErrTruncated, "DW_CFA_offset runs past the end"},
		{"overlong uleb", section(cie32(""), fde32(0, 0x100, 0x10, cfaDefCFAOffset, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)), ErrFormat, "does not fit in 64 bits"},
		{"huge offset", section(cie32(""), fde32(0, 0x100, 0x10, cfaOffset|4, 0xff, 0xff, 0xff, 0xff, 0x0f)), ErrLimit, "does not fit in 32 bits"},
		{"huge CFA offset", section(cie32(""), fde32(0, 0x100, 0x10, cfaDefCFAOffset, 0xff, 0xff, 0xff, 0xff, 0x0f)), ErrLimit, "does not fit in 32 bits"},
		{"unknown register", section(cie32(""), fde32(0, 0x100, 0x10, cfaUndefined, 0xc8, 0x01)), ErrUnsupported, "register 200"},
		{"unknown opcode", section(cie32(""), fde32(0, 0x100, 0x10, 0x1f)), ErrUnsupported, "unknown call frame instruction 0x1f"},
		{"GNU_window_save", section(cie32(""), fde32(0, 0x100, 0x10, cfaGNUWindowSave)), ErrUnsupported, "DW_CFA_GNU_window_save"},
		{"def_cfa_offset after an expression", section(cie32(""), fde32(0, 0x100, 0x10, cfaDefCFAExpression, 1, 0x7d, cfaDefCFAOffset, 8)), ErrFormat, "defined by an expression"},
	}
	for _, tc := range cases {
		start := time.Now()
		_, err := rowsOf(t, tc.data)
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a DecodeError wrapping %v saying %q", tc.name, err, tc.sentinel, tc.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", tc.name, d)
		}
	}
	// A long loop of remember/restore pairs is legal and linear.
	rows, err := rowsOf(t, section(cie32(""), fde32(0, 0x100, 0x10, loop...)))
	if err != nil || len(rows) != 1 {
		t.Errorf("remember/restore loop: %d rows, %v", len(rows), err)
	}
}

// Malformed entries are reported with their offset and skipped; the others
// stay usable.
func TestHostileEntries(t *testing.T) {
	good := fde32(0, 0x100, 0x10, 0x41, cfaDefCFAOffset, 8)
	cases := []struct {
		name     string
		data     []byte
		sentinel error
		want     string
		fdes     int
	}{
		{"CIE pointer outside the section", section(cie32(""), good, fde32(0x9999, 0x200, 4)), ErrFormat, "CIE pointer 0x9999 is outside the section", 1},
		{"CIE pointer to an FDE", section(cie32(""), good, fde32(0x10, 0x200, 4)), ErrFormat, "does not point to a CIE", 1},
		{"unknown augmentation", section(cie32("armcc+"), fde32(0, 0x200, 4)), ErrUnsupported, `unknown augmentation "armcc+"`, 0},
		{"unknown z letter", section(cie32("zX"), fde32(0, 0x200, 4)), ErrUnsupported, `letter 'X'`, 0},
		{"truncated FDE", section(cie32(""), good, withLength([]byte{0, 0, 0, 0, 1, 2})), ErrTruncated, "ends before its address range", 1},
		{"FDE without a CIE id", section(cie32(""), good, withLength([]byte{0, 0})), ErrTruncated, "too short for its CIE id", 1},
		{"length past the end", section(cie32(""), good, []byte{0xf0, 0, 0, 0, 1, 2}), ErrTruncated, "only 0x2 remain", 1},
		{"truncated CIE", section(withLength([]byte{0xff, 0xff, 0xff, 0xff, 1, 'a'}), good), ErrTruncated, "augmentation string is not terminated", 0},
		{"CIE version 2", section(withLength([]byte{0xff, 0xff, 0xff, 0xff, 2, 0, 2, 0x7c, 14}), good), ErrUnsupported, "version 2", 0},
		{"code alignment 0", section(withLength([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0x7c, 14}), good), ErrFormat, "code alignment factor 0", 0},
		{"64-bit length truncated", section(cie32(""), good, []byte{0xff, 0xff, 0xff, 0xff, 1, 0}), ErrTruncated, "initial length", 1},
		{"64-bit length huge", section(cie32(""), good, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x80}), ErrTruncated, "remain in the section", 1},
		{"range wraps", section(cie32(""), good, fde32(0, 0xfffffff0, 0x20)), ErrFormat, "past the end of the address space", 1},
	}
	for _, tc := range cases {
		s, err := Parse(DebugFrame, 0, tc.data)
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a DecodeError wrapping %v saying %q", tc.name, err, tc.sentinel, tc.want)
		}
		if s == nil || len(s.FDEs) != tc.fdes {
			t.Errorf("%s: kept %d FDEs, want %d", tc.name, len(s.FDEs), tc.fdes)
		}
	}
}

// DWARF expressions are decoded into rules of their own kind, never
// evaluated.
func TestExpressionRules(t *testing.T) {
	rows, err := rowsOf(t, section(cie32(""), fde32(0, 0x100, 0x10,
		cfaExpression, 4, 2, 0x7d, 0x00, // r4: [sp+0]
		0x41,
		cfaValExpression, 5, 2, 0x7d, 0x04, // r5: sp+4
		0x41,
		cfaDefCFAExpression, 2, 0x7d, 0x08, // CFA: sp+8
	)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	if k := rows[0].Rule(4).Kind; k != Expression {
		t.Errorf("r4: %v", k)
	}
	if k := rows[1].Rule(5).Kind; k != ValExpression {
		t.Errorf("r5: %v", k)
	}
	if !rows[2].CFA.IsExpression() || rows[2].CFA.String() != "exp" || !bytes.Equal(rows[2].CFA.Expr, []byte{0x7d, 0x08}) {
		t.Errorf("CFA: %v %x", rows[2].CFA, rows[2].CFA.Expr)
	}
}

// .eh_frame: pc-relative addresses, the zero terminator, and encodings
// relative to bases a static reader cannot know.
func TestEHFrame(t *testing.T) {
	cie := func(aug string, augData ...byte) []byte {
		body := []byte{0, 0, 0, 0, 1}
		body = append(body, aug...)
		body = append(body, 0, 2, 0x7c, 14, byte(len(augData)))
		body = append(body, augData...)
		body = append(body, 0x0c, 13, 0)
		return withLength(body)
	}
	fde := func(at, cieOff uint32, start int32, size uint32) []byte {
		body := binary.LittleEndian.AppendUint32(nil, at+4-cieOff) // pointer back from the field
		body = binary.LittleEndian.AppendUint32(body, uint32(start))
		body = binary.LittleEndian.AppendUint32(body, size)
		body = append(body, 0) // augmentation data length
		return withLength(body)
	}
	c := cie("zR", PEPcrel|PESdata4)
	const addr = 0x8000
	// The FDE's start field is at section offset len(c)+8: pc-relative
	// -0x7000 from addr+that.
	f := fde(uint32(len(c)), 0, -0x7000, 0x20)
	data := section(c, f, []byte{0, 0, 0, 0}, []byte{0xde, 0xad})
	s, err := Parse(EHFrame, addr, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.FDEs) != 1 {
		t.Fatalf("%d FDEs", len(s.FDEs))
	}
	want := uint64(addr + len(c) + 8 - 0x7000)
	if s.FDEs[0].Start != want || s.FDEs[0].End != want+0x20 {
		t.Errorf("FDE [0x%x, 0x%x), want start 0x%x", s.FDEs[0].Start, s.FDEs[0].End, want)
	}
	for _, enc := range []byte{PETextrel | PESdata4, PEDatarel | PEUdata4, PEFuncrel | PEUdata4, PEIndirect | PEPcrel | PESdata4, 0x0f} {
		_, err := Parse(EHFrame, addr, section(cie("zR", enc), f))
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("FDE encoding 0x%02x: %v", enc, err)
		}
	}
}

// The index leaves out FDEs of garbage-collected code and overlaps.
func TestIndex(t *testing.T) {
	c := &CIE{AddressSize: 4}
	mk := func(start, end uint64) *FDE { return &FDE{CIE: c, Start: start, End: end} }
	a, gc, gc2, tomb, b, over, empty := mk(0x100, 0x120), mk(0, 0x26), mk(0, 0x40), mk(0xffffffff, 0xffffffff+4), mk(0x120, 0x140), mk(0x130, 0x150), mk(0x200, 0x200)
	ix := NewIndex([]*FDE{b, gc, a, tomb, over, empty, gc2}, IndexOptions{})
	if ix.Len() != 2 || len(ix.Dropped()) != 5 {
		t.Fatalf("%d kept, %d dropped: %v", ix.Len(), len(ix.Dropped()), ix.Dropped())
	}
	for pc, want := range map[uint64]*FDE{0: nil, 0x10: nil, 0xff: nil, 0x100: a, 0x11f: a, 0x120: b, 0x13f: b, 0x140: nil, 0x200: nil} {
		got, ok := ix.Lookup(pc)
		if got != want || ok != (want != nil) {
			t.Errorf("Lookup(0x%x) = %v, want %v", pc, got, want)
		}
	}
	// With a function at 0 that ends at 0x40, the FDE that matches it wins.
	ix = NewIndex([]*FDE{b, gc, a, gc2}, IndexOptions{CodeAtZero: true, ZeroEnd: 0x40})
	if got, _ := ix.Lookup(0x10); got != gc2 {
		t.Errorf("with code at 0: %v", got)
	}
}
