package heap

import (
	"fmt"
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

type call struct {
	fn    Func
	id    int    // the index of fn in Tracker.hooked
	ret   uint32 // return address (bit 0 clear)
	sp    uint32
	ptr   uint32
	size  uint32
	stack Stack
	insn  uint64
	// realloc: the old block, removed at entry (nil when none)
	old *Block
}

type state struct {
	live      map[uint32]*Block
	freed     map[uint32]freedRec
	freedFIFO []uint32
	liveBytes uint64
	peakBytes uint64
	peakInsn  uint64
	peakBlock *Block
	allocs    uint64
	frees     uint64
	errors    []Error
	dropped   int
	seen      map[string]bool
	pending   []call
}

func (s *state) clone() state {
	c := *s
	c.live = make(map[uint32]*Block, len(s.live))
	for k, v := range s.live {
		c.live[k] = v
	}
	c.freed = make(map[uint32]freedRec, len(s.freed))
	for k, v := range s.freed {
		c.freed[k] = v
	}
	c.freedFIFO = append([]uint32(nil), s.freedFIFO...)
	c.errors = append([]Error(nil), s.errors...)
	c.seen = make(map[string]bool, len(s.seen))
	for k, v := range s.seen {
		c.seen[k] = v
	}
	c.pending = append([]call(nil), s.pending...)
	return c
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
	err      error   // a failure inside a callback (reported by Result)
	slab     []Block // newBlock
	stacks   map[*emu.TruthFrame]Stack
}

// New returns a Tracker for opt.
func New(opt Options) *Tracker {
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 1000
	}
	return &Tracker{opt: opt, byAddr: make(map[uint32]Func), stacks: make(map[*emu.TruthFrame]Stack),
		st: state{live: map[uint32]*Block{}, freed: map[uint32]freedRec{}, seen: map[string]bool{}}}
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
				return fmt.Errorf("heap: no function %q in the firmware", f.Name)
			}
			continue
		}
		if _, dup := t.byAddr[addr]; dup {
			continue // an alias of a hooked function
		}
		t.byAddr[addr] = f
		t.hooked = append(t.hooked, f)
		fam[f.Family] = true
	}
	if len(t.hooked) == 0 {
		return fmt.Errorf("heap: the firmware has none of the allocator functions faultline knows (newlib malloc/free, FreeRTOS pvPortMalloc/vPortFree, C++ operator new/delete); name yours with --alloc and --free")
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
	for i := range calls {
		pc := &calls[i]
		if pc.Return {
			if len(t.st.pending) > 0 {
				c := t.st.pending[0]
				t.st.pending = t.st.pending[:0]
				t.returned(c, pc.Ptr)
			}
			continue
		}
		if pc.Func < 0 || pc.Func >= len(t.hooked) {
			continue
		}
		f := t.hooked[pc.Func]
		c := call{fn: f, id: pc.Func, ret: pc.Ret, sp: pc.SP, insn: pc.Insn, ptr: pc.Ptr, size: pc.Size}
		c.stack = t.callerStack(pc.Stack)
		switch f.Op {
		case OpFree:
			t.free(c)
		case OpRealloc:
			if c.ptr != 0 {
				c.old = t.release(c, "realloc")
			}
		}
		t.st.pending = append(t.st.pending[:0], c)
	}
}

// callerStack is stackOf, remembered for the stacks ProbeRun.Stack shares
// between calls (an allocation in a loop): no new slice per call.
func (t *Tracker) callerStack(fr []emu.TruthFrame) Stack {
	if len(fr) == 0 {
		return Stack{}
	}
	// The pointer only finds a candidate (a slice's memory may be reused
	// by another once the run dropped it): the frames decide.
	if s, ok := t.stacks[&fr[0]]; ok && sameStack(s, fr) {
		return s
	}
	if len(t.stacks) >= 256 {
		clear(t.stacks)
	}
	s := stackOf(fr)
	t.stacks[&fr[0]] = s
	return s
}

func sameStack(s Stack, fr []emu.TruthFrame) bool {
	n := 0
	for i, f := range fr {
		if i == 0 || f.Kind == emu.FrameException {
			continue
		}
		if n >= len(s.PCs) || s.PCs[n] != f.PC {
			return false
		}
		n++
	}
	return n == len(s.PCs)
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
func (t *Tracker) free(c call) {
	if c.ptr == 0 {
		return
	}
	t.release(c, "free")
}

// release removes the live block at c.ptr (a free, or the old block of a
// realloc) and returns it; a pointer that is not a live block is an error.
func (t *Tracker) release(c call, what string) *Block {
	b, ok := t.st.live[c.ptr]
	if !ok {
		if fr, ok := t.st.freed[c.ptr]; ok {
			t.report(Error{Kind: DoubleFree, Addr: c.ptr, Via: c.fn.Name, Stack: c.stack, Insn: c.insn, Block: fr.block(),
				Detail: fmt.Sprintf("%s of %#08x, a block of %d bytes already freed", c.fn.Name, c.ptr, fr.b.Size)})
		} else {
			t.report(Error{Kind: InvalidFree, Addr: c.ptr, Via: c.fn.Name, Stack: c.stack, Insn: c.insn, Block: t.containing(c.ptr),
				Detail: fmt.Sprintf("%s of %#08x, which was never returned by the allocator", c.fn.Name, c.ptr)})
		}
		return nil
	}
	delete(t.st.live, c.ptr)
	t.st.liveBytes -= uint64(b.Size)
	t.st.frees++
	t.remember(freedRec{b: b, by: c.fn.Name, stack: c.stack, insn: c.insn})
	return b
}

// freedRec is a freed block: the block as it was allocated, and who freed
// it (kept apart so that a free allocates nothing).
type freedRec struct {
	b     *Block
	by    string
	stack Stack
	insn  uint64
}

// block returns the freed block with its Freed fields.
func (f freedRec) block() *Block {
	fb := *f.b
	fb.FreedBy, fb.Free, fb.FreedInsn = f.by, f.stack, f.insn
	return &fb
}

// containing returns the live block holding addr (a pointer into the
// middle of a block), or nil.
func (t *Tracker) containing(addr uint32) *Block {
	for _, b := range t.st.live {
		if addr >= b.Addr && addr-b.Addr < b.Size {
			return b
		}
	}
	return nil
}

func (t *Tracker) remember(f freedRec) {
	if len(t.st.freedFIFO) >= maxFreed {
		old := t.st.freedFIFO[0]
		t.st.freedFIFO = t.st.freedFIFO[1:]
		delete(t.st.freed, old)
	}
	if _, ok := t.st.freed[f.b.Addr]; !ok {
		t.st.freedFIFO = append(t.st.freedFIFO, f.b.Addr)
	}
	t.st.freed[f.b.Addr] = f
}

func (t *Tracker) forget(addr uint32) {
	if _, ok := t.st.freed[addr]; !ok {
		return
	}
	delete(t.st.freed, addr)
	for i, a := range t.st.freedFIFO {
		if a == addr {
			t.st.freedFIFO = append(t.st.freedFIFO[:i], t.st.freedFIFO[i+1:]...)
			break
		}
	}
}

// pad is the number of bytes from a block's requested end to the next
// multiple of 8 (the alignment of newlib's and heap_4's blocks).
func pad(addr, size uint32) uint32 {
	end := uint64(addr) + uint64(size)
	return uint32((end+7)&^7 - end)
}

// returned handles an allocator call's return (p is r0, its result).
func (t *Tracker) returned(c call, p uint32) {
	if c.fn.Op == OpFree {
		return
	}
	if c.fn.Op == OpRealloc && p == 0 {
		if c.old != nil && c.size != 0 {
			// Failed: the old block stays allocated.
			t.restoreOld(c.old)
		}
		return
	}
	if p == 0 {
		return
	}
	b := t.newBlock(Block{Addr: p, Size: c.size, Via: c.fn.Name, Alloc: c.stack, AllocInsn: c.insn})
	if old, ok := t.st.live[p]; ok {
		// The allocator returned a block it considers allocated: its
		// bookkeeping is broken (or the hooks missed a free).
		t.st.liveBytes -= uint64(old.Size)
	} else {
		t.st.allocs++
	}
	t.forget(p)
	t.st.live[p] = b
	t.st.liveBytes += uint64(b.Size)
	if t.st.liveBytes > t.st.peakBytes {
		t.st.peakBytes, t.st.peakInsn, t.st.peakBlock = t.st.liveBytes, c.insn, b
	}
}

// newBlock returns a new block with the value of b, from a slab: an
// allocation-heavy loop makes two per round, one allocation each cost more
// than the rest of the bookkeeping. (A block is never modified once made:
// checkpoints share them.)
func (t *Tracker) newBlock(b Block) *Block {
	if len(t.slab) == cap(t.slab) {
		t.slab = make([]Block, 0, 128)
	}
	t.slab = append(t.slab, b)
	return &t.slab[len(t.slab)-1]
}

func (t *Tracker) restoreOld(old *Block) {
	b := t.newBlock(*old)
	b.FreedBy, b.Free, b.FreedInsn = "", Stack{}, 0
	t.forget(b.Addr)
	t.st.live[b.Addr] = b
	t.st.liveBytes += uint64(b.Size)
	t.st.frees--
}

func (t *Tracker) headerFor(via string) uint32 {
	for _, f := range t.hooked {
		if f.Name == via {
			return f.Header
		}
	}
	return 0
}

// markLive marks a live block in the map as the C side does at an
// allocation's return (Restore rebuilds the map with it).
func markLive(r *emu.ProbeRun, b *Block, header uint32) {
	// Bookkeeping before the block may overlap the end of the block
	// below (newlib lets a chunk in use keep data in the next chunk's
	// prev_size field): marked softly, it never takes a live byte.
	if header > 0 && b.Addr >= header {
		r.Mark(b.Addr-header, header, uc.HeapHeader, true)
	}
	r.Mark(b.Addr, b.Size, uc.HeapLive, false)
	r.Mark(b.Addr+b.Size, pad(b.Addr, b.Size), uc.HeapPad, true)
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
	var best *freedRec
	for _, f := range t.st.freed {
		b := f.b
		if addr >= b.Addr && addr-b.Addr < b.Size+pad(b.Addr, b.Size) {
			if best == nil || f.insn > best.insn {
				best = &f
			}
		}
	}
	if best == nil {
		return nil
	}
	return best.block()
}

// below returns the live block that ends nearest below addr.
func (t *Tracker) below(addr uint32) *Block {
	var best *Block
	for _, b := range t.st.live {
		if b.Addr <= addr && (best == nil || b.Addr > best.Addr) {
			best = b
		}
	}
	return best
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
		return fmt.Errorf("heap: restore without a checkpoint")
	}
	t.st = t.cp.clone()
	r.SetPending(nil)
	if len(t.st.pending) > 0 {
		c := t.st.pending[0]
		p := &uc.HeapPending{Func: uint32(c.id), Op: int(c.fn.Op), Ret: c.ret, SP: c.sp, Ptr: c.ptr, Size: c.size, Header: c.fn.Header}
		if c.old != nil {
			p.Old, p.OldSize, p.OldHdr = true, c.old.Size, t.headerFor(c.old.Via)
		}
		r.SetPending(p)
	}
	live := make([]emu.ProbeBlock, 0, len(t.st.live))
	for _, b := range t.st.live {
		live = append(live, emu.ProbeBlock{Addr: b.Addr, Size: b.Size, Header: t.headerFor(b.Via)})
	}
	if err := r.SetLive(live); err != nil {
		return err
	}
	r.ClearMap()
	for _, a := range t.st.freedFIFO {
		b := t.st.freed[a].b
		if h := t.headerFor(b.Via); h > 0 && b.Addr >= h {
			r.Mark(b.Addr-h, h, uc.HeapHeader, false)
		}
		r.Mark(b.Addr, b.Size+pad(b.Addr, b.Size), uc.HeapFreed, false)
	}
	// Live bytes first, then the soft marks around them.
	for _, b := range t.st.live {
		r.Mark(b.Addr, b.Size, uc.HeapLive, false)
	}
	for _, b := range t.st.live {
		markLive(r, b, t.headerFor(b.Via))
	}
	return nil
}
