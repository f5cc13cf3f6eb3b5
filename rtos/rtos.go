// Package rtos finds the threads of a real-time operating system in a crash
// dump: every FreeRTOS task or Zephyr thread, its state, priority, stack and
// the registers its saved context holds.
//
// Struct layouts (FreeRTOS's TCB, list and list item; Zephyr's struct
// k_thread and callee-saved block) are read from the ELF's DWARF debugging
// information, so kernel versions and configuration options need no
// hard-coded offsets; a stripped ELF falls back to the documented default
// layouts with a warning. Every walk over a kernel list is bounded and
// cycle-checked: a corrupted list gives an error for that list (or thread),
// never a hang.
//
// The package does no unwinding: it only finds threads and their saved
// registers; the caller walks each thread's stack with the same strategies
// it uses for the crash.
package rtos

import (
	"math"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// State is a thread's scheduling state as the kernel itself would report
// it (FreeRTOS's eTaskGetState, Zephyr's thread state bits).
type State string

// The states a thread can be in.
const (
	Running   State = "running"
	Ready     State = "ready"
	Blocked   State = "blocked"
	Suspended State = "suspended"
	Deleted   State = "deleted"
	Unknown   State = "unknown"
)

// Stack describes one thread's stack.
type Stack struct {
	Start, End     uint32 // [Start, End) of the thread's stack; 0,0 unknown
	SP             uint32 // saved (or, for the running thread, live) SP
	HighWaterBytes int    // bytes never used (fill pattern 0xa5 FreeRTOS, 0xaa Zephyr); -1 unknown
	Overflow       bool
}

// UsedBytes is how much of the stack the thread used, the one figure every
// report shows: from the stack's end down to the lower of the deepest byte
// no longer holding the fill pattern and the saved SP, so a saved SP below
// the start counts the overflow (more than the stack's size). -1 when the
// bounds or both measures are unknown.
func (s Stack) UsedBytes() int {
	if s.Start == 0 || s.End <= s.Start {
		return -1
	}
	used := -1
	if s.HighWaterBytes >= 0 {
		used = max(int(s.End-s.Start)-s.HighWaterBytes, 0)
	}
	if s.SP != 0 && s.SP < s.End && s.End-s.SP <= maxUsedSpan {
		used = max(used, int(s.End-s.SP))
	}
	return used
}

// maxUsedSpan bounds the distance from a stack's end to an SP below it
// that still counts as that stack's use (a wild SP is not a usage figure).
const maxUsedSpan = 1 << 20

// PriorityUnknown is Thread.Priority and BasePriority when the kernel's
// data does not say. It is not -1: Zephyr's cooperative threads have
// negative priorities (-1 is the lowest of them).
const PriorityUnknown = math.MinInt32

// Thread is one task or thread of the kernel.
type Thread struct {
	ID           uint32 // TCB / struct k_thread address
	Name         string
	State        State
	Current      bool                // the running thread: its registers are the crash's own
	Priority     int                 // current priority, PriorityUnknown when unknown (Zephyr's cooperative priorities are negative)
	BasePriority int                 // base priority when a mutex raised it, else == Priority; PriorityUnknown when unknown
	WaitingOn    string              // "queue rxq (0x20001234)", "delay", ...; "" unknown/none
	Stack        Stack               // the thread's stack bounds, saved SP and usage
	Regs         unwinders.Registers // the registers its saved context holds
	Diagnosis    []string            // plain words: stack overflowed, SP outside its stack...
	Err          error               // context could not be recovered (thread still listed)
}

// Kernel is what Discover found: which kernel, where its layouts came from,
// and its threads.
type Kernel struct {
	Kind     string   // "freertos" | "zephyr"
	Source   string   // "debug types" | "default layout" | "thread info offsets"
	Threads  []Thread // the crashing/current one first
	Warnings []string
	// Switch, when not nil, is the running task's context as the kernel's
	// context-switch handler saved it: a walk that reaches the handler's
	// call into the scheduler continues there.
	Switch *SwitchContext
}

// SwitchContext lets the crash's walk continue out of the kernel's
// context-switch handler (FreeRTOS's PendSV handler) when the crash
// happened inside its call into the scheduler (a stack-overflow hook
// called from vTaskSwitchContext): the handler saved the interrupted
// task's registers before the call, and its EXC_RETURN may be in that
// context rather than in LR or on the main stack.
type SwitchContext struct {
	Handler   string              // the handler's symbol and address
	Return    uint32              // the return address of its call into the scheduler
	MSPPushed uint32              // bytes the handler pushed on the main stack before the call
	ExcReturn uint32              // the interrupted task's EXC_RETURN
	Regs      unwinders.Registers // r4-r11 (and s16-s31, CONTROL) as saved; PSP: its hardware frame
	Top       uint32              // where the context was saved (pxTopOfStack)
}

// Input is what discovery reads.
type Input struct {
	ELF  *elfsym.File        // symbols + DWARF types
	Mem  unwinders.Memory    // dump RAM over ELF flash
	Regs unwinders.Registers // the crash's registers (for the current thread)
	// Layouts, when not nil, caches the struct layouts across the dumps
	// of one ELF (NewLayouts).
	Layouts *Layouts
	// Threads, when its capacity is enough, is the memory Kernel.Threads
	// is built in (a batch reuses the previous dump's list, which it must
	// no longer use).
	Threads []Thread
}

// Discover finds the kernel the firmware runs and its threads. It tries
// FreeRTOS first, then Zephyr, each recognised by its kernel symbols.
// It returns (nil, nil) when the firmware runs no RTOS it knows, and an
// error only when a kernel was recognised but its thread lists cannot be
// read at all; per-list and per-thread problems are Kernel.Warnings and
// Thread.Err instead.
// Cost: a few symbol lookups, one pass over the DWARF unit tops when a
// kernel is recognised, then linear in the number of threads.
func Discover(in Input) (*Kernel, error) {
	if in.ELF == nil || in.Mem == nil {
		return nil, nil
	}
	if k, err := discoverFreeRTOS(in); k != nil || err != nil {
		return k, err
	}
	return discoverZephyr(in)
}
