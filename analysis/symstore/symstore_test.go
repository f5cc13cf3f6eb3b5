package symstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

const repo = "../.."

func openSet(t *testing.T, names ...string) *Set {
	t.Helper()
	var elfs []ELF
	for _, n := range names {
		p := filepath.Join(repo, "firmware-samples/buildid/build", n+".elf")
		f, err := OpenFirmware(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		an, err := analysis.NewAnalyzer(f, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		elfs = append(elfs, ELF{Name: p, BuildID: f.BuildID(), Analyzer: an})
	}
	return New("test set", elfs)
}

func load(t *testing.T, name string) *crashdump.Dump {
	t.Helper()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/fleet", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestPick checks the choice on fixtures/fleet (see its README): a dump
// with a build ID gets that ELF, one without is paired by content, and
// one whose ELF is absent is ErrNoMatch.
func TestPick(t *testing.T) {
	s := openSet(t, "gcc-m3-O2", "gcc-m3-O2-fp", "gcc-m3-Os")
	for _, c := range []struct {
		dump string
		want int
	}{
		{"gcc-m3-O2-div0", 0}, {"gcc-m3-O2-fp-udf", 1}, {"gcc-m3-Os-div0", 2}, // by build ID
		{"gcc-m3-O2-null_write_deep", 0}, {"gcc-m3-O2-fp-null_write_deep", 1}, {"gcc-m3-Os-null_write_deep", 2}, // by content
	} {
		r, i, err := s.Pick(load(t, c.dump))
		if err != nil {
			t.Fatalf("%s: %v", c.dump, err)
		}
		if i != c.want || r.Pairing == nil || r.Pairing.Verdict == report.PairMismatch {
			t.Errorf("%s: ELF %d (%+v), want %d and no mismatch", c.dump, i, r.Pairing, c.want)
		}
	}
	only := openSet(t, "gcc-m3-Os")
	for _, name := range []string{"gcc-m3-O2-div0", "gcc-m3-O2-null_write_deep"} {
		_, _, err := only.Pick(load(t, name))
		if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), "no ELF in test set pairs with the dump") {
			t.Errorf("%s against the Os ELF only: %v, want ErrNoMatch", name, err)
		}
	}
}
