package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
)

// From the command line: another build's ELF is a mismatch when the
// build IDs differ, warned about on stderr; --strict makes it exit 1. A
// pair that heuristics only doubt (another build, but nothing positive:
// no build ID, no flash in the dump) is unverified with a warning, and
// --strict does not fail it.
func TestAnalyzePairingMismatch(t *testing.T) {
	args := []string{"analyze", "--elf", "../../../firmware-samples/buildid/build/gcc-m3-O2.elf", "../../../fixtures/fleet/gcc-m3-O2-fp-udf.json"}
	out, errOut, code := run(t, "", args...)
	if code != 0 || !strings.Contains(out, "Pairing: mismatch") || !strings.Contains(errOut, "is not the firmware that crashed") || !strings.Contains(errOut, "build-id differs") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, _, code := run(t, "", append([]string{"analyze", "--strict"}, args[1:]...)...); code != ExitInput {
		t.Errorf("--strict: exit %d, want %d", code, ExitInput)
	}
	// The right ELF under --strict is fine.
	if _, errOut, code := run(t, "", "analyze", "--strict", "--elf", "../../../firmware-samples/buildid/build/gcc-m3-O2-fp.elf", "../../../fixtures/fleet/gcc-m3-O2-fp-udf.json"); code != 0 {
		t.Errorf("--strict with the right ELF: exit %d: %s", code, errOut)
	}
	// Doubted, not proven: unverified, a warning, and --strict passes.
	out, errOut, code = run(t, "", "analyze", "--strict", "--elf", "../../../firmware-samples/build/gcc-m3-O2.elf", "../../../fixtures/qemu/gcc-m3-O2-fp-udf.json")
	if code != 0 || !strings.Contains(out, "Pairing: unverified") || !strings.Contains(out+errOut, "is unverified: ") {
		t.Errorf("doubted pair: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// A dump on standard input ("-"), and the JSON fields that make a report
// usable on its own.
func TestAnalyzeStdinJSON(t *testing.T) {
	data, err := os.ReadFile("../../../fixtures/capture/gcc-m3-O2-capture-udf.crashcatcher.hex")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, string(data), "analyze", "--format", "json", "--elf", "../../../firmware-samples/capture/build/gcc-m3-O2-capture.elf", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Dump      string            `json:"dump"`
		Faultline string            `json:"faultline"`
		ELF       map[string]string `json:"elf"`
		Pairing   struct{ Verdict string }
		Registers map[string]string `json:"registers"`
		FaultRegs map[string]string `json:"fault_registers"`
		Frames    []struct{ Function string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Dump != "<stdin>" || r.Faultline != report.Version || r.ELF["path"] == "" || r.Pairing.Verdict != "unverified" ||
		r.Registers["pc"] == "" || r.FaultRegs["cfsr"] != "0x00010000" || len(r.Frames) < 3 || r.Frames[0].Function != "udf_assert_fail" {
		t.Errorf("report %+v", r)
	}
	if _, _, code := run(t, "", "analyze", "--elf", "x.elf", "-", "other.json"); code != ExitUsage {
		t.Errorf("- with another dump: exit %d, want %d", code, ExitUsage)
	}
	if out, _, code := run(t, "", "--version"); code != 0 || !strings.HasPrefix(out, "faultline "+report.Version) {
		t.Errorf("--version: %d %q", code, out)
	}
}
