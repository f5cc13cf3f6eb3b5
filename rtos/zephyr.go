package rtos

import (
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// Zephyr thread discovery.
//
// A Zephyr kernel is recognised by its _kernel symbol. The threads are
// _kernel.cpus[0].current (the running thread) and, with
// CONFIG_THREAD_MONITOR, the list that starts at _kernel.threads and is
// linked by each struct k_thread's next_thread. The layouts come, in order
// of preference, from:
//
//  1. the ELF's debug types (struct k_thread, the type of _kernel): any
//     kernel version and configuration;
//  2. the _kernel_thread_info_offsets table Zephyr builds with
//     CONFIG_DEBUG_THREAD_INFO for debuggers (entries, in index order:
//     version, _kernel current, _kernel threads, entry, next_thread,
//     thread_state, user_options, prio, saved stack pointer, name, arch,
//     preempt_float, coop_float, ARM EXC_RETURN, ...; 0xffffffff for one the
//     build lacks), with _kernel_thread_info_num_offsets and
//     _kernel_thread_info_size_t_size; when debug types are there too the
//     two are cross-checked;
//  3. the default layout below, with a warning.
//
// A switched-out thread's context on ARM Cortex-M: r4-r11 and PSP in its
// callee_saved block (v1..v8, psp), the hardware exception frame at that
// PSP (r0-r3, r12, lr, pc, xpsr; with s0-s15 and fpscr when the thread's
// saved EXC_RETURN, arch.mode_exc_return, has bit 4 clear), and s16-s31 in
// arch.preempt_float (CONFIG_FPU_SHARING). The running thread's registers
// are the crash's own.
//
// thread_state bits: 0x01 dummy, 0x02 pending, 0x04 prestart (Zephyr 4
// reuses it for sleeping), 0x08 dead, 0x10 suspended, 0x20 aborting, 0x40
// suspending, 0x80 queued (ready).

// Limits on what a dump can make discovery read.
const (
	maxZephyrThreads  = 256
	maxZephyrNameLen  = 64
	maxZephyrStack    = 256 << 10 // stack bytes scanned for the high-water mark
	maxZephyrOffsets  = 64
	zephyrStackFill   = 0xaa
	zephyrUnimplement = 0xffffffff
)

// Zephyr thread_state bits.
const (
	zDummy      = 0x01
	zPending    = 0x02
	zPrestart   = 0x04
	zDead       = 0x08
	zSuspended  = 0x10
	zAborting   = 0x20
	zSuspending = 0x40
	zQueued     = 0x80
)

// zfield is one field's place: offset from the start of its struct, size
// in bytes; ok false when the build has no such field.
type zfield struct {
	off, size uint32
	ok        bool
}

func zf(off, size uint32) zfield { return zfield{off, size, true} }

// zephyrLayout is where discovery finds each field.
type zephyrLayout struct {
	source string

	current, threads zfield // in _kernel
	idle             zfield // _kernel.cpus[0].idle_thread

	state, prio, userOptions zfield // in struct k_thread
	pendedOn, timeoutNext    zfield
	next                     zfield
	callee                   [8]zfield // v1..v8 = r4..r11
	psp                      zfield
	name                     zfield
	stackStart, stackSize    zfield
	excReturn                zfield // arch.mode_exc_return (one byte)
	preemptFloat             zfield // arch.preempt_float (s16..s31)
	threadSize               uint32 // sizeof(struct k_thread), 0 unknown
}

// zephyrDefaultLayout is used when neither debug types nor the offsets
// table are there: Zephyr 3.x on ARMv7-M, one CPU, CONFIG_THREAD_MONITOR,
// CONFIG_THREAD_NAME (32 bytes), CONFIG_THREAD_STACK_INFO,
// CONFIG_SYS_CLOCK_EXISTS with 32-bit ticks, CONFIG_ARM_STORE_EXC_RETURN,
// no FPU sharing, no userspace, no SMP: the layout of
// firmware-samples/rtos-zephyr's M3 builds.
//
//	_kernel:  cpus[0].current 8, cpus[0].idle_thread 12, threads 32
//	k_thread: base.qnode_dlist 0, pended_on 8, user_options 12,
//	          thread_state 13, prio 14, timeout.node.next 24,
//	          callee_saved 40 (v1..v8, psp at 72), entry 88, next_thread 104,
//	          name 108 (32), stack_info.start 144, stack_info.size 148,
//	          arch 160 (mode_exc_return 169), size 172
func zephyrDefaultLayout() zephyrLayout {
	l := zephyrLayout{
		source:      "default layout",
		current:     zf(8, 4),
		idle:        zf(12, 4),
		threads:     zf(32, 4),
		pendedOn:    zf(8, 4),
		userOptions: zf(12, 1),
		state:       zf(13, 1),
		prio:        zf(14, 1),
		timeoutNext: zf(24, 4),
		psp:         zf(72, 4),
		next:        zf(104, 4),
		name:        zf(108, 32),
		stackStart:  zf(144, 4),
		stackSize:   zf(148, 4),
		excReturn:   zf(169, 1),
		threadSize:  172,
	}
	for i := range l.callee {
		l.callee[i] = zf(40+4*uint32(i), 4)
	}
	return l
}

// discoverZephyr recognises a Zephyr kernel by _kernel and lists its
// threads.
func discoverZephyr(in Input) (*Kernel, error) {
	kaddr, ok := in.ELF.Symbol("_kernel")
	if !ok {
		return nil, nil
	}
	k := &Kernel{Kind: "zephyr"}
	l, warnings := in.Layouts.zephyrLayout(in.ELF, func() (zephyrLayout, []string) { return zephyrLayoutOf(in) })
	k.Source = l.source
	k.Warnings = append(k.Warnings, warnings...)
	if !l.current.ok {
		return nil, fmt.Errorf("Zephyr kernel: cannot find the current thread's place in _kernel (no cpus[].current in its type)")
	}
	z := zreader{mem: in.Mem, elf: in.ELF, l: &l}
	if l.idle.ok {
		z.idle, _ = z.word(kaddr+l.idle.off, l.idle.size)
	}
	current, err := z.word(kaddr+l.current.off, l.current.size)
	if err != nil {
		return nil, fmt.Errorf("Zephyr kernel: _kernel.cpus[0].current at 0x%08x: %v (the dump does not hold _kernel)", kaddr+l.current.off, userErr(err))
	}
	if l.source == "default layout" {
		// A guessed layout: use it only when every thread it finds looks
		// like one, never print threads built from bytes that are not.
		if why := z.defaultLayoutMisfit(kaddr, current); why != "" {
			k.Warnings = append(k.Warnings, "Zephyr: the default layout does not fit this firmware's kernel data ("+why+"): no thread is listed (an ELF with debug information, or a build with CONFIG_DEBUG_THREAD_INFO / CONFIG_OPENOCD_SUPPORT, gives the real layout)")
			return k, nil
		}
	}
	if current != 0 {
		t := z.thread(current, true, in.Regs)
		k.Threads = append(k.Threads, t)
	}
	if !l.threads.ok {
		k.Warnings = append(k.Warnings, "Zephyr built without CONFIG_THREAD_MONITOR (_kernel has no threads list): only the current thread is known")
		return k, nil
	}
	head, err := z.word(kaddr+l.threads.off, l.threads.size)
	if err != nil {
		k.Warnings = append(k.Warnings, fmt.Sprintf("the thread list head _kernel.threads at 0x%08x: %v", kaddr+l.threads.off, userErr(err)))
		return k, nil
	}
	var seen addrSet
	onList := false
	for p, n := head, 0; p != 0; n++ {
		if n >= maxZephyrThreads {
			k.Warnings = append(k.Warnings, fmt.Sprintf("the thread list from _kernel.threads has more than %d threads: stopped there (corrupt list?)", maxZephyrThreads))
			break
		}
		if seen.has(p) {
			k.Warnings = append(k.Warnings, fmt.Sprintf("the thread list from _kernel.threads loops back to 0x%08x after %d threads: stopped there (corrupt list)", p, n))
			break
		}
		seen.add(p)
		if !l.next.ok {
			break
		}
		if l.source != "debug types" {
			// The offsets table says where the fields are, not that these
			// bytes are a thread: one whose name is not text is not.
			if why := z.notAThread(p, p == current); why != "" {
				k.Warnings = append(k.Warnings, fmt.Sprintf("the thread list from _kernel.threads reaches 0x%08x after %d threads, which is not a thread (%s): not listed, and the list is not followed past it", p, n, why))
				break
			}
		}
		next, err := z.word(p+l.next.off, l.next.size)
		if p == current {
			onList = true
		} else {
			k.Threads = append(k.Threads, z.thread(p, false, in.Regs))
		}
		if err != nil {
			if p != current {
				// z.thread already reported the unreadable struct.
				k.Warnings = append(k.Warnings, fmt.Sprintf("the thread list from _kernel.threads ends at 0x%08x: its next_thread cannot be read", p))
			}
			break
		}
		p = next
	}
	if current != 0 && !onList {
		k.Warnings = append(k.Warnings, fmt.Sprintf("the current thread 0x%08x is not on the thread list", current))
	}
	return k, nil
}

// zephyrMaxPlausibleStack bounds a thread's stack_info.size in a layout
// that is only a guess.
const zephyrMaxPlausibleStack = 16 << 20

// notAThread says why the bytes at p are not a struct k_thread under the
// layout ("" when they may be one): not word aligned, not readable, a
// name field that is not text (a NUL-terminated run of printable
// characters), stack bounds that are not plausible, or (for a switched-out
// thread) a saved stack pointer outside them.
func (z *zreader) notAThread(p uint32, current bool) string {
	l := z.l
	if p&3 != 0 {
		return fmt.Sprintf("0x%08x is not word aligned", p)
	}
	if _, err := z.word(p, 4); err != nil {
		return fmt.Sprintf("0x%08x cannot be read: %v", p, userErr(err))
	}
	if l.name.ok {
		n := min(l.name.size, maxZephyrNameLen)
		buf := make([]byte, n)
		if err := z.mem.Read(p+l.name.off, buf); err != nil {
			return "its name cannot be read"
		}
		if !nameIsText(buf) {
			return fmt.Sprintf("its name field holds no text: % x", buf[:min(len(buf), 8)])
		}
	}
	start, ok1 := z.field(p, l.stackStart)
	size, ok2 := z.field(p, l.stackSize)
	if ok1 && ok2 {
		if size == 0 || size > zephyrMaxPlausibleStack || uint64(start)+uint64(size) > 1<<32 || start&3 != 0 {
			return fmt.Sprintf("its stack_info (start 0x%08x, size %d) is not a stack", start, size)
		}
		if psp, ok := z.field(p, l.psp); ok && !current && (psp < start || psp >= start+size) {
			return fmt.Sprintf("its saved stack pointer 0x%08x is outside its stack 0x%08x-0x%08x", psp, start, start+size)
		}
	}
	if next, ok := z.field(p, l.next); ok && next&3 != 0 {
		return fmt.Sprintf("its next_thread 0x%08x is not word aligned", next)
	}
	return ""
}

// defaultLayoutMisfit checks the default layout against the kernel data:
// the current thread and every thread on the list must look like threads
// (notAThread), the list must end within maxZephyrThreads without a loop
// and hold the current thread.
func (z *zreader) defaultLayoutMisfit(kaddr, current uint32) string {
	if current != 0 {
		if why := z.notAThread(current, true); why != "" {
			return fmt.Sprintf("the current thread 0x%08x: %s", current, why)
		}
	}
	head, err := z.word(kaddr+z.l.threads.off, z.l.threads.size)
	if err != nil {
		return "the thread list head cannot be read"
	}
	var seen addrSet
	onList := current == 0
	for p, n := head, 0; p != 0; n++ {
		if n >= maxZephyrThreads || seen.has(p) {
			return "the thread list does not end"
		}
		seen.add(p)
		if why := z.notAThread(p, p == current); why != "" {
			return fmt.Sprintf("thread %d of the list, 0x%08x: %s", n+1, p, why)
		}
		onList = onList || p == current
		next, err := z.word(p+z.l.next.off, z.l.next.size)
		if err != nil {
			return fmt.Sprintf("thread %d of the list, 0x%08x: its next_thread cannot be read", n+1, p)
		}
		p = next
	}
	if !onList {
		return fmt.Sprintf("the current thread 0x%08x is not on the thread list", current)
	}
	return ""
}

// nameIsText says whether a name field holds text: printable characters
// (ASCII or UTF-8, no control characters) up to a NUL inside the field.
func nameIsText(b []byte) bool {
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return false
	}
	s := string(b[:end])
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// userErr turns a memory error into words for a user.
func userErr(err error) error {
	var ue *unwinders.UnmappedError
	if errors.As(err, &ue) {
		return fmt.Errorf("0x%08x is not in the dump's memory or the ELF", ue.Addr)
	}
	if errors.Is(err, unwinders.ErrUnmapped) {
		return errors.New("not in the dump's memory or the ELF")
	}
	return err
}

// zreader reads threads with one layout.
type zreader struct {
	mem  unwinders.Memory
	elf  *elfsym.File
	l    *zephyrLayout
	idle uint32 // _kernel.cpus[0].idle_thread, 0 unknown
}

// word reads a little-endian value of size 1, 2 or 4 bytes.
func (z *zreader) word(addr, size uint32) (uint32, error) {
	var b [4]byte
	if size == 0 || size > 4 {
		size = 4
	}
	if err := z.mem.Read(addr, b[:size]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// field reads a field of the thread at base; ok false when the layout
// lacks it or memory does not hold it.
func (z *zreader) field(base uint32, f zfield) (uint32, bool) {
	if !f.ok {
		return 0, false
	}
	v, err := z.word(base+f.off, f.size)
	return v, err == nil
}

// thread reads one struct k_thread at p.
func (z *zreader) thread(p uint32, current bool, crash unwinders.Registers) Thread {
	l := z.l
	t := Thread{ID: p, Current: current, State: Unknown, Priority: PriorityUnknown, BasePriority: PriorityUnknown}
	t.Stack.HighWaterBytes = -1
	if _, err := z.word(p, 4); err != nil || p&3 != 0 {
		if err == nil {
			err = fmt.Errorf("0x%08x is not word aligned", p)
		}
		t.Err = fmt.Errorf("struct k_thread at 0x%08x cannot be read: %v", p, userErr(err))
		return t
	}
	if l.threadSize >= 4 && uint64(p)+uint64(l.threadSize) <= 1<<32 {
		if _, err := z.word((p+l.threadSize-4)&^3, 4); err != nil {
			t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("only part of struct k_thread at 0x%08x is in the dump", p))
		}
	}
	if l.name.ok {
		n := min(l.name.size, maxZephyrNameLen)
		buf := make([]byte, n)
		if err := z.mem.Read(p+l.name.off, buf); err == nil {
			t.Name = cString(buf)
		}
	}
	state, okState := z.field(p, l.state)
	if v, ok := z.field(p, l.prio); ok {
		t.Priority = signExtend(v, l.prio.size)
		t.BasePriority = t.Priority
	}
	pended, _ := z.field(p, l.pendedOn)
	toNext, timeoutLinked := z.field(p, l.timeoutNext)
	timeoutLinked = timeoutLinked && toNext != 0
	switch {
	case pended != 0:
		t.WaitingOn = z.objectName(pended)
		if timeoutLinked {
			t.WaitingOn += " with a timeout"
		}
	case timeoutLinked:
		t.WaitingOn = "delay"
	}
	switch {
	case current:
		t.State = Running
	case !okState:
		t.State = Unknown
	case state&(zDead|zAborting) != 0:
		t.State = Deleted
	case state&zDummy != 0:
		t.State = Unknown
		t.Diagnosis = append(t.Diagnosis, "a dummy thread (thread_state bit 0x01): not a real thread")
	case state&(zSuspended|zSuspending) != 0:
		t.State = Suspended
	case state&zPending != 0:
		t.State = Blocked
	case state&zPrestart != 0:
		if timeoutLinked {
			t.State = Blocked // Zephyr 4: the bit means sleeping
		} else {
			t.State = Suspended
			if t.WaitingOn == "" {
				t.WaitingOn = "not started"
			}
		}
	case state&zQueued != 0:
		t.State = Ready
	case state == 0 && p == z.idle && !timeoutLinked && pended == 0:
		// Zephyr keeps the idle thread off the ready queue (no state bit):
		// it runs whenever nothing else is ready.
		t.State = Ready
	default:
		t.State = Blocked // sleeping, or waiting with no object
	}
	z.stack(&t)
	if current {
		t.Regs = crash
		sp, ok := crash.Get(unwinders.SP)
		if ipsr, known := crash.IPSR(); known && ipsr != 0 {
			// In a handler: the thread's own stack pointer is PSP.
			sp, ok = crash.Get(unwinders.PSP)
		}
		if ok {
			t.Stack.SP = sp
			z.checkSP(&t, sp)
		}
		return t
	}
	z.context(&t)
	return t
}

// objectName names what a thread pends on: the symbol holding the wait
// queue (a k_sem, k_mutex, k_msgq... whose wait_q is its first member),
// and its address.
func (z *zreader) objectName(addr uint32) string {
	if z.elf != nil {
		if s, ok := z.elf.SymbolFor(addr); ok && s.Placement == elfsym.Inside && s.Kind == elfsym.SymObject {
			if s.Offset == 0 {
				return fmt.Sprintf("%s (0x%08x)", s.Name, addr)
			}
			return fmt.Sprintf("%s+0x%x (0x%08x)", s.Name, s.Offset, addr)
		}
	}
	return fmt.Sprintf("wait queue 0x%08x", addr)
}

// stack fills the stack bounds and the high-water mark.
func (z *zreader) stack(t *Thread) {
	l := z.l
	start, ok1 := z.field(t.ID, l.stackStart)
	size, ok2 := z.field(t.ID, l.stackSize)
	if !ok1 || !ok2 || size == 0 {
		return
	}
	if uint64(start)+uint64(size) > 1<<32 {
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("stack_info (start 0x%08x, size %d) runs past the end of the address space", start, size))
		return
	}
	t.Stack.Start, t.Stack.End = start, start+size
	// Count the fill bytes from the bottom, a chunk at a time: the scan
	// stops at the first used byte, and at maxZephyrStack.
	var chunk [256]byte
	hw := uint32(0)
	for hw < size && hw < maxZephyrStack {
		n := min(uint32(len(chunk)), size-hw)
		if err := z.mem.Read(start+hw, chunk[:n]); err != nil {
			return // the stack is not (all) in the dump: unknown
		}
		i := uint32(0)
		for i+8 <= n && binary.LittleEndian.Uint64(chunk[i:]) == 0x0101010101010101*zephyrStackFill {
			i += 8 // eight fill bytes at a time
		}
		for i < n && chunk[i] == zephyrStackFill {
			i++
		}
		hw += i
		if i < n {
			break
		}
	}
	if hw >= maxZephyrStack && hw < size {
		return // too large to scan: unknown
	}
	t.Stack.HighWaterBytes = int(hw)
	if hw == 0 {
		t.Diagnosis = append(t.Diagnosis, "no unused stack left: the lowest stack byte is no longer the 0xaa fill (stack full or overflowed)")
	}
}

// checkSP says when a stack pointer is outside its thread's stack.
func (z *zreader) checkSP(t *Thread, sp uint32) {
	s := &t.Stack
	if s.Start == 0 && s.End == 0 {
		return
	}
	switch {
	case sp < s.Start && s.Start-sp <= 0x10000:
		s.Overflow = true
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("stack overflowed: SP 0x%08x is %d bytes below the stack's start 0x%08x", sp, s.Start-sp, s.Start))
	case sp < s.Start || sp > s.End:
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("SP 0x%08x is outside the thread's stack [0x%08x, 0x%08x)", sp, s.Start, s.End))
	}
}

// context reads a switched-out thread's registers.
func (z *zreader) context(t *Thread) {
	l := z.l
	p := t.ID
	psp, ok := z.field(p, l.psp)
	if !ok {
		t.Err = fmt.Errorf("the saved stack pointer (callee_saved.psp) of thread 0x%08x cannot be read", p)
		return
	}
	t.Stack.SP = psp
	z.checkSP(t, psp)
	var r unwinders.Registers
	for i, f := range l.callee {
		if v, ok := z.field(p, f); ok {
			r.Set(unwinders.R4+unwinders.Reg(i), v)
		}
	}
	exc := uint32(0xFFFFFFFD)
	if v, ok := z.field(p, l.excReturn); ok {
		exc = 0xFFFFFF00 | v&0xFF
	}
	size := uint32(0x20)
	if exc&0x10 == 0 {
		size = 0x68
	}
	if psp&3 != 0 {
		t.Err = fmt.Errorf("saved stack pointer 0x%08x is not word aligned: the thread's context is lost", psp)
		return
	}
	if uint64(psp)+uint64(size) > 1<<32 {
		t.Err = fmt.Errorf("saved stack pointer 0x%08x leaves no room for an exception frame: the thread's context is lost", psp)
		return
	}
	frame := make([]byte, size)
	if err := z.mem.Read(psp, frame); err != nil {
		t.Err = fmt.Errorf("the exception frame at the saved stack pointer 0x%08x cannot be read: %v", psp, userErr(err))
		return
	}
	w := func(i int) uint32 { return binary.LittleEndian.Uint32(frame[4*i:]) }
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		r.Set(reg, w(i))
	}
	sp := psp + size
	if w(7)&(1<<9) != 0 {
		sp += 4
	}
	r.Set(unwinders.SP, sp)
	r.Set(unwinders.PSP, sp)
	if size == 0x68 {
		for i := 0; i < 16; i++ {
			r.Set(unwinders.S(i), w(8+i))
		}
		r.Set(unwinders.FPSCR, w(24))
		if l.preemptFloat.ok {
			fp := make([]byte, 64)
			if err := z.mem.Read(p+l.preemptFloat.off, fp); err == nil {
				for i := 0; i < 16; i++ {
					r.Set(unwinders.S(16+i), binary.LittleEndian.Uint32(fp[4*i:]))
				}
			}
		}
	}
	pc := w(6)
	if z.elf != nil && !z.elf.IsCode(pc&^1) {
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("the saved PC 0x%08x is not in the ELF's code: the saved context is probably corrupt", pc))
	}
	if w(7)&(1<<24) == 0 {
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("the saved xPSR 0x%08x has the Thumb bit clear: the saved context is probably corrupt", w(7)))
	}
	t.Regs = r
}

// cString is the text up to the first NUL, with bytes that are not
// printable ASCII shown as \xNN.
func cString(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			fmt.Fprintf(&s, "\\x%02x", c)
			continue
		}
		s.WriteByte(c)
	}
	return s.String()
}

// signExtend reads a signed field of size bytes.
func signExtend(v, size uint32) int {
	switch size {
	case 1:
		return int(int8(v))
	case 2:
		return int(int16(v))
	}
	return int(int32(v))
}

// zephyrLayoutOf finds the layout: debug types, then the offsets table,
// then the default.
func zephyrLayoutOf(in Input) (zephyrLayout, []string) {
	var warnings []string
	table, tableErr := zephyrOffsetsTable(in)
	dl, dwarfErr := zephyrDWARFLayout(NewTypes(in.ELF.DWARF()))
	switch {
	case dwarfErr == nil:
		if table != nil {
			warnings = append(warnings, crossCheck(&dl, table)...)
		}
		return dl, warnings
	case table != nil:
		l := zephyrTableLayout(table)
		return l, warnings
	}
	l := zephyrDefaultLayout()
	msg := fmt.Sprintf("Zephyr: no debug types for struct k_thread (%v)", dwarfErr)
	if tableErr != nil {
		msg += fmt.Sprintf(" and %v", tableErr)
	} else {
		msg += " and no _kernel_thread_info_offsets table"
	}
	warnings = append(warnings, msg+": using the default layout of Zephyr 3.x on ARMv7-M (one CPU, thread monitor, 32-byte names, stack info, no FPU sharing); thread fields may be wrong for another configuration")
	return l, warnings
}

// zephyrOffsetsTable reads _kernel_thread_info_offsets; nil, nil when the
// ELF has no table.
func zephyrOffsetsTable(in Input) ([]uint32, error) {
	// Zephyr 2.6 renamed the table of CONFIG_OPENOCD_SUPPORT
	// (_kernel_openocd_*, 13 entries in 2.5: no EXC_RETURN) to
	// CONFIG_DEBUG_THREAD_INFO's _kernel_thread_info_*; same layout.
	prefix := "_kernel_thread_info_"
	addr, ok := in.ELF.Symbol(prefix + "offsets")
	if !ok {
		prefix = "_kernel_openocd_"
		if addr, ok = in.ELF.Symbol(prefix + "offsets"); !ok {
			return nil, nil
		}
	}
	bad := func(format string, args ...any) ([]uint32, error) {
		return nil, fmt.Errorf("the "+prefix+"offsets table cannot be used: "+format, args...)
	}
	if a, ok := in.ELF.Symbol(prefix + "size_t_size"); ok {
		var b [1]byte
		if err := in.Mem.Read(a, b[:]); err == nil && b[0] != 4 {
			return bad(prefix+"size_t_size is %d: want 4 (32-bit size_t)", b[0])
		}
	}
	n := uint32(15) // the entries every version-1 table has on ARM
	if prefix == "_kernel_openocd_" {
		n = 13
	}
	if a, ok := in.ELF.Symbol(prefix + "num_offsets"); ok {
		v, err := unwinders.ReadU32(in.Mem, a)
		if err != nil {
			return bad(prefix+"num_offsets at 0x%08x: %v", a, userErr(err))
		}
		n = v
	}
	if n < 9 || n > maxZephyrOffsets {
		return bad("it has %d entries: want 9 to %d", n, maxZephyrOffsets)
	}
	buf := make([]byte, 4*n)
	if err := in.Mem.Read(addr, buf); err != nil {
		return bad("%d entries at 0x%08x: %v", n, addr, userErr(err))
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(buf[4*i:])
	}
	if out[0] != 1 {
		return bad("version %d: want 1", out[0])
	}
	return out, nil
}

// Indexes of the offsets table.
const (
	tiCurrent      = 1
	tiThreads      = 2
	tiEntry        = 3
	tiNext         = 4
	tiState        = 5
	tiUserOptions  = 6
	tiPrio         = 7
	tiStackPtr     = 8
	tiName         = 9
	tiArch         = 10
	tiPreemptFloat = 11
	tiCoopFloat    = 12
	tiExcReturn    = 13
)

// tableField is entry i of the table as a field of size bytes.
func tableField(tab []uint32, i int, size uint32) zfield {
	if i >= len(tab) || tab[i] == zephyrUnimplement || tab[i] > 1<<16 {
		return zfield{}
	}
	return zf(tab[i], size)
}

// zephyrTableLayout builds a layout from the offsets table. The table has
// no stack bounds, wait object or timeout; the callee-saved block is the
// eight words before the saved stack pointer (ARM's struct _callee_saved
// ends with psp after v1..v8).
func zephyrTableLayout(tab []uint32) zephyrLayout {
	l := zephyrLayout{source: "thread info offsets"}
	l.current = tableField(tab, tiCurrent, 4)
	if l.current.ok {
		// struct _cpu has idle_thread right after current in every
		// Zephyr from 2.x on; the table has no entry for it.
		l.idle = zf(l.current.off+4, 4)
	}
	l.threads = tableField(tab, tiThreads, 4)
	l.next = tableField(tab, tiNext, 4)
	l.state = tableField(tab, tiState, 1)
	l.userOptions = tableField(tab, tiUserOptions, 1)
	l.prio = tableField(tab, tiPrio, 1)
	l.psp = tableField(tab, tiStackPtr, 4)
	l.name = tableField(tab, tiName, 32)
	l.preemptFloat = tableField(tab, tiPreemptFloat, 64)
	l.excReturn = tableField(tab, tiExcReturn, 1)
	if l.psp.ok && l.psp.off >= 32 {
		for i := range l.callee {
			l.callee[i] = zf(l.psp.off-32+4*uint32(i), 4)
		}
	}
	return l
}

// crossCheck compares the debug types' layout with the offsets table.
func crossCheck(l *zephyrLayout, tab []uint32) []string {
	var bad []string
	check := func(name string, f zfield, i int) {
		if i >= len(tab) || tab[i] == zephyrUnimplement {
			return
		}
		if !f.ok || f.off != tab[i] {
			bad = append(bad, fmt.Sprintf("%s (table %d, debug types %d)", name, tab[i], f.off))
		}
	}
	check("current", l.current, tiCurrent)
	check("threads", l.threads, tiThreads)
	check("next_thread", l.next, tiNext)
	check("thread_state", l.state, tiState)
	check("prio", l.prio, tiPrio)
	check("stack pointer", l.psp, tiStackPtr)
	check("name", l.name, tiName)
	check("EXC_RETURN", l.excReturn, tiExcReturn)
	if len(bad) == 0 {
		return nil
	}
	return []string{"Zephyr: the _kernel_thread_info_offsets table disagrees with the debug types on " + strings.Join(bad, ", ") + ": the debug types are used"}
}

// typeMemo resolves each type entry once per layout.
type typeMemo struct {
	ts *Types
	m  map[dwarf.Offset]*Type
}

func (tm *typeMemo) at(off dwarf.Offset) (*Type, error) {
	if t, ok := tm.m[off]; ok {
		return t, nil
	}
	t, err := tm.ts.At(off)
	if err == nil {
		tm.m[off] = t
	}
	return t, err
}

// zephyrDWARFLayout reads the layout from the debug types.
func zephyrDWARFLayout(types *Types) (zephyrLayout, error) {
	l := zephyrLayout{source: "debug types"}
	ts := &typeMemo{ts: types, m: map[dwarf.Offset]*Type{}}
	kt, err := types.Struct("k_thread")
	if err != nil {
		return l, err
	}
	l.threadSize = kt.Size
	var ktype *Type
	if v, err := types.Variable("_kernel"); err == nil && (v.Kind == "struct") && len(v.Members) > 0 {
		ktype = v
	} else if s, err := types.Struct("z_kernel", "_kernel"); err == nil {
		ktype = s
	} else {
		return l, fmt.Errorf("the type of _kernel: %w", ErrNoType)
	}
	if f, err := fieldOf(ts, ktype, "cpus", "current"); err == nil {
		l.current = f
	} else if f, err := fieldOf(ts, ktype, "current"); err == nil {
		l.current = f
	}
	l.threads, _ = fieldOf(ts, ktype, "threads")
	l.idle, _ = fieldOf(ts, ktype, "cpus", "idle_thread")
	l.state, _ = fieldOf(ts, kt, "base", "thread_state")
	l.prio, _ = fieldOf(ts, kt, "base", "prio")
	l.userOptions, _ = fieldOf(ts, kt, "base", "user_options")
	l.pendedOn, _ = fieldOf(ts, kt, "base", "pended_on")
	l.timeoutNext, _ = fieldOf(ts, kt, "base", "timeout", "node", "next")
	l.next, _ = fieldOf(ts, kt, "next_thread")
	for i := range l.callee {
		l.callee[i], _ = fieldOf(ts, kt, "callee_saved", fmt.Sprintf("v%d", i+1))
	}
	l.psp, _ = fieldOf(ts, kt, "callee_saved", "psp")
	l.name, _ = fieldOf(ts, kt, "name")
	l.stackStart, _ = fieldOf(ts, kt, "stack_info", "start")
	l.stackSize, _ = fieldOf(ts, kt, "stack_info", "size")
	l.excReturn, _ = fieldOf(ts, kt, "arch", "mode_exc_return")
	l.preemptFloat, _ = fieldOf(ts, kt, "arch", "preempt_float")
	if !l.psp.ok {
		return l, fmt.Errorf("struct k_thread has no callee_saved.psp (not an ARM Cortex-M build?): %w", ErrNoType)
	}
	return l, nil
}

// fieldOf finds a member path in a struct: each name is looked up among
// the members, descending into anonymous struct and union members (Zephyr
// keeps prio and mode_exc_return in them); an array member stands for its
// first element.
func fieldOf(ts *typeMemo, t *Type, path ...string) (zfield, error) {
	var off uint32
	cur := t
	var last Member
	for i, name := range path {
		m, moff, ok := findMember(ts, cur, name, 0)
		if !ok {
			return zfield{}, fmt.Errorf("%s has no member %s: %w", strings.Join(path[:i], "."), name, ErrNoType)
		}
		off += moff
		last = m
		if i == len(path)-1 {
			break
		}
		mt, err := ts.at(m.Type)
		if err != nil {
			return zfield{}, err
		}
		if mt.Kind == "array" && mt.Elem != 0 {
			if mt, err = ts.at(mt.Elem); err != nil {
				return zfield{}, err
			}
		}
		cur = mt
	}
	return zf(off, last.Size), nil
}

// findMember looks name up in t and its anonymous members (at most 4
// levels deep) and returns the member and its offset from t's start.
func findMember(ts *typeMemo, t *Type, name string, depth int) (Member, uint32, bool) {
	if m, ok := t.Member(name); ok {
		return m, m.Offset, true
	}
	if depth >= 4 {
		return Member{}, 0, false
	}
	for _, m := range t.Members {
		if m.Name != "" || m.Type == 0 {
			continue
		}
		mt, err := ts.at(m.Type)
		if err != nil || (mt.Kind != "struct" && mt.Kind != "union") {
			continue
		}
		if in, off, ok := findMember(ts, mt, name, depth+1); ok {
			return in, m.Offset + off, true
		}
	}
	return Member{}, 0, false
}

// SymbolLookup adapts an ELF's symbol table to what a dump's
// symbol-addressed memory needs (crashdump's PlaceSymbolRegions, for a
// Zephyr coredump's threads block): a symbol's address and its size (0
// when the symbol table does not give it).
func SymbolLookup(elf *elfsym.File) func(name string) (addr, size uint32, ok bool) {
	return func(name string) (uint32, uint32, bool) {
		if elf == nil {
			return 0, 0, false
		}
		a, ok := elf.Symbol(name)
		if !ok {
			return 0, 0, false
		}
		var size uint32
		if s, ok := elf.SymbolFor(a); ok && s.Name == name && s.Start == a {
			size = s.Size
		}
		return a, size, true
	}
}

// ZephyrSavedSP returns the stack pointer the kernel saved in thread's
// struct k_thread at its last switch-out (callee_saved.psp on ARM), read
// with the layout discovery would use. For the running thread it is stale
// (the thread has run since) but lies within its stack: a place to look
// for the thread's stack when stack_info is not known.
func ZephyrSavedSP(in Input, thread uint32) (uint32, bool) {
	if in.ELF == nil || in.Mem == nil {
		return 0, false
	}
	if _, ok := in.ELF.Symbol("_kernel"); !ok {
		return 0, false
	}
	l, _ := in.Layouts.zephyrLayout(in.ELF, func() (zephyrLayout, []string) { return zephyrLayoutOf(in) })
	z := zreader{mem: in.Mem, elf: in.ELF, l: &l}
	return z.field(thread, l.psp)
}

// ZephyrSavedExcReturn returns the EXC_RETURN the kernel saved for thread
// at its last switch-out (arch.mode_exc_return, completed to 0xFFFFFFxx),
// when the layout has it: bit 4 clear means the thread then had live FP
// state, which it keeps (CONTROL.FPCA) once switched back in.
func ZephyrSavedExcReturn(in Input, thread uint32) (uint32, bool) {
	if in.ELF == nil || in.Mem == nil {
		return 0, false
	}
	if _, ok := in.ELF.Symbol("_kernel"); !ok {
		return 0, false
	}
	l, _ := in.Layouts.zephyrLayout(in.ELF, func() (zephyrLayout, []string) { return zephyrLayoutOf(in) })
	z := zreader{mem: in.Mem, elf: in.ELF, l: &l}
	v, ok := z.field(thread, l.excReturn)
	if !ok || v&0xff == 0 {
		return 0, false
	}
	return 0xFFFFFF00 | v&0xff, true
}
