// Package verdict says plainly what a crash dump proves about its stacks:
// whether one overflowed, and whose (design.md, "Arguments, locals,
// messages, logs": stack_verdict). Every rule fires on positive evidence
// only: the core's own stacking-error or stack-limit bits together with a
// stack pointer below the stack's start, a MemManage fault inside an MPU
// guard region the dump's MPU registers describe, an RTOS task whose saved
// SP lies below its stack or whose fill pattern or sentinel is destroyed,
// a lockup with the SP run below RAM. Without such evidence there is no
// verdict at all.
package verdict

import (
	"encoding/binary"
	"fmt"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// Evidence names (the stack_verdict.evidence strings).
const (
	EvSTKERR      = "STKERR"
	EvMSTKERR     = "MSTKERR"
	EvSTKOF       = "STKOF"
	EvMSPLIM      = "MSPLIM"
	EvPSPLIM      = "PSPLIM"
	EvBelowStart  = "SP below stack start"
	EvBelowRAM    = "SP below RAM"
	EvMPUGuard    = "MPU guard"
	EvFillPattern = "fill pattern"
	EvSentinel    = "stack sentinel"
	EvLockup      = "lockup"
)

// Stack is the verdict: the JSON stack_verdict object, with the plain
// words behind it for the text and HTML reports.
type Stack struct {
	Overflow bool     `json:"overflow"`
	Stack    string   `json:"stack"`
	Evidence []string `json:"evidence"`
	// Details: one sentence per finding, the stack's owner first.
	Details []string `json:"-"`
}

// Memory reads the dump's own memory only (never the ELF's image: a
// register or a sentinel the dump did not capture is unknown).
type Memory func(addr uint32, n int) ([]byte, bool)

// Input is what the verdict is judged from.
type Input struct {
	Profile unwinders.Profile
	SCB     fault.SCB
	Regs    unwinders.Registers // the dump's registers
	Lockup  bool
	// ExcStack is "MSP" or "PSP": the stack the first exception frame of
	// the walk is on (what the core pushed to), "" when none was found.
	ExcStack string
	// MainStart is the lowest address of the main stack when the ELF
	// says (linker symbols), MainStartHow how it is known.
	MainStart    uint32
	MainStartHow string
	// BelowRAM: the SP lies in no dumped memory, just below the
	// firmware's RAM (the lockup note's evidence), with its sentence.
	BelowRAM string
	// Threads of the RTOS (the current one marked), Kernel its kind.
	Threads []rtos.Thread
	Kernel  string
	// ZephyrSentinel: the firmware checks Zephyr's stack sentinel
	// (CONFIG_STACK_SENTINEL: z_check_stack_sentinel is linked in).
	ZephyrSentinel bool
	Mem            Memory
}

// zephyrSentinel is the word Zephyr writes at the lowest address of every
// thread's stack when CONFIG_STACK_SENTINEL is set.
const zephyrSentinel = 0xF0F0F0F0

// near bounds how far below a stack's start an SP still counts as that
// stack's overflow (a wild SP is not an overflow figure).
const near = 64 << 10

type finding struct {
	stack    string
	evidence []string
	detail   string
	hardware bool // from the core's own fault state (the crash itself)
}

// Judge returns the stack verdict, nil when nothing is proven and the core
// did not lock up.
func Judge(in Input) *Stack {
	var fs []finding
	fs = append(fs, hardware(in)...)
	if f, ok := mpuGuard(in); ok {
		fs = append(fs, f)
	}
	fs = append(fs, threads(in)...)
	if len(fs) == 0 {
		if !in.Lockup {
			return nil
		}
		return &Stack{Stack: activeStack(in), Evidence: []string{EvLockup},
			Details: []string{"the core locked up (a fault it could not take); nothing in the dump shows a stack overflow"}}
	}
	// The crash's own stack (hardware evidence) first, then the current
	// task's, then the first other overflowed task's.
	best := 0
	for i, f := range fs {
		if f.hardware && !fs[best].hardware {
			best = i
		}
	}
	if !fs[best].hardware {
		for i, f := range fs {
			if cur := currentThread(in); cur != nil && f.stack == cur.Name {
				best = i
				break
			}
		}
	}
	v := &Stack{Overflow: true, Stack: fs[best].stack}
	add := func(e string) {
		for _, x := range v.Evidence {
			if x == e {
				return
			}
		}
		v.Evidence = append(v.Evidence, e)
	}
	for _, f := range fs {
		if f.stack == v.Stack {
			for _, e := range f.evidence {
				add(e)
			}
		}
	}
	if in.Lockup {
		add(EvLockup)
	}
	order := append([]finding{fs[best]}, fs[:best]...)
	order = append(order, fs[best+1:]...)
	for _, f := range order {
		v.Details = append(v.Details, f.detail)
	}
	return v
}

func currentThread(in Input) *rtos.Thread {
	for i := range in.Threads {
		if in.Threads[i].Current {
			return &in.Threads[i]
		}
	}
	return nil
}

// activeStack names the stack the core pushed the exception frame to (or
// was using): "main" or "process" (the current task's name under an RTOS).
func activeStack(in Input) string {
	if isPSP(in) {
		if cur := currentThread(in); cur != nil && cur.Name != "" {
			return cur.Name
		}
		return "process"
	}
	return "main"
}

// hardware: the core's stacking-error bits with the SP below its stack's
// start (or below RAM), STKOF on ARMv8-M, a lockup with the SP below RAM.
func hardware(in Input) []finding {
	cfsr, known := in.SCB.CFSR.Get()
	var out []finding
	psp := isPSP(in)
	sp, spOK := activeSP(in)
	name := activeStack(in)
	if known && in.Profile == unwinders.V8M && cfsr&(1<<fault.STKOF) != 0 {
		lim := EvMSPLIM
		if psp {
			lim = EvPSPLIM
		}
		out = append(out, finding{stack: name, hardware: true, evidence: []string{EvSTKOF, lim},
			detail: fmt.Sprintf("UsageFault STKOF: the %s stack pointer went below its limit register %s: the %s stack overflowed", map[bool]string{true: "process", false: "main"}[psp], lim, describe(name))})
	}
	var stk []string
	if known && in.Profile != unwinders.V6M {
		if cfsr&(1<<fault.MSTKERR) != 0 {
			stk = append(stk, EvMSTKERR)
		}
		if cfsr&(1<<fault.STKERR) != 0 {
			stk = append(stk, EvSTKERR)
		}
	}
	below := ""
	if spOK {
		start, how := uint32(0), ""
		if psp {
			if cur := currentThread(in); cur != nil && cur.Stack.Start != 0 {
				start, how = cur.Stack.Start, "the task's stack start"
			}
		} else if in.MainStart != 0 {
			start, how = in.MainStart, in.MainStartHow
		}
		if start != 0 && sp < start && start-sp <= near {
			below = fmt.Sprintf("SP 0x%08x is %d bytes below the stack's start 0x%08x (%s)", sp, start-sp, start, how)
		}
	}
	switch {
	case len(stk) > 0 && below != "":
		out = append(out, finding{stack: name, hardware: true, evidence: append(stk, EvBelowStart),
			detail: fmt.Sprintf("the %s stack overflowed: the core could not stack the exception frame (%s) and %s", describe(name), joinEv(stk), below)})
	case len(stk) > 0 && in.BelowRAM != "":
		out = append(out, finding{stack: name, hardware: true, evidence: append(stk, EvBelowRAM),
			detail: fmt.Sprintf("the %s stack overflowed: the core could not stack the exception frame (%s) and the SP is below RAM", describe(name), joinEv(stk))})
	case in.Lockup && in.BelowRAM != "":
		out = append(out, finding{stack: name, hardware: true, evidence: []string{EvLockup, EvBelowRAM},
			detail: fmt.Sprintf("the %s stack overflowed: the core locked up with the SP run below the start of RAM", describe(name))})
	}
	return out
}

func joinEv(e []string) string {
	s := ""
	for i, x := range e {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

func describe(stack string) string {
	switch stack {
	case "main", "process":
		return stack
	}
	return "task " + stack + "'s"
}

// MPU register addresses (ARMv7-M B3.5, ARMv8-M D1.2).
const (
	mpuCtrl = 0xE000ED94
	mpuRNR  = 0xE000ED98
	mpuRBAR = 0xE000ED9C
	mpuRASR = 0xE000EDA0 // MPU_RLAR on ARMv8-M
)

// maxFrame is the largest exception frame (FP and v8-M state context,
// with its alignment pad).
const maxFrame = 0xAC

// guardMax bounds an MPU region's size for it to count as a stack guard.
const guardMax = 4096

// mpuGuard: a MemManage data access violation with a valid MMFAR inside an
// enabled, write-forbidding MPU region that the dump's MPU registers
// describe, and that region lies at the bottom of a known stack.
func mpuGuard(in Input) (finding, bool) {
	cfsr, ok := in.SCB.CFSR.Get()
	mmfar, ok2 := in.SCB.MMFAR.Get()
	if !ok || !ok2 || in.Mem == nil || in.Profile == unwinders.V6M ||
		cfsr&(1<<fault.MMARVALID) == 0 || cfsr&(1<<fault.DACCVIOL|1<<fault.MSTKERR) == 0 {
		return finding{}, false
	}
	b, ok := in.Mem(mpuCtrl, 16)
	if !ok {
		return finding{}, false
	}
	ctrl, rnr := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	rbar, rasr := binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
	if ctrl&1 == 0 {
		return finding{}, false
	}
	var base, end uint64
	switch in.Profile {
	case unwinders.V8M:
		// RBAR: BASE[31:5], SH, AP[2:1], XN; RLAR: LIMIT[31:5], EN.
		if rasr&1 == 0 || rbar&(1<<2) == 0 { // disabled, or writable
			return finding{}, false
		}
		base, end = uint64(rbar&^0x1f), uint64(rasr|0x1f)+1
	default:
		// RASR: XN, AP[26:24], SRD, SIZE[5:1], ENABLE.
		ap := rasr >> 24 & 7
		if rasr&1 == 0 || !(ap == 0 || ap >= 5) || rasr>>8&0xff != 0 { // disabled, writable, or subregions
			return finding{}, false
		}
		size := uint64(1) << ((rasr >> 1 & 0x1f) + 1)
		base = uint64(rbar) &^ (size - 1)
		end = base + size
	}
	if end <= base || end-base > guardMax || uint64(mmfar) < base || uint64(mmfar) >= end {
		return finding{}, false
	}
	// Whose stack: the one whose start is at the region (a guard sits at
	// the bottom of its stack, right below it or in its first bytes).
	at := func(start uint32) bool {
		return start != 0 && uint64(start)+64 >= base && uint64(start) <= end+64
	}
	stack := ""
	switch {
	case in.MainStart != 0 && at(in.MainStart):
		stack = "main"
	default:
		for _, t := range in.Threads {
			if at(t.Stack.Start) {
				stack = t.Name
				break
			}
		}
	}
	where := "sits at the bottom of that stack"
	if stack == "" {
		// No stack the dump describes starts there: the region is that
		// stack's guard only when the core's own stacking wrote into it
		// (MSTKERR: the exception entry's push faulted there) and the
		// stack pointer it pushed with is right above it.
		sp, ok := activeSP(in)
		if cfsr&(1<<fault.MSTKERR) == 0 || !ok || uint64(sp)+maxFrame < base || uint64(sp) > end+maxFrame {
			return finding{}, false // a protected region, but no stack's guard that the dump shows
		}
		stack = activeStack(in)
		where = fmt.Sprintf("was written by the exception entry's stacking (MSTKERR) with SP 0x%08x", sp)
	}
	return finding{stack: stack, hardware: true, evidence: []string{EvMPUGuard},
		detail: fmt.Sprintf("the %s stack overflowed into its MPU guard: MemManage fault at 0x%08x, inside MPU region %d [0x%08x, 0x%08x), which forbids writes and %s", describe(stack), mmfar, rnr&0xff, base, end, where)}, true
}

// activeSP is the stack pointer of the stack the exception frame went to.
func activeSP(in Input) (uint32, bool) {
	reg := unwinders.MSP
	if isPSP(in) {
		reg = unwinders.PSP
	}
	if sp, ok := in.Regs.Get(reg); ok {
		return sp, true
	}
	return in.Regs.Get(unwinders.SP)
}

// isPSP: the exception frame went to the process stack (the walk's first
// exception frame says, else EXC_RETURN in LR, else CONTROL.SPSEL in
// Thread mode).
func isPSP(in Input) bool {
	if in.ExcStack != "" {
		return in.ExcStack == "PSP"
	}
	if lr, ok := in.Regs.Get(unwinders.LR); ok && lr>>24 == 0xff {
		return lr&4 != 0
	}
	// Thread mode (IPSR 0: a lockup, or a dump taken in the thread)
	// runs on the process stack when CONTROL.SPSEL is set.
	xpsr, ok1 := in.Regs.Get(unwinders.XPSR)
	ctrl, ok2 := in.Regs.Get(unwinders.CONTROL)
	return ok1 && ok2 && xpsr&0x1ff == 0 && ctrl&2 != 0
}

// threads: the RTOS's own per-task verdicts (rtos.Stack.Overflow: a saved
// SP below the stack's start, FreeRTOS's 0xa5 fill gone from the bottom)
// and Zephyr's stack sentinel.
func threads(in Input) []finding {
	var out []finding
	for _, t := range in.Threads {
		s := t.Stack
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("0x%08x", t.ID)
		}
		if s.Overflow {
			ev, why := EvFillPattern, "no untouched fill pattern is left at the bottom of its stack"
			if s.SP != 0 && s.SP < s.Start {
				ev, why = EvBelowStart, fmt.Sprintf("its saved SP 0x%08x is %d bytes below the stack's start 0x%08x", s.SP, s.Start-s.SP, s.Start)
			}
			used := ""
			if u := s.UsedBytes(); u >= 0 && s.End > s.Start {
				used = fmt.Sprintf(" (%d of %d bytes used)", u, s.End-s.Start)
			}
			out = append(out, finding{stack: name, evidence: []string{ev},
				detail: fmt.Sprintf("task %s's stack overflowed: %s%s", name, why, used)})
			continue
		}
		if in.ZephyrSentinel && in.Kernel == "zephyr" && s.Start != 0 && in.Mem != nil {
			if b, ok := in.Mem(s.Start, 4); ok {
				if w := binary.LittleEndian.Uint32(b); w != zephyrSentinel {
					out = append(out, finding{stack: name, evidence: []string{EvSentinel},
						detail: fmt.Sprintf("thread %s's stack overflowed: its stack sentinel at 0x%08x (the stack's lowest word) is 0x%08x, not 0x%08x", name, s.Start, w, uint32(zephyrSentinel))})
				}
			}
		}
	}
	return out
}
