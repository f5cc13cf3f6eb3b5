package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// gdbFrame is a truth frame of a QEMU+GDB fixture as capture.py writes it,
// with GDB's inlined frames (which the dump format does not carry).
type gdbFrame struct {
	PC       string `json:"pc"`
	Function string `json:"function"`
	Kind     string `json:"kind"`
	Inlined  []struct {
		Function string `json:"function"`
	} `json:"inlined"`
}

// TestAnalyzeCxxCorpus runs analyze (the auto chain) on every QEMU+GDB
// fixture of the C++ corpus (fixtures/qemu-cxx, firmware-samples/cxx) and
// compares its frames with GDB's backtrace: the same real frames PC for PC
// (exception pseudo-frames at the same places) and, on each, as many
// inlined frames as GDB lists there. Function names are not compared (GDB
// and addr2line spell C++ names differently); the PCs pin them.
//
// Every frame must say which method found it and how sure it is, and no
// frame that differs from GDB's may be `high` (fixtures where GDB's own
// backtrace is wrong are excluded: see gdbWrong). The per-fixture result is
// held in fixtures/qemu-cxx/analyze.txt: refresh it with -update after a
// change to the unwinders, and review the diff (a line going from "ok" to
// "DIFF" is a regression).
func TestAnalyzeCxxCorpus(t *testing.T) {
	dumps, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-cxx/*.json"))
	if len(dumps) == 0 {
		t.Skip("no fixtures in fixtures/qemu-cxx")
	}
	// GDB's backtrace stops at a bogus frame (PC 0x0 or 0x4, "outermost")
	// in these (emu/oracle_test.go, gdbLostCallers): the emulator and the
	// firmware's stack show the real callers.
	gdbWrong := map[string]bool{
		"gcc-m4f-O2-string_strlen": true, "gcc-m4f-O3-string_strlen": true, "gcc-m4f-Og-string_strlen": true,
	}
	elfs := map[string]*elfsym.File{}
	var b strings.Builder
	ok, okInl := 0, 0
	for _, dump := range dumps {
		base := strings.TrimSuffix(filepath.Base(dump), ".json")
		i := strings.Index(base, "-O")
		j := strings.Index(base[i+1:], "-")
		build := base[:i+1+j]
		elf := elfs[build]
		if elf == nil {
			var err error
			if elf, err = elfsym.Open(filepath.Join(repo, "firmware-samples/cxx/build", build+".elf")); err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			elfs[build] = elf
		}
		d, err := crashdump.Load(dump)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Truth struct {
				Frames []gdbFrame `json:"frames"`
			} `json:"truth"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: "auto", MaxFrames: 64})
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		// Real frames as "pc" (or "<exception>"), and the inline depth
		// of each.
		var want, got []string
		var wantInl, gotInl []int
		for _, f := range fx.Truth.Frames {
			if f.Kind == "exception" {
				want = append(want, "<exception>")
			} else {
				pc, err := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
				if err != nil {
					t.Fatalf("%s: truth pc %q", base, f.PC)
				}
				want = append(want, fmt.Sprintf("%#x", pc&^1))
			}
			wantInl = append(wantInl, len(f.Inlined))
		}
		pending := 0
		var conf []string
		for _, f := range r.Frames {
			if f.Method == "" || f.Confidence == "" {
				t.Errorf("%s: frame %d lacks method or confidence: %+v", base, f.Index, f)
			}
			switch f.Kind {
			case "inlined":
				pending++
				continue
			case "exception":
				got = append(got, "<exception>")
			default:
				pc, err := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
				if err != nil {
					t.Fatalf("%s: frame pc %q", base, f.PC)
				}
				got = append(got, fmt.Sprintf("%#x", pc&^1))
			}
			gotInl = append(gotInl, pending)
			conf = append(conf, f.Confidence)
			pending = 0
		}
		n := 0
		for n < len(want) && n < len(got) && want[n] == got[n] {
			n++
		}
		inl := n == len(want) && n == len(got)
		for k := 0; inl && k < n; k++ {
			inl = wantInl[k] == gotInl[k]
		}
		status := "ok"
		switch {
		case n == len(want) && n == len(got) && inl:
			ok++
			okInl++
		case n == len(want) && n == len(got):
			ok++
			status = fmt.Sprintf("ok (inlined frames differ: %v, GDB %v)", gotInl, wantInl)
		default:
			status = fmt.Sprintf("DIFF after %d of %d frames (auto %d frames)", n, len(want), len(got))
			if gdbWrong[base] {
				status += " gdbLostCallers"
			}
			if !gdbWrong[base] {
				for k := n; k < len(got); k++ {
					if conf[k] == "high" {
						t.Errorf("%s: frame %d (%s) differs from GDB's (%s) but is high confidence", base, k, got[k], at(want, k))
					}
				}
			}
		}
		fmt.Fprintf(&b, "%-34s %s\n", base, status)
	}
	fmt.Fprintf(&b, "%d fixtures: auto matches GDB's real frames PC for PC on %d, with the same inlined frames on %d\n", len(dumps), ok, okInl)
	table := b.String()
	t.Log("\n" + table)
	golden := filepath.Join(repo, "fixtures/qemu-cxx/analyze.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestAnalyzeCxxCorpus -update)", err)
	}
	if string(want) != table {
		t.Errorf("analyze on the C++ corpus changed: review and refresh fixtures/qemu-cxx/analyze.txt (go test ./cmd/faultline/cli -run TestAnalyzeCxxCorpus -update)")
	}
}
