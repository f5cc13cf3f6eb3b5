// Package testtool lets a test that needs an external program (the cross
// toolchain, gdb-multiarch, a browser) skip when it is missing, except
// where the test run promised to have every tool: with
// FAULTLINE_REQUIRE_TOOLS=1 in the environment (what `make test` sets,
// after installing them) a missing tool fails the test and names it, so
// an acceptance test is never skipped silently.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// EnvRequire is the environment variable that turns a missing tool from a
// skip into a failure.
const EnvRequire = "FAULTLINE_REQUIRE_TOOLS"

// Required reports whether missing tools fail the tests.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Need returns the path of each named program, in order. When one is not
// on PATH the test is skipped with why, or, when Required, fails.
func Need(tb testing.TB, why string, names ...string) []string {
	tb.Helper()
	var paths []string
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			Missing(tb, n+" is not installed (.ci/install-deps.sh --toolchain installs it): "+why)
		}
		paths = append(paths, p)
	}
	return paths
}

// Missing skips the test with msg, or fails it when Required.
func Missing(tb testing.TB, msg string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s (%s=1: every tool must be installed)", msg, EnvRequire)
	}
	tb.Skip(msg)
}
