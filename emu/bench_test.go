package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// benchBusy runs scenario 10 of the test firmware (calls and loops: fib(10)
// and mix() per iteration) to its fault and reports guest MIPS.
func benchBusy(b *testing.B, noTruth bool) {
	skipWithoutCgo(b)
	var insns uint64
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), Config{ELF: "testdata/fw-m4.elf", NoTruth: noTruth, Timeout: 5 * time.Minute,
			Sets: map[string]uint64{"crash_scenario": 10, "iterations": 20000}})
		if err != nil {
			b.Fatal(err)
		}
		insns += res.Insns
	}
	b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "MIPS")
}

func BenchmarkBusyShadowStack(b *testing.B) { benchBusy(b, false) }
func BenchmarkBusyCountOnly(b *testing.B)   { benchBusy(b, true) }

// BenchmarkBusyRaw is the baseline: the same firmware and scenario in a bare
// engine with no hooks at all (the SCS page mapped as plain RAM), run from
// reset to the fault.
func BenchmarkBusyRaw(b *testing.B) {
	benchRaw(b, "testdata/fw-m4.elf", map[string]uint32{"crash_scenario": 10, "iterations": 20000}, uc.ErrWriteUnmapped)
}

// BenchmarkHeapLoopRaw is the allocation-heavy loop of the heap firmware
// (firmware-samples/heap, scenario 7, as emu/heap's BenchmarkHeapBusy*)
// with no hooks, to its semihosting exit (a BKPT the bare engine stops
// at): the raw speed of the firmware that faultline heap and QEMU are
// measured on (docs/emulator-speed.md).
func BenchmarkHeapLoopRaw(b *testing.B) {
	benchRaw(b, "../firmware-samples/heap/build/heap-c.elf", map[string]uint32{"heap_scenario": 7, "heap_iterations": 20000}, nil)
}

func benchRaw(b *testing.B, elf string, sets map[string]uint32, want error) {
	skipWithoutCgo(b)
	f, err := os.Open(elf)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	img, err := loadImage(elf, f)
	if err != nil {
		b.Fatal(err)
	}
	// The instruction count of the run, from the harness.
	cfgSets := map[string]uint64{}
	for k, v := range sets {
		cfgSets[k] = uint64(v)
	}
	var insns uint64
	res, err := Run(context.Background(), Config{ELF: elf, NoTruth: true, Timeout: 5 * time.Minute, Sets: cfgSets})
	var nf *NoFaultError
	switch {
	case err == nil:
		insns = res.Insns
	case errors.As(err, &nf):
		insns = nf.Insns
	default:
		b.Fatal(err)
	}
	name := img.cpu
	if name == "" {
		name = "cortex-m4"
	}
	cpu, err := lookupCPU(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for i := 0; i < b.N; i++ {
		e, err := uc.Open(cpu.model)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range img.regions {
			must(b, e.MemMap(uint64(r.Addr), uint64(r.Size), r.Perm))
		}
		must(b, e.MemMap(scsBase, scsSize, uc.PermRead|uc.PermWrite))
		for _, c := range img.chunks {
			must(b, e.MemWrite(uint64(c.addr), c.data))
		}
		for name, v := range sets {
			s := img.byName[name]
			var buf [4]byte
			binary.LittleEndian.PutUint32(buf[:], v)
			for _, a := range append(img.loadAddrs(s.addr), s.addr) {
				must(b, e.MemWrite(uint64(a), buf[:]))
			}
		}
		must(b, e.RegWrite(uc.RegMSP, uint64(img.sp)))
		main := uint64(img.byName["main"].addr)
		must(b, e.Start(uint64(img.pc), main, time.Minute, 0))
		for name, v := range sets {
			var buf [4]byte
			binary.LittleEndian.PutUint32(buf[:], v)
			must(b, e.MemWrite(uint64(img.byName[name].addr), buf[:]))
		}
		err = e.Start(main|1, returnAddr, time.Minute, 0)
		if want != nil && !errors.Is(err, want) {
			b.Fatalf("raw run ended with %v", err)
		}
		e.Close()
	}
	b.ReportMetric(float64(insns)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MIPS")
	// Per CPU second of the whole process: steadier than wall time on a
	// machine shared with other work.
	var ru1 syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru1) == nil {
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		if cpu > 0 {
			b.ReportMetric(float64(insns)*float64(b.N)/cpu.Seconds()/1e6, "MIPS/cpu")
		}
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// benchNoReplay runs the busy scenario for a fixed instruction budget that
// ends before its fault, so no exact-PC replay is involved: it measures the
// shadow stack's own cost (BenchmarkBusyShadowNoReplay vs
// BenchmarkBusyCountNoReplay vs BenchmarkBusyRaw; goal: shadow stack within
// 2.5x of no hooks).
func benchNoReplay(b *testing.B, noTruth bool) {
	skipWithoutCgo(b)
	const budget = 20_000_000
	var insns uint64
	for i := 0; i < b.N; i++ {
		_, err := Run(context.Background(), Config{ELF: "testdata/fw-m4.elf", NoTruth: noTruth, Timeout: 5 * time.Minute,
			MaxInsns: budget, Sets: map[string]uint64{"crash_scenario": 10, "iterations": 1 << 30}})
		var nf *NoFaultError
		if !errors.As(err, &nf) {
			b.Fatalf("want the instruction limit, got %v", err)
		}
		insns += nf.Insns
	}
	b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "MIPS")
}

func BenchmarkBusyShadowNoReplay(b *testing.B) { benchNoReplay(b, false) }
func BenchmarkBusyCountNoReplay(b *testing.B)  { benchNoReplay(b, true) }

// BenchmarkBusyMPURegion is BenchmarkBusyShadowNoReplay with the MPU
// enabled from the start (PRIVDEFENA and a 32-byte no-access region at 0,
// as the sample firmware sets it): every load and store then goes through
// the C data-access hook (checks.go). Compare with
// BenchmarkBusyShadowNoReplay for the cost of the MPU checks.
func BenchmarkBusyMPURegion(b *testing.B) {
	testSetup = func(m *machine) error {
		m.scs.MPURASR[0] = 4<<1 | 1 // 32 bytes at 0, AP=000, enabled
		m.scs.MPUCtrl = mpuEnable | mpuPRIVDEFENA
		return m.syncChecks()
	}
	defer func() { testSetup = nil }()
	benchNoReplay(b, false)
}
