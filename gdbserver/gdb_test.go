package gdbserver_test

import (
	"context"
	"github.com/faultline-dev/faultline/internal/testtool"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/gdbserver"
	"github.com/faultline-dev/faultline/gdbserver/gdbtest"
	"github.com/faultline-dev/faultline/unwinders"
)

// repoRoot is the repository root, relative to this package.
var repoRoot = filepath.Join("..")

// serve starts a server of the fixture's dump on a free loopback port for
// sessions sessions and returns its address.
func serve(t *testing.T, f gdbtest.Fixture, sessions int) (string, <-chan error) {
	t.Helper()
	elf, err := elfsym.Open(f.ELF)
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(f.Dump)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := gdbserver.NewTarget(d, elf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	srv := gdbserver.NewServer(tgt, gdbserver.Config{Logf: t.Logf, IdleTimeout: time.Minute})
	go func() { done <- srv.Serve(ctx, l, sessions) }()
	return l.Addr().String(), done
}

// TestGDBOracle is the acceptance test with the server in the test
// process: the real gdb-multiarch connects over TCP for every QEMU+GDB
// oracle fixture, and its bt must list the truth's functions (see package
// gdbtest for what is compared and why), its info registers the dump's
// registers. The CLI's test does the same through `faultline gdbserver
// --stdio`.
func TestGDBOracle(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it): skipping the GDB acceptance test")
	}
	fixtures, err := gdbtest.Fixtures(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixtures in fixtures/qemu")
	}
	var matched atomic.Int32
	t.Run("fixtures", func(t *testing.T) {
		for _, f := range fixtures {
			t.Run(f.Name, func(t *testing.T) {
				t.Parallel()
				addr, done := serve(t, f, 1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := gdbtest.Check(ctx, f, addr); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Errorf("server: %v", err)
				}
				matched.Add(1)
			})
		}
	})
	t.Logf("%d of %d fixtures: GDB's backtrace through faultline matches the QEMU+GDB oracle", matched.Load(), len(fixtures))
}

// TestGDBSequentialSessions serves several GDB sessions one after another
// on one listener.
func TestGDBSequentialSessions(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it)")
	}
	fixtures, err := gdbtest.Fixtures(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var f gdbtest.Fixture
	for _, x := range fixtures {
		if x.Name == "gcc-m4f-O2-psp_thread" {
			f = x
		}
	}
	if f.Name == "" {
		t.Fatal("fixture gcc-m4f-O2-psp_thread not found")
	}
	const n = 3
	addr, done := serve(t, f, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := gdbtest.Check(ctx, f, addr)
		cancel()
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the server did not stop after %d sessions", n)
	}
}

// TestGDBUnknownRegisters serves a dump that lacks r4-r11, psp and
// control: GDB shows them as <unavailable>, and still unwinds the
// exception frame on the main stack (the m-system feature is not
// advertised without psp, see package doc).
func TestGDBUnknownRegisters(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it)")
	}
	fixtures, err := gdbtest.Fixtures(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var f gdbtest.Fixture
	for _, x := range fixtures {
		if x.Name == "gcc-m3-O2-div0" {
			f = x
		}
	}
	if f.Name == "" {
		t.Fatal("fixture gcc-m3-O2-div0 not found")
	}
	elf, err := elfsym.Open(f.ELF)
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(f.Dump)
	if err != nil {
		t.Fatal(err)
	}
	gone := []string{"r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "psp", "control"}
	for _, name := range gone {
		r, ok := unwinders.ParseReg(name)
		if !ok {
			t.Fatal(name)
		}
		d.Regs.Forget(r)
		delete(f.Regs, name)
	}
	tgt, err := gdbserver.NewTarget(d, elf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go gdbserver.NewServer(tgt, gdbserver.Config{Logf: t.Logf}).Serve(ctx, l, 1)
	out, err := gdbtest.Run(ctx, f.ELF, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// No frame of this call chain needs the callee-saved registers to be
	// unwound: GDB still finds them all.
	if err := gdbtest.Compare(f.Truth, gdbtest.ParseBacktrace(out.Backtrace)); err != nil {
		t.Errorf("%v\n%s", err, out.Backtrace)
	}
	if err := gdbtest.CheckRegisters(f.Regs, gdbtest.Registers(out.Registers), gdbtest.CoreRegisters()); err != nil {
		t.Errorf("%v\n%s", err, out.Registers)
	}
}
