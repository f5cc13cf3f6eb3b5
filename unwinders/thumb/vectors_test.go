package thumb

import (
	"bufio"
	"encoding/binary"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestVectors checks the hand-worked vectors of testdata/vectors.txt (the
// file's header describes the format).
func TestVectors(t *testing.T) {
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var (
		it   ITState
		next uint32
		n    int
	)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			t.Fatalf("vectors.txt:%d: want at least 3 tab-separated columns", lineNo)
		}
		code := parseHalfwords(t, lineNo, cols[0])
		addr := next
		if cols[1] != "+" {
			a, err := strconv.ParseUint(cols[1], 16, 32)
			if err != nil {
				t.Fatalf("vectors.txt:%d: address: %v", lineNo, err)
			}
			addr, it = uint32(a), 0
		}
		in, err := Decode(code, addr)
		if err != nil {
			t.Errorf("vectors.txt:%d: %s: %v", lineNo, cols[0], err)
			continue
		}
		it.Apply(&in)
		next = addr + uint32(in.Len)
		n++
		if in.Len != len(code) {
			t.Errorf("vectors.txt:%d: %s: Len %d, want %d", lineNo, cols[0], in.Len, len(code))
		}
		if got := normText(in.String()); got != cols[2] {
			t.Errorf("vectors.txt:%d: %s: String() = %q, want %q", lineNo, cols[0], got, cols[2])
		}
		var props []string
		if len(cols) > 3 {
			props = propRE.FindAllString(cols[3], -1)
		}
		checkProps(t, lineNo, cols[0], &in, props)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d vectors", n)
}

func parseHalfwords(t *testing.T, lineNo int, s string) []byte {
	var code []byte
	for _, h := range strings.Fields(s) {
		v, err := strconv.ParseUint(h, 16, 16)
		if err != nil || len(h) != 4 {
			t.Fatalf("vectors.txt:%d: bad halfword %q", lineNo, h)
		}
		code = binary.LittleEndian.AppendUint16(code, uint16(v))
	}
	return code
}

func checkProps(t *testing.T, lineNo int, hex string, in *Inst, props []string) {
	t.Helper()
	want := map[string]bool{}
	wantCond := AL
	for _, p := range props {
		k, v, _ := strings.Cut(p, "=")
		errf := func(format string, args ...any) {
			t.Errorf("vectors.txt:%d: %s: "+format, append([]any{lineNo, hex}, args...)...)
		}
		switch k {
		case "call", "ret", "branch":
			want[k] = true
		case "op":
			if in.Op.String() != v {
				errf("Op %v, want %s", in.Op, v)
			}
		case "sp":
			d, known := in.SPDelta()
			if v == "?" {
				if known {
					errf("SPDelta known (%d), want unknown", d)
				}
			} else if n, _ := strconv.Atoi(v); !known || d != int32(n) {
				errf("SPDelta %d (known %v), want %d", d, known, n)
			}
		case "cond":
			wantCond = condByName(t, v)
		case "target":
			n, _ := strconv.ParseUint(v, 16, 32)
			if in.Target != uint32(n) {
				errf("Target %x, want %s", in.Target, v)
			}
		case "writes":
			if got := RegListString(in.Writes); got != v {
				errf("Writes %s, want %s", got, v)
			}
		case "rm":
			if rname(in.Rm) != v {
				errf("Rm %s, want %s", rname(in.Rm), v)
			}
		case "it":
			var got []string
			for _, c := range in.ITConds() {
				got = append(got, c.String())
			}
			if strings.Join(got, ",") != v {
				errf("ITConds %v, want %s", got, v)
			}
		default:
			errf("unknown property %q", p)
		}
	}
	if in.IsCall() != want["call"] || in.IsReturn() != want["ret"] || in.IsBranch() != want["branch"] {
		t.Errorf("vectors.txt:%d: %s: call/ret/branch = %v/%v/%v, want %v/%v/%v", lineNo, hex,
			in.IsCall(), in.IsReturn(), in.IsBranch(), want["call"], want["ret"], want["branch"])
	}
	if in.Op != OpIT && in.Cond != wantCond {
		t.Errorf("vectors.txt:%d: %s: Cond %v, want %v", lineNo, hex, in.Cond, wantCond)
	}
}

func condByName(t *testing.T, s string) Cond {
	for c := EQ; c <= AL; c++ {
		if c.String() == s {
			return c
		}
	}
	t.Fatalf("unknown condition %q", s)
	return AL
}

// propRE splits the properties column: words, and key={a, b} lists.
var propRE = regexp.MustCompile(`\S+=\{[^}]*\}|\S+`)
