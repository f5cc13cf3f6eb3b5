package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/unwinders"
)

// The device-side capture handler (firmware-samples/capture/): its builds
// are the sample scenarios with faultline_capture.c as HardFault_Handler,
// which writes a CrashCatcher dump through semihosting (hex on stdout, or
// binary on stderr for the *-bin builds) and exits.

const captureELFDir = "firmware-samples/capture/build"

// captureBuilds lists the capture ELFs; the test is skipped without them.
func captureBuilds(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(repo, captureELFDir, "*.elf"))
	if len(m) == 0 {
		t.Skipf("no capture ELFs in %s (make -C firmware-samples)", captureELFDir)
	}
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".elf"))
	}
	return out
}

// captureScenarios are the scenario names a build runs (fpu_crash on m4f).
func captureScenarios(build string) []string {
	s := []string{"null_write_deep", "null_fnptr", "udf", "div0", "irq_crash", "psp_thread"}
	if strings.Contains(build, "-m4f-") {
		s = append(s, "fpu_crash")
	}
	return s
}

// captureExt is the dump file's extension for a build's output form.
func captureExt(build string) string {
	if strings.HasSuffix(build, "-bin") {
		return ".crashcatcher"
	}
	return ".crashcatcher.hex"
}

func captureAnalyze(t *testing.T, elf, dump string) report.Report {
	t.Helper()
	stdout, errs, code := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d: %s", dump, code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("analyze %s: %v", dump, err)
	}
	return r
}

// reportFunctions is the backtrace as function names, exception
// pseudo-frames as "<exception>".
func reportFunctions(r report.Report) []string {
	var out []string
	for _, f := range r.Frames {
		if f.Kind == "exception" {
			out = append(out, "<exception>")
			continue
		}
		out = append(out, f.Function)
	}
	return out
}

// fromFaultingFrame drops what precedes the faulting frame in a backtrace
// taken at the handler's first instruction: the handler and the exception
// pseudo-frame. A CrashCatcher dump holds the state before the exception,
// so its backtrace starts at the faulting frame.
func fromFaultingFrame(fns []string) []string {
	if i := slices.Index(fns, "<exception>"); i >= 0 {
		return fns[i+1:]
	}
	return fns
}

// sameFault compares what analyze says about the fault: the exception, its
// causes (register and bit) and the fault address.
func sameFault(t *testing.T, got, want report.FaultJSON, what string) {
	t.Helper()
	causes := func(f report.FaultJSON) []string {
		var s []string
		for _, c := range f.Causes {
			s = append(s, c.Register+"."+c.Bit)
		}
		return s
	}
	if got.Exception != want.Exception || got.Number != want.Number || got.Address != want.Address ||
		!slices.Equal(causes(got), causes(want)) {
		t.Errorf("fault differs from %s:\n capture %s #%d %q at %q\n %-7s %s #%d %q at %q",
			what, got.Exception, got.Number, causes(got), got.Address,
			what, want.Exception, want.Number, causes(want), want.Address)
	}
}

// TestCaptureHandlerInEmulator runs every capture build and scenario in the
// emulator with --run-handler, keeps the dump the handler writes through
// semihosting, and checks that analyze on it gives the backtrace (from the
// faulting frame outwards) and fault causes that analyze gives on the
// harness's own dump of the same crash.
func TestCaptureHandlerInEmulator(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	for _, build := range captureBuilds(t) {
		elf := filepath.Join(repo, captureELFDir, build+".elf")
		for _, sc := range captureScenarios(build) {
			name := build + "-" + sc
			t.Run(name, func(t *testing.T) {
				harness := filepath.Join(dir, name+".json")
				stdout, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", harness, "--run-handler",
					"--max-insns", "5000000", "--set", fmt.Sprintf("crash_scenario=%d", scenarioNumbers[sc]))
				if code != 0 {
					t.Fatalf("emulate: exit %d\nstdout %s\nstderr %s", code, captureTail(stdout), stderr)
				}
				// The handler ends the run with SYS_EXIT after the dump.
				if !strings.Contains(stdout, "exited through semihosting SYS_EXIT") {
					t.Fatalf("the capture handler did not finish with SYS_EXIT: %s", captureTail(stdout))
				}
				dumpText := stdout
				if strings.HasSuffix(build, "-bin") {
					dumpText = stderr // binary on semihosting handle 2
				}
				dump := filepath.Join(dir, name+captureExt(build))
				if err := os.WriteFile(dump, []byte(dumpText), 0o644); err != nil {
					t.Fatal(err)
				}
				d, err := crashdump.Load(dump)
				if err != nil {
					t.Fatalf("the captured dump does not load: %v", err)
				}
				if len(d.Warnings) > 0 {
					t.Errorf("import warnings: %q", d.Warnings)
				}
				samePreException(t, d, harness, "harness", false)
				got := captureAnalyze(t, elf, dump)
				want := captureAnalyze(t, elf, harness)
				g, w := reportFunctions(got), fromFaultingFrame(reportFunctions(want))
				if !slices.Equal(g, w) {
					t.Errorf("backtrace differs:\n capture %q\n harness %q", g, w)
				}
				if len(g) < 3 {
					t.Errorf("backtrace too short: %q", g)
				}
				sameFault(t, got.Fault, want.Fault, "harness")
			})
		}
	}
}

// TestCaptureQEMUFixtures analyzes the dumps the capture builds wrote in
// QEMU (fixtures/capture/, fixtures/capture/run-qemu.sh) and compares the
// backtrace with GDB's (the QEMU+GDB oracle fixture of the same build and
// scenario in fixtures/capture/oracle/) or, without one, with analyze on
// the emulator's dump of the same crash. The fault causes are compared with
// analyze on the oracle fixture (or the emulator's dump).
func TestCaptureQEMUFixtures(t *testing.T) {
	builds := captureBuilds(t)
	n := 0
	for _, build := range builds {
		elf := filepath.Join(repo, captureELFDir, build+".elf")
		for _, sc := range captureScenarios(build) {
			name := build + "-" + sc
			dump := filepath.Join(repo, "fixtures/capture", name+captureExt(build))
			if _, err := os.Stat(dump); err != nil {
				t.Errorf("%s: no QEMU capture (run fixtures/capture/run-qemu.sh): %v", name, err)
				continue
			}
			n++
			t.Run(name, func(t *testing.T) {
				d, err := crashdump.Load(dump)
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Warnings) > 0 {
					t.Errorf("import warnings: %q", d.Warnings)
				}
				got := captureAnalyze(t, elf, dump)
				g := reportFunctions(got)
				ref := filepath.Join(repo, "fixtures/capture/oracle", name+".json")
				var want []string
				var refReport report.Report
				what := "QEMU+GDB oracle"
				if q, err := crashdump.Load(ref); err == nil && q.Truth != nil {
					samePreException(t, d, ref, "oracle", true)
					want = fromFaultingFrame(truthFunctions(q.Truth))
					refReport = captureAnalyze(t, elf, ref)
				} else {
					what = "emulator"
					skipWithoutEmulator(t)
					ref = filepath.Join(t.TempDir(), "emu.json")
					if _, errs, code := run(t, "", "emulate", "--elf", elf, "-o", ref,
						"--set", fmt.Sprintf("crash_scenario=%d", scenarioNumbers[sc])); code != 0 {
						t.Fatalf("emulate: exit %d: %s", code, errs)
					}
					refReport = captureAnalyze(t, elf, ref)
					want = fromFaultingFrame(reportFunctions(refReport))
				}
				if !slices.Equal(g, want) {
					t.Errorf("backtrace differs:\n capture %q\n %-7s %q", g, what, want)
				}
				if len(g) < 3 {
					t.Errorf("backtrace too short: %q", g)
				}
				sameFault(t, got.Fault, refReport.Fault, what)
			})
		}
	}
	if n == 0 {
		t.Fatal("no QEMU captures in fixtures/capture")
	}
}

// samePreException compares the registers a capture dump holds (the state
// before the exception) with those of a dump taken at the handler's first
// instruction, unstacked the way `faultline convert` writes a CrashCatcher
// dump (crashdump.Dump.WriteCrashCatcher): r0-r12, sp, lr, pc, xpsr and,
// when the capture has them, s0-s31 and (withFPSCR) fpscr.
//
// FPSCR is compared with QEMU only: the capture reads it from the extended
// frame after its first FP instruction has made the core perform the
// pending lazy stacking (FPCCR.LSPACT), which the emulator does not model
// (it leaves that slot as the exception entry reserved it). A dump whose
// state before the exception cannot be recovered is logged, not compared
// (none of the current fixtures: null_fnptr's stacked xPSR has the Thumb
// bit clear, which the exporter accepts since the CFSR shows the
// instruction-side fault).
func samePreException(t *testing.T, capture *crashdump.Dump, ref string, what string, withFPSCR bool) {
	t.Helper()
	d, err := crashdump.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteCrashCatcher(&b); err != nil {
		if errors.Is(err, crashdump.ErrNoPreException) {
			t.Logf("registers not compared: %v", err)
			return
		}
		t.Fatalf("%s: %v", ref, err)
	}
	p := filepath.Join(t.TempDir(), "ref.crashcatcher")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := crashdump.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	regs := []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R4,
		unwinders.R5, unwinders.R6, unwinders.R7, unwinders.R8, unwinders.R9, unwinders.R10,
		unwinders.R11, unwinders.R12, unwinders.SP, unwinders.LR, unwinders.PC, unwinders.XPSR}
	if capture.Regs.Known(unwinders.FPSCR) {
		for i := 0; i < 32; i++ {
			regs = append(regs, unwinders.S(i))
		}
		if withFPSCR {
			regs = append(regs, unwinders.FPSCR)
		}
	}
	for _, reg := range regs {
		g, gok := capture.Regs.Get(reg)
		w, wok := r.Regs.Get(reg)
		if g != w || gok != wok {
			t.Errorf("%s: capture 0x%08x (known %v), %s 0x%08x (known %v)", reg, g, gok, what, w, wok)
		}
	}
}

func captureTail(s string) string {
	if len(s) > 600 {
		return "..." + s[len(s)-600:]
	}
	return s
}
