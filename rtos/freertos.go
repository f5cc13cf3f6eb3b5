package rtos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// FreeRTOS task discovery. The kernel's globals are found by name
// (pxCurrentTCB, pxReadyTasksLists, xDelayedTaskList1/2, pxDelayedTaskList,
// pxOverflowDelayedTaskList, xPendingReadyList, xSuspendedTaskList,
// xTasksWaitingTermination, xQueueRegistry); the layouts of the task
// control block (tskTCB), list (xLIST), list item (xLIST_ITEM) and queue
// come from the ELF's DWARF types, so configUSE_MINI_LIST_ITEM, MPU
// wrappers and trace fields need no configuration.

// Bounds on hostile input.
const (
	maxTasks      = 256
	maxPriorities = 256
	maxNameLen    = 64
	maxStackScan  = 256 << 10
)

// frLayout holds the byte offsets discovery reads. -1 means absent.
type frLayout struct {
	source string

	top, stateItem, eventItem, prio, stack, name, end, base, mpu, notifyState int
	nameLen                                                                   int
	// notifyN is the length of the ucNotifyState array
	// (configTASK_NOTIFICATION_ARRAY_ENTRIES).
	notifyN int

	listSize, listCount, listEnd                  uint32
	itemValue, itemNext, itemOwner, itemContainer uint32

	// Queue (QueueDefinition): -1 when its type is unknown.
	qHead, qHolder, qSend, qRecv, qType int
	regSize, regName, regHandle         uint32
}

// defaultLayout is FreeRTOS's layout on a 32-bit port with
// configUSE_MINI_LIST_ITEM 1, no MPU wrappers and 16-character names: what
// a stripped ELF is read with.
func defaultLayout() *frLayout {
	return &frLayout{
		source: "default layout",
		top:    0, stateItem: 4, eventItem: 24, prio: 44, stack: 48, name: 52, nameLen: 16,
		end: -1, base: -1, mpu: -1, notifyState: -1,
		listSize: 20, listCount: 0, listEnd: 8,
		itemValue: 0, itemNext: 4, itemOwner: 12, itemContainer: 16,
		qHead: 0, qHolder: 8, qSend: 16, qRecv: 36, qType: -1,
		regSize: 8, regName: 0, regHandle: 4,
	}
}

func off(t *Type, name string) int {
	if m, ok := t.Member(name); ok {
		return int(m.Offset)
	}
	return -1
}

// typesLayout reads the layout from DWARF; an error when the TCB or list
// types are missing.
func typesLayout(ts *Types) (*frLayout, error) {
	tcb, err := ts.Struct("tskTaskControlBlock", "tskTCB", "TCB_t")
	if err != nil {
		return nil, err
	}
	list, err := ts.Struct("xLIST", "List_t")
	if err != nil {
		return nil, err
	}
	item, err := ts.Struct("xLIST_ITEM", "ListItem_t")
	if err != nil {
		return nil, err
	}
	l := &frLayout{source: "debug types",
		top: off(tcb, "pxTopOfStack"), stateItem: off(tcb, "xStateListItem"), eventItem: off(tcb, "xEventListItem"),
		prio: off(tcb, "uxPriority"), stack: off(tcb, "pxStack"), name: off(tcb, "pcTaskName"),
		end: off(tcb, "pxEndOfStack"), base: off(tcb, "uxBasePriority"), mpu: off(tcb, "xMPUSettings"),
		notifyState: off(tcb, "ucNotifyState"),
		listSize:    list.Size, itemValue: uint32(max(off(item, "xItemValue"), 0)),
	}
	if m, ok := tcb.Member("pcTaskName"); ok {
		l.nameLen = int(m.Size)
	}
	l.notifyN = 1
	if m, ok := tcb.Member("ucNotifyState"); ok && m.Size > 1 && m.Size <= 64 {
		l.notifyN = int(m.Size) // uint8_t ucNotifyState[configTASK_NOTIFICATION_ARRAY_ENTRIES]
	}
	must := map[string]int{"pxTopOfStack": l.top, "xStateListItem": l.stateItem, "xEventListItem": l.eventItem,
		"uxPriority": l.prio, "pxStack": l.stack, "pcTaskName": l.name}
	for n, v := range must {
		if v < 0 {
			return nil, fmt.Errorf("the task control block type has no member %s", n)
		}
	}
	lc, le := off(list, "uxNumberOfItems"), off(list, "xListEnd")
	in, io, ic := off(item, "pxNext"), off(item, "pvOwner"), off(item, "pxContainer")
	if ic < 0 {
		ic = off(item, "pvContainer") // FreeRTOS before V10
	}
	if lc < 0 || le < 0 || in < 0 || io < 0 || ic < 0 {
		return nil, errors.New("the list or list item type lacks uxNumberOfItems, xListEnd, pxNext, pvOwner or pxContainer")
	}
	l.listCount, l.listEnd, l.itemNext, l.itemOwner, l.itemContainer = uint32(lc), uint32(le), uint32(in), uint32(io), uint32(ic)
	if l.nameLen <= 0 || l.nameLen > maxNameLen {
		l.nameLen = 16
	}
	l.qHead, l.qHolder, l.qSend, l.qRecv, l.qType = -1, -1, -1, -1, -1
	if q, err := ts.Struct("QueueDefinition", "xQUEUE", "Queue_t"); err == nil {
		l.qHead, l.qSend, l.qRecv, l.qType = off(q, "pcHead"), off(q, "xTasksWaitingToSend"), off(q, "xTasksWaitingToReceive"), off(q, "ucQueueType")
		if u := off(q, "u"); u >= 0 {
			l.qHolder = u // u.xSemaphore.xMutexHolder is the union's first word
		}
	}
	l.regSize, l.regName, l.regHandle = 8, 0, 4
	if r, err := ts.Struct("QUEUE_REGISTRY_ITEM", "xQueueRegistryItem", "QueueRegistryItem_t"); err == nil {
		if n, h := off(r, "pcQueueName"), off(r, "xHandle"); n >= 0 && h >= 0 && r.Size > 0 {
			l.regSize, l.regName, l.regHandle = r.Size, uint32(n), uint32(h)
		}
	}
	return l, nil
}

type frReader struct {
	in  Input
	l   *frLayout
	k   *Kernel
	ctx *ctxLayout
	// notifyOK: l.notifyState can be read (from the debug types, or from
	// the code and consistent with this dump); notifyWait: a task may be
	// waiting on a notification at all.
	notifyOK, notifyWait bool
	notifyBad            addrSet // tasks whose notification state is not one
	// itemOff is where the walked state list items sit in their tasks
	// (item minus owner): -1 none seen, -2 not all the same.
	itemOff int64
	buf     [64]byte
}

func (r *frReader) u32(addr uint32) (uint32, error) {
	return unwinders.ReadU32(r.in.Mem, addr)
}

// scratch returns n bytes to read into: r.buf when it is large enough
// (names and strings are copied out of it at once), else new memory.
func (r *frReader) scratch(n int) []byte {
	if n <= len(r.buf) {
		return r.buf[:n]
	}
	return make([]byte, n)
}

// hex32 formats v as fmt's "0x%08x" does.
func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := [10]byte{'0', 'x'}
	for i := 9; i >= 2; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

func (r *frReader) warnf(format string, args ...any) {
	r.k.Warnings = append(r.k.Warnings, fmt.Sprintf(format, args...))
}

// walkList returns the owners of a list's items, in list order. It is
// bounded by the list's own count (at most maxTasks) and detects cycles.
func (r *frReader) walkList(name string, list uint32) ([]uint32, error) {
	n, err := r.u32(list + r.l.listCount)
	if err != nil {
		return nil, fmt.Errorf("list %s at 0x%08x cannot be read: %v", name, list, err)
	}
	if n > maxTasks {
		return nil, fmt.Errorf("list %s at 0x%08x claims %d items (more than %d): corrupted", name, list, n, maxTasks)
	}
	end := list + r.l.listEnd
	item, err := r.u32(end + r.l.itemNext)
	if err != nil {
		return nil, fmt.Errorf("list %s at 0x%08x: its end marker cannot be read: %v", name, list, err)
	}
	var owners []uint32
	var seen addrSet
	for item != end {
		if uint32(len(owners)) >= n {
			return owners, fmt.Errorf("list %s at 0x%08x: more items linked than its count %d: corrupted", name, list, n)
		}
		if seen.has(item) {
			return owners, fmt.Errorf("list %s at 0x%08x: item 0x%08x appears twice (a cycle): corrupted", name, list, item)
		}
		seen.add(item)
		owner, err := r.u32(item + r.l.itemOwner)
		if err != nil {
			return owners, fmt.Errorf("list %s at 0x%08x: item 0x%08x cannot be read: %v", name, list, item, err)
		}
		owners = append(owners, owner)
		if name != "xPendingReadyList" { // that list holds event items
			r.noteItemOffset(int64(item) - int64(owner))
		}
		if item, err = r.u32(item + r.l.itemNext); err != nil {
			return owners, fmt.Errorf("list %s at 0x%08x: next link cannot be read: %v", name, list, err)
		}
	}
	if uint32(len(owners)) != n {
		r.warnf("list %s at 0x%08x: %d items linked, its count says %d", name, list, len(owners), n)
	}
	return owners, nil
}

// namedList is one kernel list global.
type namedList struct {
	name string
	addr uint32
}

// frStatic is what discovery derives from the ELF alone: computed once
// per file (elfsym.File.Memo), shared by every dump of that firmware.
type frStatic struct {
	curSym uint32
	l      *frLayout
	// ctx is the saved-context layout read from the PendSV handler; when
	// that failed, ctxAlts are the layouts the build attributes allow
	// (the one most tasks fit is used) and ctx is nil.
	ctx     *ctxLayout
	ctxAlts []*ctxLayout
	ctxErr  error
	// notifyWait: the firmware has a task-notification wait function
	// (without one no task can be waiting on a notification).
	notifyWait bool
	// notifyFromCode: the default layout's ucNotifyState was found in the
	// code of those functions (scanNotify), to be checked on each dump.
	notifyFromCode bool
	lists          []namedList // in the order tasks are reported after the current one
	warnings       []string
}

func freertosStatic(f *elfsym.File, curSym uint32) *frStatic {
	return f.Memo("rtos/freertos", func() any {
		st := &frStatic{curSym: curSym}
		ts := NewTypes(f.DWARF())
		l, err := typesLayout(ts)
		ns := scanNotify(f)
		st.notifyWait = ns.present
		if err != nil {
			l = defaultLayout()
			st.warnings = append(st.warnings, fmt.Sprintf("FreeRTOS task structures not usable from the debug information (%v): tasks read with FreeRTOS's default layout (no MPU wrappers, 16-character names; the list size from the kernel's list symbols); names and priorities may be wrong for another configuration", err))
			// sizeof(List_t) is the size of the kernel's own list symbols:
			// 20 bytes with mini list items, 28 with a full end item.
			for _, n := range []string{"xDelayedTaskList1", "xPendingReadyList", "xSuspendedTaskList"} {
				if a, ok := f.Symbol(n); ok {
					if sr, ok := f.SymbolFor(a); ok && sr.Start == a && (sr.Size == 20 || sr.Size == 28) {
						l.listSize = sr.Size
						break
					}
				}
			}
			if ns.off >= 0 {
				l.notifyState, l.notifyN = ns.off, ns.n
				st.notifyFromCode = true
			}
		}
		st.l = l
		st.ctx, st.ctxErr = decodeSaveLayout(f)
		if st.ctx == nil {
			st.ctxAlts = attrLayouts(f, l.mpu >= 0)
		}
		if ready, ok := f.Symbol("pxReadyTasksLists"); ok {
			n := 0
			if v, err := ts.Variable("pxReadyTasksLists"); err == nil && v.Count > 0 {
				n = v.Count
			} else if s, ok := f.SymbolFor(ready); ok && s.Start == ready && s.Size > 0 {
				n = int(s.Size / l.listSize)
			}
			if n <= 0 || n > maxPriorities {
				st.warnings = append(st.warnings, fmt.Sprintf("pxReadyTasksLists: cannot tell how many priorities (%d): ready tasks not listed", n))
			}
			for p := min(n, maxPriorities) - 1; p >= 0; p-- {
				st.lists = append(st.lists, namedList{fmt.Sprintf("pxReadyTasksLists[%d]", p), ready + uint32(p)*l.listSize})
			}
		} else {
			st.warnings = append(st.warnings, "no pxReadyTasksLists symbol: ready tasks not listed")
		}
		for _, n := range []string{"xDelayedTaskList1", "xDelayedTaskList2", "xPendingReadyList", "xSuspendedTaskList", "xTasksWaitingTermination"} {
			if a, ok := f.Symbol(n); ok {
				st.lists = append(st.lists, namedList{n, a})
			}
		}
		return st
	}).(*frStatic)
}

// discoverFreeRTOS recognises a FreeRTOS kernel by pxCurrentTCB and lists
// its tasks.
func discoverFreeRTOS(in Input) (*Kernel, error) {
	curSym, ok := in.ELF.Symbol("pxCurrentTCB")
	if !ok {
		return nil, nil
	}
	st := freertosStatic(in.ELF, curSym)
	k := &Kernel{Kind: "freertos", Source: st.l.source, Warnings: append([]string(nil), st.warnings...)}
	r := &frReader{in: in, l: st.l, k: k, ctx: st.ctx, notifyWait: st.notifyWait, itemOff: -1}
	r.notifyOK = st.l.notifyState >= 0 && !st.notifyFromCode
	lists := st.lists

	cur, err := r.u32(curSym)
	if err != nil {
		return nil, fmt.Errorf("FreeRTOS: pxCurrentTCB at 0x%08x cannot be read from the dump: %v", curSym, err)
	}

	tcbs := []uint32{}
	var seen addrSet
	add := func(t uint32) {
		if t != 0 && !seen.has(t) && len(tcbs) < maxTasks {
			seen.add(t)
			tcbs = append(tcbs, t)
		}
	}
	add(cur)
	for _, nl := range lists {
		owners, err := r.walkList(nl.name, nl.addr)
		if err != nil {
			k.Warnings = append(k.Warnings, err.Error())
		}
		for _, o := range owners {
			add(o)
		}
	}
	if len(tcbs) == 0 {
		k.Warnings = append(k.Warnings, "pxCurrentTCB is NULL and no task is on any list: the scheduler has not started")
		return k, nil
	}
	if st.l.source == "default layout" {
		r.placeItems()
	}
	if r.ctx == nil {
		r.ctx = r.chooseLayout(st, tcbs, cur)
	}
	if st.notifyFromCode {
		r.notifyOK = r.checkNotify(tcbs, cur)
	}
	sl := r.stateLists()
	k.Threads = in.Threads[:0]
	if cap(k.Threads) < len(tcbs) {
		k.Threads = make([]Thread, 0, len(tcbs))
	}
	for _, t := range tcbs {
		th := r.task(t, t == cur, sl)
		if th.Current && th.Err != nil {
			k.Warnings = append(k.Warnings, fmt.Sprintf("pxCurrentTCB is 0x%08x, which is not a task control block in the dump: the running task is unknown (the crash's registers are shown as its)", cur))
		}
		k.Threads = append(k.Threads, th)
	}
	k.Switch = r.switchContext(st, cur)
	if n, ok := in.ELF.Symbol("uxCurrentNumberOfTasks"); ok {
		if v, err := r.u32(n); err == nil {
			alive, deleted := 0, 0
			for _, t := range k.Threads {
				if t.State != Deleted {
					alive++
				} else {
					deleted++
				}
			}
			// A task that deleted itself still counts until the idle task
			// frees it (FreeRTOS decrements the count then).
			if int(v) != alive && int(v) != alive+deleted {
				k.Warnings = append(k.Warnings, fmt.Sprintf("uxCurrentNumberOfTasks is %d but %d live tasks were found (%d more awaiting deletion)", v, alive, deleted))
			}
		}
	}
	return k, nil
}

// stateLists are the list addresses eTaskGetState compares with.
type stateLists struct {
	delayed, overflow, pending, suspended, terminating uint32
	ready                                              [2]uint32 // [first, end)
}

func (r *frReader) stateLists() stateLists {
	var s stateLists
	sym := func(n string) uint32 { a, _ := r.in.ELF.Symbol(n); return a }
	if p, ok := r.in.ELF.Symbol("pxDelayedTaskList"); ok {
		s.delayed, _ = r.u32(p)
	}
	if p, ok := r.in.ELF.Symbol("pxOverflowDelayedTaskList"); ok {
		s.overflow, _ = r.u32(p)
	}
	if s.delayed == 0 {
		s.delayed = sym("xDelayedTaskList1")
	}
	if s.overflow == 0 {
		s.overflow = sym("xDelayedTaskList2")
	}
	s.pending, s.suspended, s.terminating = sym("xPendingReadyList"), sym("xSuspendedTaskList"), sym("xTasksWaitingTermination")
	if a, ok := r.in.ELF.Symbol("pxReadyTasksLists"); ok {
		s.ready = [2]uint32{a, a + maxPriorities*r.l.listSize}
		if sr, ok := r.in.ELF.SymbolFor(a); ok && sr.Start == a && sr.Size > 0 {
			s.ready[1] = a + sr.Size
		}
	}
	return s
}

// task reads one TCB.
func (r *frReader) task(tcb uint32, current bool, sl stateLists) Thread {
	l := r.l
	t := Thread{ID: tcb, State: Unknown, Current: current, Priority: PriorityUnknown, BasePriority: PriorityUnknown, Stack: Stack{HighWaterBytes: -1}}
	name := r.scratch(l.nameLen)
	if err := r.in.Mem.Read(tcb+uint32(l.name), name); err != nil {
		t.Name = fmt.Sprintf("TCB 0x%08x", tcb)
		t.Err = fmt.Errorf("task control block at 0x%08x is not in the dump: %v", tcb, err)
		return t
	}
	t.Name = cName(name)
	if p, err := r.u32(tcb + uint32(l.prio)); err == nil && p < maxPriorities {
		t.Priority = int(p)
	} else if err == nil {
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("priority %d is out of range: the task control block looks corrupted", p))
	}
	if l.base >= 0 {
		if p, err := r.u32(tcb + uint32(l.base)); err == nil && p < maxPriorities {
			t.BasePriority = int(p)
		}
	}
	stateC, _ := r.u32(tcb + uint32(l.stateItem) + l.itemContainer)
	eventC, _ := r.u32(tcb + uint32(l.eventItem) + l.itemContainer)
	wake, _ := r.u32(tcb + uint32(l.stateItem) + l.itemValue)
	misfit := false
	if l.source == "default layout" && !current {
		// The kernel sets both list items' owner to their task: a guessed
		// layout that does not find them there reads no state.
		so, _ := r.u32(tcb + uint32(l.stateItem) + l.itemOwner)
		eo, _ := r.u32(tcb + uint32(l.eventItem) + l.itemOwner)
		if so != tcb || eo != tcb {
			misfit = true
			t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("the default layout does not fit this task control block (its list items' owners are 0x%08x and 0x%08x, not the task): state not given", so, eo))
		}
	}
	delayed := stateC != 0 && (stateC == sl.delayed || stateC == sl.overflow)
	switch {
	case current:
		t.State = Running
	case misfit:
	case eventC != 0 && eventC == sl.pending:
		t.State = Ready
		t.WaitingOn = "woken, pending ready (scheduler suspended)"
	case delayed:
		t.State = Blocked
	case stateC != 0 && stateC == sl.suspended:
		t.State = Suspended
		switch {
		case eventC != 0:
			t.State = Blocked
		case r.notifyOK && r.notifyBad.has(tcb):
			t.State = Unknown
			t.Diagnosis = append(t.Diagnosis, "suspended, or blocked on a task notification: its notification state bytes are not notification states (the task control block looks corrupted), so the state is not guessed")
		case r.notifyOK:
			// eTaskGetState: waiting on any notification index is blocked.
			b := r.scratch(l.notifyN)
			if r.in.Mem.Read(tcb+uint32(l.notifyState), b) == nil {
				for i, v := range b {
					if v == 1 {
						t.State = Blocked
						t.WaitingOn = "task notification"
						if l.notifyN > 1 {
							t.WaitingOn += " (index " + strconv.Itoa(i) + ")"
						}
						break
					}
				}
			}
		case r.notifyWait:
			t.State = Unknown
			t.Diagnosis = append(t.Diagnosis, "suspended, or blocked on a task notification without timeout: where the task control block keeps the notification state is not known (no debug information, and the notification functions' code did not tell), so the state is not guessed")
		}
	case stateC == 0 || stateC == sl.terminating:
		t.State = Deleted
	case stateC >= sl.ready[0] && stateC < sl.ready[1]:
		t.State = Ready
	}
	if t.State == Blocked && eventC != 0 {
		t.WaitingOn = r.describeEvent(eventC)
	}
	if delayed {
		if t.WaitingOn == "" {
			t.WaitingOn = "delay until tick " + strconv.FormatUint(uint64(wake), 10)
		} else {
			t.WaitingOn += ", timeout at tick " + strconv.FormatUint(uint64(wake), 10)
		}
	}
	r.stackOf(&t, tcb)
	if current {
		t.Regs = r.in.Regs
		if sp, ok := r.in.Regs.Get(unwinders.PSP); ok && r.in.Regs.Value(unwinders.SP) != sp {
			t.Stack.SP = sp // the crash was taken on MSP; the task's own SP is PSP
		} else if sp, ok := r.in.Regs.Get(unwinders.SP); ok {
			t.Stack.SP = sp
		}
	} else {
		r.savedContext(&t, tcb)
	}
	r.diagnose(&t)
	return t
}

// describeEvent names the object whose event list the task waits on.
func (r *frReader) describeEvent(list uint32) string {
	l := r.l
	reg, ok := r.in.ELF.Symbol("xQueueRegistry")
	if ok && l.qRecv >= 0 && l.qSend >= 0 {
		n := 0
		if s, ok := r.in.ELF.SymbolFor(reg); ok && s.Start == reg && s.Size > 0 {
			n = int(s.Size / l.regSize)
		}
		for i := 0; i < min(n, 64); i++ {
			e := reg + uint32(i)*l.regSize
			h, err := r.u32(e + l.regHandle)
			if err != nil || h == 0 {
				continue
			}
			dir := ""
			switch list {
			case h + uint32(l.qRecv):
				dir = "receive"
			case h + uint32(l.qSend):
				dir = "send"
			default:
				continue
			}
			np, _ := r.u32(e + l.regName)
			name := r.cString(np)
			kind := "queue"
			if head, err := r.u32(h + uint32(l.qHead)); err == nil && head == 0 && l.qHead >= 0 {
				kind = "mutex"
			} else if l.qType >= 0 {
				b := r.scratch(1)
				if r.in.Mem.Read(h+uint32(l.qType), b) == nil && (b[0] == 2 || b[0] == 3) {
					kind = "semaphore"
				}
			}
			s := kind + " " + name + " (" + hex32(h) + ")"
			if kind == "mutex" && l.qHolder >= 0 {
				if holder, err := r.u32(h + uint32(l.qHolder)); err == nil && holder != 0 {
					nb := r.scratch(l.nameLen)
					if r.in.Mem.Read(holder+uint32(l.name), nb) == nil {
						s += " held by " + cName(nb)
					}
				}
			} else if dir == "send" {
				s += " to send"
			}
			return s
		}
	}
	return "event list at " + hex32(list)
}

func (r *frReader) cString(addr uint32) string {
	if addr == 0 {
		return "?"
	}
	b := r.scratch(32)
	for n := len(b); n > 0; n /= 2 {
		if r.in.Mem.Read(addr, b[:n]) == nil {
			return cName(b[:n])
		}
	}
	return "?"
}

// cName turns a C character array into a printable name.
func cName(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c > 0x7e {
			return '?'
		}
		return c
	}, string(b))
}

// stackOf fills the stack bounds and high-water mark.
func (r *frReader) stackOf(t *Thread, tcb uint32) {
	l := r.l
	start, err := r.u32(tcb + uint32(l.stack))
	if err != nil || start == 0 {
		return
	}
	t.Stack.Start = start
	if l.end >= 0 {
		if e, err := r.u32(tcb + uint32(l.end)); err == nil && e >= start && e-start < maxStackScan {
			t.Stack.End = (e + 4) &^ 3 // pxEndOfStack is the last word
		}
	}
	if t.Stack.End == 0 {
		// The stack depth is not in the TCB: a statically allocated stack
		// is a symbol that starts at pxStack.
		if s, ok := r.in.ELF.SymbolFor(start); ok && s.Start == start && s.Size > 0 && s.Size < maxStackScan {
			t.Stack.End = start + s.Size
		} else {
			t.Diagnosis = append(t.Diagnosis, "stack end unknown (no pxEndOfStack, no stack symbol): only its start is shown")
		}
	}
	// High-water mark: untouched 0xa5 fill bytes from the bottom up.
	limit := uint32(maxStackScan)
	if t.Stack.End > start {
		limit = t.Stack.End - start
	}
	n := 0
	im, _ := r.in.Mem.(*unwinders.Image)
	for a := start; uint32(n) < limit; a += uint32(len(r.buf)) {
		chunk := r.buf[:min(uint32(len(r.buf)), limit-uint32(n))]
		var inPlace []byte
		if im != nil {
			inPlace, _ = im.Bytes(a, len(chunk))
		}
		if inPlace != nil {
			chunk = inPlace // the same bytes, without the copy
		} else if r.in.Mem.Read(a, chunk) != nil {
			return
		}
		i := 0
		for i+8 <= len(chunk) && binary.LittleEndian.Uint64(chunk[i:]) == 0xa5a5a5a5a5a5a5a5 {
			i += 8 // eight fill bytes at a time
		}
		for i < len(chunk) && chunk[i] == 0xa5 {
			i++
		}
		n += i
		if i < len(chunk) {
			break
		}
	}
	t.Stack.HighWaterBytes = n
}

// chooseLayout picks, among the layouts the build attributes allow, the
// one most switched-out tasks' saved contexts fit, and says so.
func (r *frReader) chooseLayout(st *frStatic, tcbs []uint32, cur uint32) *ctxLayout {
	best, bestN, total := st.ctxAlts[0], -1, 0
	for _, l := range st.ctxAlts {
		n := 0
		total = 0
		for _, t := range tcbs {
			if t == cur {
				continue
			}
			total++
			top, err := r.u32(t + uint32(r.l.top))
			if err != nil {
				continue
			}
			if c, err := readContext(r.in.Mem, r.in.ELF, l, top); err == nil && c.bad == "" {
				n++
			}
		}
		if n > bestN {
			best, bestN = l, n
		}
	}
	r.warnf("FreeRTOS saved-context layout not read from the firmware's PendSV handler (%v): chosen from the build attributes as %s, which %d of %d switched-out tasks fit", st.ctxErr, best.name, bestN, total)
	return best
}

// savedContext reads the registers a switched-out task's context holds,
// with the layout read from the port's own PendSV handler, and checks
// them: a context that does not fit (EXC_RETURN, the stacked xPSR's Thumb
// bit, the stacked PC in code) is reported instead of its registers.
func (r *frReader) savedContext(t *Thread, tcb uint32) {
	top, err := r.u32(tcb + uint32(r.l.top))
	if err != nil {
		t.Err = fmt.Errorf("pxTopOfStack of task %s cannot be read: %v", t.Name, err)
		return
	}
	t.Stack.SP = top
	c, err := readContext(r.in.Mem, r.in.ELF, r.ctx, top)
	if err != nil {
		t.Err = fmt.Errorf("saved context of task %s at 0x%08x (pxTopOfStack) is not in the dump: %v", t.Name, top, err)
		return
	}
	if c.bad != "" {
		t.Err = fmt.Errorf("task %s: the saved context at 0x%08x does not fit the port's layout (%s): %s; the context is corrupt or the layout is wrong, so its registers are not shown", t.Name, top, r.ctx.name, c.bad)
		return
	}
	t.Regs = c.regs
	if !r.ctx.pspKnown {
		t.Stack.SP = c.psp // the context is saved in the task control block (MPU ports)
	}
}

// diagnose compares the saved SP with the stack bounds and checks the
// fill pattern at the bottom.
func (r *frReader) diagnose(t *Thread) {
	s := &t.Stack
	if s.Start == 0 || s.SP == 0 {
		return
	}
	switch {
	case s.SP < s.Start && s.Start-s.SP <= maxStackScan:
		s.Overflow = true
		// Fill bytes left at the bottom were skipped over, not unused:
		// the stack went past them (one story with UsedBytes).
		s.HighWaterBytes = 0
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("stack overflowed: saved SP 0x%08x is %d bytes below the stack's start 0x%08x", s.SP, s.Start-s.SP, s.Start))
	case s.SP < s.Start || (s.End != 0 && s.SP > s.End):
		t.Diagnosis = append(t.Diagnosis, fmt.Sprintf("SP 0x%08x is outside its stack [0x%08x, 0x%08x)", s.SP, s.Start, s.End))
	case s.HighWaterBytes == 0:
		s.Overflow = true
		t.Diagnosis = append(t.Diagnosis, "stack fully used: no untouched 0xa5 fill is left at its bottom, it probably overflowed")
	}
}

// switchContext returns the running task's context as the PendSV handler
// saved it, for a crash inside the handler's call of vTaskSwitchContext:
// only with a layout decoded from the handler (whose main-stack use is
// known), a context that fits it, and a hardware frame at the PSP the
// dump holds (when it holds one; otherwise the context is an older one).
func (r *frReader) switchContext(st *frStatic, cur uint32) *SwitchContext {
	l := st.ctx
	if l == nil || !l.mspKnown || cur == 0 {
		return nil
	}
	top, err := r.u32(cur + uint32(r.l.top))
	if err != nil {
		return nil
	}
	c, err := readContext(r.in.Mem, r.in.ELF, l, top)
	if err != nil || c.bad != "" {
		return nil
	}
	if psp, ok := r.in.Regs.Get(unwinders.PSP); ok && psp != c.psp {
		return nil
	}
	sc := &SwitchContext{Handler: l.source, Return: l.switchRet, MSPPushed: l.mspPushed, ExcReturn: c.exc, Top: top}
	for reg := unwinders.R4; reg <= unwinders.R11; reg++ {
		if v, ok := c.regs.Get(reg); ok {
			sc.Regs.Set(reg, v)
		}
	}
	for i := 16; i < 32; i++ {
		if v, ok := c.regs.Get(unwinders.S(i)); ok {
			sc.Regs.Set(unwinders.S(i), v)
		}
	}
	if v, ok := c.regs.Get(unwinders.CONTROL); ok {
		sc.Regs.Set(unwinders.CONTROL, v)
	}
	sc.Regs.Set(unwinders.PSP, c.psp)
	return sc
}

// checkNotify confirms on this dump the notification state offset found
// in the code: a task's states must be 0, 1 or 2 (not waiting, waiting,
// received), and none may be waiting while it is running, ready or waits
// on an event list. A task that breaks this (a corrupted task control
// block) gets no state that depends on it; when more than a quarter of
// the tasks break it, the offset is taken as wrong for every task.
func (r *frReader) checkNotify(tcbs []uint32, cur uint32) bool {
	l := r.l
	ready := r.stateLists().ready
	var bad []uint32
	for _, t := range tcbs {
		b := r.scratch(l.notifyN)
		if r.in.Mem.Read(t+uint32(l.notifyState), b) != nil {
			bad = append(bad, t)
			continue
		}
		stateC, _ := r.u32(t + uint32(l.stateItem) + l.itemContainer)
		eventC, _ := r.u32(t + uint32(l.eventItem) + l.itemContainer)
		busy := t == cur || eventC != 0 || (stateC >= ready[0] && stateC < ready[1])
		for _, v := range b {
			if v > 2 || (v == 1 && busy) {
				bad = append(bad, t)
				break
			}
		}
	}
	if 4*len(bad) > len(tcbs) {
		r.warnf("the notification state found in the code (offset %d, %d entries) does not hold in this dump (%d of %d tasks): task states that depend on it are not given", l.notifyState, l.notifyN, len(bad), len(tcbs))
		return false
	}
	for _, t := range bad {
		r.notifyBad.add(t)
	}
	return true
}

func (r *frReader) noteItemOffset(d int64) {
	switch {
	case r.itemOff == -1:
		r.itemOff = d
	case r.itemOff != d:
		r.itemOff = -2
	}
}

// placeItems moves the default layout's offsets after pxTopOfStack to
// where the kernel's own lists say the state list item is: every walked
// item's owner is its task, so item minus owner is xStateListItem's
// offset (MPU settings before it move it and everything after it).
func (r *frReader) placeItems() {
	d := r.itemOff
	switch {
	case d == -1 || d == int64(r.l.stateItem):
		return
	case d < 4 || d > 256 || d%4 != 0:
		r.warnf("the kernel's list items are not where any task control block layout puts them (item minus owner %d): states read with the default layout may be wrong", d)
		return
	}
	l := *r.l
	shift := int(d) - l.stateItem
	l.stateItem += shift
	l.eventItem += shift
	l.prio += shift
	l.stack += shift
	l.name += shift
	r.l = &l
	r.warnf("the kernel's lists put each task's state list item at +%d, not +4 (MPU settings or other fields before it): the default layout's later offsets are moved by %d", d, shift)
}
