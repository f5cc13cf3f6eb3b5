//go:build !cgo

package uc

import "time"

// Engine is one Unicorn ARM engine. In this build (without cgo) no engine
// can be opened; every method returns ErrUnavailable.
type Engine struct{}

// Context is a saved CPU state; unavailable without cgo.
type Context struct{}

// Tracker is the set of C hot hooks; unavailable without cgo.
type Tracker struct{}

const unavailableText = "emulation unavailable: faultline was built without cgo/libunicorn"

// Available always returns ErrUnavailable: faultline was built without cgo.
func Available() error { return ErrUnavailable }

// Open always fails with ErrUnavailable: faultline was built without cgo.
func Open(model CPUModel) (*Engine, error) { return nil, ErrUnavailable }

func (e *Engine) Close() error                                  { return nil }
func (e *Engine) Model() (CPUModel, error)                      { return 0, ErrUnavailable }
func (e *Engine) PageSize() (uint64, error)                     { return 0, ErrUnavailable }
func (e *Engine) MemMap(addr, size uint64, perm Perm) error     { return ErrUnavailable }
func (e *Engine) MemUnmap(addr, size uint64) error              { return ErrUnavailable }
func (e *Engine) MemProtect(addr, size uint64, perm Perm) error { return ErrUnavailable }
func (e *Engine) MemRead(addr uint64, buf []byte) error         { return ErrUnavailable }
func (e *Engine) MemWrite(addr uint64, data []byte) error       { return ErrUnavailable }
func (e *Engine) MMIOMap(addr, size uint64, read func(offset uint64, size int) uint64, write func(offset uint64, size int, value uint64)) error {
	return ErrUnavailable
}
func (e *Engine) RegRead(r Reg) (uint64, error)            { return 0, ErrUnavailable }
func (e *Engine) RegWrite(r Reg, v uint64) error           { return ErrUnavailable }
func (e *Engine) RegReadBytes(r Reg, buf *[16]byte) error  { return ErrUnavailable }
func (e *Engine) RegWriteBytes(r Reg, buf *[16]byte) error { return ErrUnavailable }
func (e *Engine) HookCode(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return 0, ErrUnavailable
}
func (e *Engine) HookBlock(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return 0, ErrUnavailable
}
func (e *Engine) HookMemInvalid(fn func(access MemAccess, addr uint64, size int, value int64) bool) (Hook, error) {
	return 0, ErrUnavailable
}
func (e *Engine) HookInterrupt(fn func(intno uint32)) (Hook, error) { return 0, ErrUnavailable }
func (e *Engine) HookInsnInvalid(fn func() bool) (Hook, error)      { return 0, ErrUnavailable }
func (e *Engine) HookDel(h Hook) error                              { return ErrUnavailable }
func (e *Engine) Start(begin, until uint64, timeout time.Duration, count uint64) error {
	return ErrUnavailable
}
func (e *Engine) Stop() error                                           { return ErrUnavailable }
func (e *Engine) FlushTBs() error                                       { return ErrUnavailable }
func (e *Engine) RemoveTBs(begin, end uint64) error                     { return ErrUnavailable }
func (e *Engine) RequestTB(addr uint32) (size, insns uint32, err error) { return 0, 0, ErrUnavailable }
func (e *Engine) SaveContext(c *Context) (*Context, error)              { return nil, ErrUnavailable }
func (e *Engine) RestoreContext(c *Context) error                       { return ErrUnavailable }
func (c *Context) Free()                                                {}
func (e *Engine) NewTracker(shadow bool, capacity int) (*Tracker, error) {
	return nil, ErrUnavailable
}

func (t *Tracker) Insns() uint64                               { return 0 }
func (t *Tracker) SetInsns(n uint64)                           {}
func (t *Tracker) SetBudget(n uint64)                          {}
func (t *Tracker) BudgetHit() bool                             { return false }
func (t *Tracker) BudgetLeft() uint64                          { return 0 }
func (t *Tracker) BudgetBlock() uint64                         { return 0 }
func (t *Tracker) SetEntryStop(on bool)                        {}
func (t *Tracker) EntryHit() bool                              { return false }
func (t *Tracker) ClearEntryHit()                              {}
func (t *Tracker) Block() (addr, size uint32)                  { return 0, 0 }
func (t *Tracker) SetExactPC(on bool, begin, end uint32) error { return ErrUnavailable }
func (t *Tracker) SetEventHandler(fn func(addr uint32) bool)   {}
func (t *Tracker) SetEvent(on bool)                            {}
func (t *Tracker) SetEventAt(n uint64)                         {}
func (t *Tracker) LastPC() uint32                              { return 0 }
func (t *Tracker) LastIT() uint8                               { return 0 }
func (t *Tracker) WatchDivide(addr uint32) error               { return ErrUnavailable }
func (t *Tracker) SetDivideTrap(on bool)                       {}
func (t *Tracker) DivideFault() (pc uint32, ok bool)           { return 0, false }

// WatchFP, SetLazyFP, LazyFP and LazyFPSaves are unavailable without cgo.
func (t *Tracker) WatchFP(addr uint32) error           { return ErrUnavailable }
func (t *Tracker) SetLazyFP(active bool, fpcar uint32) {}
func (t *Tracker) LazyFP() bool                        { return false }
func (t *Tracker) LazyFPSaves() (saves, failed uint64) { return 0, 0 }
func (t *Tracker) Frames() []ShadowFrame               { return nil }
func (t *Tracker) Dropped() uint64                     { return 0 }
func (t *Tracker) PopException() bool                  { return false }
func (t *Tracker) Save(s *TrackerState)                {}
func (t *Tracker) Restore(s *TrackerState)             {}

func (t *Tracker) PushException(exc int, pc, sp, isp uint32, psp bool) {}

// SettleFetch is a no-op without cgo.
func (t *Tracker) SettleFetch(pc uint32)                    {}
func (t *Tracker) SetFunctions(starts, ends []uint32) error { return ErrUnavailable }
func (t *Tracker) Prune(calls []ShadowFrame, pc, sp uint32, psp bool) int {
	return len(calls)
}

// CountThumb is unavailable without cgo; it returns 0, false.
func CountThumb(code []byte) (n int, endsCall bool) { return 0, false }

// Check kinds reported by CheckFault.
const (
	CheckUnaligned = 1
	CheckMPUData   = 2
	CheckMPUFetch  = 3
	CheckStopped   = 4
)

// CheckFault is a failed check recorded by the C hooks.
type CheckFault struct {
	Kind  int
	Addr  uint32
	Size  int
	Write bool
	PC    uint32

	Block, BlockSize uint32
	Exact            uint64
	ExactPC          uint32
	IT               uint8
}

func (t *Tracker) SetMemHook(on bool) error { return ErrUnavailable }
func (t *Tracker) MemHook() bool            { return false }

// DropSeen is unavailable without cgo.
func (t *Tracker) DropSeen() (int, error) { return 0, ErrUnavailable }
func (t *Tracker) SetChecks(alignTrap, mpuData, v8m bool, ctrl uint32, rbar, rlim *[16]uint32) {
}
func (t *Tracker) SetNegativePriority(on bool)                     {}
func (t *Tracker) WatchXN(begin, end uint32) error                 { return ErrUnavailable }
func (t *Tracker) WatchAligned(addr uint32) error                  { return ErrUnavailable }
func (t *Tracker) ClearWatches(keep int) error                     { return ErrUnavailable }
func (t *Tracker) Watches() int                                    { return 0 }
func (t *Tracker) CheckFault() (CheckFault, bool)                  { return CheckFault{}, false }
func (t *Tracker) ClearCheckFault()                                {}
func (t *Tracker) SetExactStop(n uint64)                           {}
func (t *Tracker) ExactCount() uint64                              { return 0 }
func (t *Tracker) SkipStep(addr uint32)                            {}
func (t *Tracker) MPUDenied(addr uint32, kind int, priv bool) bool { return false }
func (t *Tracker) SwitchStack(frames []ShadowFrame)                {}

// AlignedInsn is unavailable without cgo; it returns false.
func AlignedInsn(hw1, hw2 uint16) bool { return false }

// StorePath describes how guest stores reach libunicorn (see the cgo build).
type StorePath struct{ Skipping, Interposed bool }

// Stores reports nothing without cgo.
func Stores() StorePath { return StorePath{} }

// Version returns 0, 0: no libunicorn without cgo.
func Version() (major, minor uint) { return 0, 0 }

// Heap map states (see the cgo build).
const (
	HeapNone   = 0
	HeapLive   = 1
	HeapFreed  = 2
	HeapHeader = 3
	HeapPad    = 4
)

// What an allocator entry point does (see the cgo build).
const (
	HeapOpAlloc    = 0
	HeapOpCalloc   = 1
	HeapOpRealloc  = 2
	HeapOpFree     = 3
	HeapOpMemalign = 4
	HeapOpInternal = 5
)

// HeapWatch is the C heap watcher; unavailable without cgo.
type HeapWatch struct{}

// HeapFunc describes an allocator entry point (see the cgo build).
type HeapFunc struct {
	Op               int
	Ptr, Size, Count int
	Header           uint32
	ID               uint32
}

// HeapEvent is an allocator entry or return (see the cgo build).
type HeapEvent struct {
	Insn      uint64
	Kind      uint32
	Func      uint32
	Ptr, Size uint32
	Ret, SP   uint32
	Stack     uint32
	Result    uint32
}

// Entry says whether e is an entry (HeapEntry or HeapCall).
func (e *HeapEvent) Entry() bool { return e.Kind != HeapReturn }

// Returned says whether e is a return (HeapReturn or HeapCall).
func (e *HeapEvent) Returned() bool { return e.Kind != HeapEntry }

// Event kinds (HeapEvent.Kind).
const (
	HeapEntry  = 0
	HeapReturn = 1
	HeapCall   = 2
)

// HeapPending is the allocator call in progress (see the cgo build).
type HeapPending struct {
	Func            uint32
	Op              int
	Ret, SP, Ptr    uint32
	Size, Header    uint32
	Old             bool
	OldSize, OldHdr uint32
}

func (w *HeapWatch) StackKey(key []uint32, max int) ([]uint32, int) { return key[:0], 0 }

// HeapRegs are r0-r3, SP, LR at a watched block.
type HeapRegs [6]uint32

func (w *HeapWatch) Watch(addr uint32, on bool) error     { return ErrUnavailable }
func (w *HeapWatch) Expect(ret, sp uint32, goReturn bool) {}
func (w *HeapWatch) Inside(on bool)                       {}

func (t *Tracker) NewHeapWatch(base, size uint32, block func(uint32, *HeapRegs), drain func(), access func(uint32, int, bool, int, uint32)) (*HeapWatch, error) {
	return nil, ErrUnavailable
}
func (w *HeapWatch) AddFunc(addr uint32, f HeapFunc) error     { return ErrUnavailable }
func (w *HeapWatch) Events() []HeapEvent                       { return nil }
func (w *HeapWatch) EventsDone()                               {}
func (w *HeapWatch) Drains() uint64                            { return 0 }
func (w *HeapWatch) StackGen() uint32                          { return 0 }
func (w *HeapWatch) ResetStacks()                              {}
func (w *HeapWatch) ClearLive()                                {}
func (w *HeapWatch) PutLive(addr, size, header uint32) error   { return ErrUnavailable }
func (w *HeapWatch) LiveBlocks() int                           { return 0 }
func (w *HeapWatch) SetPending(p *HeapPending)                 {}
func (w *HeapWatch) Mark(addr, n uint32, state int, soft bool) {}
func (w *HeapWatch) Fill(addr, n uint32, state int)            {}
func (w *HeapWatch) ClearMap()                                 {}
func (w *HeapWatch) Checks(on bool)                            {}
func (w *HeapWatch) InsideNow() bool                           { return false }
func (w *HeapWatch) StackOf(id uint32) (uint32, uint32, bool, []ShadowFrame) {
	return 0, 0, false, nil
}
