package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A probe-rs coredump written from a native dump (fixtures/import/probe-rs,
// crashdump's TestProbeRSFixtures) analyses like the native dump: the same
// frames and the same fault, on ARMv6-M, ARMv7-M (MSP and PSP stacks),
// ARMv7E-M with an FP frame and ARMv8-M.
func TestAnalyzeProbeRS(t *testing.T) {
	for _, c := range []struct{ src, elf string }{
		{"fixtures/qemu/gcc-m3-O2-null_write_deep.json", "firmware-samples/build/gcc-m3-O2.elf"},
		{"fixtures/qemu/gcc-m3-O2-psp_thread.json", "firmware-samples/build/gcc-m3-O2.elf"},
		{"fixtures/qemu/gcc-m4f-O2-fpu_crash.json", "firmware-samples/build/gcc-m4f-O2.elf"},
		{"fixtures/rtos/freertos/gcc-m0-O2.json", "firmware-samples/rtos-freertos/build/gcc-m0-O2.elf"},
		{"fixtures/rtos/freertos/gcc-m33-O2.json", "firmware-samples/rtos-freertos/build/gcc-m33-O2.elf"},
	} {
		core := filepath.Join(repo, "fixtures/import/probe-rs", strings.TrimSuffix(filepath.Base(c.src), ".json")+".coredump")
		elf := filepath.Join(repo, c.elf)
		want, _, code := run(t, "", "analyze", "--format", "json", "--elf", elf, filepath.Join(repo, c.src))
		if code != 0 {
			t.Fatal(c.src, code)
		}
		got, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", elf, core)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", core, code, errOut)
		}
		w, _ := frameKeys(t, want)
		g, _ := frameKeys(t, got)
		if !slices.Equal(w, g) || len(g) < 4 {
			t.Errorf("%s: the coredump gives\n%q\nthe native dump\n%q", core, g, w)
		}
		type faultOnly struct {
			Fault   json.RawMessage
			Threads []struct{ Name string }
		}
		var wf, gf faultOnly
		if err := json.Unmarshal([]byte(want), &wf); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(got), &gf); err != nil {
			t.Fatal(err)
		}
		if string(wf.Fault) != string(gf.Fault) || len(gf.Fault) < 10 {
			t.Errorf("%s: fault %s, the native dump's %s", core, gf.Fault, wf.Fault)
		}
		if !reflect.DeepEqual(wf.Threads, gf.Threads) {
			t.Errorf("%s: threads %v, the native dump's %v", core, gf.Threads, wf.Threads)
		}
	}
}
