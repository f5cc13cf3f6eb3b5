package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/emu/uc"
)

func skipWithoutEmulator(t *testing.T) {
	t.Helper()
	e, err := uc.Open(uc.CortexM3)
	if errors.Is(err, uc.ErrUnavailable) {
		t.Skip("emulation unavailable (built without cgo)")
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestEmulateThenAnalyze runs `faultline emulate` in-process on the sample
// firmware for scenario 1 (null_write_deep), loads the dump it wrote, checks
// it against the QEMU oracle fixture of the same build and scenario, and
// runs `faultline analyze` on it.
func TestEmulateThenAnalyze(t *testing.T) {
	skipWithoutEmulator(t)
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "crash.json")
	stdout, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", out, "--set", "crash_scenario=1", "--cpu", "m3")
	if code != 0 {
		t.Fatalf("emulate: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for _, want := range []string{"HardFault", "MemManage", "DACCVIOL", "null_store", out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary %q does not mention %q", stdout, want)
		}
	}
	d, err := crashdump.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	q, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Regs.Equal(&q.Regs) {
		t.Errorf("registers differ from the QEMU fixture:\n got  %+v\n QEMU %+v", d.Regs, q.Regs)
	}
	for _, name := range []string{"CFSR", "HFSR", "MMFAR"} {
		g, _ := d.Fault.Field(name).Get()
		w, _ := q.Fault.Field(name).Get()
		if g != w {
			t.Errorf("%s = %#x, QEMU %#x", name, g, w)
		}
	}
	if d.Truth == nil || d.Truth.Source != "emulator-shadow-stack" {
		t.Fatalf("truth %+v", d.Truth)
	}
	if got, want := truthFunctions(d.Truth), truthFunctions(q.Truth); !slices.Equal(got, want) {
		t.Errorf("truth %v\nQEMU  %v", got, want)
	}
	if f := d.Truth.Frames[1]; f.Kind != "exception" || f.PC != 0xFFFFFFF9 {
		t.Errorf("exception pseudo-frame %+v, want EXC_RETURN 0xfffffff9", f)
	}
	// Small dump: the used RAM plus the SCB block, not a whole SRAM.
	var ram, scb bool
	for _, r := range d.Memory {
		switch {
		case r.Addr == 0xE000ED00 && len(r.Data) == 0x40:
			scb = true
		case r.Addr >= 0x20000000 && r.Addr < 0x20004000:
			ram = true
			if r.End() != 0x20004000 {
				t.Errorf("RAM region [%#x, %#x) does not reach the stack top", r.Addr, r.End())
			}
		}
	}
	if !ram || !scb {
		t.Errorf("memory regions: ram %v scb %v", ram, scb)
	}

	stdout, stderr, code = run(t, "", "analyze", "--elf", elf, out)
	if code != 0 {
		t.Fatalf("analyze: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"null_store", "deep5_mixed", "scenario_null_write_deep", "DACCVIOL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("analyze output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestEmulateIRQAndPSP(t *testing.T) {
	skipWithoutEmulator(t)
	elf := filepath.Join(repo, "firmware-samples/build/clang-m4f-O2.elf")
	for _, sc := range []struct {
		n     string
		fix   string
		lr    uint32
		first string
	}{
		{"5", "irq_crash", 0xFFFFFFF1, "irq_touch_device"},
		{"6", "psp_thread", 0xFFFFFFFD, "psp_store"},
		{"7", "fpu_crash", 0xFFFFFFE9, "fpu_store"},
	} {
		out := filepath.Join(t.TempDir(), sc.fix+".json")
		stdout, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", out, "--set", "crash_scenario="+sc.n)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", sc.fix, code, stdout, stderr)
		}
		d, err := crashdump.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		q, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/clang-m4f-O2-"+sc.fix+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if lr, _ := d.Regs.Get(14); lr != sc.lr {
			t.Errorf("%s: lr %#x, want %#x", sc.fix, lr, sc.lr)
		}
		if got, want := truthFunctions(d.Truth), truthFunctions(q.Truth); !slices.Equal(got, want) {
			t.Errorf("%s: truth %v\nQEMU %v", sc.fix, got, want)
		}
		stdout, _, code = run(t, "", "analyze", "--elf", elf, out)
		if code != 0 || !strings.Contains(stdout, sc.first) {
			t.Errorf("%s: analyze exit %d:\n%s", sc.fix, code, stdout)
		}
	}
}

func TestEmulateNoFault(t *testing.T) {
	skipWithoutEmulator(t)
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "none.json")
	// Scenario 99 makes main idle in a loop.
	_, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", out, "--set", "crash_scenario=99", "--max-insns", "200000")
	if code != ExitNoFault || !strings.Contains(stderr, "did not fault") || !strings.Contains(stderr, "instruction limit") {
		t.Errorf("exit %d, stderr %q; want 3 and a clear message", code, stderr)
	}
	_, stderr, code = run(t, "", "emulate", "--elf", elf, "-o", out, "--set", "crash_scenario=99", "--timeout", "200ms")
	if code != ExitNoFault || !strings.Contains(stderr, "timeout") {
		t.Errorf("timeout: exit %d, stderr %q", code, stderr)
	}
}

// TestEmulateSummaryV6M: on ARMv6-M the one-line summary must not claim an
// escalation from a configurable fault or a FORCED bit (v6-M has neither,
// nor a CFSR); on ARMv7-M the same crash does escalate.
func TestEmulateSummaryV6M(t *testing.T) {
	skipWithoutEmulator(t)
	for _, c := range []struct {
		elf, cpu   string
		want, deny string
	}{
		{"emu/testdata/fw-m0.elf", "cortex-m0", "HardFault [ARMv6-M, no fault status registers; on ARMv7-M: UNDEFINSTR]", "FORCED"},
		{"emu/testdata/fw-m4.elf", "cortex-m4", "HardFault (escalated from UsageFault) [UNDEFINSTR FORCED]", "ARMv6-M"},
	} {
		out := filepath.Join(t.TempDir(), "udf.json")
		stdout, stderr, code := run(t, "", "emulate", "--cpu", c.cpu, "--elf", filepath.Join(repo, c.elf), "-o", out, "--set", "crash_scenario=3")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.cpu, code, stderr)
		}
		if !strings.Contains(stdout, c.want) || strings.Contains(stdout, c.deny) {
			t.Errorf("%s: summary %q: want %q and no %q", c.cpu, stdout, c.want, c.deny)
		}
	}
}

func TestEmulateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"emulate", "-o", "x.json"},
		{"emulate", "--elf", "x.elf"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--cpu", "cortex-a9"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--set", "novalue"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--set", "x=zz"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--irq", "16"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--irq", "3@100"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--map", "0x30000000"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--map", "0x30000000:4096:wx"},
		{"emulate", "--elf", "x.elf", "-o", "x.json", "--timeout", "-1s"},
	} {
		if _, stderr, code := run(t, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
	for _, cpu := range []string{"m4", "cortex-m4", "m0plus", "cortex-m33"} {
		f := emulateFlags{elf: "x", out: "y", cpu: cpu, maxInsns: 1, timeout: 1}
		if _, err := f.config(); err != nil {
			t.Errorf("--cpu %s: %v", cpu, err)
		}
	}
}

// scenarioNumbers are the sample firmware's crash_scenario values
// (firmware-samples/README.md).
var scenarioNumbers = map[string]int{
	"null_write_deep": 1, "null_fnptr": 2, "udf": 3, "div0": 4,
	"irq_crash": 5, "psp_thread": 6, "fpu_crash": 7,
}

// TestEmulatedAnalysisEqualsOracle: for every QEMU+GDB fixture, run the
// same ELF and scenario in the emulator and check that `analyze` on the
// emulator's dump gives the same report as on the QEMU fixture: the same
// fault (exception, causes, address) and the same frames (pc, function,
// file:line, kind, method, confidence, sp) and stop reason. Only the dump
// path differs.
func TestEmulatedAnalysisEqualsOracle(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	for _, fx := range oracleFixtures(t) {
		base := strings.TrimSuffix(filepath.Base(fx), ".json")
		i := strings.LastIndex(base, "-")
		n, ok := scenarioNumbers[base[i+1:]]
		if !ok {
			t.Errorf("%s: unknown scenario", base)
			continue
		}
		t.Run(base, func(t *testing.T) {
			elf := fixtureELF(t, fx)
			out := filepath.Join(dir, base+".json")
			if _, errs, code := run(t, "", "emulate", "--elf", elf, "-o", out, "--set", fmt.Sprintf("crash_scenario=%d", n)); code != 0 {
				t.Fatalf("emulate: exit %d: %s", code, errs)
			}
			analyze := func(dump string) report.Report {
				stdout, errs, code := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
				if code != 0 {
					t.Fatalf("analyze %s: exit %d: %s", dump, code, errs)
				}
				var r report.Report
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			emu, qemu := analyze(out), analyze(fx)
			fj := func(v any) string { b, _ := json.Marshal(v); return string(b) }
			if a, b := fj(emu.Fault), fj(qemu.Fault); a != b {
				t.Errorf("fault differs:\nemulator %s\nQEMU     %s", a, b)
			}
			if a, b := fj(emu.Frames), fj(qemu.Frames); a != b {
				t.Errorf("frames differ:\nemulator %s\nQEMU     %s", a, b)
			}
			if emu.Stop != qemu.Stop {
				t.Errorf("stop: emulator %q, QEMU %q", emu.Stop, qemu.Stop)
			}
		})
	}
}
