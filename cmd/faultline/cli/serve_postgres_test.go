package cli

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/testtool/pgtest"
)

// TestMain stops the PostgreSQL cluster a test of this package may start
// (internal/testtool/pgtest).
func TestMain(m *testing.M) { pgtest.Main(m) }

// TestServeMatchesAnalyzePostgres is TestServeMatchesAnalyze with the
// data in PostgreSQL (the files too, no --data): the same buckets and
// analysis per dump as analyze gives.
func TestServeMatchesAnalyzePostgres(t *testing.T) {
	c := makeFleetCase(t, []int{0})
	url := startServeInProcess(t, "--db", pgtest.DSN(t), "--workers", "2")
	checkFleet(t, inProcess, url, c)
}

// TestServeWorkerNeedsPostgres: --worker shares a PostgreSQL queue; with
// SQLite (or no --db) it is a usage error, and so is a lease out of range.
func TestServeWorkerNeedsPostgres(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--worker"},
		{"serve", "--worker", "--data", t.TempDir()},
		{"serve", "--worker", "--db", "fleet.db", "--data", t.TempDir()},
	} {
		_, stderr, code := run(t, "", args...)
		if code != ExitUsage || !strings.Contains(stderr, "postgres://") {
			t.Errorf("%v: exit %d, %q; want a usage error asking for postgres://", args, code, stderr)
		}
	}
	_, stderr, code := run(t, "", "serve", "--worker", "--db", "postgres://u@h/db", "--lease", "10ms")
	if code != ExitUsage || !strings.Contains(stderr, "--lease") {
		t.Errorf("--lease 10ms: exit %d, %q; want a usage error", code, stderr)
	}
}
