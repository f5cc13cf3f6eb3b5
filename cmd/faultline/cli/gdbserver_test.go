package cli

import (
	"bufio"
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/internal/testtool"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/gdbserver"
	"github.com/faultline-dev/faultline/gdbserver/gdbtest"
)

const (
	gdbTestDump = repo + "/fixtures/qemu/gcc-m3-O2-udf.json"
	gdbTestELF  = repo + "/firmware-samples/build/gcc-m3-O2.elf"
)

// gdbPacket frames a remote protocol packet.
func gdbPacket(data string) string { return string(gdbserver.Frame([]byte(data))) }

func TestGDBServerUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gdbserver", gdbTestDump}, ExitUsage, "--elf is required"},
		{[]string{"gdbserver", "--elf", gdbTestELF}, ExitUsage, "gdbserver takes exactly one DUMP, got 0 arguments"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--stdio", "--listen", "127.0.0.1:0", gdbTestDump}, ExitUsage, "exclude each other"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--listen", "0.0.0.0:0", gdbTestDump}, ExitUsage, "not a loopback address"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--listen", ":0", gdbTestDump}, ExitUsage, "not a loopback address"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--listen", "127.0.0.1", gdbTestDump}, ExitUsage, "want HOST:PORT"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--sessions", "-1", gdbTestDump}, ExitUsage, "--sessions"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--idle-timeout", "-1s", gdbTestDump}, ExitUsage, "--idle-timeout"},
		{[]string{"gdbserver", "--elf", gdbTestELF, "--stdio", repo + "/fixtures/qemu/missing.json"}, ExitInput, "missing.json"},
		{[]string{"gdbserver", "--elf", repo + "/missing.elf", "--stdio", gdbTestDump}, ExitInput, "missing.elf"},
	} {
		_, errOut, code := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// TestGDBServerStdio runs a scripted session on the command's stdin and
// stdout: the protocol goes to stdout only.
func TestGDBServerStdio(t *testing.T) {
	in := gdbPacket("qSupported") + "+" + gdbPacket("?") + "+" + gdbPacket("m20000000,4") + "+" + gdbPacket("D") + "+"
	out, errOut, code := run(t, in, "gdbserver", "--stdio", "--elf", gdbTestELF, gdbTestDump)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// udf: UNDEFINSTR, so SIGILL (4).
	want := "+" + gdbPacket("PacketSize=4000;qXfer:features:read+;qXfer:memory-map:read+;qXfer:threads:read+;QStartNoAckMode+") +
		"+" + gdbPacket("T04thread:1;") + "+$"
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "+"+gdbPacket("OK")) {
		t.Errorf("stdout:\n%q\nwant it to start with\n%q", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr: %q", errOut)
	}
}

// TestGDBServerListen serves two sessions one after another on a
// loopback port and exits after --sessions 2.
func TestGDBServerListen(t *testing.T) {
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := Run([]string{"gdbserver", "--listen", "127.0.0.1:0", "--sessions", "2", "--elf", gdbTestELF, gdbTestDump},
			strings.NewReader(""), io.Discard, errW)
		errW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(errR)
	var addr string
	re := regexp.MustCompile(`target remote (127\.0\.0\.1:\d+)`)
	for addr == "" && lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("the server did not say where it listens")
	}
	go io.Copy(io.Discard, errR)
	for i := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, gdbPacket("?")+"+"+gdbPacket("D")+"+")
		b, _ := io.ReadAll(c)
		if want := "+" + gdbPacket("T04thread:1;") + "+" + gdbPacket("OK"); string(b) != want {
			t.Errorf("session %d: %q, want %q", i+1, b, want)
		}
		c.Close()
	}
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gdbserver did not exit after --sessions 2")
	}
}

// TestGDBServerOracle is the acceptance test: for every QEMU+GDB oracle
// fixture, the real gdb-multiarch runs `target remote | faultline
// gdbserver --stdio --elf ELF DUMP` with the faultline binary built here,
// and its bt must list the oracle truth's functions and its info registers
// the dump's registers. What is compared, and why GDB's backtrace goes on
// past the truth's end, is explained in package gdbtest.
func TestGDBServerOracle(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it): skipping the GDB acceptance test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the GDB acceptance test (149 GDB sessions)")
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "github.com/faultline-dev/faultline/cmd/faultline")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fixtures, err := gdbtest.Fixtures(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no oracle fixtures")
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var matched atomic.Int32
	t.Run("fixtures", func(t *testing.T) {
		for _, f := range fixtures {
			t.Run(f.Name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				target := fmt.Sprintf("| %s gdbserver --stdio --elf %s %s", quote(bin), quote(f.ELF), quote(f.Dump))
				if err := gdbtest.Check(ctx, f, target); err != nil {
					t.Fatal(err)
				}
				matched.Add(1)
			})
		}
	})
	t.Logf("%d of %d fixtures: GDB's bt through `faultline gdbserver --stdio` matches the QEMU+GDB oracle", matched.Load(), len(fixtures))
}
