//go:build cgo

package uc

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The failure paths of the loader, with library names that cannot succeed:
// fl_uc_load leaves the function table alone when it fails, so these run
// safely next to tests that emulate.

func TestLoadMissingLibrary(t *testing.T) {
	err := loadFirst([]string{"libfaultline-absent.so.2", "libfaultline-absent.so"})
	if err == nil {
		t.Fatal("loaded a library that does not exist")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("%v does not wrap ErrUnavailable", err)
	}
	// The first name's dlerror text, and what to install.
	msg := err.Error()
	for _, want := range []string{"emulation unavailable: ", "libfaultline-absent.so.2", "apt-get install libunicorn2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if err.Lib != "libfaultline-absent.so.2" || err.Symbol != "" || err.Version != "" {
		t.Errorf("got %+v", *err)
	}
}

func TestLoadMissingSymbol(t *testing.T) {
	// libc exists but is not Unicorn: the first function looked up is
	// missing, and a library that exists is the answer even when a later
	// name might do.
	err := loadFirst([]string{"libfaultline-absent.so.2", "libc.so.6", "libunicorn.so.2"})
	if err == nil {
		t.Fatal("libc.so.6 passed for libunicorn")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("%v does not wrap ErrUnavailable", err)
	}
	if err.Lib != "libc.so.6" || err.Symbol != "uc_version" {
		t.Errorf("got %+v, want libc.so.6 lacking uc_version", *err)
	}
	if msg := err.Error(); !strings.Contains(msg, "libc.so.6: undefined symbol uc_version") {
		t.Errorf("error %q does not name the library and the symbol", msg)
	}
}

func TestLoadNoNames(t *testing.T) {
	if err := loadFirst(nil); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("got %v, want an error wrapping ErrUnavailable", err)
	}
}

func TestAvailable(t *testing.T) {
	err := Available()
	if err != nil {
		t.Skip("libunicorn is not installed: ", err)
	}
	// The outcome is kept, and Open works after it.
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	e := openOrSkip(t, CortexM4)
	if m, err := e.Model(); err != nil || m != CortexM4 {
		t.Errorf("Model() = %v, %v", m, err)
	}
}

// TestFirstUseConcurrent runs TestFirstUseHelper in a new process, where
// its concurrent Opens are the first use of libunicorn (in this process
// other tests may have loaded it already).
func TestFirstUseConcurrent(t *testing.T) {
	if Available() != nil {
		t.Skip("libunicorn is not installed")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFirstUseHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FAULTLINE_UC_FIRST_USE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFirstUseHelper") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestFirstUseHelper(t *testing.T) {
	if os.Getenv("FAULTLINE_UC_FIRST_USE") == "" {
		t.Skip("run by TestFirstUseConcurrent")
	}
	const n = 8
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		go func() {
			<-start
			e, err := Open(CortexM0 + CPUModel(i%5))
			if err == nil {
				err = e.Close()
			}
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
