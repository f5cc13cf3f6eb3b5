package crashdump

import (
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// TestCPUFromCPUID: the core is named from the CPUID word QEMU's SCB held
// in the oracle fixtures (0x410FC231 on mps2-an385, 0x410FC241 on
// mps2-an386), and a dump with no CPU field (here, the same memory as a
// manifest without "cpu") gets it from there.
func TestCPUFromCPUID(t *testing.T) {
	for _, c := range []struct{ fixture, cpu string }{
		{"gcc-m3-O2-udf", "cortex-m3"},
		{"gcc-m4f-O2-udf", "cortex-m4"},
	} {
		d, err := Load("../fixtures/qemu/" + c.fixture + ".json")
		if err != nil {
			t.Fatal(err)
		}
		got, word := CPUFromCPUID(d.Memory)
		if got != c.cpu || got != d.CPU {
			t.Errorf("%s: CPUID 0x%08x names %q, the fixture says %q", c.fixture, word, got, d.CPU)
		}
	}
	scb := func(v uint32) []unwinders.Region {
		return []unwinders.Region{{Addr: 0xE000ED00, Data: []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}}}
	}
	if got, _ := CPUFromCPUID(scb(0x410CC601)); got != "cortex-m0plus" {
		t.Errorf("0x410CC601: %q", got)
	}
	if got, _ := CPUFromCPUID(scb(0x510FC241)); got != "" {
		t.Errorf("another implementer's part 0xC24 named %q", got)
	}
	if got, _ := CPUFromCPUID(nil); got != "" {
		t.Errorf("no SCB: %q", got)
	}
	m := []byte(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000000"},
	 "memory": [{"address": "0xe000ed00", "hex": "41c20f41"}]}`)
	d, err := Parse(m, "nocpu.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.CPU != "cortex-m4" {
		t.Errorf("a manifest without cpu and CPUID 0x410FC241: CPU %q", d.CPU)
	}
}
