package emu_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/scenario"
)

// --map ADDR:SIZE[:rw|rx|zero] end to end: the flag text goes through
// scenario.Trigger (exactly what `faultline emulate --map` parses) into
// emu.Run with testdata/edges-m4.elf, whose periph_poke reads 0x40010000,
// writes 0xc0ffee to 0x40010004 and reads it back; nothing in the ELF maps
// that page. Addresses from `arm-none-eabi-objdump -d` and `nm` of
// edges-m4.elf.
const (
	edgesUdf        = 0x44 // do_udf: the deliberate end of a run that did not fault earlier
	edgesPeriphLoad = 0x4a // periph_poke: ldr r1, [r2] (0x40010000)
	edgesPeriphStr  = 0x52 // periph_poke: str r1, [r2, #4] (0x40010004)
	edgesBefore     = 0x20000000
	edgesAfter      = 0x20000004
	edgesDone       = 0x20000008
)

func runMap(t *testing.T, maps ...string) *emu.Result {
	t.Helper()
	cfg, err := scenario.Trigger{Set: []string{"crash_scenario=1"}, Map: maps, MaxInsns: 100000}.Config("testdata/edges-m4.elf")
	if err != nil {
		t.Fatal(err)
	}
	res, err := emu.Run(context.Background(), cfg)
	if errors.Is(err, uc.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("--map %v: %v", maps, err)
	}
	return res
}

func memWord(t *testing.T, res *emu.Result, addr uint32) uint32 {
	t.Helper()
	for _, m := range res.Memory {
		if addr >= m.Addr && uint64(addr)+4 <= uint64(m.Addr)+uint64(len(m.Data)) {
			return binary.LittleEndian.Uint32(m.Data[addr-m.Addr:])
		}
	}
	t.Fatalf("%#x is not in the result's memory", addr)
	return 0
}

func wantFault(t *testing.T, res *emu.Result, fault string, pc uint32, bits string) {
	t.Helper()
	if res.Cause.Fault != fault || res.Cause.PC != pc || strings.Join(res.Cause.Bits, " ") != bits {
		t.Errorf("cause %s %v at %#x, want %s [%s] at %#x (%s)", res.Cause.Fault, res.Cause.Bits, res.Cause.PC, fault, bits, pc, res.Cause.Detail)
	}
}

func TestMapUnmappedPeripheral(t *testing.T) {
	res := runMap(t)
	wantFault(t, res, "BusFault", edgesPeriphLoad, "PRECISERR BFARVALID FORCED")
	if res.Fault.BFAR != 0x40010000 || res.Fault.CFSR != 0x8200 || !strings.Contains(res.Cause.Detail, "read from 0x40010000") {
		t.Errorf("BFAR %#x CFSR %#x detail %q", res.Fault.BFAR, res.Fault.CFSR, res.Cause.Detail)
	}
}

func TestMapReadWrite(t *testing.T) {
	res := runMap(t, "0x40010000:4k:rw")
	wantFault(t, res, "UsageFault", edgesUdf, "UNDEFINSTR FORCED")
	if b, a, d := memWord(t, res, edgesBefore), memWord(t, res, edgesAfter), memWord(t, res, edgesDone); b != 0 || a != 0xc0ffee || d != 1 {
		t.Errorf("periph_before %#x periph_after %#x done %d; want 0 (zero-filled), 0xc0ffee, 1", b, a, d)
	}
	// The mapped page is in the result (and so in the dump) with the store.
	var found bool
	for _, m := range res.Memory {
		if m.Name == "map" && m.Addr == 0x40010000 && len(m.Data) == 4096 {
			found = binary.LittleEndian.Uint32(m.Data[4:]) == 0xc0ffee
		}
	}
	if !found {
		t.Error("the rw map is not in Result.Memory with 0xc0ffee at +4")
	}
	// The default is rw.
	res = runMap(t, "0x40010000:0x1000")
	if a := memWord(t, res, edgesAfter); a != 0xc0ffee || res.Cause.PC != edgesUdf {
		t.Errorf("--map without a kind: periph_after %#x, cause at %#x", a, res.Cause.PC)
	}
}

// TestMapReadOnly: an rx map reads (zeros) but a store to it is a precise
// BusFault with BFAR, at the store, which did not land.
func TestMapReadOnly(t *testing.T) {
	res := runMap(t, "0x40010000:4k:rx")
	wantFault(t, res, "BusFault", edgesPeriphStr, "PRECISERR BFARVALID FORCED")
	if res.Fault.BFAR != 0x40010004 || res.Fault.CFSR != 0x8200 || res.Fault.HFSR != 1<<30 {
		t.Errorf("BFAR %#x CFSR %#x HFSR %#x; want 0x40010004, PRECISERR|BFARVALID, FORCED", res.Fault.BFAR, res.Fault.CFSR, res.Fault.HFSR)
	}
	if !strings.Contains(res.Cause.Detail, "write to 0x40010004") {
		t.Errorf("detail %q", res.Cause.Detail)
	}
	if d := memWord(t, res, edgesDone); d != 0 {
		t.Errorf("periph_done %d: the run went past the faulting store", d)
	}
	for _, m := range res.Memory {
		if m.Addr == 0x40010000 {
			t.Errorf("a read-only map is in Result.Memory (%s): only writable regions are", m.Name)
		}
	}
}

// TestMapZero: a zero map reads as zero and ignores writes (a peripheral
// stub); the run gets to its UDF.
func TestMapZero(t *testing.T) {
	res := runMap(t, "0x40010000:4k:zero")
	wantFault(t, res, "UsageFault", edgesUdf, "UNDEFINSTR FORCED")
	if a, d := memWord(t, res, edgesAfter), memWord(t, res, edgesDone); a != 0 || d != 1 {
		t.Errorf("periph_after %#x done %d; want 0 (the write was ignored), 1", a, d)
	}
}

// TestMapWrongPlace: a map that misses the peripheral changes nothing.
func TestMapWrongPlace(t *testing.T) {
	res := runMap(t, "0x40020000:4k:rw")
	wantFault(t, res, "BusFault", edgesPeriphLoad, "PRECISERR BFARVALID FORCED")
}
