//go:build cgo

package uc

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Engine is one Unicorn ARM engine configured as a Cortex-M core.
type Engine struct {
	h        *C.uc_engine
	model    CPUModel
	hooks    map[Hook]cgo.Handle
	mmio     []cgo.Handle
	contexts map[*Context]struct{}
	tracker  *Tracker
	panicked *CallbackPanicError
}

// callback is what a cgo.Handle passed to Unicorn as user_data refers to.
type callback struct {
	e           *Engine
	code        func(addr uint64, size uint32)
	block       func(addr uint64, size uint32)
	memInvalid  func(access MemAccess, addr uint64, size int, value int64) bool
	intr        func(intno uint32)
	insnInvalid func() bool
	mmioRead    func(offset uint64, size int) uint64
	mmioWrite   func(offset uint64, size int, value uint64)
	event       func(addr uint32) bool
	heap        *heapCallbacks
}

// Open creates an engine for the given M-profile CPU model: uc_open with
// UC_ARCH_ARM|UC_MODE_THUMB, then uc_ctl(UC_CTL_CPU_MODEL) before anything
// else (docs/unicorn.md, trap 1). The caller must Close it.
//
// The first Open loads libunicorn (see Available); when it cannot be loaded,
// Open returns a *LoadError, which wraps ErrUnavailable.
func Open(model CPUModel) (*Engine, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	var h *C.uc_engine
	if err := C.fl_open(C.int(model), &h); err != C.UC_ERR_OK {
		return nil, &OpError{Op: "open " + model.String(), Err: Error(err)}
	}
	live.engines.Add(1)
	return &Engine{
		h:        h,
		model:    model,
		hooks:    make(map[Hook]cgo.Handle),
		contexts: make(map[*Context]struct{}),
	}, nil
}

// Close frees the engine and everything the binding allocated for it: hook
// handles, MMIO handles, saved contexts and the tracker. Close is idempotent.
func (e *Engine) Close() error {
	if e == nil || e.h == nil {
		return nil
	}
	if e.tracker != nil {
		e.tracker.free()
	}
	for c := range e.contexts {
		C.uc_context_free(c.p)
		c.p = nil
		live.contexts.Add(-1)
	}
	clear(e.contexts)
	err := C.uc_close(e.h)
	e.h = nil
	live.engines.Add(-1)
	for _, hd := range e.hooks {
		deleteHandle(hd)
	}
	clear(e.hooks)
	for _, hd := range e.mmio {
		deleteHandle(hd)
	}
	e.mmio = nil
	if err != C.UC_ERR_OK {
		return &OpError{Op: "close", Err: Error(err)}
	}
	return nil
}

func (e *Engine) check() error {
	if e == nil || e.h == nil {
		return &OpError{Op: "use", Err: ErrHandle}
	}
	return nil
}

// Model returns the CPU model the engine reports (uc_ctl UC_CTL_CPU_MODEL).
func (e *Engine) Model() (CPUModel, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	var m C.int
	if err := C.fl_get_cpu_model(e.h, &m); err != C.UC_ERR_OK {
		return 0, &OpError{Op: "ctl cpu_model", Err: Error(err)}
	}
	return CPUModel(m), nil
}

// PageSize returns the target page size; mappings must be aligned to it.
func (e *Engine) PageSize() (uint64, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	var sz C.uint32_t
	if err := C.fl_page_size(e.h, &sz); err != C.UC_ERR_OK {
		return 0, &OpError{Op: "ctl page_size", Err: Error(err)}
	}
	return uint64(sz), nil
}

// MemMap maps size bytes of zeroed guest memory at addr (uc_mem_map). addr
// and size must be multiples of the page size.
func (e *Engine) MemMap(addr, size uint64, perm Perm) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.uc_mem_map(e.h, C.uint64_t(addr), C.size_t(size), C.uint32_t(perm)); err != C.UC_ERR_OK {
		return &OpError{Op: "mem_map", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// MemUnmap removes a mapping (uc_mem_unmap).
func (e *Engine) MemUnmap(addr, size uint64) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.uc_mem_unmap(e.h, C.uint64_t(addr), C.size_t(size)); err != C.UC_ERR_OK {
		return &OpError{Op: "mem_unmap", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// MemProtect changes the permissions of mapped pages (uc_mem_protect).
func (e *Engine) MemProtect(addr, size uint64, perm Perm) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.uc_mem_protect(e.h, C.uint64_t(addr), C.size_t(size), C.uint32_t(perm)); err != C.UC_ERR_OK {
		return &OpError{Op: "mem_protect", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// MemRead fills buf from guest memory at addr (uc_mem_read). Permissions do
// not apply; unmapped addresses are an error.
func (e *Engine) MemRead(addr uint64, buf []byte) error {
	if err := e.check(); err != nil {
		return err
	}
	if len(buf) == 0 {
		return nil
	}
	if err := C.uc_mem_read(e.h, C.uint64_t(addr), unsafe.Pointer(&buf[0]), C.size_t(len(buf))); err != C.UC_ERR_OK {
		return &OpError{Op: "mem_read", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// MemWrite copies data into guest memory at addr (uc_mem_write).
// Permissions do not apply; unmapped addresses are an error.
func (e *Engine) MemWrite(addr uint64, data []byte) error {
	if err := e.check(); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	if err := C.uc_mem_write(e.h, C.uint64_t(addr), unsafe.Pointer(&data[0]), C.size_t(len(data))); err != C.UC_ERR_OK {
		return &OpError{Op: "mem_write", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// MMIOMap maps [addr, addr+size) as device memory whose reads and writes
// call read and write (uc_mmio_map). offset is relative to addr. The
// callbacks run in Go (about 50 ns per access), so map only registers that
// firmware touches rarely, such as the System Control Space.
func (e *Engine) MMIOMap(addr, size uint64, read func(offset uint64, size int) uint64, write func(offset uint64, size int, value uint64)) error {
	if err := e.check(); err != nil {
		return err
	}
	hd := newHandle(&callback{e: e, mmioRead: read, mmioWrite: write})
	if err := C.fl_mmio_map(e.h, C.uint64_t(addr), C.size_t(size), C.uintptr_t(hd)); err != C.UC_ERR_OK {
		deleteHandle(hd)
		return &OpError{Op: "mmio_map", Addr: addr, HasAddr: true, Err: Error(err)}
	}
	e.mmio = append(e.mmio, hd)
	return nil
}

// RegRead returns the value of a 32-bit register (or the low 64 bits of a
// wider one).
func (e *Engine) RegRead(r Reg) (uint64, error) {
	var buf [16]byte
	if err := e.RegReadBytes(r, &buf); err != nil {
		return 0, err
	}
	return *(*uint64)(unsafe.Pointer(&buf[0])), nil
}

// RegWrite sets a register. For registers narrower than 64 bits the upper
// bits are ignored.
func (e *Engine) RegWrite(r Reg, v uint64) error {
	var buf [16]byte
	*(*uint64)(unsafe.Pointer(&buf[0])) = v
	return e.RegWriteBytes(r, &buf)
}

// RegReadBytes reads a register of up to 16 bytes (S, D or Q registers)
// into buf, little-endian. A 16-byte buffer is always safe (docs/unicorn.md).
func (e *Engine) RegReadBytes(r Reg, buf *[16]byte) error {
	if err := e.check(); err != nil {
		return err
	}
	*buf = [16]byte{}
	if err := C.uc_reg_read(e.h, C.int(r), unsafe.Pointer(&buf[0])); err != C.UC_ERR_OK {
		return &OpError{Op: "reg_read", Addr: uint64(r), HasAddr: true, Err: Error(err)}
	}
	return nil
}

// RegWriteBytes writes a register of up to 16 bytes from buf.
func (e *Engine) RegWriteBytes(r Reg, buf *[16]byte) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.uc_reg_write(e.h, C.int(r), unsafe.Pointer(&buf[0])); err != C.UC_ERR_OK {
		return &OpError{Op: "reg_write", Addr: uint64(r), HasAddr: true, Err: Error(err)}
	}
	return nil
}

func (e *Engine) addHook(op string, cb *callback, add func(*C.uc_hook, C.uintptr_t) C.uc_err) (Hook, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	cb.e = e
	hd := newHandle(cb)
	var hh C.uc_hook
	if err := add(&hh, C.uintptr_t(hd)); err != C.UC_ERR_OK {
		deleteHandle(hd)
		return 0, &OpError{Op: "hook_add " + op, Err: Error(err)}
	}
	e.hooks[Hook(hh)] = hd
	return Hook(hh), nil
}

// HookCode calls fn before every instruction in [begin, end] (all
// instructions when begin > end). A Go code hook costs ~50 ns per guest
// instruction; see Tracker for the C hooks.
func (e *Engine) HookCode(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return e.addHook("code", &callback{code: fn}, func(hh *C.uc_hook, hd C.uintptr_t) C.uc_err {
		return C.fl_hook_code(e.h, hh, C.uint64_t(begin), C.uint64_t(end), hd)
	})
}

// HookBlock calls fn at the start of every translated block in [begin, end]
// (all blocks when begin > end); size is the block size in bytes.
func (e *Engine) HookBlock(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return e.addHook("block", &callback{block: fn}, func(hh *C.uc_hook, hd C.uintptr_t) C.uc_err {
		return C.fl_hook_block(e.h, hh, C.uint64_t(begin), C.uint64_t(end), hd)
	})
}

// HookMemInvalid calls fn on every unmapped or protection-violating access
// (UC_HOOK_MEM_INVALID). Returning true claims the access was fixed up and
// retries it; false makes Start fail with the matching Error.
func (e *Engine) HookMemInvalid(fn func(access MemAccess, addr uint64, size int, value int64) bool) (Hook, error) {
	return e.addHook("mem_invalid", &callback{memInvalid: fn}, func(hh *C.uc_hook, hd C.uintptr_t) C.uc_err {
		return C.fl_hook_mem_invalid(e.h, hh, hd)
	})
}

// HookInterrupt calls fn when the CPU raises an exception Unicorn does not
// handle itself (UC_HOOK_INTR); see the Intr* constants.
func (e *Engine) HookInterrupt(fn func(intno uint32)) (Hook, error) {
	return e.addHook("intr", &callback{intr: fn}, func(hh *C.uc_hook, hd C.uintptr_t) C.uc_err {
		return C.fl_hook_intr(e.h, hh, hd)
	})
}

// HookInsnInvalid calls fn on an undefined instruction
// (UC_HOOK_INSN_INVALID). Returning false makes Start fail with
// ErrInsnInvalid; true continues (fn must have moved PC).
func (e *Engine) HookInsnInvalid(fn func() bool) (Hook, error) {
	return e.addHook("insn_invalid", &callback{insnInvalid: fn}, func(hh *C.uc_hook, hd C.uintptr_t) C.uc_err {
		return C.fl_hook_insn_invalid(e.h, hh, hd)
	})
}

// HookDel removes a hook added by one of the Hook methods.
func (e *Engine) HookDel(h Hook) error {
	if err := e.check(); err != nil {
		return err
	}
	hd, ok := e.hooks[h]
	if !ok {
		return &OpError{Op: "hook_del", Addr: uint64(h), HasAddr: true, Err: ErrArg}
	}
	if err := C.uc_hook_del(e.h, C.uc_hook(h)); err != C.UC_ERR_OK {
		return &OpError{Op: "hook_del", Addr: uint64(h), HasAddr: true, Err: Error(err)}
	}
	delete(e.hooks, h)
	deleteHandle(hd)
	return nil
}

// Start runs the guest from begin until it reaches until, count instructions
// ran (0: no limit; a non-zero count makes Unicorn install a code hook, which
// is slow), the timeout expired (0: none), Stop was called or a fault
// occurred (uc_emu_start). begin must have bit 0 set for Thumb code.
//
// A guest fault is returned as an *OpError wrapping an Error such as
// ErrReadUnmapped; a panic in a Go callback as *CallbackPanicError.
func (e *Engine) Start(begin, until uint64, timeout time.Duration, count uint64) error {
	if err := e.check(); err != nil {
		return err
	}
	e.panicked = nil
	// The timeout is a Go timer calling uc_emu_stop, not uc_emu_start's
	// own: Unicorn 2.0.1's timer thread (it polls with usleep(2) and is
	// joined at the end of every start) was seen to stop a later, short
	// start at random under load: 3 of 5,430 emulator runs with 4 engines
	// running at once on 2 cores ended "stopped unexpectedly" or with a
	// replay that did not repeat its fault, and none with this watchdog.
	var wd *watchdog
	if timeout > 0 {
		wd = armWatchdog(e.h, timeout)
	}
	err := C.uc_emu_start(e.h, C.uint64_t(begin), C.uint64_t(until), 0, C.size_t(count))
	if wd != nil {
		wd.disarm()
	}
	if p := e.panicked; p != nil {
		e.panicked = nil
		return p
	}
	if err != C.UC_ERR_OK {
		return &OpError{Op: "emu_start", Addr: begin, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// Stop asks a running emulation to stop (uc_emu_stop); safe to call from
// hooks.
func (e *Engine) Stop() error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.uc_emu_stop(e.h); err != C.UC_ERR_OK {
		return &OpError{Op: "emu_stop", Err: Error(err)}
	}
	return nil
}

// FlushTBs drops every translated block (UC_CTL_TB_FLUSH), so hooks added
// after code ran take effect. Do not call it from a hook.
func (e *Engine) FlushTBs() error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.fl_flush_tb(e.h); err != C.UC_ERR_OK {
		return &OpError{Op: "ctl tb_flush", Err: Error(err)}
	}
	return nil
}

// RequestTB translates the block starting at addr for the core's current
// state without running it (UC_CTL_TB_REQUEST_CACHE), or finds the one
// already translated, and returns its size in bytes and instructions. The
// translation is made with the hooks installed now: a block translated
// while no data-access hook exists keeps Unicorn's inline fast path for its
// loads and stores for good. Do not call it from a hook; addr must lie in
// mapped code with at least a page of mapped memory after it.
func (e *Engine) RequestTB(addr uint32) (size, insns uint32, err error) {
	if err := e.check(); err != nil {
		return 0, 0, err
	}
	var sz, n C.uint32_t
	if err := C.fl_request_tb(e.h, C.uint64_t(addr&^1), &sz, &n); err != C.UC_ERR_OK {
		return 0, 0, &OpError{Op: "ctl tb_request_cache", Addr: uint64(addr), HasAddr: true, Err: Error(err)}
	}
	return uint32(sz), uint32(n), nil
}

// RemoveTBs asks Unicorn to drop the translated blocks of the code in
// [begin, end) (UC_CTL_TB_REMOVE_CACHE for every halfword). It is much
// cheaper than FlushTBs, but after installing a memory hook it was measured
// not to be equivalent to a flush in Unicorn 2.0.1 (emu/checks.go): use it
// for code hooks on known ranges only. Do not call it from a hook.
func (e *Engine) RemoveTBs(begin, end uint64) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := C.fl_remove_tb(e.h, C.uint64_t(begin), C.uint64_t(end)); err != C.UC_ERR_OK {
		return &OpError{Op: "ctl tb_remove_cache", Addr: begin, HasAddr: true, Err: Error(err)}
	}
	return nil
}

// Context is a saved CPU state (uc_context): all registers including the
// M-profile banked stack pointers and masks, but not memory. It belongs to
// its Engine and is freed by Free or by the Engine's Close.
type Context struct {
	e *Engine
	p *C.uc_context
}

// SaveContext saves the CPU state into c, allocating a new Context when c is
// nil (uc_context_alloc, uc_context_save). Saving is cheap (a ~4 KB copy).
func (e *Engine) SaveContext(c *Context) (*Context, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if c == nil || c.p == nil {
		var p *C.uc_context
		if err := C.uc_context_alloc(e.h, &p); err != C.UC_ERR_OK {
			return nil, &OpError{Op: "context_alloc", Err: Error(err)}
		}
		live.contexts.Add(1)
		c = &Context{e: e, p: p}
		e.contexts[c] = struct{}{}
	}
	if err := C.uc_context_save(e.h, c.p); err != C.UC_ERR_OK {
		return nil, &OpError{Op: "context_save", Err: Error(err)}
	}
	return c, nil
}

// RestoreContext makes c the current CPU state (uc_context_restore).
func (e *Engine) RestoreContext(c *Context) error {
	if err := e.check(); err != nil {
		return err
	}
	if c == nil || c.p == nil || c.e != e {
		return &OpError{Op: "context_restore", Err: ErrArg}
	}
	if err := C.uc_context_restore(e.h, c.p); err != C.UC_ERR_OK {
		return &OpError{Op: "context_restore", Err: Error(err)}
	}
	return nil
}

// Free releases the context's C memory. It is idempotent.
func (c *Context) Free() {
	if c == nil || c.p == nil {
		return
	}
	C.uc_context_free(c.p)
	c.p = nil
	live.contexts.Add(-1)
	if c.e != nil {
		delete(c.e.contexts, c)
	}
}

// recoverCallback is deferred by every exported callback: a panic is
// recorded, the emulation is stopped, and Start reports it.
func (cb *callback) recover(kind string) {
	if r := recover(); r != nil {
		e := cb.e
		if e.panicked == nil {
			e.panicked = &CallbackPanicError{Callback: kind, Value: r}
		}
		if e.h != nil {
			C.uc_emu_stop(e.h)
		}
	}
}

// newHandle and deleteHandle wrap cgo.NewHandle and Handle.Delete for the
// user data given to C, keeping LiveCounts.Handles.
func newHandle(cb *callback) cgo.Handle {
	live.handles.Add(1)
	return cgo.NewHandle(cb)
}

func deleteHandle(h cgo.Handle) {
	h.Delete()
	live.handles.Add(-1)
}

func lookup(h C.uintptr_t) *callback {
	return cgo.Handle(h).Value().(*callback)
}

//export goHookCode
func goHookCode(h C.uintptr_t, addr C.uint64_t, size C.uint32_t) {
	cb := lookup(h)
	defer cb.recover("code hook")
	cb.code(uint64(addr), uint32(size))
}

//export goHookBlock
func goHookBlock(h C.uintptr_t, addr C.uint64_t, size C.uint32_t) {
	cb := lookup(h)
	defer cb.recover("block hook")
	cb.block(uint64(addr), uint32(size))
}

//export goHookMemInvalid
func goHookMemInvalid(h C.uintptr_t, typ C.int, addr C.uint64_t, size C.int, value C.int64_t) (ok C.int) {
	cb := lookup(h)
	defer cb.recover("invalid memory hook")
	if cb.memInvalid(MemAccess(typ), uint64(addr), int(size), int64(value)) {
		return 1
	}
	return 0
}

//export goHookIntr
func goHookIntr(h C.uintptr_t, intno C.uint32_t) {
	cb := lookup(h)
	defer cb.recover("interrupt hook")
	cb.intr(uint32(intno))
}

//export goHookInsnInvalid
func goHookInsnInvalid(h C.uintptr_t) (ok C.int) {
	cb := lookup(h)
	defer cb.recover("invalid instruction hook")
	if cb.insnInvalid() {
		return 1
	}
	return 0
}

//export goMMIORead
func goMMIORead(h C.uintptr_t, off C.uint64_t, size C.unsigned) (v C.uint64_t) {
	cb := lookup(h)
	defer cb.recover("mmio read")
	if cb.mmioRead == nil {
		return 0
	}
	return C.uint64_t(cb.mmioRead(uint64(off), int(size)))
}

//export goMMIOWrite
func goMMIOWrite(h C.uintptr_t, off C.uint64_t, size C.unsigned, value C.uint64_t) {
	cb := lookup(h)
	defer cb.recover("mmio write")
	if cb.mmioWrite != nil {
		cb.mmioWrite(uint64(off), int(size), uint64(value))
	}
}

// The register, error and access numbers in regs.go and types.go are
// hard-coded so that the package builds without cgo; check them against the
// header here. Each pair fails to compile unless the difference is zero.
const (
	_, _ = uint(int(RegAPSRNZCV) - C.UC_ARM_REG_APSR_NZCV), uint(C.UC_ARM_REG_APSR_NZCV - int(RegAPSRNZCV))
	_, _ = uint(int(RegFPSCR) - C.UC_ARM_REG_FPSCR), uint(C.UC_ARM_REG_FPSCR - int(RegFPSCR))
	_, _ = uint(int(RegLR) - C.UC_ARM_REG_LR), uint(C.UC_ARM_REG_LR - int(RegLR))
	_, _ = uint(int(RegPC) - C.UC_ARM_REG_PC), uint(C.UC_ARM_REG_PC - int(RegPC))
	_, _ = uint(int(RegSP) - C.UC_ARM_REG_SP), uint(C.UC_ARM_REG_SP - int(RegSP))
	_, _ = uint(int(RegD0) - C.UC_ARM_REG_D0), uint(C.UC_ARM_REG_D0 - int(RegD0))
	_, _ = uint(int(RegQ0) - C.UC_ARM_REG_Q0), uint(C.UC_ARM_REG_Q0 - int(RegQ0))
	_, _ = uint(int(RegR0) - C.UC_ARM_REG_R0), uint(C.UC_ARM_REG_R0 - int(RegR0))
	_, _ = uint(int(RegS0) - C.UC_ARM_REG_S0), uint(C.UC_ARM_REG_S0 - int(RegS0))
	_, _ = uint(int(RegIPSR) - C.UC_ARM_REG_IPSR), uint(C.UC_ARM_REG_IPSR - int(RegIPSR))
	_, _ = uint(int(RegMSP) - C.UC_ARM_REG_MSP), uint(C.UC_ARM_REG_MSP - int(RegMSP))
	_, _ = uint(int(RegPSP) - C.UC_ARM_REG_PSP), uint(C.UC_ARM_REG_PSP - int(RegPSP))
	_, _ = uint(int(RegCONTROL) - C.UC_ARM_REG_CONTROL), uint(C.UC_ARM_REG_CONTROL - int(RegCONTROL))
	_, _ = uint(int(RegXPSR) - C.UC_ARM_REG_XPSR), uint(C.UC_ARM_REG_XPSR - int(RegXPSR))
	_, _ = uint(int(RegPRIMASK) - C.UC_ARM_REG_PRIMASK), uint(C.UC_ARM_REG_PRIMASK - int(RegPRIMASK))
	_, _ = uint(int(RegBASEPRI) - C.UC_ARM_REG_BASEPRI), uint(C.UC_ARM_REG_BASEPRI - int(RegBASEPRI))
	_, _ = uint(int(RegFAULTMSK) - C.UC_ARM_REG_FAULTMASK), uint(C.UC_ARM_REG_FAULTMASK - int(RegFAULTMSK))
	_, _ = uint(int(CortexM0) - C.UC_CPU_ARM_CORTEX_M0), uint(C.UC_CPU_ARM_CORTEX_M0 - int(CortexM0))
	_, _ = uint(int(CortexM33) - C.UC_CPU_ARM_CORTEX_M33), uint(C.UC_CPU_ARM_CORTEX_M33 - int(CortexM33))
	_, _ = uint(int(MemRead) - C.UC_MEM_READ), uint(C.UC_MEM_READ - int(MemRead))
	_, _ = uint(int(MemReadAfter) - C.UC_MEM_READ_AFTER), uint(C.UC_MEM_READ_AFTER - int(MemReadAfter))
	_, _ = uint(int(ErrException) - C.UC_ERR_EXCEPTION), uint(C.UC_ERR_EXCEPTION - int(ErrException))
)

// A watchdog stops one uc_emu_start after a timeout. Its callback and
// disarm are serialised, so a watchdog that fires late never stops a later
// start; uc_emu_stop on an engine whose emulation is done does nothing.
type watchdog struct {
	mu   sync.Mutex
	live bool
	t    *time.Timer
}

func armWatchdog(h *C.uc_engine, d time.Duration) *watchdog {
	w := &watchdog{live: true}
	w.t = time.AfterFunc(d, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.live {
			C.uc_emu_stop(h)
		}
	})
	return w
}

func (w *watchdog) disarm() {
	w.mu.Lock()
	w.live = false
	w.mu.Unlock()
	w.t.Stop()
}
