package heap

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
)

// Reachability of a block live at the end of the run, as valgrind's leak
// check names it: a chain of pointers to its start from the roots (the
// core's registers and memory outside the heap's blocks) keeps it still
// reachable; a chain with a pointer into its middle, possibly lost; no
// chain, lost: indirectly when a lost block points to it, definitely
// otherwise.
const (
	StillReachable = "still-reachable"
	PossiblyLost   = "possibly-lost"
	IndirectlyLost = "indirectly-lost"
	DefinitelyLost = "definitely-lost"
)

// ReachOrder lists the reachability classes, most severe first.
var ReachOrder = []string{DefinitelyLost, IndirectlyLost, PossiblyLost, StillReachable}

// allocatorState names the allocators' own variables (newlib's malloc
// state, newlib-nano's free list and sbrk start, FreeRTOS heap_4's list
// ends), which are not roots.
var allocatorState = []string{
	"__malloc_av_", "__malloc_top_pad", "__malloc_sbrk_base", "__malloc_max_sbrked_mem",
	"__malloc_max_total_mem", "__malloc_current_mallinfo", "__malloc_trim_threshold",
	"__malloc_free_list", "__malloc_sbrk_start", "free_list", "sbrk_start",
	"xStart", "pxEnd",
}

// maxReachScan bounds the memory read for the scan.
const maxReachScan = 256 << 20

// Finish implements emu.FinishProbe: it finds which live blocks are still
// reachable at the end of the run. The roots are the core registers r0-r12
// and LR and every writable region's words except those inside heap
// blocks (live, or freed and remembered) and the dead part of each stack
// (below MSP and PSP, down to the data object or block nearest below).
func (t *Tracker) Finish(r *emu.ProbeRun) {
	t.reach, t.reachNote = nil, ""
	var live []rec
	for i := range t.st.slots {
		if t.st.slots[i].state == slotLive {
			live = append(live, t.st.slots[i].b)
		}
	}
	if len(live) == 0 {
		return
	}
	sort.Slice(live, func(i, j int) bool { return live[i].addr < live[j].addr })
	var mem []emu.Region
	var data [][]byte
	total := 0
	for _, g := range r.Writable() {
		if total+int(g.Size) > maxReachScan {
			t.reachNote = fmt.Sprintf("not scanned for pointers: more than %d MiB of writable memory", maxReachScan>>20)
			return
		}
		b := make([]byte, g.Size)
		if err := r.ReadMem(g.Addr, b); err != nil {
			t.reachNote = fmt.Sprintf("not scanned for pointers: reading memory at %#08x: %v", g.Addr, err)
			return
		}
		mem, data = append(mem, g), append(data, b)
		total += int(g.Size)
	}
	word := func(a uint32) (uint32, bool) {
		for i, g := range mem {
			if a >= g.Addr && uint64(a)+4 <= g.End() {
				return binary.LittleEndian.Uint32(data[i][a-g.Addr:]), true
			}
		}
		return 0, false
	}
	// find returns the live block holding v and whether v is its start.
	find := func(v uint32) (int, bool, bool) {
		i := sort.Search(len(live), func(i int) bool { return live[i].addr > v }) - 1
		if i < 0 || v-live[i].addr >= live[i].size {
			return 0, false, false
		}
		return i, v == live[i].addr, true
	}

	// Memory that is not a root: the blocks, and the dead stacks.
	type span struct{ lo, hi uint32 }
	var skip []span
	for i := range t.st.slots {
		sl := &t.st.slots[i]
		switch sl.state {
		case slotLive:
			skip = append(skip, span{sl.b.addr, sl.b.addr + sl.b.size})
		case slotFreed:
			skip = append(skip, span{sl.b.addr, sl.b.addr + sl.b.size + pad(sl.b.addr, sl.b.size)})
		}
	}
	// The allocator's own state points into the heap (newlib's top
	// chunk, whose header a small block's usable size overlaps): it keeps
	// nothing reachable.
	for _, n := range allocatorState {
		if a, size, fn, ok := r.Symbol(n); ok && !fn && size > 0 {
			skip = append(skip, span{a, a + size})
		}
	}
	objs := r.Objects()
	msp, psp := r.StackPointers()
	for _, sp := range []uint32{msp, psp} {
		g, ok := r.RegionAt(sp)
		if sp == 0 || !ok || g.Perm&uc.PermWrite == 0 {
			continue
		}
		lo := g.Addr
		below := func(a, end uint32) {
			switch {
			case a <= sp && sp < end:
				lo = max(lo, a)
			case end <= sp:
				lo = max(lo, end)
			}
		}
		for _, o := range objs {
			below(o.Addr, o.Addr+o.Size)
		}
		for _, s := range skip {
			below(s.lo, s.hi)
		}
		skip = append(skip, span{lo, sp})
	}
	sort.Slice(skip, func(i, j int) bool { return skip[i].lo < skip[j].lo })

	const (
		unknown = iota
		reachable
		possibly
	)
	state := make([]uint8, len(live))
	var queue []int
	// visit follows the pointer v found in a root or in a block of class
	// from: a start pointer keeps reachable, any pointer from a possibly
	// lost block or into a block's middle makes possibly lost.
	visit := func(v uint32, from uint8, interior bool) {
		i, start, ok := find(v)
		if !ok {
			return
		}
		switch {
		case from == reachable && start:
			if state[i] != reachable {
				state[i] = reachable
				queue = append(queue, i)
			}
		case interior && state[i] == unknown:
			state[i] = possibly
			queue = append(queue, i)
		}
	}
	scan := func(lo, hi uint32, from uint8, interior bool) {
		for a := (lo + 3) &^ 3; uint64(a)+4 <= uint64(hi); a += 4 {
			if v, ok := word(a); ok {
				visit(v, from, interior)
			}
		}
	}
	roots := func(interior bool) {
		for _, reg := range []uc.Reg{uc.RegR0, uc.RegR0 + 1, uc.RegR0 + 2, uc.RegR0 + 3, uc.RegR0 + 4, uc.RegR0 + 5,
			uc.RegR0 + 6, uc.RegR0 + 7, uc.RegR0 + 8, uc.RegR0 + 9, uc.RegR0 + 10, uc.RegR0 + 11, uc.RegR0 + 12, uc.RegLR} {
			visit(r.Reg(reg), reachable, interior)
		}
		for _, g := range mem {
			at := g.Addr
			end := uint32(min(g.End(), 1<<32-4))
			for _, s := range skip {
				if s.hi <= at || s.lo >= end {
					continue
				}
				if s.lo > at {
					scan(at, s.lo, reachable, interior)
				}
				at = max(at, s.hi)
			}
			if at < end {
				scan(at, end, reachable, interior)
			}
		}
	}
	drainQ := func(interior bool) {
		for len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			scan(live[i].addr, live[i].addr+live[i].size, state[i], interior)
		}
	}
	// Start pointers first (reachable), then any pointer (possibly lost).
	roots(false)
	drainQ(false)
	for i := range live {
		if state[i] == reachable {
			queue = append(queue, i)
		}
	}
	roots(true)
	drainQ(true)

	// The rest is lost: indirectly when another lost block points to it.
	pointedByLost := make([]bool, len(live))
	for i := range live {
		if state[i] != unknown {
			continue
		}
		for a := live[i].addr &^ 3; uint64(a)+4 <= uint64(live[i].addr)+uint64(live[i].size); a += 4 {
			if v, ok := word(a); ok {
				if j, _, ok := find(v); ok && j != i && state[j] == unknown {
					pointedByLost[j] = true
				}
			}
		}
	}
	t.reach = make(map[uint32]string, len(live))
	for i, b := range live {
		switch {
		case state[i] == reachable:
			t.reach[b.addr] = StillReachable
		case state[i] == possibly:
			t.reach[b.addr] = PossiblyLost
		case pointedByLost[i]:
			t.reach[b.addr] = IndirectlyLost
		default:
			t.reach[b.addr] = DefinitelyLost
		}
	}
}
