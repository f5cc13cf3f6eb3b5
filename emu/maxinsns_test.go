package emu

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMaxInsnsExactAgainstQEMU: Config.MaxInsns stops the run after
// exactly that many instructions, also in the middle of a translated block
// and inside loops, at the PC where QEMU single-stepped by GDB stops after
// the same count from reset (testdata/maxinsns-qemu.txt, written by
// testdata/maxinsns-qemu.sh). The error reports exactly that count.
func TestMaxInsnsExactAgainstQEMU(t *testing.T) {
	skipWithoutCgo(t)
	f, err := os.Open("testdata/maxinsns-qemu.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			t.Fatalf("bad oracle line %q", line)
		}
		count, err1 := strconv.ParseUint(fs[1], 10, 64)
		want, err2 := strconv.ParseUint(fs[2], 0, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad oracle line %q", line)
		}
		_, err = Run(context.Background(), Config{ELF: "../" + fs[0], MaxInsns: count, Timeout: time.Minute})
		var nf *NoFaultError
		if !errors.As(err, &nf) {
			t.Errorf("%s --max-insns %d: %v, want a stop at the limit", fs[0], count, err)
			continue
		}
		if nf.PC != uint32(want) || nf.Insns != count || !strings.Contains(nf.Reason, "instruction limit of "+fs[1]+" reached") || strings.Contains(nf.Reason, ";") {
			t.Errorf("%s --max-insns %d: stopped at %#08x after %d instructions (%s); QEMU stops at %#08x", fs[0], count, nf.PC, nf.Insns, nf.Reason, want)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d oracle stops read", n)
	}
	t.Logf("%d stops equal QEMU's", n)
}

// TestMaxInsnsStopsTheHandler: with --run-handler, a handler still running
// when the instruction limit comes is stopped there (not retried forever
// before the block that would cross it), and the counts add up to the
// limit exactly.
func TestMaxInsnsStopsTheHandler(t *testing.T) {
	skipWithoutCgo(t)
	cfg := Config{ELF: "testdata/semihost-m3.elf", RunHandler: true, Stdout: io.Discard, Stderr: io.Discard, Timeout: time.Minute}
	full, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if full.Handler == nil || !full.Handler.Exited || full.Handler.Insns < 4 {
		t.Fatalf("handler outcome %+v, want an exit after a few instructions", full.Handler)
	}
	for _, cut := range []uint64{1, 2, full.Handler.Insns / 2, full.Handler.Insns - 1} {
		cfg.MaxInsns = full.Insns + cut
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("limit %d: %v", cfg.MaxInsns, err)
		}
		h := res.Handler
		if h == nil || h.Exited || !strings.Contains(h.Reason, "instruction limit") || res.Insns+h.Insns > cfg.MaxInsns {
			t.Errorf("limit %d (fault at %d): handler outcome %+v", cfg.MaxInsns, full.Insns, h)
		}
	}
}
