package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithoutLibunicorn links the faultline binary the way users get it,
// except that emu/uc looks for a library that does not exist (the
// link-time override of uc.libNames, which only this test uses), and
// checks that libunicorn is not a load-time dependency: dumps are decoded
// without it, and emulate fails with a clear message and exit status 1.
func TestWithoutLibunicorn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the faultline binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command: ", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "faultline")
	build := exec.Command(gobin, "build", "-o", bin,
		"-ldflags", "-X github.com/faultline-dev/faultline/emu/uc.libNames=libfaultline-absent.so.2", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.Contains(l, "unicorn") {
			t.Errorf("DT_NEEDED lists %s (all: %v): libunicorn must be loaded on first use only", l, libs)
		}
	}

	const (
		fw   = "../../firmware-samples/build/gcc-m4f-O2-unwind.elf"
		dump = "../../fixtures/qemu/gcc-m4f-O2-unwind-null_write_deep.json"
	)
	for _, p := range []string{fw, dump} {
		if _, err := os.Stat(p); err != nil {
			t.Skip("sample missing: ", err)
		}
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		var o, e bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}

	out, errOut, code := run("analyze", "--elf", fw, dump)
	if code != 0 || !strings.Contains(out, "HardFault") || !strings.Contains(out, "deep1_entry") {
		t.Errorf("analyze without libunicorn: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	out, errOut, code = run("emulate", "--elf", fw, "-o", filepath.Join(dir, "dump.json"))
	// The message names the library and carries dlopen's own reason.
	if code != 1 || !strings.Contains(errOut, "emulation unavailable") || !strings.Contains(errOut, "libunicorn") ||
		!strings.Contains(errOut, "cannot open shared object file") {
		t.Errorf("emulate without libunicorn: exit %d, want 1 and a message naming libunicorn\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("emulate: %s", strings.TrimSpace(errOut))
	if _, err := os.Stat(filepath.Join(dir, "dump.json")); err == nil {
		t.Error("emulate wrote a dump")
	}
}
