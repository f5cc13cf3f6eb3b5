package emu

import (
	"cmp"
	"slices"

	"github.com/faultline-dev/faultline/emu/uc"
)

// One shadow stack per thread.
//
// An RTOS switches threads in an exception handler (PendSV, sometimes
// SysTick or SVCall): it saves r4-r11 below the interrupted thread's
// exception frame, stores that PSP in the thread's control block, loads
// another thread's PSP, restores its r4-r11 and returns with EXC_RETURN
// 0xFFFFFFFD, which unstacks the other thread's frame. The shadow stack
// would then carry the first thread's calls into the second.
//
// Threads are told apart by their exception frame: when an exception is
// taken, its marker on the shadow stack records the address of the frame
// the core pushed (on the PSP for a thread). An exception return to Thread
// mode that unstacks a frame at a different address resumes a different
// thread. The calls below the marker (the suspended thread's) are then put
// aside under the marker's frame address, and the calls put aside under the
// address of the frame being unstacked (the resumed thread's, saved when it
// was switched out with the frame at that very address) become the shadow
// stack. A thread seen for the first time (its initial frame was built by
// the RTOS, not by an exception) starts with an empty shadow stack, so its
// truth ends at the thread's entry function. Firmware that starts its first
// thread from SVCall (FreeRTOS's vPortStartFirstTask) is the same case: the
// main stack's calls are put aside under the SVCall frame's address.
//
// This needs no knowledge of the RTOS (no TCB layout, no MSR tracking), and
// it holds because an RTOS resumes a thread exactly at the frame address it
// was suspended with. A handler that returns to Thread mode on the same
// frame it was entered with (every non-switching exception) pops normally.
//
// At a fault, every thread put aside on the process stack is part of the
// result (Result.Threads): its true stack is the marker's interrupted PC
// followed by its calls, built as the current stack's truth is.
type threadStacks map[uint32]suspendedThread

// suspendedThread is one thread put aside: the exception marker it was
// switched out with (interrupted PC and SP, which stack) and its calls,
// outermost first.
type suspendedThread struct {
	marker uc.ShadowFrame
	calls  []uc.ShadowFrame
}

func (t threadStacks) clone() threadStacks {
	if t == nil {
		return nil
	}
	out := make(threadStacks, len(t))
	for k, v := range t {
		out[k] = suspendedThread{marker: v.marker, calls: append([]uc.ShadowFrame(nil), v.calls...)}
	}
	return out
}

// threadTruths returns the true stacks of the threads put aside on the
// process stack, by frame address. Stacks put aside on the main stack
// (the code that started the first thread through SVCall) are no thread
// of the RTOS and are left out.
func (m *machine) threadTruths() []ThreadTruth {
	var out []ThreadTruth
	for frame, s := range m.threadStacks {
		if !s.marker.PSP {
			continue
		}
		pc, sp := s.marker.Return, s.marker.InterruptedSP
		live := s.calls[:m.tr.Prune(s.calls, pc, sp, true)]
		out = append(out, ThreadTruth{Frame: frame, SP: sp, Frames: m.truthFrames(pc, live, nil)})
	}
	slices.SortFunc(out, func(a, b ThreadTruth) int { return cmp.Compare(a.Frame, b.Frame) })
	return out
}

// popException drops the innermost exception level of the shadow stack on
// an exception return that unstacks the frame at frame, switching thread
// stacks when it returns to Thread mode on another frame than the one the
// exception was taken with. ret is the address execution resumes at.
func (m *machine) popException(frame, ret uint32, toThread bool) {
	if toThread && !m.cfg.NoTruth {
		fs := m.tr.Frames()
		top := -1
		for i := len(fs) - 1; i >= 0; i-- {
			if fs[i].Exception != 0 {
				top = i
				break
			}
		}
		outer := top >= 0
		for i := 0; i < top; i++ {
			if fs[i].Exception != 0 {
				outer = false // not the last exception level
			}
		}
		if outer && fs[top].SP != frame {
			if m.threadStacks == nil {
				m.threadStacks = threadStacks{}
			}
			m.threadStacks[fs[top].SP] = suspendedThread{marker: fs[top], calls: append([]uc.ShadowFrame(nil), fs[:top]...)}
			next := m.threadStacks[frame].calls
			delete(m.threadStacks, frame)
			m.tr.SwitchStack(next)
			m.tr.SkipStep(ret)
			return
		}
	}
	m.tr.PopException()
}
