package emu

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/emu/uc"
)

// A Probe watches a run from inside the emulator without touching the
// firmware (faultline heap uses one, emu/heap). It is told when a block
// starts at an address it watches (ProbeRun.Watch), before the block runs;
// and it may name allocator entry points (ProbeRun.HookFunc), whose calls
// and returns are handled in C as they happen (the live blocks and a byte
// map of block states over a memory range, uc.HeapWatch) and reported to
// a CallsProbe's Calls in batches, in order, each with its instruction
// count and call stack, without a callback per call. Data accesses that
// break the rules of the byte map (an access into memory marked freed, a
// write into memory marked as bookkeeping or padding) are reported to
// Access at once, after the calls before them. These run inside the
// emulation, so they must be quick; they reach the run through a
// ProbeRun.
//
// The harness checkpoints its state every few million instructions and
// may go back to the last checkpoint to replay (to find the exact PC of a
// data abort): Checkpoint is called at each checkpoint (after the calls up
// to it) and Restore when the run goes back to it; the probe must then
// forget what it saw since and give the C side its state back
// (ProbeRun.SetLive, SetPending, Mark). Calls not yet reported when the
// run goes back are dropped. The last calls are reported before Run
// returns.
type Probe interface {
	// Start is called once, after the image is loaded and before the
	// first instruction; it sets up its watches (ProbeRun.Attach,
	// HookFunc).
	Start(r *ProbeRun) error
	// Block: a watched address starts a block (ProbeRun.Reg reads the
	// registers of that moment: at a function's entry, its arguments
	// and return address).
	Block(r *ProbeRun, addr uint32)
	// Access: a checked access broke a rule of the map.
	Access(r *ProbeRun, a ProbeAccess)
	Checkpoint()
	Restore(r *ProbeRun) error
}

// A CallsProbe is told about the calls of the entry points it hooked
// (ProbeRun.HookFunc): entries and returns, oldest first. The slice is the
// C side's buffer: valid only during the call.
type CallsProbe interface {
	Probe
	Calls(r *ProbeRun, calls []ProbeCall)
}

// ProbeFunc describes an allocator entry point for HookFunc.
type ProbeFunc struct {
	Op               int // uc.HeapOp*
	Ptr, Size, Count int // argument registers (0-3) of the operands, -1: none
	Header           uint32
}

// ProbeCall is an allocator entry (Kind uc.HeapEntry), or the return of
// the call in progress (uc.HeapReturn). Func is the id given to HookFunc;
// Insn the guest instructions run when it happened (counted per block).
// Entry: the pointer operand (0 if none) and size (count*size for calloc,
// at most 2^32-1), the return address (bit 0 clear) and SP, and the
// interned call stack at the entry (ProbeRun.CallStack). Return: Ptr is r0
// (0 for a free).
type ProbeCall = uc.HeapEvent

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
	// entries are the hooked allocator entry points (HookFunc).
	entries []uint32
	// regs are r0-r3, SP and LR during a Block callback (nil otherwise).
	regs *uc.HeapRegs
	// The last Stacks, and what identified them.
	cache [16]stackEntry
	next  int
	key   []uint32
	// The call stacks of interned stack ids of generation gen.
	stacks [][]TruthFrame // by id (nil: not yet)
	gen    uint32
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
		return fmt.Errorf("a probe needs the shadow call stack (NoTruth is set)")
	}
	r := &ProbeRun{m: m, p: m.cfg.Probe}
	m.probe = r
	if err := r.p.Start(r); err != nil {
		return err
	}
	if !m.tr.MemHook() {
		if len(r.entries) > 0 && r.hw != nil {
			// Installed at the first allocator entry, after the
			// allocator's own code is translated without it
			// (pretranslate.go).
			m.armAllocatorEntry()
		} else if err := m.tr.SetMemHook(true); err != nil {
			// Installed before the first block is translated, the
			// data-access hook reaches every block.
			return err
		}
	}
	return nil
}

// Attach creates the probe's watcher with a byte map over [base,
// base+size) (size 0: no map, no access checks).
func (r *ProbeRun) Attach(base, size uint32) error {
	if r.hw != nil {
		return fmt.Errorf("probe attached twice")
	}
	const maxMap = 64 << 20
	if size > maxMap {
		return fmt.Errorf("probe map of %d bytes at %#08x is larger than %d MiB", size, base, maxMap>>20)
	}
	hw, err := r.m.tr.NewHeapWatch(base, size,
		func(addr uint32, regs *uc.HeapRegs) {
			r.regs = regs
			r.p.Block(r, addr)
			r.regs = nil
		},
		r.drain,
		func(addr uint32, size int, write bool, state int, block uint32) {
			r.drain()
			r.p.Access(r, ProbeAccess{Addr: addr, Size: size, Write: write, State: state, Block: block})
		})
	if err != nil {
		return err
	}
	r.hw = hw
	hw.Checks(size > 0)
	return nil
}

// Watch adds (on) or removes a watched block address.
func (r *ProbeRun) Watch(addr uint32, on bool) error { return r.hw.Watch(addr, on) }

// Inside says whether the code running is the allocator's own (its
// accesses are not checked).
func (r *ProbeRun) Inside(on bool) { r.hw.Inside(on) }

// ExpectReturn starts a watched call (Inside) that ends when the block at
// ret runs with SP >= sp: reported to Block when goReturn, else ended
// without calling the probe.
func (r *ProbeRun) ExpectReturn(ret, sp uint32, goReturn bool) { r.hw.Expect(ret, sp, goReturn) }

// HookFunc watches the allocator entry point at addr; its calls carry id
// and are reported to the probe's Calls (it must be a CallsProbe).
func (r *ProbeRun) HookFunc(addr uint32, id int, f ProbeFunc) error {
	if _, ok := r.p.(CallsProbe); !ok {
		return fmt.Errorf("the probe has no Calls method")
	}
	r.entries = append(r.entries, addr&^1)
	return r.hw.AddFunc(addr, uc.HeapFunc{Op: f.Op, Ptr: f.Ptr, Size: f.Size, Count: f.Count, Header: f.Header, ID: uint32(id)})
}

// drain reports the buffered calls to the probe, all at once.
func (r *ProbeRun) drain() {
	if r.hw == nil {
		return
	}
	if cp, ok := r.p.(CallsProbe); ok {
		if evs := r.hw.Events(); len(evs) > 0 {
			cp.Calls(r, evs)
		}
	}
	r.hw.EventsDone()
}

// StackGen changes whenever the interned stack ids of ProbeCall.Stack
// are reused for other stacks: a cache of CallStack results must then be
// emptied.
func (r *ProbeRun) StackGen() uint32 { return r.hw.StackGen() }

// CallStack returns the call stack of the interned stack id of a
// ProbeCall, as Stack gives it: the entry point, then return addresses
// (shared, do not modify; its exception frames carry no ExcReturn).
func (r *ProbeRun) CallStack(id uint32) []TruthFrame {
	if g := r.hw.StackGen(); g != r.gen {
		r.stacks = r.stacks[:0]
		r.gen = g
	}
	if int(id) < len(r.stacks) && r.stacks[id] != nil {
		return r.stacks[id]
	}
	pc, sp, psp, frames := r.hw.StackOf(id)
	st := r.m.truthOf(frames, pc, sp, psp)
	if int(id) < 1<<20 {
		for len(r.stacks) <= int(id) {
			r.stacks = append(r.stacks, nil)
		}
		r.stacks[id] = st
	}
	return st
}

// checkpoint reports the calls so far, then checkpoints the probe.
func (r *ProbeRun) checkpoint() {
	r.drain()
	r.p.Checkpoint()
}

// restore drops the calls not reported (they come after the checkpoint
// the run goes back to) and restores the probe.
func (r *ProbeRun) restore() error {
	if r.hw != nil {
		r.hw.EventsDone()
	}
	return r.p.Restore(r)
}

// A FinishProbe is told when the run has ended, before the engine
// closes: its memory and registers are as the run left them.
type FinishProbe interface {
	Probe
	Finish(r *ProbeRun)
}

// finish reports the last calls, then the end; Run calls it when the run
// ends.
func (r *ProbeRun) finish() {
	r.drain()
	if f, ok := r.p.(FinishProbe); ok {
		f.Finish(r)
	}
}

// ReadMem reads guest memory.
func (r *ProbeRun) ReadMem(addr uint32, p []byte) error {
	return r.m.eng.MemRead(uint64(addr), p)
}

// Writable returns the writable memory regions (RAM, rw maps).
func (r *ProbeRun) Writable() []Region {
	var out []Region
	for _, g := range r.m.regions {
		if g.Perm&uc.PermWrite != 0 && !g.Zero {
			out = append(out, g)
		}
	}
	return out
}

// Objects returns the firmware's data objects (ELF object symbols with a
// size), lowest address first.
func (r *ProbeRun) Objects() []Region {
	var out []Region
	for _, s := range r.m.img.byName {
		if !s.fn && s.size > 0 {
			out = append(out, Region{Addr: s.addr, Size: s.size, Name: s.name})
		}
	}
	slices.SortFunc(out, func(a, b Region) int {
		if a.Addr != b.Addr {
			return int(int64(a.Addr) - int64(b.Addr))
		}
		return int(int64(a.Size) - int64(b.Size))
	})
	return out
}

// StackPointers returns MSP and PSP as the core holds them now.
func (r *ProbeRun) StackPointers() (msp, psp uint32) {
	return r.m.sysReg(uc.RegMSP), r.m.sysReg(uc.RegPSP)
}

// Mark sets the map state of [addr, addr+n); with soft, bytes marked
// uc.HeapLive keep their state.
func (r *ProbeRun) Mark(addr, n uint32, state int, soft bool) { r.hw.Mark(addr, n, state, soft) }

// Fill sets the map state of the bytes of [addr, addr+n) that have none.
func (r *ProbeRun) Fill(addr, n uint32, state int) { r.hw.Fill(addr, n, state) }

// ClearMap forgets every mark.
func (r *ProbeRun) ClearMap() { r.hw.ClearMap() }

// SetLive replaces the C side's live blocks (Restore).
func (r *ProbeRun) SetLive(blocks []ProbeBlock) error {
	r.hw.ClearLive()
	for _, b := range blocks {
		if err := r.hw.PutLive(b.Addr, b.Size, b.Header); err != nil {
			return err
		}
	}
	return nil
}

// ProbeBlock is a live block as the C side keeps it.
type ProbeBlock struct{ Addr, Size, Header uint32 }

// SetPending makes p the allocator call in progress (nil: none): its
// accesses are not checked and its return is reported.
func (r *ProbeRun) SetPending(p *uc.HeapPending) { r.hw.SetPending(p) }

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
