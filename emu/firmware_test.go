package emu

import (
	"github.com/faultline-dev/faultline/internal/testtool"
	"os/exec"
	"testing"
)

// TestFirmwareReproducible rebuilds the test firmware that is built with
// -ffile-prefix-map (pmsav8-m33.elf, irq-m3.elf, edges-m4.elf,
// abandon-m0.elf, abandon-m3.elf: target check-new of testdata/Makefile) in
// a temporary directory and requires the committed ELFs to be
// byte-identical: the addresses the tests hard-code come from exactly these
// files. Skipped without make and arm-none-eabi-gcc.
func TestFirmwareReproducible(t *testing.T) {
	testtool.Need(t, "rebuilding the emulator's test firmware", "make", "arm-none-eabi-gcc")
	out, err := exec.Command("make", "-s", "-C", "testdata", "check-new").CombinedOutput()
	if err != nil {
		t.Fatalf("make check-new: %v\n%s", err, out)
	}
}
