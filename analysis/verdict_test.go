package analysis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/verdict"
)

// verdictFixture is one committed QEMU dump and the ELF it was made with.
type verdictFixture struct{ dump, elf string }

// verdictFixtures lists the committed QEMU dumps of dir whose ELF (the
// longest "-"-prefix of the dump's name) is in elfDir.
func verdictFixtures(t *testing.T, dir, elfDir string) []verdictFixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repo, dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []verdictFixture
	for _, p := range paths {
		n := strings.TrimSuffix(filepath.Base(p), ".json")
		if strings.Contains(n, ".") {
			continue // .threads.json, .tasks.json: GDB's answers, not dumps
		}
		for b := n; b != ""; {
			e := filepath.Join(repo, elfDir, b+".elf")
			if _, err := os.Stat(e); err == nil {
				out = append(out, verdictFixture{p, e})
				break
			}
			i := strings.LastIndexByte(b, '-')
			if i < 0 {
				t.Fatalf("%s: no ELF in %s", p, elfDir)
			}
			b = b[:i]
		}
	}
	return out
}

func analyzeFixture(t *testing.T, f verdictFixture) *report.Report {
	t.Helper()
	elf, err := elfsym.Open(f.elf)
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(f.dump)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatalf("%s: %v", f.dump, err)
	}
	return r
}

// No committed QEMU dump of a crash that is not a stack overflow gets a
// stack verdict: every rule needs positive evidence.
func TestStackVerdictNoFalseOverflow(t *testing.T) {
	n := 0
	for _, c := range [][2]string{
		{"fixtures/qemu", "firmware-samples/build"},
		{"fixtures/qemu-cxx", "firmware-samples/cxx/build"},
		{"fixtures/qemu-dispatch", "firmware-samples/dispatch/build"},
		{"fixtures/qemu-excentry", "firmware-samples/excentry/build"},
		{"fixtures/rtos-zephyr", "firmware-samples/rtos-zephyr/build"},
		{"fixtures/rtos-zephyr/scenarios", "firmware-samples/rtos-zephyr/build"},
	} {
		for _, f := range verdictFixtures(t, c[0], c[1]) {
			n++
			if v := analyzeFixture(t, f).StackVerdict; v != nil {
				t.Errorf("%s: stack verdict %+v on a crash that is no stack overflow", f.dump, *v)
			}
		}
	}
	if n < 400 {
		t.Errorf("only %d fixtures checked", n)
	}
}

// The FreeRTOS look-alike's task "deep" overflows its 256-byte stack in
// every build (its saved SP is below pxStack): the verdict names it.
func TestStackVerdictFreeRTOSTask(t *testing.T) {
	fs := verdictFixtures(t, "fixtures/rtos/freertos", "firmware-samples/rtos-freertos/build")
	if len(fs) < 20 {
		t.Fatalf("%d fixtures", len(fs))
	}
	for _, f := range fs {
		r := analyzeFixture(t, f)
		v := r.StackVerdict
		if v == nil || !v.Overflow || v.Stack != "deep" || len(v.Evidence) == 0 || v.Evidence[0] != verdict.EvBelowStart {
			t.Errorf("%s: verdict %+v, want task deep overflowed (%s)", f.dump, v, verdict.EvBelowStart)
			continue
		}
		var b strings.Builder
		if err := textout.Write(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nStack overflow: deep (evidence: SP below stack start)\n  task deep's stack overflowed: its saved SP 0x") {
			t.Errorf("%s: text lacks the verdict:\n%.1200s", f.dump, b.String())
		}
		d, err := crashdump.Load(f.dump)
		if err != nil {
			t.Fatal(err)
		}
		var h strings.Builder
		if err := htmlout.Write(&h, r, d, htmlout.Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.String(), `<p class="verdict"><span class="badge">stack overflow</span> <b>deep</b> · evidence: SP below stack start</p>`) {
			t.Errorf("%s: HTML lacks the verdict", f.dump)
		}
	}
}
