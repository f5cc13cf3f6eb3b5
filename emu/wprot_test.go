package emu

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"testing"
	"time"
)

// Issue 23, item 14: a write to read-only memory by a conditional store
// in an IT block, in a leaf function (a comparator). Unicorn skips such a
// write and runs the rest of the block, so the core was captured past the
// store, back in the caller: the fault at the caller's return address, the
// leaf's frame lost, r0 its return value. The fault must be the store's:
// its PC, the leaf first in the truth, the stacked frame of the state
// before the store (PC at the store, its IT state in xPSR, LR into the
// caller, r0 the pointer the store used).
func TestWriteProtInITBlock(t *testing.T) {
	skipWithoutCgo(t)
	res, err := Run(context.Background(), Config{ELF: "testdata/wprot-m3.elf", MaxInsns: 1_000_000, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open("testdata/wprot-m3.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var leaf, caller elf.Symbol
	for _, s := range syms {
		switch s.Name {
		case "note_equal":
			leaf = s
		case "count_less":
			caller = s
		}
	}
	lo, hi := uint32(leaf.Value&^1), uint32(leaf.Value&^1)+uint32(leaf.Size)
	pc := res.Cause.PC
	if pc < lo || pc >= hi {
		t.Fatalf("fault at %#x, want in note_equal [%#x, %#x)", pc, lo, hi)
	}
	// The instruction there is the store: STR (immediate) T1, 01100.
	var insn [2]byte
	text := f.Section(".text")
	if _, err := text.ReadAt(insn[:], int64(pc-uint32(text.Addr))); err != nil {
		t.Fatal(err)
	}
	if h := binary.LittleEndian.Uint16(insn[:]); h>>11 != 0x0c {
		t.Errorf("the instruction at %#x is %#04x, not a STR", pc, h)
	}
	if res.Exception != 3 || res.Fault.BFAR != 0xe8 || res.Fault.CFSR != 0x8200 {
		t.Errorf("exception %d CFSR %#x BFAR %#x; want HardFault, PRECISERR|BFARVALID, 0xe8 (table[1])", res.Exception, res.Fault.CFSR, res.Fault.BFAR)
	}
	fr := stacked(t, res)
	clo, chi := uint32(caller.Value&^1), uint32(caller.Value&^1)+uint32(caller.Size)
	it := fr[7]>>25&3 | fr[7]>>8&0xfc
	if fr[6] != pc || fr[0] != 0xe8 || fr[5]&^1 < clo || fr[5]&^1 >= chi || it == 0 {
		t.Errorf("stacked r0 %#x lr %#x pc %#x xPSR %#x (IT %#x); want r0 0xe8 (the pointer), lr into count_less, pc %#x, an IT state", fr[0], fr[5], fr[6], fr[7], it, pc)
	}
	var fns []string
	for _, fr := range res.Truth {
		if fr.Kind != FrameException {
			fns = append(fns, fr.Function)
		}
	}
	if len(fns) < 4 || fns[1] != "note_equal" || fns[2] != "count_less" || fns[3] != "main" {
		t.Errorf("truth %v; want HardFault_Handler, note_equal, count_less, main", fns)
	}
}
