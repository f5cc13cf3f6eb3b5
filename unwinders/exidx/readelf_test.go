package exidx

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The acceptance test: every entry of every test ELF, decoded by Table,
// must match GNU readelf -u's listing of the same ELF (committed next to it
// by testdata/gen-readelf.sh, so the test needs no toolchain).
//
// Accepted differences (normalized before comparing):
//   - readelf calls most spare encodings "[unsupported opcode]" and some
//     "[Spare]"; Opcode.Text says "[spare]" for all of them.
//   - readelf prints iWMMXt pops ("pop {wR10}", "pop {wCGR0}"); on
//     M-profile they are failures and Opcode.Text says "[iWMMXt]".
//   - case and runs of blanks.

// readelfEntry is one entry of a readelf -u listing.
type readelfEntry struct {
	line   int
	addr   uint32
	what   string // "0x1 [cantunwind]", "0x80abb0b0", "@0x108"
	model  int    // "Compact model index: N", -1 if absent
	pers   string // "Personality routine: ..." value, "" if absent
	ops    []readelfOp
	others []string // any other line
}

type readelfOp struct {
	bytes []byte
	text  string
}

type readelfListing struct {
	count   int // from the section header line, -1 if there is no table
	entries []readelfEntry
}

var (
	reSection = regexp.MustCompile(`^Unwind section '\.ARM\.exidx' at offset 0x[0-9a-f]+ contains (\d+) entr`)
	reEntry   = regexp.MustCompile(`^0x([0-9a-f]+) <.*>: (.*)$`)
	reModel   = regexp.MustCompile(`^  Compact model index: (\d+)$`)
	rePers    = regexp.MustCompile(`^  Personality routine: (.*)$`)
	reOp      = regexp.MustCompile(`^  ((?:0x[0-9a-f]{2} ?)+)\s*(.*)$`)
	reWMMX    = regexp.MustCompile(`^pop \{w(r|cgr)\d`)
)

func parseReadelf(t *testing.T, path string) readelfListing {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := readelfListing{count: -1}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || line == "There are no unwind sections in this file." {
			continue
		}
		if m := reSection.FindStringSubmatch(line); m != nil {
			if l.count >= 0 {
				t.Fatalf("%s:%d: a second .ARM.exidx section", path, n)
			}
			l.count, _ = strconv.Atoi(m[1])
			continue
		}
		if m := reEntry.FindStringSubmatch(line); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 32)
			l.entries = append(l.entries, readelfEntry{line: n, addr: uint32(a), what: m[2], model: -1})
			continue
		}
		if len(l.entries) == 0 {
			t.Fatalf("%s:%d: unexpected line %q", path, n, line)
		}
		e := &l.entries[len(l.entries)-1]
		switch m := reModel.FindStringSubmatch(line); {
		case m != nil:
			e.model, _ = strconv.Atoi(m[1])
			continue
		}
		if m := rePers.FindStringSubmatch(line); m != nil {
			e.pers = m[1]
			continue
		}
		if m := reOp.FindStringSubmatch(line); m != nil {
			var op readelfOp
			for _, b := range strings.Fields(m[1]) {
				v, _ := strconv.ParseUint(b[2:], 16, 8)
				op.bytes = append(op.bytes, byte(v))
			}
			op.text = m[2]
			e.ops = append(e.ops, op)
			continue
		}
		e.others = append(e.others, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

func normText(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	switch {
	case s == "[unsupported opcode]":
		return "[spare]"
	case reWMMX.MatchString(s):
		return "[iwmmxt]"
	}
	return s
}

// compareWithReadelf checks every entry of the ELF against the listing and
// returns the number of entries compared.
func compareWithReadelf(t *testing.T, elfPath, listing string) int {
	prog := loadELF(t, elfPath)
	want := parseReadelf(t, listing)
	tab, err := NewTable(prog)
	if want.count < 0 {
		if err != ErrNoTable {
			t.Fatalf("readelf finds no .ARM.exidx; NewTable: %v", err)
		}
		return 0
	}
	if err != nil {
		t.Fatalf("NewTable: %v", err)
	}
	if tab.Len() != want.count || len(want.entries) != want.count {
		t.Fatalf("%d entries; readelf: header %d, listed %d", tab.Len(), want.count, len(want.entries))
	}
	for i, w := range want.entries {
		e := tab.At(i)
		where := fmt.Sprintf("%s:%d (entry %d)", filepath.Base(listing), w.line, i)
		if e.Err != nil {
			t.Errorf("%s: decode error %v", where, e.Err)
			continue
		}
		if len(w.others) > 0 {
			t.Errorf("%s: readelf printed lines the test does not understand: %q", where, w.others)
		}
		if e.Start != w.addr {
			t.Errorf("%s: function 0x%x, readelf 0x%x", where, e.Start, w.addr)
		}
		var what string
		switch e.Kind {
		case CantUnwind:
			what = "0x1 [cantunwind]"
		case Inline:
			what = fmt.Sprintf("0x%x", e.Word)
		default:
			what = fmt.Sprintf("@0x%x", e.Extab)
		}
		if what != w.what {
			t.Errorf("%s: %q, readelf %q", where, what, w.what)
		}
		model := -1
		if e.Kind == Inline || e.Kind == Compact {
			model = e.Personality
		}
		if model != w.model {
			t.Errorf("%s: compact model index %d, readelf %d", where, model, w.model)
		}
		pers := ""
		if e.Kind == Generic {
			pers = fmt.Sprintf("0x%x", e.PersonalityAddr)
			if e.PersonalityName != "" {
				pers += " <" + e.PersonalityName + ">"
			}
		}
		if pers != w.pers {
			t.Errorf("%s: personality %q, readelf %q", where, pers, w.pers)
		}
		ops := e.Opcodes()
		if len(ops) != len(w.ops) {
			t.Errorf("%s: %d opcodes, readelf %d:\n%s", where, len(ops), len(w.ops), e.String())
			continue
		}
		for k, op := range ops {
			if string(op.Bytes) != string(w.ops[k].bytes) {
				t.Errorf("%s: opcode %d bytes % x, readelf % x", where, k, op.Bytes, w.ops[k].bytes)
			}
			if got, exp := normText(op.Text()), normText(w.ops[k].text); got != exp {
				t.Errorf("%s: opcode %d (% x) %q, readelf %q", where, k, op.Bytes, got, exp)
			}
		}
	}
	return len(want.entries)
}

func TestReadelf(t *testing.T) {
	elfs, _ := filepath.Glob("testdata/*.elf")
	if len(elfs) == 0 {
		t.Fatal("no test ELFs in testdata")
	}
	for _, elfPath := range elfs {
		name := strings.TrimSuffix(filepath.Base(elfPath), ".elf")
		t.Run(name, func(t *testing.T) {
			n := compareWithReadelf(t, elfPath, filepath.Join("testdata", name+".readelf.txt"))
			t.Logf("%s: %d entries match readelf", name, n)
		})
	}
}

// TestReadelfSamples does the same for the project's sample firmware, whose
// listings gen-readelf.sh --samples writes into testdata/firmware-samples.
func TestReadelfSamples(t *testing.T) {
	elfs, _ := filepath.Glob("../../firmware-samples/build/*.elf")
	if len(elfs) == 0 {
		t.Skip("no sample firmware in firmware-samples/build")
	}
	for _, elfPath := range elfs {
		name := strings.TrimSuffix(filepath.Base(elfPath), ".elf")
		t.Run(name, func(t *testing.T) {
			listing := filepath.Join("testdata", "firmware-samples", name+".readelf.txt")
			if _, err := os.Stat(listing); err != nil {
				t.Skipf("no readelf listing for %s: run unwinders/exidx/testdata/gen-readelf.sh --samples", elfPath)
			}
			n := compareWithReadelf(t, elfPath, listing)
			t.Logf("%s: %d entries match readelf", name, n)
		})
	}
}
