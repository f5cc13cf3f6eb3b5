package analysis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/scenario"
)

// TestMatrixAssertMessages: the matrix corpus's assert_abort scenario
// (firmware-samples/matrix, scenario 16: assert(v < 100u) in as_validate
// -> newlib's __assert_func -> abort -> _exit) run in the emulator on
// every build (gcc and clang, M0+, M3, M4F, M7, M33, -O0 to -O3, C and
// C++, stripped): each build with debugging information gives the
// assertion the source holds (expression, file, line, function: C's
// __func__ or C++'s __PRETTY_FUNCTION__), byte for byte; a stripped build
// too, from the caller's code alone.
func TestMatrixAssertMessages(t *testing.T) {
	src, err := os.ReadFile("../firmware-samples/matrix/src/scenarios.c")
	if err != nil {
		t.Fatal(err)
	}
	line := int64(0)
	for i, l := range strings.Split(string(src), "\n") {
		if strings.TrimSpace(l) == "assert(v < 100u);" {
			line = int64(i + 1)
		}
	}
	if line == 0 {
		t.Fatal("scenarios.c: no assert(v < 100u)")
	}
	elfs, _ := filepath.Glob("../firmware-samples/matrix/build/*.elf")
	full, stripped := 0, 0
	for _, path := range elfs {
		build := strings.TrimSuffix(filepath.Base(path), ".elf")
		res, err := emu.Run(context.Background(), emu.Config{ELF: path, Sets: map[string]uint64{"crash_scenario": 16}})
		if errors.Is(err, uc.ErrUnavailable) {
			t.Skip("emulation unavailable (built without cgo)")
		}
		if err != nil {
			t.Fatalf("%s: %v", build, err)
		}
		elf, err := elfsym.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(elf, scenario.Dump(res), analysis.Options{})
		elf.Close()
		if err != nil {
			t.Fatal(err)
		}
		m := r.Message
		if m == nil || !strings.HasPrefix(m.Source, "__assert_func") {
			t.Errorf("%s: message %+v", build, m)
			continue
		}
		if strings.Contains(build, "-strip") {
			// No DWARF: the values come from the caller's code only,
			// its frame found without unwind data (medium confidence),
			// trusted because __assert_func never returns.
			if a := msgArg(m, "failedexpr"); a == nil || !strings.HasSuffix(a.From, "(the caller's code)") {
				t.Errorf("%s (stripped): failedexpr %+v", build, a)
			}
			stripped++
		}
		fn := "as_validate"
		if strings.Contains(build, "-cxx") {
			fn = "uint32_t as_validate(uint32_t)"
		}
		if m.Text != `assertion "v < 100u" failed` || m.File != "src/scenarios.c" || m.Line == nil || *m.Line != line || m.Function != fn {
			t.Errorf("%s: %s (%+v)", build, m.Summary(), m)
			continue
		}
		full++
	}
	t.Logf("%d builds: %d with the whole assertion, %d of them stripped", len(elfs), full, stripped)
	if full < 58 || stripped < 5 {
		t.Errorf("%d whole, %d stripped", full, stripped)
	}
}

func msgArg(m *report.MessageJSON, name string) *report.MessageArg {
	for i := range m.Args {
		if m.Args[i].Name == name {
			return &m.Args[i]
		}
	}
	return nil
}
