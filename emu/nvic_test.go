package emu

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sampleM3 = "../firmware-samples/build/gcc-m3-O2.elf"

// TestIRQFlagNested raises IRQ 7 (exception 23, fl_crash_irq_handler, which
// faults two calls deep) from outside while main idles (scenario 99): the
// HardFault nests on the IRQ like the irq_crash scenario, with EXC_RETURN
// 0xFFFFFFF1, and the truth shows both exception levels.
func TestIRQFlagNested(t *testing.T) {
	skipWithoutCgo(t)
	res, err := Run(context.Background(), Config{ELF: sampleM3, Sets: map[string]uint64{"crash_scenario": 99},
		IRQs: []IRQ{{Exception: 23, At: 5000}}, MaxInsns: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Registers.LR != 0xFFFFFFF1 || res.Fault.CFSR != 0x8200 || res.Fault.BFAR != 0x30000010 {
		t.Errorf("lr %#x CFSR %#x BFAR %#x", res.Registers.LR, res.Fault.CFSR, res.Fault.BFAR)
	}
	got := functions(res)
	want := []string{"HardFault_Handler", "<exception>", "irq_touch_device", "irq_service", "fl_crash_irq_handler", "<exception>"}
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("truth %v, want it to start %v", got, want)
	}
	if res.Insns < 5000 {
		t.Errorf("taken after %d instructions, before 5000", res.Insns)
	}
	if res.Truth[1].ExcReturn != 0xFFFFFFF1 || res.Truth[5].ExcReturn != 0xFFFFFFF9 {
		t.Errorf("EXC_RETURN of the pseudo-frames: %#x %#x", res.Truth[1].ExcReturn, res.Truth[5].ExcReturn)
	}
}

// TestPendingPriority: an interrupt raised while PRIMASK is set stays
// pending; the NMI is not masked.
func TestPendingPriority(t *testing.T) {
	skipWithoutCgo(t)
	m := &machine{cpu: cpus[2], scs: newSCS(cpus[2])}
	m.scs.NVICPending[0] = 1 << 7
	if _, ok := m.pendingExceptionAt(256); ok {
		t.Error("a disabled interrupt was taken")
	}
	m.scs.NVICEnabled[0] = 1 << 7
	if exc, ok := m.pendingExceptionAt(256); !ok || exc != 23 {
		t.Errorf("got %d %v, want IRQ 7 (23)", exc, ok)
	}
	if _, ok := m.pendingExceptionAt(0); ok {
		t.Error("taken with PRIMASK set")
	}
	m.scs.ICSR |= icsrNMIPENDSET
	if exc, ok := m.pendingExceptionAt(0); !ok || exc != excNMI {
		t.Errorf("got %d %v, want NMI", exc, ok)
	}
}

func TestSysTickCounts(t *testing.T) {
	var now uint64
	s := newSCS(cpus[3])
	s.now = func() uint64 { return now }
	s.Write(addrSysTickRVR, 4, 99)
	s.Write(addrSysTickCVR, 4, 0)
	s.Write(addrSysTickCSR, 4, 3) // ENABLE, TICKINT
	if n := s.sysTickNext(); n != 100 {
		t.Fatalf("next wrap at %d, want 100", n)
	}
	now = 50
	if v := s.Read(addrSysTickCVR, 4); v != 50 {
		t.Errorf("CVR %d at 50, want 50", v)
	}
	now = 100
	if !s.sysTickAdvance(now) || s.SysTickCSR&(1<<16) == 0 {
		t.Error("no wrap at 100")
	}
	if n := s.sysTickNext(); n != 200 {
		t.Errorf("next wrap at %d, want 200", n)
	}
	if v := s.Read(addrSysTickCSR, 4); v&(1<<16) == 0 || s.Read(addrSysTickCSR, 4)&(1<<16) != 0 {
		t.Error("COUNTFLAG should read 1 once, then 0")
	}
}

func TestMPURegionsV7(t *testing.T) {
	s := newSCS(cpus[2])
	// The sample firmware's guard: region 0 at 0, 32 bytes, no access, XN.
	s.Write(addrMPURNR, 4, 0)
	s.Write(addrMPURBAR, 4, 0)
	s.Write(addrMPURASR, 4, 1<<28|4<<1|1)
	s.Write(addrMPUCtrl, 4, 5)
	for _, c := range []struct {
		addr uint32
		hit  bool
		xn   bool
	}{{0, true, true}, {0x1f, true, true}, {0x20, false, false}} {
		ap, xn, hit := s.mpuLookupV7(c.addr)
		if hit != c.hit || xn != c.xn || (hit && ap != 0) {
			t.Errorf("%#x: ap %d xn %v hit %v", c.addr, ap, xn, hit)
		}
	}
	// A 1 KiB region with subregion 1 disabled.
	s.Write(addrMPURNR, 4, 1)
	s.Write(addrMPURBAR, 4, 0x20000000)
	s.Write(addrMPURASR, 4, 1<<24|0x02<<8|9<<1|1)
	if _, _, hit := s.mpuLookupV7(0x20000080); hit {
		t.Error("disabled subregion matched")
	}
	if ap, _, hit := s.mpuLookupV7(0x20000100); !hit || ap != 1 {
		t.Error("enabled subregion did not match")
	}
}

func TestSemihostingAndRunHandler(t *testing.T) {
	skipWithoutCgo(t)
	var out, errb strings.Builder
	res, err := Run(context.Background(), Config{ELF: "testdata/semihost-m3.elf", RunHandler: true,
		Stdout: &out, Stderr: &errb, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello from firmware\n!in handler\n" || errb.String() != "to stderr\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	if h := res.Handler; h == nil || !h.Exited || h.ExitCode != 7 {
		t.Errorf("handler outcome %+v, want exit status 7", res.Handler)
	}
	if res.Registers.PC != 0x40 || res.Fault.BFAR != 0x70000000 {
		t.Errorf("state at the handler: pc %#x BFAR %#x", res.Registers.PC, res.Fault.BFAR)
	}
	_, err = Run(context.Background(), Config{ELF: "testdata/semihost-m3.elf", Sets: map[string]uint64{"exit_mode": 1}})
	var nf *NoFaultError
	if !errors.As(err, &nf) || !strings.Contains(nf.Reason, "SYS_EXIT") {
		t.Errorf("err %v, want a semihosting exit", err)
	}
	// The sample firmware's handler is a branch-to-self loop.
	res, err = Run(context.Background(), Config{ELF: sampleM3, RunHandler: true, Sets: map[string]uint64{"crash_scenario": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Handler; h == nil || h.Exited || !strings.Contains(h.Reason, "branch-to-self") {
		t.Errorf("handler outcome %+v", res.Handler)
	}
}
