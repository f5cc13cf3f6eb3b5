package heap

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/uc"
)

// Stack is a call stack, innermost first. For an allocator call its frames
// are return addresses (the allocator's own frame is left out); for an
// access, Exact says the first frame is the address of the code that made
// it (the start of its translated block) and the rest return addresses.
type Stack struct {
	PCs   []uint32
	Exact bool
}

// Block is a heap block.
type Block struct {
	Addr, Size uint32
	Via        string // the entry point that allocated it
	Alloc      Stack
	AllocInsn  uint64
	// Reach is the reachability of a block live at the end of the run
	// (StillReachable, ...); "" when not known.
	Reach string
	// For a freed block:
	FreedBy   string
	Free      Stack
	FreedInsn uint64
}

// Error kinds, as in faultline.heap/1.
const (
	DoubleFree  = "double-free"
	InvalidFree = "invalid-free"
	UseAfter    = "use-after-free"
	Overflow    = "overflow"
)

// Error is a heap error seen during the run.
type Error struct {
	Kind   string
	Addr   uint32 // the pointer freed, or the address accessed
	Size   int    // access size
	Write  bool
	Via    string // the entry point called (frees)
	Stack  Stack  // where it happened
	Insn   uint64
	Block  *Block // the block concerned (allocated and, if so, freed), nil if none
	Detail string
}

// Options configure a Tracker.
type Options struct {
	// Funcs are the entry points to hook: KnownFuncs(), or CustomFuncs.
	// Those without a function symbol in the image are skipped.
	Funcs []Func
	// MaxErrors bounds the errors kept (0: 1000); the rest are counted.
	MaxErrors int
}

// maxFreed bounds the freed blocks remembered for use-after-free and
// double-free reports.
const maxFreed = 8192

// rec is a block as the tracker keeps it (Block is made from it for a
// report): no allocation per call.
type rec struct {
	addr, size uint32
	fn         int32 // the entry point that allocated it (index in Tracker.hooked)
	insn       uint64
	stack      []uint32 // the allocation's return addresses (shared)
}

type call struct {
	id    int32  // the index of the entry point in Tracker.hooked
	ret   uint32 // return address (bit 0 clear)
	sp    uint32
	ptr   uint32
	size  uint32
	stack []uint32
	insn  uint64
	// realloc: the old block, removed at entry (hasOld false when none)
	old    rec
	hasOld bool
}

// A slot holds the block at an address: live, or freed and remembered
// (maxFreed of them). A block freed keeps its slot, and an allocation at
// the address of a remembered freed block takes it over: an
// allocation-heavy loop costs one map lookup per call.
type slot struct {
	state uint8 // slotSpare, slotLive, slotFreed
	b     rec
	// Freed: who freed it, and its place in the order of frees.
	by        int32
	freeStack []uint32
	freedInsn uint64
	seq       uint64
}

const (
	slotSpare = iota
	slotLive
	slotFreed
)

// fifoEnt is the place of a freed block in the order of frees: slot i
// while it still holds the block freed as seq.
type fifoEnt struct {
	i   int32
	seq uint64
}

type state struct {
	slots  []slot
	byAddr addrTable // the slot of each live or remembered freed block
	spare  []int32   // spare slots
	nlive  int
	nfreed int
	// fifo orders the freed blocks, oldest first; entries whose block was
	// forgotten since are skipped (and dropped when they pile up).
	fifo      []fifoEnt
	seq       uint64
	liveBytes uint64
	peakBytes uint64
	peakInsn  uint64
	peak      rec // the allocation that reached the peak (valid if peakOK)
	peakOK    bool
	allocs    uint64
	frees     uint64
	errors    []Error
	dropped   int
	seen      map[string]bool
	pending   []call
}

func (s *state) clone() state {
	c := *s
	c.slots = slices.Clone(s.slots)
	c.byAddr = s.byAddr.clone()
	c.spare = slices.Clone(s.spare)
	c.fifo = nil
	for _, e := range s.fifo {
		if s.current(e) {
			c.fifo = append(c.fifo, e)
		}
	}
	c.errors = append([]Error(nil), s.errors...)
	c.seen = maps.Clone(s.seen)
	c.pending = append([]call(nil), s.pending...)
	return c
}

// current says whether e is the place of a remembered freed block.
func (s *state) current(e fifoEnt) bool {
	sl := &s.slots[e.i]
	return sl.state == slotFreed && sl.seq == e.seq
}

// drop makes the slot of the block at addr spare.
func (s *state) drop(addr uint32) {
	i, ok := s.byAddr.get(addr)
	if !ok {
		return
	}
	if s.slots[i].state == slotFreed {
		s.nfreed--
	}
	s.slots[i] = slot{}
	s.byAddr.del(addr)
	s.spare = append(s.spare, i)
}

// setLive makes b (at an address other than 0) the live block at its
// address, in the slot of the
// block there (forgotten if freed) or a new one. It says whether a live
// block was there.
func (s *state) setLive(b *rec) (oldSize uint32, wasLive bool) {
	i, ok := s.byAddr.get(b.addr)
	if !ok {
		if n := len(s.spare); n > 0 {
			i = s.spare[n-1]
			s.spare = s.spare[:n-1]
		} else {
			i = int32(len(s.slots))
			s.slots = append(s.slots, slot{})
		}
		s.byAddr.put(b.addr, i)
	}
	sl := &s.slots[i]
	switch sl.state {
	case slotLive:
		oldSize, wasLive = sl.b.size, true
	case slotFreed:
		s.nfreed--
	}
	if !wasLive {
		s.nlive++
	}
	// Field by field: the freed fields are only read in a freed slot.
	sl.state, sl.b, sl.freeStack = slotLive, *b, nil
	return oldSize, wasLive
}

// Tracker is the emu.Probe of faultline heap.
type Tracker struct {
	opt      Options
	byAddr   map[uint32]Func
	hooked   []Func
	mapBase  uint32
	mapSize  uint32
	families []string
	st       state
	cp       state
	cpValid  bool
	err      error // a failure inside a callback (reported by Result)
	// The allocation stacks of the run's interned stack ids (by id,
	// for generation gen).
	byID []idStack
	gen  uint32
	// The reachability of the blocks live at the end (Finish), by
	// address; nil when not found, reachNote then says why (or "").
	reach     map[uint32]string
	reachNote string
}

type idStack struct {
	ok  bool
	pcs []uint32
}

// New returns a Tracker for opt.
func New(opt Options) *Tracker {
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 1000
	}
	return &Tracker{opt: opt, byAddr: make(map[uint32]Func),
		st: state{seen: map[string]bool{}}}
}

// Start implements emu.Probe: it finds the entry points in the image,
// hooks them and sets up the byte map over the RAM region that holds the
// heap.
func (t *Tracker) Start(r *emu.ProbeRun) error {
	fam := map[string]bool{}
	for _, f := range t.opt.Funcs {
		addr, _, fn, ok := r.Symbol(f.Name)
		if !ok || !fn {
			if f.Family == "custom" {
				return emu.ConfigErrorf("no function %q in the firmware", f.Name)
			}
			continue
		}
		if _, dup := t.byAddr[addr]; dup {
			continue // an alias of a hooked function
		}
		t.byAddr[addr] = f
		t.hooked = append(t.hooked, f)
		if f.Op != OpInternal {
			fam[f.Family] = true
		}
	}
	if len(fam) == 0 {
		return fmt.Errorf("the firmware has none of the allocator functions faultline knows (newlib malloc/free, FreeRTOS pvPortMalloc/vPortFree, C++ operator new/delete); name yours with --alloc and --free")
	}
	for f := range fam {
		t.families = append(t.families, f)
	}
	sort.Strings(t.families)
	base, size := t.heapRegion(r)
	if err := r.Attach(base, size); err != nil {
		return err
	}
	t.mapBase, t.mapSize = base, size
	for id, f := range t.hooked {
		addr, _, _, _ := r.Symbol(f.Name)
		if err := r.HookFunc(addr, id, emu.ProbeFunc{Op: int(f.Op), Ptr: f.Ptr, Size: f.Size, Count: f.Count, Header: f.Header}); err != nil {
			return err
		}
	}
	return nil
}

// heapRegion picks the RAM region the byte map covers: the one holding the
// heap's known start symbol, else the first writable region.
func (t *Tracker) heapRegion(r *emu.ProbeRun) (uint32, uint32) {
	for _, name := range []string{"ucHeap", "end", "_end", "__end__", "__heap_start", "__heap_start__", "_heap_start", "__HeapBase"} {
		if a, _, _, ok := r.Symbol(name); ok {
			if g, ok := r.RegionAt(a); ok && g.Perm&uc.PermWrite != 0 {
				return g.Addr, g.Size
			}
		}
	}
	for addr := uint32(0x20000000); ; {
		if g, ok := r.RegionAt(addr); ok && g.Perm&uc.PermWrite != 0 {
			return g.Addr, g.Size
		}
		break
	}
	return 0, 0
}

// Allocator names the allocator families hooked, e.g. "c++,newlib".
func (t *Tracker) Allocator() string { return strings.Join(t.families, ",") }

// Hooked lists the entry points found and hooked.
func (t *Tracker) Hooked() []Func { return append([]Func(nil), t.hooked...) }

// Block implements emu.Probe: the tracker watches no block address of its
// own (its entry points are hooked with HookFunc).
func (t *Tracker) Block(r *emu.ProbeRun, addr uint32) {}

// Calls implements emu.CallsProbe: the allocator calls and returns the C side
// saw (it has already updated the byte map).
func (t *Tracker) Calls(r *emu.ProbeRun, calls []emu.ProbeCall) {
	if g := r.StackGen(); g != t.gen {
		clear(t.byID)
		t.gen = g
	}
	for i := range calls {
		pc := &calls[i]
		if pc.Kind == uc.HeapReturn {
			if len(t.st.pending) > 0 {
				c := &t.st.pending[0]
				t.st.pending = t.st.pending[:0]
				t.returned(c, pc.Ptr)
			}
			continue
		}
		if int(pc.Func) >= len(t.hooked) {
			continue
		}
		// The call is made in place, as the pending one.
		t.st.pending = append(t.st.pending[:0], call{})
		c := &t.st.pending[0]
		c.id, c.ret, c.sp, c.insn, c.ptr, c.size = int32(pc.Func), pc.Ret, pc.SP, pc.Insn, pc.Ptr, pc.Size
		c.stack = t.callerStack(r, pc.Stack)
		switch t.hooked[c.id].Op {
		case OpFree:
			t.free(c)
		case OpRealloc:
			if c.ptr != 0 {
				c.old, c.hasOld = t.release(c, "realloc")
			}
		}
		if pc.Kind == uc.HeapCall {
			t.st.pending = t.st.pending[:0]
			t.returned(c, pc.Result)
		}
	}
}

// callerStack returns the return addresses of the interned call stack id
// (stackOf), made once per id.
func (t *Tracker) callerStack(r *emu.ProbeRun, id uint32) []uint32 {
	if int(id) < len(t.byID) && t.byID[id].ok {
		return t.byID[id].pcs
	}
	pcs := stackOf(r.CallStack(id)).PCs
	if id < 1<<20 {
		for len(t.byID) <= int(id) {
			t.byID = append(t.byID, idStack{})
		}
		t.byID[id] = idStack{ok: true, pcs: pcs}
	}
	return pcs
}

// stackOf drops the allocator's own frame (the entry) and exception
// pseudo-frames: what is left are return addresses, innermost first.
func stackOf(fr []emu.TruthFrame) Stack {
	var s Stack
	for i, f := range fr {
		if i == 0 || f.Kind == emu.FrameException {
			continue
		}
		s.PCs = append(s.PCs, f.PC)
	}
	return s
}

func accessStack(fr []emu.TruthFrame) Stack {
	s := Stack{Exact: true}
	for i, f := range fr {
		if f.Kind == emu.FrameException {
			if i == 0 {
				s.Exact = false
			}
			continue
		}
		s.PCs = append(s.PCs, f.PC)
	}
	return s
}

// free handles a free at its entry.
func (t *Tracker) free(c *call) {
	if c.ptr == 0 {
		return
	}
	t.release(c, "free")
}

// via names the entry point of hooked index id.
func (t *Tracker) via(id int32) string { return t.hooked[id].Name }

// block returns b as a Block.
func (t *Tracker) block(b rec) *Block {
	return &Block{Addr: b.addr, Size: b.size, Via: t.via(b.fn), Alloc: Stack{PCs: b.stack}, AllocInsn: b.insn}
}

// release removes the live block at c.ptr (a free, or the old block of a
// realloc) and returns it; a pointer that is not a live block is an error.
func (t *Tracker) release(c *call, what string) (rec, bool) {
	i, ok := t.st.byAddr.get(c.ptr)
	var sl *slot
	if ok {
		sl = &t.st.slots[i]
	}
	if sl == nil || sl.state != slotLive {
		name := t.via(c.id)
		if sl != nil {
			t.report(Error{Kind: DoubleFree, Addr: c.ptr, Via: name, Stack: Stack{PCs: c.stack}, Insn: c.insn, Block: t.freedBlock(sl),
				Detail: fmt.Sprintf("%s of %#08x, a block of %d bytes already freed", name, c.ptr, sl.b.size)})
		} else {
			t.report(Error{Kind: InvalidFree, Addr: c.ptr, Via: name, Stack: Stack{PCs: c.stack}, Insn: c.insn, Block: t.containing(c.ptr),
				Detail: fmt.Sprintf("%s of %#08x, which was never returned by the allocator", name, c.ptr)})
		}
		return rec{}, false
	}
	b := sl.b
	t.st.nlive--
	t.st.liveBytes -= uint64(b.size)
	t.st.frees++
	t.remember(c, i)
	return b, true
}

// freedBlock returns the freed block of sl with its Freed fields.
func (t *Tracker) freedBlock(sl *slot) *Block {
	fb := t.block(sl.b)
	fb.FreedBy, fb.Free, fb.FreedInsn = t.via(sl.by), Stack{PCs: sl.freeStack}, sl.freedInsn
	return fb
}

// containing returns the live block holding addr (a pointer into the
// middle of a block), or nil.
func (t *Tracker) containing(addr uint32) *Block {
	for i := range t.st.slots {
		sl := &t.st.slots[i]
		if sl.state == slotLive && addr >= sl.b.addr && addr-sl.b.addr < sl.b.size {
			return t.block(sl.b)
		}
	}
	return nil
}

// remember turns the live block in slot i, just released by c, into a
// freed block, dropping the oldest beyond maxFreed.
func (t *Tracker) remember(c *call, i int32) {
	s := &t.st
	if s.nfreed >= maxFreed {
		for len(s.fifo) > 0 {
			e := s.fifo[0]
			s.fifo = s.fifo[1:]
			if s.current(e) {
				s.drop(s.slots[e.i].b.addr)
				break
			}
		}
	}
	sl := &s.slots[i]
	s.seq++
	sl.state, sl.by, sl.freeStack, sl.freedInsn, sl.seq = slotFreed, c.id, c.stack, c.insn, s.seq
	s.nfreed++
	s.fifo = append(s.fifo, fifoEnt{i: i, seq: s.seq})
	if len(s.fifo) > 2*s.nfreed+64 {
		// Forgotten blocks piled up: keep the current entries only.
		k := 0
		for _, e := range s.fifo {
			if s.current(e) {
				s.fifo[k] = e
				k++
			}
		}
		s.fifo = s.fifo[:k]
	}
}

// pad is the number of bytes from a block's requested end to the next
// multiple of 8 (the alignment of newlib's and heap_4's blocks).
func pad(addr, size uint32) uint32 {
	end := uint64(addr) + uint64(size)
	return uint32((end+7)&^7 - end)
}

// returned handles an allocator call's return (p is r0, its result).
func (t *Tracker) returned(c *call, p uint32) {
	op := t.hooked[c.id].Op
	if op == OpFree || op == OpInternal {
		return
	}
	if op == OpRealloc && p == 0 {
		if c.hasOld && c.size != 0 {
			// Failed: the old block stays allocated.
			t.restoreOld(c.old)
		}
		return
	}
	if p == 0 {
		return
	}
	b := rec{addr: p, size: c.size, fn: c.id, insn: c.insn, stack: c.stack}
	if oldSize, ok := t.st.setLive(&b); ok {
		// The allocator returned a block it considers allocated: its
		// bookkeeping is broken (or the hooks missed a free).
		t.st.liveBytes -= uint64(oldSize)
	} else {
		t.st.allocs++
	}
	t.st.liveBytes += uint64(b.size)
	if t.st.liveBytes > t.st.peakBytes {
		t.st.peakBytes, t.st.peakInsn, t.st.peak, t.st.peakOK = t.st.liveBytes, c.insn, b, true
	}
}

func (t *Tracker) restoreOld(old rec) {
	t.st.setLive(&old)
	t.st.liveBytes += uint64(old.size)
	t.st.frees--
}

// markLive marks a live block in the map as the C side does at an
// allocation's return (Restore rebuilds the map with it).
func markLive(r *emu.ProbeRun, b rec, header uint32) {
	// Bookkeeping before the block may overlap the end of the block
	// below (newlib lets a chunk in use keep data in the next chunk's
	// prev_size field): marked softly, it never takes a live byte.
	if header > 0 && b.addr >= header {
		r.Mark(b.addr-header, header, uc.HeapHeader, true)
	}
	r.Mark(b.addr, b.size, uc.HeapLive, false)
	r.Mark(b.addr+b.size, pad(b.addr, b.size), uc.HeapPad, true)
	// What follows the block (heapwatch.c, mark_live): bookkeeping, or
	// newlib's rounding slack, unless something else is known there.
	r.Fill(b.addr+b.size+pad(b.addr, b.size), header, uc.HeapHeader)
}

// Access implements emu.Probe.
func (t *Tracker) Access(r *emu.ProbeRun, a emu.ProbeAccess) {
	var e Error
	e.Addr, e.Size, e.Write, e.Insn = a.Addr, a.Size, a.Write, r.Insns()
	rw := "read of"
	if a.Write {
		rw = "write of"
	}
	switch a.State {
	case uc.HeapFreed:
		e.Kind = UseAfter
		e.Block = t.freedAt(a.Addr)
		if e.Block != nil {
			e.Detail = fmt.Sprintf("%s %d bytes at %#08x, offset %d in a block of %d bytes freed by %s", rw, a.Size, a.Addr, a.Addr-e.Block.Addr, e.Block.Size, e.Block.FreedBy)
		} else {
			e.Detail = fmt.Sprintf("%s %d bytes at %#08x, in memory freed earlier", rw, a.Size, a.Addr)
		}
	default:
		e.Kind = Overflow
		e.Block = t.below(a.Addr)
		what := "the allocator's bookkeeping"
		if a.State == uc.HeapPad {
			what = "the padding after the block"
		}
		if e.Block != nil {
			e.Detail = fmt.Sprintf("%s %d bytes at %#08x, %d bytes past the end of a block of %d bytes, into %s", rw, a.Size, a.Addr, a.Addr-(e.Block.Addr+e.Block.Size), e.Block.Size, what)
		} else {
			e.Detail = fmt.Sprintf("%s %d bytes at %#08x, into %s", rw, a.Size, a.Addr, what)
		}
	}
	pc := a.Block
	e.Stack = accessStack(r.Stack(pc))
	t.report(e)
}

func (t *Tracker) freedAt(addr uint32) *Block {
	var best *slot
	for i := range t.st.slots {
		sl := &t.st.slots[i]
		b := sl.b
		if sl.state == slotFreed && addr >= b.addr && addr-b.addr < b.size+pad(b.addr, b.size) {
			if best == nil || sl.freedInsn > best.freedInsn {
				best = sl
			}
		}
	}
	if best == nil {
		return nil
	}
	return t.freedBlock(best)
}

// below returns the live block that ends nearest below addr.
func (t *Tracker) below(addr uint32) *Block {
	var best *rec
	for i := range t.st.slots {
		sl := &t.st.slots[i]
		if sl.state == slotLive && sl.b.addr <= addr && (best == nil || sl.b.addr > best.addr) {
			best = &sl.b
		}
	}
	if best == nil {
		return nil
	}
	return t.block(*best)
}

func (t *Tracker) report(e Error) {
	var blk uint32
	if e.Block != nil {
		blk = e.Block.Addr
	}
	first := uint32(0)
	if len(e.Stack.PCs) > 0 {
		first = e.Stack.PCs[0]
	}
	key := fmt.Sprintf("%s/%x/%x/%v", e.Kind, blk, first, e.Write)
	if e.Kind == InvalidFree || e.Kind == DoubleFree {
		key = fmt.Sprintf("%s/%x/%x", e.Kind, e.Addr, first)
	}
	if t.st.seen[key] {
		return
	}
	t.st.seen[key] = true
	if len(t.st.errors) >= t.opt.MaxErrors {
		t.st.dropped++
		return
	}
	t.st.errors = append(t.st.errors, e)
}

// Checkpoint implements emu.Probe.
func (t *Tracker) Checkpoint() {
	t.cp = t.st.clone()
	t.cpValid = true
}

// Restore implements emu.Probe: back to the last checkpoint, the byte map
// and the watched return addresses rebuilt.
func (t *Tracker) Restore(r *emu.ProbeRun) error {
	if !t.cpValid {
		return fmt.Errorf("restore without a checkpoint")
	}
	t.st = t.cp.clone()
	r.SetPending(nil)
	if len(t.st.pending) > 0 {
		c := t.st.pending[0]
		f := t.hooked[c.id]
		p := &uc.HeapPending{Func: uint32(c.id), Op: int(f.Op), Ret: c.ret, SP: c.sp, Ptr: c.ptr, Size: c.size, Header: f.Header}
		if c.hasOld {
			p.Old, p.OldSize, p.OldHdr = true, c.old.size, t.hooked[c.old.fn].Header
		}
		r.SetPending(p)
	}
	live := make([]emu.ProbeBlock, 0, t.st.nlive)
	for i := range t.st.slots {
		if b := t.st.slots[i].b; t.st.slots[i].state == slotLive {
			live = append(live, emu.ProbeBlock{Addr: b.addr, Size: b.size, Header: t.hooked[b.fn].Header})
		}
	}
	if err := r.SetLive(live); err != nil {
		return err
	}
	r.ClearMap()
	for _, e := range t.st.fifo {
		if !t.st.current(e) {
			continue
		}
		b := t.st.slots[e.i].b
		if h := t.hooked[b.fn].Header; h > 0 && b.addr >= h {
			r.Mark(b.addr-h, h, uc.HeapHeader, false)
		}
		r.Mark(b.addr, b.size+pad(b.addr, b.size), uc.HeapFreed, false)
	}
	// Live bytes first, then the soft marks around them.
	for _, b := range live {
		r.Mark(b.Addr, b.Size, uc.HeapLive, false)
	}
	for i := range t.st.slots {
		if t.st.slots[i].state == slotLive {
			b := t.st.slots[i].b
			markLive(r, b, t.hooked[b.fn].Header)
		}
	}
	return nil
}
