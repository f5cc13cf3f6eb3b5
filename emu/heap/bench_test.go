package heap

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
)

// benchBusy runs the allocation-heavy loop of the heap firmware (scenario
// 7: two allocations and two frees per round) to its exit, plain (as
// faultline emulate runs it) or with the allocator hooked (faultline
// heap), and reports guest MIPS and allocator calls per second. The goal:
// hooked at most 1.5x the plain time.
func benchBusy(b *testing.B, elf string, hooked bool) {
	if _, err := uc.Open(uc.CortexM3); errors.Is(err, uc.ErrUnavailable) {
		b.Skip("emulation unavailable")
	}
	const rounds = 20000
	var insns uint64
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		cfg := emu.Config{ELF: "../../firmware-samples/heap/build/" + elf, Timeout: 5 * time.Minute,
			Sets: map[string]uint64{"heap_scenario": 7, "heap_iterations": rounds}}
		var t *Tracker
		if hooked {
			t = New(Options{Funcs: KnownFuncs()})
			cfg.Probe = t
		}
		_, err := emu.Run(context.Background(), cfg)
		var nf *emu.NoFaultError
		if !errors.As(err, &nf) {
			b.Fatalf("want the semihosting exit, got %v", err)
		}
		insns += nf.Insns
		if t != nil {
			r, err := t.Report()
			if err != nil {
				b.Fatal(err)
			}
			if r.Allocs < 2*rounds || r.LiveBlocks != 0 || len(r.Errors) != 0 {
				b.Fatalf("hooked run: %d allocations, %d live, %d errors", r.Allocs, r.LiveBlocks, len(r.Errors))
			}
		}
	}
	s := b.Elapsed().Seconds()
	// CPU time of the whole process (the GC's included) per run: steadier
	// than wall time on a machine shared with other work.
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(insns)/s/1e6, "MIPS")
	b.ReportMetric(float64(4*rounds*b.N)/s, "calls/s")
}

func BenchmarkHeapBusyNewlibPlain(b *testing.B)  { benchBusy(b, "heap-c.elf", false) }
func BenchmarkHeapBusyNewlibHooked(b *testing.B) { benchBusy(b, "heap-c.elf", true) }
func BenchmarkHeapBusyHeap4Plain(b *testing.B)   { benchBusy(b, "heap-rtos.elf", false) }
func BenchmarkHeapBusyHeap4Hooked(b *testing.B)  { benchBusy(b, "heap-rtos.elf", true) }

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
