package emu

import (
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/emu/uc"
)

// skipWithoutCgo skips tests that need libunicorn when faultline was built
// without cgo.
func skipWithoutCgo(t testing.TB) {
	t.Helper()
	e, err := uc.Open(uc.CortexM4)
	if errors.Is(err, uc.ErrUnavailable) {
		t.Skip("emulation unavailable (built without cgo): ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}
