package emu_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/unwinders"
)

// The oracle match test (issue "Emulator harness", "done means"): every
// QEMU + GDB fixture in fixtures/qemu (fixtures/qemu/README.md) is re-run in
// the emulator with the same ELF and scenario, and the state at the first
// instruction of HardFault_Handler must be the one QEMU reported: r0-r12,
// sp, lr, pc, xpsr, msp, psp, the other special registers, CFSR, HFSR,
// MMFAR and BFAR, and the same functions in the truth as in GDB's
// backtrace.
//
// Accepted differences, each named and applied only where it is stated:
//
//   - qemuStaleDivideRegisters (scenario div0 only): QEMU 7.2 raises the
//     DIVBYZERO UsageFault from the helper of the UDIV/SDIV it translated
//     without first writing back to its CPU state the registers that
//     earlier instructions of the same translation block changed. The
//     registers it shows at the handler (and stacks: r0-r3, r12) are the
//     values from before those instructions (e.g. clang -O2: r6 = &fl_zero
//     instead of the loaded 0, which is the divisor that trapped; gcc -O0:
//     r3 = &fl_zero). A real core, and the emulator, show the values the
//     divide saw. The test accepts a difference in r0-r12 there, logs
//     each, and still requires the faulting PC, SP, LR, xPSR, the stacked
//     return address and xPSR, CFSR and the truth to match exactly.
//   - Inlined frames: GDB lists inlined functions as frames of their own,
//     the shadow stack sees only real calls. The sample firmware marks
//     every function of the chains noinline, so no fixture has one; an
//     inlined frame in a fixture would fail the test rather than be
//     dropped silently.

var scenarios = []struct {
	n    uint64
	name string
}{
	{1, "null_write_deep"}, {2, "null_fnptr"}, {3, "udf"}, {4, "div0"},
	{5, "irq_crash"}, {6, "psp_thread"}, {7, "fpu_crash"},
}

const fixtureDir = "../fixtures/qemu"

func oracleSkip(t *testing.T) {
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

// oracleRow is one line of the match table.
type oracleRow struct {
	fixture string
	regs    bool
	fault   bool
	truth   bool
	notes   []string
}

func TestOracleMatch(t *testing.T) {
	oracleSkip(t)
	fixtures, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if len(fixtures) == 0 {
		t.Skip("no fixtures in ", fixtureDir)
	}
	var rows []oracleRow
	for _, fx := range fixtures {
		base := strings.TrimSuffix(filepath.Base(fx), ".json")
		var build string
		var scen uint64
		for _, s := range scenarios {
			if strings.HasSuffix(base, "-"+s.name) {
				build, scen = strings.TrimSuffix(base, "-"+s.name), s.n
			}
		}
		if build == "" {
			t.Errorf("%s: unknown scenario", fx)
			continue
		}
		var row oracleRow
		ran := t.Run(base, func(t *testing.T) {
			row = matchOne(t, fx, build, scen)
		})
		if row.fixture != "" {
			rows = append(rows, row)
		} else if !ran {
			rows = append(rows, oracleRow{fixture: base, notes: []string{"emulation failed"}})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %-5s %-5s %-5s %s\n", "fixture", "regs", "fault", "truth", "notes")
	n := [3]int{}
	for _, r := range rows {
		mark := func(ok bool, i int) string {
			if ok {
				n[i]++
				return "ok"
			}
			return "DIFF"
		}
		fmt.Fprintf(&b, "%-34s %-5s %-5s %-5s %s\n", r.fixture, mark(r.regs, 0), mark(r.fault, 1), mark(r.truth, 2), strings.Join(r.notes, "; "))
	}
	fmt.Fprintf(&b, "%d fixtures: registers %d, fault registers %d, truth %d match\n", len(rows), n[0], n[1], n[2])
	t.Log("\n" + b.String())
	if p := os.Getenv("FL_ORACLE_TABLE"); p != "" {
		os.WriteFile(p, []byte(b.String()), 0o644)
	}
}

func matchOne(t *testing.T, fx, build string, scen uint64) oracleRow {
	row := oracleRow{fixture: strings.TrimSuffix(filepath.Base(fx), ".json")}
	d, err := crashdump.Load(fx)
	if err != nil {
		t.Fatal(err)
	}
	elf := filepath.Join("..", "firmware-samples", "build", build+".elf")
	res, err := emu.Run(context.Background(), emu.Config{ELF: elf, CPU: d.CPU,
		Sets: map[string]uint64{"crash_scenario": scen}, MaxInsns: 50_000_000, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("emulate %s scenario %d: %v", elf, scen, err)
	}
	g := res.Registers
	row.regs = true
	check := func(reg unwinders.Reg, got uint32) {
		want, ok := d.Regs.Get(reg)
		if !ok || got == want {
			return
		}
		if scen == 4 && reg <= unwinders.R12 {
			row.notes = append(row.notes, fmt.Sprintf("qemuStaleDivideRegisters %s=%#x (QEMU %#x)", reg, got, want))
			t.Logf("accepted qemuStaleDivideRegisters: %s = %#x, QEMU %#x", reg, got, want)
			return
		}
		row.regs = false
		t.Errorf("%s = %#x, QEMU %#x", reg, got, want)
	}
	for i := 0; i < 13; i++ {
		check(unwinders.R0+unwinders.Reg(i), g.R[i])
	}
	check(unwinders.SP, g.SP)
	check(unwinders.LR, g.LR)
	check(unwinders.PC, g.PC)
	check(unwinders.XPSR, g.XPSR)
	check(unwinders.MSP, g.MSP)
	check(unwinders.PSP, g.PSP)
	check(unwinders.CONTROL, g.CONTROL)
	check(unwinders.PRIMASK, g.PRIMASK)
	check(unwinders.BASEPRI, g.BASEPRI)
	check(unwinders.FAULTMASK, g.FAULTMASK)
	if g.FP != nil {
		for i := 0; i < 32; i++ {
			check(unwinders.S(i), g.FP.S[i])
		}
		check(unwinders.FPSCR, g.FP.FPSCR)
	}

	// The stacked frame of the HardFault: return address and xPSR (the
	// faulting instruction and the interrupted state) must be identical.
	// The frame is at PSP for a fault in a PSP thread (EXC_RETURN bit 2).
	frame := g.SP
	if g.LR&(1<<2) != 0 {
		frame = g.PSP
	}
	qimg, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []uint32{0x18, 0x1c} {
		var q [4]byte
		if err := qimg.Read(frame+off, q[:]); err != nil {
			t.Errorf("QEMU dump: stacked word at %#x: %v", frame+off, err)
			continue
		}
		want := binary.LittleEndian.Uint32(q[:])
		got, ok := word(res, frame+off)
		if !ok || got != want {
			row.regs = false
			t.Errorf("stacked word at sp+%#x = %#x, QEMU %#x", off, got, want)
		}
	}

	row.fault = true
	for _, f := range []struct {
		name string
		got  uint32
		want interface{ Get() (uint32, bool) }
	}{
		{"CFSR", res.Fault.CFSR, d.Fault.CFSR}, {"HFSR", res.Fault.HFSR, d.Fault.HFSR},
		{"MMFAR", res.Fault.MMFAR, d.Fault.MMFAR}, {"BFAR", res.Fault.BFAR, d.Fault.BFAR},
	} {
		if w, ok := f.want.Get(); ok && w != f.got {
			row.fault = false
			t.Errorf("%s = %#x, QEMU %#x", f.name, f.got, w)
		}
	}

	var want []string
	for _, f := range d.Truth.Frames {
		if f.Kind == "exception" {
			want = append(want, "<exception>")
			continue
		}
		want = append(want, f.Function)
	}
	var got []string
	for _, f := range res.Truth {
		if f.Kind == emu.FrameException {
			got = append(got, "<exception>")
			continue
		}
		got = append(got, f.Function)
	}
	row.truth = slices.Equal(got, want)
	if !row.truth {
		t.Errorf("truth\n got  %v\n QEMU %v", got, want)
	}
	return row
}

// word reads a little-endian word from the emulator's memory copy.
func word(res *emu.Result, addr uint32) (uint32, bool) {
	for _, m := range res.Memory {
		if addr >= m.Addr && uint64(addr)+4 <= uint64(m.Addr)+uint64(len(m.Data)) {
			return binary.LittleEndian.Uint32(m.Data[addr-m.Addr:]), true
		}
	}
	return 0, false
}
