package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// taskEntryStop is the stop reason of a thread walk that reached the
// thread's entry function.
const taskEntryStop = "reached the task entry"

// maxThreadFrames bounds each thread's walk.
const maxThreadFrames = 48

// cutAtTaskEntry returns how many of frames belong to the thread: FreeRTOS
// tasks start with LR = prvTaskExitError (a task function never returns
// there), so the frame whose return address is that function's start is
// not a real caller; a Zephyr thread's outermost frame is z_thread_entry.
// ok is false when no entry was found.
func cutAtTaskEntry(elf *elfsym.File, kind string, frames []unwinders.Frame) (int, bool) {
	switch kind {
	case "freertos":
		exit, ok := elf.Symbol("prvTaskExitError")
		if !ok {
			return len(frames), false
		}
		for i := 1; i < len(frames); i++ {
			if frames[i].Kind == unwinders.KindNormal && frames[i].PC&^1 == exit {
				return i, true
			}
		}
	case "zephyr":
		for i, f := range frames {
			if f.Kind != unwinders.KindNormal {
				continue
			}
			if fn, ok := elf.FuncAt(f.LookupPC()); ok && fn.Name == "z_thread_entry" {
				return i + 1, true
			}
		}
	}
	return len(frames), false
}

// taskExitStop wraps an unwinder for the walks of a FreeRTOS firmware:
// a caller at prvTaskExitError (every task's initial LR, which no task
// function ever returns to) is turned into the end-of-stack return address
// 0xFFFFFFFF, so the walk stops cleanly at the task entry at once instead
// of refusing the candidate in every strategy of the chain.
type taskExitStop struct {
	inner unwinders.Unwinder
	exit  uint32
}

func (u taskExitStop) Name() string { return u.inner.Name() }

func (u taskExitStop) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	c, err := u.inner.Step(t, frames)
	if err == nil && c.PC != unwinders.ResetLR && c.PC&^1 == u.exit {
		c.PC = unwinders.ResetLR
	}
	return c, err
}

// switchStep wraps an unwinder for a kernel whose context-switch handler
// saved the running task's context before calling into the scheduler
// (rtos.SwitchContext): the caller of the handler's frame at the return
// address of that call is the exception return into the task, with the
// registers the handler saved, instead of whatever the strategies find on
// the main stack (the handler has no unwind information and may keep its
// EXC_RETURN only in the saved context).
type switchStep struct {
	inner unwinders.Unwinder
	sw    *rtos.SwitchContext
}

func (u switchStep) Name() string { return u.inner.Name() }

func (u switchStep) Step(t *unwinders.Target, frames []unwinders.Frame) (unwinders.Frame, error) {
	cur := &frames[len(frames)-1]
	if cur.Kind == unwinders.KindNormal && cur.ReturnAddress && cur.PC == u.sw.Return&^1 {
		c := unwinders.Frame{
			PC: u.sw.ExcReturn, SP: cur.SP + u.sw.MSPPushed, Regs: u.sw.Regs,
			Kind: unwinders.KindNormal, Method: "rtos", Confidence: unwinders.ConfidenceHigh,
			Note: fmt.Sprintf("%s saved the task's context at 0x%08x before this call", u.sw.Handler, u.sw.Top),
		}
		return c, nil
	}
	return u.inner.Step(t, frames)
}

// threadChain is chain as the walks of kernel k's threads use it.
func threadChain(elf *elfsym.File, k *rtos.Kernel, chain []unwinders.Unwinder) []unwinders.Unwinder {
	if k == nil || k.Kind != "freertos" {
		return chain
	}
	exit, ok := elf.Symbol("prvTaskExitError")
	if !ok && k.Switch == nil {
		return chain
	}
	out := make([]unwinders.Unwinder, len(chain))
	for i, u := range chain {
		if ok {
			u = taskExitStop{inner: u, exit: exit}
		}
		if k.Switch != nil {
			u = switchStep{inner: u, sw: k.Switch}
		}
		out[i] = u
	}
	return out
}

// cutWalk shortens a walk at the task entry and says whether it reached
// it: for FreeRTOS the walk ended at the end of the stack (threadChain
// turned the caller at prvTaskExitError into it), for Zephyr the frames
// after z_thread_entry are dropped.
func cutWalk(elf *elfsym.File, kind string, res *unwinders.Result) bool {
	switch kind {
	case "freertos":
		return res.Stop.Kind == unwinders.StopEndOfStack
	case "zephyr":
		n, ok := cutAtTaskEntry(elf, kind, res.Frames)
		if ok {
			res.Frames = res.Frames[:n]
			res.Stop = unwinders.Stop{Kind: unwinders.StopEndOfStack, Detail: "task entry"}
		}
		return ok
	}
	return false
}

// discoverThreads finds the RTOS threads of the dump, before the crash's
// own walk: the current thread's stack then bounds that walk (a stack scan
// must not wander into another task's stack).
func discoverThreads(elf *elfsym.File, layouts *rtos.Layouts, t *unwinders.Target, regs unwinders.Registers, r *report.Report, s *Scratch) *rtos.Kernel {
	if elf == nil {
		return nil
	}
	in := rtos.Input{ELF: elf, Mem: t.Mem, Regs: regs, Layouts: layouts}
	if s != nil {
		// The report copies each thread (ThreadJSON.Raw): the list itself
		// is not kept, and the next dump may build its own in it.
		in.Threads = s.kthreads
	}
	k, err := rtos.Discover(in)
	if s != nil && k != nil && cap(k.Threads) > cap(s.kthreads) {
		s.kthreads = k.Threads[:0]
	}
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error())
		return nil
	}
	if k == nil {
		return nil
	}
	r.RTOS = &report.RTOSJSON{Kind: k.Kind, Source: k.Source}
	for _, w := range k.Warnings {
		r.Warnings = append(r.Warnings, k.Kind+": "+w)
	}
	for _, th := range k.Threads {
		if th.Current && th.Stack.Start != 0 && th.Stack.End > th.Stack.Start {
			t.ProcessStack = unwinders.Range{Lo: th.Stack.Start, Hi: th.Stack.End}
		}
	}
	return k
}

// dumpThreads lists the threads the dump itself holds (an ELF core's
// NT_PRSTATUS notes) when no RTOS was found in memory: each is walked
// from its registers like an RTOS thread, the first (the crash's) being
// the current one. It returns nil when the dump holds one thread or none.
func dumpThreads(d *crashdump.Dump, r *report.Report) *rtos.Kernel {
	if len(d.Threads) < 2 {
		return nil
	}
	k := &rtos.Kernel{Kind: "core", Source: d.Format + " thread list"}
	for i, th := range d.Threads {
		name := th.Name
		if name == "" {
			name = fmt.Sprintf("thread %d", th.ID)
		}
		st := rtos.Unknown
		if i == 0 {
			st = rtos.Running
		}
		k.Threads = append(k.Threads, rtos.Thread{
			ID: th.ID, Name: name, State: st, Current: i == 0, Priority: rtos.PriorityUnknown, BasePriority: rtos.PriorityUnknown,
			Regs:  th.Regs,
			Stack: rtos.Stack{SP: th.Regs.Value(unwinders.SP), HighWaterBytes: -1},
		})
	}
	r.RTOS = &report.RTOSJSON{Kind: k.Kind, Source: k.Source}
	return k
}

// threadReports walks every non-current thread and fills r.Threads. It
// runs after r.Frames is final: the current thread shares them.
func threadReports(elf *elfsym.File, t *unwinders.Target, k *rtos.Kernel, chain []unwinders.Unwinder, maxFrames int, locals bool, r *report.Report, s *Scratch) {
	if maxFrames <= 0 || maxFrames > maxThreadFrames {
		maxFrames = maxThreadFrames
	}
	// One allocation holds the frames of every walk (a few each), one the
	// report frames: each thread gets the unused rest, one that outgrows
	// it allocates its own, and each result is capped at its length (an
	// append to it cannot reach the next thread's). With a Scratch they
	// are the previous dump's, grown to what that dump needed.
	var (
		slab    []unwinders.Frame
		jslab   []report.FrameJSON
		threads []report.ThreadJSON
	)
	if s != nil {
		slab, jslab, threads = s.frames, s.jframes, s.threads[:0]
	}
	if len(slab) < 5*len(k.Threads) {
		slab = make([]unwinders.Frame, 5*len(k.Threads))
	}
	if len(jslab) < 5*len(k.Threads) {
		jslab = make([]report.FrameJSON, 5*len(k.Threads))
	}
	if cap(threads) < len(k.Threads) {
		threads = make([]report.ThreadJSON, 0, len(k.Threads))
	}
	r.Threads = threads
	// The threads' addresses, formatted at once: ID, stack start, end
	// and SP of thread i are hexAt(hex, 4i) .. 4i+3.
	var valBuf [4 * 32]uint32
	vals := valBuf[:0]
	for _, th := range k.Threads {
		vals = append(vals, th.ID, th.Stack.Start, th.Stack.End, th.Stack.SP)
	}
	hex := hexes(vals)
	used, jused := 0, 0
	need, jneed := 0, 0 // what the walks took, in or out of the slabs
	defer func() {
		if s == nil {
			return
		}
		s.frames, s.jframes, s.threads = slab, jslab, r.Threads
		if need > len(slab) {
			s.frames = make([]unwinders.Frame, need)
		}
		if jneed > len(jslab) {
			s.jframes = make([]report.FrameJSON, jneed)
		}
	}()
	var tt unwinders.Target // each walk's view of the target
	var walkedBuf [64]int
	walked := walkedBuf[:0] // the threads walked here, by index
	for ti, th := range k.Threads {
		j := report.ThreadJSON{
			Name: th.Name, State: string(th.State), Current: th.Current,
			ID: hexAt(hex, 4*ti), WaitingOn: th.WaitingOn, Diagnosis: th.Diagnosis, Raw: th,
			Stack: report.StackJSON{HighWaterBytes: th.Stack.HighWaterBytes, Overflow: th.Stack.Overflow},
		}
		if th.Priority != rtos.PriorityUnknown {
			p := th.Priority
			j.Priority = &p
			if th.BasePriority != rtos.PriorityUnknown && th.BasePriority != th.Priority {
				bp := th.BasePriority
				j.BasePriority = &bp
			}
		}
		if th.Stack.Start != 0 {
			j.Stack.Start = hexAt(hex, 4*ti+1)
		}
		if th.Stack.End != 0 {
			j.Stack.End = hexAt(hex, 4*ti+2)
		}
		if th.Stack.SP != 0 {
			j.Stack.SP = hexAt(hex, 4*ti+3)
		}
		if th.Err != nil {
			j.Error = th.Err.Error()
		}
		switch {
		case th.Current:
			// The crash's registers are this thread's, whatever its TCB says.
			j.Frames, j.Stop, j.Walk = r.Frames, r.Stop, r.Walk
		case th.Err != nil:
			j.Frames = []report.FrameJSON{}
			j.Stop = "context not recovered"
		default:
			tt = *t             // one copy for all the walks (it escapes to the heap)
			tt.MainStackTop = 0 // a task's stack is not the main stack: its top is unknown
			if th.Stack.Start != 0 && th.Stack.End > th.Stack.Start {
				tt.ProcessStack = unwinders.Range{Lo: th.Stack.Start, Hi: th.Stack.End}
				tt.ProcessStackTop = th.Stack.End
			} else if rg, ok := memRegionOf(t.Mem, th.Stack.SP); ok {
				// Bounds unknown (no stack_info without debug types): the
				// dump's memory holding the thread's SP bounds its walk, not
				// the crash's stacks (another thread's memory block, or the
				// main stack cut at the vector table's initial SP, which
				// in Zephyr lies inside the main thread's stack).
				rng := unwinders.Range{Lo: rg.Addr, Hi: uint32(min(rg.End(), 1<<32-1))}
				tt.Stack, tt.ProcessStack, tt.ProcessStackTop = rng, rng, 0
			}
			res := unwinders.Walk(&tt, th.Regs, chain, unwinders.Options{MaxFrames: maxFrames, Frames: slab[used:used:len(slab)]})
			need += len(res.Frames)
			if n := len(res.Frames); n > 0 && used < len(slab) && &res.Frames[0] == &slab[used] {
				used += n
				res.Frames = res.Frames[:n:n]
			}
			if cutWalk(elf, k.Kind, &res) {
				j.Stop = taskEntryStop
			} else {
				j.Stop = demangleText(elf, res.Stop.String())
			}
			j.Walk = res
			walked = append(walked, len(r.Threads))
		}
		r.Threads = append(r.Threads, j)
	}
	// The walks' addresses, formatted at once, then each walk symbolized
	// (warnings in thread order, as they were).
	var frameVals [3 * 96]uint32
	fvals := frameVals[:0]
	for _, i := range walked {
		fvals = frameHexVals(fvals, r.Threads[i].Walk.Frames)
	}
	fhex := hexes(fvals)
	offs := make([]int64, 0, len(fvals)/3) // every walk's frame offsets
	base := 0
	for _, i := range walked {
		j := &r.Threads[i]
		var symErrs []string
		n := len(j.Walk.Frames)
		j.Frames, symErrs = symbolizeFramesHex(jslab[jused:jused:len(jslab)], elf, j.Walk.Frames, fhex, base, offs[base:base:base+n])
		base += len(j.Walk.Frames)
		jneed += len(j.Frames)
		if n := len(j.Frames); n > 0 && jused < len(jslab) && &j.Frames[0] == &jslab[jused] {
			jused += n
			j.Frames = j.Frames[:n:n]
		}
		// The thread's frames get arguments (and locals) as the crash's
		// do: frame 0 with every register of the saved context, callers
		// with the callee-saved ones the walk recovered.
		if w := attachVars(elf, t, j.Walk.Frames, j.Frames, locals); w != "" {
			r.Warnings = append(r.Warnings, "thread "+j.Name+": "+w)
		}
		for i := range j.Frames {
			j.Frames[i].Note = demangleText(elf, j.Frames[i].Note)
		}
		for _, e := range symErrs {
			r.Warnings = append(r.Warnings, fmt.Sprintf("thread %s: %s: file:line or inlined frames may be missing", j.Name, e))
		}
	}
}

// memRegionOf returns the dump region of mem (an *unwinders.Image) that
// holds addr: the layer of dump memory, not the ELF's.
func memRegionOf(mem unwinders.Memory, addr uint32) (unwinders.Region, bool) {
	im, ok := mem.(*unwinders.Image)
	if !ok || addr == 0 {
		return unwinders.Region{}, false
	}
	var found unwinders.Region
	ok = false
	for _, rg := range im.Regions() {
		if rg.Contains(addr) {
			found, ok = rg, true // the last layer holding it: the dump's
		}
	}
	return found, ok
}
