package emu

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// TestRunFreesEverything runs Run 300 times (60 with -short) over configs
// that reach every allocation of the binding: engines, the C tracker and
// its code hooks (MPU XN ranges, alignment and divide checks), Go hooks,
// MMIO maps (the SCS, --map zero), checkpoint contexts and the exact-PC
// replay, nested exceptions, the fault handler run (--run-handler),
// no-fault endings, configuration errors after the engine was opened, and
// a cancelled context. After every Run the binding's live counts
// (uc.Live) must be zero, and the resident set size must level off. Run it
// with -race too (the counters are atomics; Run must not race with its own
// hooks).
func TestRunFreesEverything(t *testing.T) {
	skipWithoutCgo(t)
	if l := uc.Live(); l != (uc.LiveCounts{}) {
		t.Fatalf("live objects before the test: %+v (another test leaked)", l)
	}
	sc := func(n uint64) map[string]uint64 { return map[string]uint64{"crash_scenario": n} }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		cfg  Config
	}{
		{"bus fault", nil, Config{ELF: "testdata/fw-m4.elf", Sets: sc(1)}},
		{"divide trap", nil, Config{ELF: "testdata/fw-m4.elf", Sets: sc(4)}},
		{"mpu xn", nil, Config{ELF: "testdata/checks-m4.elf", Sets: sc(7)}},
		{"stacking fault", nil, Config{ELF: "testdata/checks-m4.elf", Sets: sc(8)}},
		{"threads", nil, Config{ELF: "testdata/checks-m3.elf", Sets: sc(11)}},
		{"pmsav8", nil, Config{ELF: "testdata/pmsav8-m33.elf", Sets: sc(2)}},
		{"nested irqs", nil, Config{ELF: "testdata/irq-m3.elf", Sets: sc(4)}},
		{"systick", nil, Config{ELF: "testdata/irq-m3.elf", Sets: map[string]uint64{"crash_scenario": 1, "reload": 99}}},
		{"map zero", nil, Config{ELF: "testdata/edges-m4.elf", Sets: sc(1), Maps: []Region{{Addr: 0x40010000, Size: 0x1000, Zero: true}}}},
		{"garbage", nil, Config{ELF: "testdata/edges-m4.elf", Sets: map[string]uint64{"crash_scenario": 5, "garbage_offset": 40}}},
		{"run handler", nil, Config{ELF: "testdata/semihost-m3.elf", RunHandler: true}},
		{"no fault", nil, Config{ELF: "testdata/edges-m4.elf", Sets: sc(4), MaxInsns: 20_000}},
		{"irq flag", nil, Config{ELF: "testdata/fw-m4.elf", Sets: sc(12), IRQs: []IRQ{{Exception: 15, At: 100}}, MaxInsns: 5_000}},
		{"bad call", nil, Config{ELF: "testdata/fw-m4.elf", Call: "no_such_function"}},
		{"cancelled", cancelled, Config{ELF: "testdata/fw-m4.elf", Sets: sc(1)}},
	}
	n := 300
	if testing.Short() {
		n = 60
	}
	warm := n / 2 // allocator caches fill up during the first runs
	goroutines := runtime.NumGoroutine()
	var rssWarm int64
	start := time.Now()
	for i := 0; i < n; i++ {
		c := cases[i%len(cases)]
		ctx := c.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		cfg := c.cfg
		if cfg.MaxInsns == 0 {
			cfg.MaxInsns = 2_000_000
		}
		cfg.Timeout = time.Minute
		res, err := Run(ctx, cfg)
		switch {
		case c.name == "bad call" || c.name == "cancelled" || c.name == "no fault" || c.name == "irq flag":
			if err == nil {
				t.Fatalf("%s: no error", c.name)
			}
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case res.Cause.Fault == "":
			t.Fatalf("%s: no cause", c.name)
		}
		if c.name == "cancelled" && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		if l := uc.Live(); l != (uc.LiveCounts{}) {
			t.Fatalf("after run %d (%s): live objects %+v", i, c.name, l)
		}
		if i+1 == warm {
			rssWarm = rss(t)
		}
	}
	elapsed := time.Since(start)
	grown := rss(t) - rssWarm
	t.Logf("%d runs in %v (%v each); RSS after %d runs %d MiB, grew %d KiB over the remaining %d",
		n, elapsed.Round(time.Millisecond), (elapsed / time.Duration(n)).Round(time.Microsecond),
		warm, rssWarm>>20, grown>>10, n-warm)
	// A leaked tracker alone is 128 KiB and a leaked engine several MiB.
	if grown > 16<<20 {
		t.Errorf("resident set grew by %d MiB over %d runs after warming up", grown>>20, n-warm)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines after the runs, %d before", g, goroutines)
	}
}

// rss returns the resident set size after a garbage collection that
// returns freed Go memory to the OS (Linux /proc/self/statm).
func rss(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm: ", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}
