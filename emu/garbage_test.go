package emu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Jumps into memory that holds no code (testdata/edges.c, edges-m4.elf):
// a garbage function pointer must end the run within the bounds with a
// fault or a NoFaultError that says which bound, never hang. Addresses
// from `arm-none-eabi-nm` and `readelf -l` of edges-m4.elf: the flash
// segment is [0, 0x290), mapped up to the 4 KiB boundary (zeros after the
// image); RAM is [0x20000000, 0x20010000).
const (
	edgesHardFault = 0x42
	edgesAllOnes   = 0x13c // const uint32_t all_ones[4]: 0xffffffff
	edgesSelfLoop  = 0x14c // const uint16_t self_loop[2]: 0xe7fe (b .)
	edgesNoise     = 0x150 // const uint32_t noise[64]
	edgesZeros     = 0x250 // const uint32_t flash_zeros[16], the last bytes of the image
	edgesFlashEnd  = 0x1000
	edgesRAMZeros  = 0x20000014
	edgesRAMEnd    = 0x20010000
)

// runBounded runs cfg and fails the test if Run does not return within
// limit: the property under test is that it always does.
func runBounded(t *testing.T, cfg Config, limit time.Duration) (*Result, error) {
	t.Helper()
	skipWithoutCgo(t)
	cfg.ELF = "testdata/edges-m4.elf"
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), cfg)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(limit):
		t.Fatalf("Run(%+v) did not return within %v", cfg, limit)
		return nil, nil
	}
}

func garbage(scenario uint64) Config {
	return Config{Sets: map[string]uint64{"crash_scenario": scenario}, MaxInsns: 1_000_000, Timeout: 30 * time.Second}
}

// TestGarbageAllOnes: 0xffffffff is UNDEFINED in Thumb (ARMv7-M ARM
// A5.3.18): UsageFault UNDEFINSTR at the data's address, reached through
// jump_to's BLX.
func TestGarbageAllOnes(t *testing.T) {
	res, err := runBounded(t, garbage(2), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, res, "UsageFault", edgesAllOnes, "UNDEFINSTR", "FORCED")
	if f := stacked(t, res); f[6] != edgesAllOnes || f[7]&xpsrT == 0 {
		t.Errorf("stacked pc %#x xpsr %#x", f[6], f[7])
	}
	wantTruth(t, res, "HardFault_Handler", "<exception>", "", "jump_to", "main", "Reset_Handler")
}

// TestGarbageFlashZeros: zeros decode as "movs r0, r0"; execution slides
// through them to the end of the flash mapping and the fetch there is a
// BusFault IBUSERR at that address.
func TestGarbageFlashZeros(t *testing.T) {
	res, err := runBounded(t, garbage(3), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, res, "BusFault", edgesFlashEnd, "IBUSERR", "FORCED")
	if f := stacked(t, res); f[6] != edgesFlashEnd {
		t.Errorf("stacked pc %#x, want %#x", f[6], edgesFlashEnd)
	}
	if n := uint64(edgesFlashEnd-edgesZeros) / 2; res.Insns < n || res.Insns > n+300 {
		t.Errorf("%d instructions, want the %d of the zeros plus the startup code", res.Insns, n)
	}
}

// TestGarbageRAMZeros: --call jump_ram branches into .bss; the zeros run up
// to the top of RAM (the stack is unused: nothing was pushed) and the fetch
// past it faults.
func TestGarbageRAMZeros(t *testing.T) {
	res, err := runBounded(t, Config{Call: "jump_ram", MaxInsns: 1_000_000, Timeout: 30 * time.Second}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, res, "BusFault", edgesRAMEnd, "IBUSERR", "FORCED")
	if n := uint64(edgesRAMEnd-edgesRAMZeros) / 2; res.Insns < n || res.Insns > n+10 {
		t.Errorf("%d instructions, want %d (the zeros) and the two of jump_ram", res.Insns, n)
	}
}

// TestGarbageSelfLoop: data that decodes as a branch to itself never
// faults; the run ends at the instruction limit, or at the timeout when
// the limit is out of reach, with a NoFaultError that says so and where.
func TestGarbageSelfLoop(t *testing.T) {
	_, err := runBounded(t, garbage(4), time.Minute)
	var nf *NoFaultError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNoFault) || nf.PC != edgesSelfLoop || nf.Insns < 1_000_000 ||
		!strings.Contains(nf.Reason, "instruction limit of 1000000") {
		t.Fatalf("err %v; want the instruction limit reached at %#x", err, edgesSelfLoop)
	}
	cfg := garbage(4)
	cfg.MaxInsns, cfg.Timeout = 1<<62, 300*time.Millisecond
	start := time.Now()
	_, err = runBounded(t, cfg, time.Minute)
	if !errors.As(err, &nf) || nf.PC != edgesSelfLoop || !strings.Contains(nf.Reason, "timeout of 300ms") {
		t.Fatalf("err %v; want the timeout reached at %#x", err, edgesSelfLoop)
	}
	t.Logf("timeout 300ms: returned after %v, %d instructions", time.Since(start), nf.Insns)
}

// TestGarbageNoise jumps to every halfword of 256 bytes of fixed
// pseudo-random data. Whatever the bytes decode to, each run must end with
// a fault (taken, or a lockup with the cause explained) or with a
// NoFaultError naming a bound: never another error, never a hang.
func TestGarbageNoise(t *testing.T) {
	outcomes := map[string]int{}
	for off := uint64(0); off < 256; off += 2 {
		cfg := Config{Sets: map[string]uint64{"crash_scenario": 5, "garbage_offset": off}, MaxInsns: 200_000, Timeout: 30 * time.Second}
		res, err := runBounded(t, cfg, time.Minute)
		var nf *NoFaultError
		switch {
		case errors.As(err, &nf):
			if !strings.Contains(nf.Reason, "instruction limit") {
				t.Errorf("offset %d: %v", off, err)
			}
			outcomes["instruction limit"]++
		case err != nil:
			t.Errorf("offset %d: %v", off, err)
		case res.Cause.Fault == "" || res.Cause.Detail == "":
			t.Errorf("offset %d: a result without a cause: %+v", off, res.Cause)
		case res.Lockup:
			if !strings.Contains(res.Cause.Detail, "lockup") {
				t.Errorf("offset %d: lockup without saying so: %q", off, res.Cause.Detail)
			}
			outcomes["lockup"]++
		default:
			// Nothing is enabled in SHCSR: every fault escalates.
			if res.Exception != excHardFault || res.Registers.PC != edgesHardFault || !res.Cause.Forced {
				t.Errorf("offset %d: exception %d pc %#x cause %+v", off, res.Exception, res.Registers.PC, res.Cause)
			}
			outcomes[res.Cause.Fault+" "+strings.Join(res.Cause.Bits, "|")]++
		}
	}
	t.Logf("outcomes of 128 jumps into noise: %v", fmt.Sprint(outcomes))
}
