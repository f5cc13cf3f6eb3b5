package emu

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// The heap probe's access checks (use after free, overflow) need the
// data-access hook, and Unicorn decides when it translates a block whether
// the block's loads and stores call the hook: while any UC_HOOK_MEM_READ or
// UC_HOOK_MEM_WRITE hook exists, every load and store of every block
// translated then goes through Unicorn's helper, whatever the hook's
// range, and a block translated while none exists keeps the inline TLB
// fast path for good (docs/unicorn.md; emu/uc/check.c).
//
// The accesses the allocator makes itself are never checked (HeapWatch
// "inside": they are its bookkeeping), and on allocation-heavy code they are
// most of the accesses. So a heap run does not install the hook at the
// start. Nothing can be checked before the first allocation anyway. The
// block hook stops the run before the first block that enters a hooked
// allocator (Tracker.SetEntryStop) and there, with the core in the state the
// allocator runs in:
//
//  1. the blocks that ran so far are dropped (Tracker.DropSeen), so that
//     they are translated again with the hook;
//  2. the code of each hooked allocator function, and of each function
//     that only the allocator calls (allocatorCallees: heap_4's list
//     insertion, but not memset, which the firmware may call on a freed
//     block itself), is translated without the hook (Engine.RequestTB),
//     block by block from its entry within its ELF symbol's extent,
//     following the fall-through and the direct branches inside it;
//  3. the hook is installed, and the run goes on.
//
// Those blocks then run at full speed, and every other block, including
// any block of the allocator translated later (another core state, a block
// start the walk did not predict), has the hook. The checks see exactly
// what they saw before: the accesses left unchecked are ones made while the
// allocator runs, which the watcher ignores. The MPU and alignment checks
// share the hook: they install it themselves, so no block is translated
// without it while they are on, and when they come on later the
// pre-translated blocks are dropped (dropAllocatorBlocks).

// maxPretranslated bounds the blocks translated ahead for all allocator
// functions together.
const maxPretranslated = 4096

// armAllocatorEntry is called by startProbe instead of installing the
// data-access hook.
func (m *machine) armAllocatorEntry() {
	m.tr.SetEntryStop(true)
	m.entryArmed = true
}

// allocatorEntry handles the stop before the first allocator entry: it
// translates the allocator's code and installs the data-access hook.
func (m *machine) allocatorEntry() error {
	m.tr.ClearEntryHit()
	m.entryArmed = false
	if m.tr.MemHook() {
		return nil // a check installed it meanwhile
	}
	start := time.Now()
	if _, err := m.tr.DropSeen(); err != nil {
		return err
	}
	if m.scs.MPUCtrl&mpuEnable == 0 {
		m.allocCode = append(append([]uint32(nil), m.probe.entries...), m.img.allocatorCallees(m.probe.entries)...)
		// A failed request only leaves blocks to be translated with
		// the hook: the run goes on, slower.
		n, _ := m.pretranslate(m.allocCode)
		m.pretranslated = n > 0
		m.pretranslatedBlocks = n
	}
	if err := m.tr.SetMemHook(true); err != nil {
		return err
	}
	m.flushTime += time.Since(start)
	m.flushes++
	return nil
}

// dropAllocatorBlocks drops the blocks pretranslate made, so that they are
// translated again with the data-access hook the MPU or alignment checks
// need.
func (m *machine) dropAllocatorBlocks() error {
	if !m.pretranslated {
		return nil
	}
	m.pretranslated = false
	for _, a := range m.allocCode {
		end, ok := m.img.funcEnd(a)
		if !ok {
			continue
		}
		if err := m.eng.RemoveTBs(uint64(a), uint64(end)); err != nil {
			return err
		}
	}
	return nil
}

// pretranslate translates the blocks of the functions entered at entries,
// for the core's current state, and returns how many it asked for.
func (m *machine) pretranslate(entries []uint32) (int, error) {
	page, err := m.eng.PageSize()
	if err != nil || page == 0 || page&(page-1) != 0 {
		page = 4096
	}
	mem := engineMemory{m.eng}
	done := make(map[uint32]bool)
	n := 0
	for _, entry := range entries {
		end, ok := m.img.funcEnd(entry)
		if !ok {
			continue
		}
		work := []uint32{entry &^ 1}
		for len(work) > 0 && n < maxPretranslated {
			a := work[len(work)-1]
			work = work[:len(work)-1]
			if done[a] || a < entry || a >= end || !m.translatable(a, uint32(page)) {
				continue
			}
			done[a] = true
			size, _, err := m.eng.RequestTB(a)
			if err != nil {
				return n, fmt.Errorf("translating the allocator's code: %w", err)
			}
			n++ // counted even when empty: RemoveTBs covers the function
			if size == 0 {
				continue
			}
			next, targets, fall := blockExits(mem, a, a+size)
			work = append(work, targets...)
			if fall {
				work = append(work, next)
			}
		}
	}
	return n, nil
}

// translatable says whether a block may be translated ahead at addr:
// executable memory of the default map (the MPU is off) past the first
// words, backed by RAM the
// firmware image or Config.Maps mapped, with the rest of addr's page and
// the first halfwords of the next inside it (the translator reads up to the
// end of the page, and a 32-bit instruction may straddle it). A
// translation that faulted could not be recovered outside the emulation.
func (m *machine) translatable(addr, page uint32) bool {
	if addr >= 0xA0000000 || (addr >= 0x40000000 && addr < 0x60000000) {
		return false // execute-never in the default memory map (B3.1)
	}
	if addr < 0x10 {
		// Unicorn 2.0.1 raises an exception translating at address 0
		// (addresses 2 to 0x1000 were tried and work), which outside the
		// emulation is a crash; the first words are a vector table's
		// anyway.
		return false
	}
	limit := uint64(addr|(page-1)) + 1 + 4
	for _, r := range m.regions {
		if r.Zero || r.Perm&uc.PermExec == 0 {
			continue
		}
		if uint64(addr) >= uint64(r.Addr) && limit <= r.End() {
			return true
		}
	}
	return false
}

// blockExits decodes the block [start, end) and returns the address after
// it, the targets of a direct branch that ends it (B, B<c>, CBZ, CBNZ), and
// whether execution may continue at end (anything but an unconditional
// branch, BX, a return or a table branch).
func blockExits(mem unwinders.Memory, start, end uint32) (next uint32, targets []uint32, fall bool) {
	d := thumb.NewDecoder(mem, start, end)
	var in, last thumb.Inst
	got := false
	for {
		err := d.Next(&in)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return end, nil, false
		}
		last, got = in, true
	}
	if !got {
		return end, nil, false
	}
	cond := last.IsConditional()
	switch last.Op {
	case thumb.OpB, thumb.OpCBZ, thumb.OpCBNZ:
		return end, []uint32{last.Target &^ 1}, cond
	case thumb.OpTBB, thumb.OpTBH:
		return end, nil, false
	}
	if last.IsCall() {
		return end, nil, true
	}
	if last.WritesPC() {
		return end, nil, cond
	}
	return end, nil, true
}

// engineMemory reads guest memory through the engine (unwinders.Memory).
type engineMemory struct{ e *uc.Engine }

func (mm engineMemory) Read(addr uint32, p []byte) error {
	return mm.e.MemRead(uint64(addr), p)
}

// maxCalleeScan bounds the code the callee analysis decodes.
const maxCalleeScan = 16 << 20

// allocatorCallees returns the start of every function that only the
// allocator calls: reached by direct calls or branches (BL, B) from the
// functions entered at entries or from other such functions, and from
// nowhere else, with its address never taken (no word of the image, at any
// halfword offset, holds it with the Thumb bit, and no MOVW loads its low
// half). FreeRTOS heap_4's list insertion and newlib's lock calls are such
// functions; their accesses are the allocator's own, so their blocks are
// translated ahead too. Any doubt makes a function not private: a function
// whose extent is unknown or cannot be read stops the analysis (nil).
func (img *image) allocatorCallees(entries []uint32) []uint32 {
	starts, ends := img.funcRanges()
	index := make(map[uint32]int, len(starts))
	low := make(map[uint32][]uint32) // low halfword of start|1 -> starts
	for i, s := range starts {
		index[s] = i
		low[(s|1)&0xffff] = append(low[(s|1)&0xffff], s)
	}
	taken := make(map[uint32]bool)
	for _, c := range img.chunks {
		for off := 0; off+4 <= len(c.data); off += 2 {
			v := uint32(c.data[off]) | uint32(c.data[off+1])<<8 | uint32(c.data[off+2])<<16 | uint32(c.data[off+3])<<24
			if v&1 == 1 {
				if _, ok := index[v&^1]; ok {
					taken[v&^1] = true
				}
			}
		}
	}
	callers := make(map[uint32][]int)
	mem := imageMemory{img}
	scanned := 0
	for i := range starts {
		if ends[i] == 0xFFFFFFFF || ends[i] <= starts[i] {
			return nil
		}
		scanned += int(ends[i] - starts[i])
		if scanned > maxCalleeScan {
			return nil
		}
		d := thumb.NewDecoder(mem, starts[i], ends[i])
		var in thumb.Inst
		for {
			err := d.Next(&in)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil
			}
			switch in.Op {
			case thumb.OpBL, thumb.OpB:
				t := in.Target &^ 1
				if j, ok := index[t]; ok && j != i {
					callers[t] = append(callers[t], i)
				}
			case thumb.OpMOVW:
				for _, s := range low[uint32(in.Imm)&0xffff] {
					taken[s] = true
				}
			}
		}
	}
	in := make(map[int]bool)
	for _, e := range entries {
		if j, ok := index[e&^1]; ok {
			in[j] = true
		}
	}
	var out []uint32
	for changed := true; changed; {
		changed = false
		for t, cs := range callers {
			j := index[t]
			if in[j] || taken[t] {
				continue
			}
			private := true
			for _, c := range cs {
				if !in[c] {
					private = false
					break
				}
			}
			if private {
				in[j] = true
				out = append(out, t)
				changed = true
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// imageMemory reads the firmware image's bytes (unwinders.Memory).
type imageMemory struct{ img *image }

func (mm imageMemory) Read(addr uint32, p []byte) error {
	if !mm.img.read(addr, p) {
		return fmt.Errorf("%#08x is not in the image", addr)
	}
	return nil
}
