package elfsym

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// oracleCase is one ELF with its committed addr2line oracle.
type oracleCase struct {
	name   string // subtest name
	elf    string
	oracle string
	// sample: a firmware sample, held to the bar of 99.5%
	// agreement; the testdata ELFs are built to provoke the accepted
	// differences (dead DWARF at 0, rnglistx) and are held only to having
	// every difference explained.
	sample bool
}

// oracleCases lists every testdata ELF and every firmware sample ELF with
// the oracle file gen-oracle.sh writes for it.
func oracleCases(t testing.TB) []oracleCase {
	var cs []oracleCase
	own, _ := filepath.Glob("testdata/*.elf")
	for _, e := range own {
		n := strings.TrimSuffix(filepath.Base(e), ".elf")
		cs = append(cs, oracleCase{n, e, filepath.Join("testdata/oracle", n+".addr2line"), false})
	}
	fw, _ := filepath.Glob("../firmware-samples/build/*.elf")
	for _, e := range fw {
		n := strings.TrimSuffix(filepath.Base(e), ".elf")
		cs = append(cs, oracleCase{"firmware-samples/" + n, e, filepath.Join("testdata/oracle/firmware-samples", n+".addr2line"), true})
	}
	capt, _ := filepath.Glob("../firmware-samples/capture/build/*.elf")
	for _, e := range capt {
		n := strings.TrimSuffix(filepath.Base(e), ".elf")
		cs = append(cs, oracleCase{"firmware-samples/capture/" + n, e, filepath.Join("testdata/oracle/firmware-samples/capture", n+".addr2line"), true})
	}
	if len(cs) == 0 {
		t.Fatal("no ELF files found in testdata")
	}
	return cs
}

// oracleEntry is what addr2line -a -f -i printed for one address.
type oracleEntry struct {
	addr uint32
	text string // the lines after the address line
}

// readOracle parses a gen-oracle.sh file: comment lines (the ELF's SHA-256
// among them), then for each address a "0x%08x" line followed by
// addr2line's function and file:line lines.
func readOracle(path string) (sha string, ents []oracleEntry, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# sha256 "):
			sha = strings.TrimPrefix(line, "# sha256 ")
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "0x"):
			a, err := strconv.ParseUint(line[2:], 16, 32)
			if err != nil {
				return "", nil, fmt.Errorf("%s: bad address line %q", path, line)
			}
			ents = append(ents, oracleEntry{addr: uint32(a)})
		default:
			if len(ents) == 0 {
				return "", nil, fmt.Errorf("%s: text before the first address: %q", path, line)
			}
			ents[len(ents)-1].text += line + "\n"
		}
	}
	return sha, ents, sc.Err()
}

// An acceptedDiff is a kind of disagreement with addr2line that is on
// purpose or a documented addr2line quirk. match reports whether a
// difference is of this kind, given what addr2line and elfsym printed.
type acceptedDiff struct {
	name   string
	reason string
	match  func(f *File, addr uint32, want, got string) bool
}

var acceptedDiffs = []acceptedDiff{
	{
		name: "gc-sections-at-0",
		reason: "DWARF of a function removed by --gc-sections is relocated to address 0 and overlaps " +
			"real code at low flash addresses; addr2line uses it (naming the removed function or its " +
			"line, or losing the real sequence that its sort nests inside the dead one), elfsym ignores it " +
			"(cortex-m.md 6.4)",
		match: func(f *File, addr uint32, want, got string) bool {
			return deadDWARFCovers(f, addr)
		},
	},
	{
		name: "binutils-rnglistx",
		reason: "binutils 2.40 does not follow DW_AT_ranges in DW_FORM_rnglistx (clang's DWARF 5) on " +
			"inlined subroutines, so addr2line drops those inline levels and prints the enclosing " +
			"function at the line table's line; elfsym reads the ranges through debug/dwarf. " +
			"Matched when elfsym, ignoring such entries, prints exactly what addr2line printed",
		match: func(f *File, addr uint32, want, got string) bool {
			locs, _ := f.symbolize(addr, func(n *fnode) bool { return n.indexedRanges })
			var b strings.Builder
			WriteAddr2Line(&b, locs, false)
			return b.String() == want
		},
	},
}

// deadDWARFCovers reports whether a line sequence or function of removed
// code, relocated to 0, covers addr: those are the addresses where elfsym
// and addr2line differ by design.
func deadDWARFCovers(f *File, addr uint32) bool {
	if f.dw == nil {
		return false
	}
	return f.dw.deadCovers(addr)
}

func TestAddr2LineOracle(t *testing.T) {
	var summary []string
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			sha, ents, err := readOracle(c.oracle)
			if err != nil {
				t.Fatalf("%v (regenerate with: cd elfsym/testdata && ./gen-oracle.sh %s)", err, c.elf)
			}
			data, err := os.ReadFile(c.elf)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sha {
				t.Fatalf("%s is stale: the ELF changed (regenerate with: cd elfsym/testdata && ./gen-oracle.sh %s)", c.oracle, c.elf)
			}
			f, err := NewFile(bytes.NewReader(data), c.elf)
			if err != nil {
				t.Fatal(err)
			}
			// The second oracle, for the addresses where binutils is
			// known to be wrong (binutils-rnglistx).
			llvm := map[uint32]string{}
			if lsha, lents, err := readOracle(strings.TrimSuffix(c.oracle, ".addr2line") + ".llvm-symbolizer"); err == nil {
				if lsha != sha {
					t.Fatalf("the llvm-symbolizer oracle of %s is stale (regenerate with gen-oracle.sh)", c.elf)
				}
				for _, e := range lents {
					llvm[e.addr] = e.text
				}
			} else if !os.IsNotExist(err) {
				t.Fatal(err)
			}
			agree, agreeLLVM := 0, 0
			kinds := map[string]int{}
			var bad []string
			for _, e := range ents {
				locs, err := f.Symbolize(e.addr)
				if err != nil {
					t.Errorf("0x%08x: %v", e.addr, err)
				}
				got := string(f.AppendAddr2LineAt(nil, e.addr, locs, false))
				if got == e.text {
					agree++
					continue
				}
				kind := ""
				for _, d := range acceptedDiffs {
					if d.match(f, e.addr, e.text, got) {
						kind = d.name
						break
					}
				}
				if kind == "" {
					bad = append(bad, fmt.Sprintf("0x%08x:\naddr2line:\n%selfsym:\n%s", e.addr, e.text, got))
					continue
				}
				kinds[kind]++
				if kind == "binutils-rnglistx" && len(llvm) > 0 {
					// llvm-symbolizer prints line 0 as "0",
					// addr2line (and this text form) as "?".
					if l, ok := llvm[e.addr]; ok && strings.ReplaceAll(l, ":0\n", ":?\n") == got {
						agreeLLVM++
					} else {
						t.Errorf("0x%08x: addr2line is known to be wrong here, and llvm-symbolizer disagrees too:\nllvm-symbolizer:\n%selfsym:\n%s", e.addr, l, got)
					}
				}
			}
			pct := 100 * float64(agree) / float64(max(len(ents), 1))
			accepted := 0
			var ks []string
			for k, n := range kinds {
				accepted += n
				ks = append(ks, fmt.Sprintf("%s=%d", k, n))
			}
			sort.Strings(ks)
			// The bar: at least 99.5% of all addresses agree
			// exactly with an independent oracle (addr2line, or
			// llvm-symbolizer where binutils is known to be wrong), and
			// every other one is an accepted difference.
			opct := 100 * float64(agree+agreeLLVM) / float64(max(len(ents), 1))
			line := fmt.Sprintf("%-44s %5d/%5d agree with addr2line (%6.2f%%), %3d more with llvm-symbolizer (%6.2f%%); accepted: %s",
				c.name, agree, len(ents), pct, agreeLLVM, opct, strings.Join(ks, " "))
			summary = append(summary, line)
			t.Log(line)
			for i, s := range bad {
				if i == 20 {
					t.Errorf("... %d more", len(bad)-20)
					break
				}
				t.Errorf("unexplained difference at %s", s)
			}
			if c.sample && opct < 99.5 {
				t.Errorf("agreement %.2f%% is below 99.5%%", opct)
			}
		})
	}
	if testing.Verbose() {
		for _, s := range summary {
			fmt.Println(s)
		}
	}
}
