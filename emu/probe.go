package emu

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/emu/uc"
)

// A Probe watches a run from inside the emulator without touching the
// firmware (faultline heap uses one, emu/heap). It is told when a block
// starts at an address it watches, before the block runs (with the
// registers of that moment: at a function's entry, its arguments and
// return address), and about data accesses that break the rules of the
// byte map it keeps over a memory range (uc.HeapWatch): an access into
// memory marked freed, a write into memory marked as bookkeeping or
// padding. Both run inside the emulation, so they must be quick; they
// reach the run through a ProbeRun.
//
// The harness checkpoints its state every few million instructions and
// may go back to the last checkpoint to replay (to find the exact PC of a
// data abort): Checkpoint is called at each checkpoint and Restore when
// the run goes back to it; the probe must then forget what it saw since.
type Probe interface {
	// Start is called once, after the image is loaded and before the
	// first instruction; it sets up its watches (ProbeRun.Attach).
	Start(r *ProbeRun) error
	// Block: a watched address starts a block.
	Block(r *ProbeRun, addr uint32)
	// Access: a checked access broke a rule of the map.
	Access(r *ProbeRun, a ProbeAccess)
	Checkpoint()
	Restore(r *ProbeRun) error
}

// ProbeAccess is an access the heap map's rules reject.
type ProbeAccess struct {
	Addr  uint32 // the first offending byte
	Size  int    // the access size
	Write bool
	State int    // the byte's map state (uc.HeapFreed, uc.HeapHeader, uc.HeapPad)
	Block uint32 // start of the translated block that made the access
}

// ProbeRun is a Probe's handle on the run.
type ProbeRun struct {
	m  *machine
	p  Probe
	hw *uc.HeapWatch
	// regs are r0-r3, SP and LR during a Block callback (nil otherwise).
	regs *uc.HeapRegs
	// The last Stacks, and what identified them.
	cache [16]stackEntry
	next  int
	key   []uint32
}

type stackEntry struct {
	pc, sp uint32
	depth  int
	key    []uint32
	stack  []TruthFrame
}

// startProbe attaches cfg.Probe; called by setup once the tracker exists,
// before any code is translated.
func (m *machine) startProbe() error {
	if m.cfg.NoTruth {
		return fmt.Errorf("emu: a probe needs the shadow call stack (NoTruth is set)")
	}
	r := &ProbeRun{m: m, p: m.cfg.Probe}
	m.probe = r
	if !m.tr.MemHook() {
		// ARMv6-M: the harness did not need the data-access hook.
		// Installed before the first block is translated, it reaches
		// every block.
		if err := m.tr.SetMemHook(true); err != nil {
			return fmt.Errorf("emu: %w", err)
		}
	}
	return r.p.Start(r)
}

// Attach creates the probe's watcher with a byte map over [base,
// base+size) (size 0: no map, no access checks).
func (r *ProbeRun) Attach(base, size uint32) error {
	if r.hw != nil {
		return fmt.Errorf("emu: probe attached twice")
	}
	const maxMap = 64 << 20
	if size > maxMap {
		return fmt.Errorf("emu: probe map of %d bytes at %#08x is larger than %d MiB", size, base, maxMap>>20)
	}
	hw, err := r.m.tr.NewHeapWatch(base, size,
		func(addr uint32, regs *uc.HeapRegs) {
			r.regs = regs
			r.p.Block(r, addr)
			r.regs = nil
		},
		func(addr uint32, size int, write bool, state int, block uint32) {
			r.p.Access(r, ProbeAccess{Addr: addr, Size: size, Write: write, State: state, Block: block})
		})
	if err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	r.hw = hw
	hw.Checks(size > 0)
	return nil
}

// Watch adds (on) or removes a watched block address.
func (r *ProbeRun) Watch(addr uint32, on bool) error { return r.hw.Watch(addr, on) }

// Mark sets the map state of [addr, addr+n); with soft, bytes marked
// uc.HeapLive keep their state.
func (r *ProbeRun) Mark(addr, n uint32, state int, soft bool) { r.hw.Mark(addr, n, state, soft) }

// ClearMap forgets every mark.
func (r *ProbeRun) ClearMap() { r.hw.ClearMap() }

// Inside says whether the code running is the allocator's own (its
// accesses are not checked).
func (r *ProbeRun) Inside(on bool) { r.hw.Inside(on) }

// ExpectReturn starts an allocator call (Inside) that ends when the block
// at ret runs with SP >= sp: reported to Block when goReturn, else ended
// without calling the probe.
func (r *ProbeRun) ExpectReturn(ret, sp uint32, goReturn bool) { r.hw.Expect(ret, sp, goReturn) }

// InsideNow reports whether an allocator call is in progress.
func (r *ProbeRun) InsideNow() bool { return r.hw.InsideNow() }

// Reg reads a core register.
func (r *ProbeRun) Reg(reg uc.Reg) uint32 {
	if r.regs != nil {
		switch {
		case reg >= uc.RegR0 && reg <= uc.RegR0+3:
			return r.regs[reg-uc.RegR0]
		case reg == uc.RegSP:
			return r.regs[4]
		case reg == uc.RegLR:
			return r.regs[5]
		}
	}
	return r.m.reg(reg)
}

// Read32 reads a little-endian word of guest memory.
func (r *ProbeRun) Read32(addr uint32) (uint32, error) {
	var b [4]byte
	if err := r.m.eng.MemRead(uint64(addr), b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// Insns is the number of guest instructions run so far (counted per
// block).
func (r *ProbeRun) Insns() uint64 { return r.m.tr.Insns() }

// Stack is the shadow call stack with pc as the innermost frame, as
// Result.Truth gives it at a fault: innermost first, return addresses
// after the first frame.
//
// The slice is shared with later calls that find the same stack: do not
// modify it. An allocation in a loop finds the same shadow stack every
// time; comparing its newest entries with the last capture's (the whole
// stack, up to stackKeyFrames deep) skips rebuilding it.
func (r *ProbeRun) Stack(pc uint32) []TruthFrame {
	const stackKeyFrames = 64
	var depth int
	r.key, depth = r.hw.StackKey(r.key, stackKeyFrames)
	sp := r.Reg(uc.RegSP)
	if depth > stackKeyFrames {
		return r.stack(pc)
	}
	for i := range r.cache {
		c := &r.cache[i]
		if c.stack != nil && c.pc == pc && c.sp == sp && c.depth == depth && slices.Equal(c.key, r.key) {
			return c.stack
		}
	}
	st := r.stack(pc)
	c := &r.cache[r.next]
	r.next = (r.next + 1) % len(r.cache)
	c.pc, c.sp, c.depth, c.stack = pc, sp, depth, st
	c.key = append(c.key[:0], r.key...)
	return st
}

func (r *ProbeRun) stack(pc uint32) []TruthFrame {
	sp := r.Reg(uc.RegSP)
	ipsr := r.m.reg(uc.RegIPSR) & 0x1ff
	psp := ipsr == 0 && r.m.reg(uc.RegCONTROL)&2 != 0
	return r.m.truth(pc&^1, sp, psp)
}

// Symbol returns a symbol's address (Thumb bit clear for functions) and
// size.
func (r *ProbeRun) Symbol(name string) (addr, size uint32, fn, ok bool) {
	s, ok := r.m.img.byName[name]
	return s.addr, s.size, s.fn, ok
}

// FuncAt names the function symbol containing addr ("" if none).
func (r *ProbeRun) FuncAt(addr uint32) string { return r.m.img.funcAt(addr) }

// RegionAt returns the memory region holding addr.
func (r *ProbeRun) RegionAt(addr uint32) (Region, bool) {
	for _, g := range r.m.regions {
		if g.contains(addr) {
			return g, true
		}
	}
	return Region{}, false
}
