package crashdump

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest that names itself as a region file, by name or through a
// hard link, is refused: its JSON is no memory image (issue 23).
func TestManifestIsNotItsOwnRegion(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "self.json")
	os.WriteFile(self, []byte(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000100"}, "memory": [{"address": "0x20000000", "file": "self.json"}]}`), 0o644)
	hard := filepath.Join(dir, "hard.json")
	os.WriteFile(hard, []byte(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000100"}, "memory": [{"address": "0x20000000", "file": "alias.bin"}]}`), 0o644)
	if err := os.Link(hard, filepath.Join(dir, "alias.bin")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{self, hard} {
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), "it is the manifest itself") || !strings.Contains(err.Error(), p+": memory[0].file") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A CrashCatcher dump says nothing of the CPU, but the SCB it captured
// holds CPUID: a round trip of the QEMU Cortex-M4 dump (CPUID 0x410fc241)
// names the core again; a CPUID of another implementer, or of a part
// faultline does not know, names none (issue 23: "CPU unknown").
func TestCPUFromCPUID(t *testing.T) {
	d, err := Load("../fixtures/qemu/gcc-m4f-O2-fpu_crash.json")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var b bytes.Buffer
	if err := d.WriteCrashCatcher(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b.Bytes(), "rt.bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.CPU != "cortex-m4" {
		t.Errorf("CPU %q, want cortex-m4 from CPUID", back.CPU)
	}
	for v, want := range map[uint32]string{0x410fc241: "cortex-m4", 0x410cc200: "cortex-m0", 0x410cc601: "cortex-m0plus", 0x411fc231: "cortex-m3", 0x410fd213: "cortex-m33", 0x510fc241: "", 0x410fc991: "", 0: ""} {
		if got := cpuFromCPUID(v); got != want {
			t.Errorf("CPUID %#x: %q, want %q", v, got, want)
		}
	}
}
