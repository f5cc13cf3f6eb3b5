package analysis

import (
	"encoding/binary"
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// zephyrMaxCandidates bounds the exception frames tried as an ISR's
// interrupted thread context.
const zephyrMaxCandidates = 16

// zephyrSearchWindow is how far on either side of a thread's saved stack
// pointer its stack is searched when its bounds are unknown.
const zephyrSearchWindow = 4 << 10

// zephyrContext completes the crash registers of a Zephyr coredump that
// Zephyr left incomplete, from the kernel's own data in the dump:
//
//   - SP 0: Zephyr 2.x sets the arch block's SP only in its fault handler,
//     so a fatal error raised by k_oops/k_panic (an SVC) or an assertion
//     dumps SP 0. The arch block's other registers are the exception
//     frame the fatal error path received (r0-r3, r12, lr, pc, xpsr), and
//     that frame is still on the current thread's stack: found there (all
//     eight words equal, at one place only), SP is the address above it.
//   - a fault inside an ISR: the registers are the handler's, its frames
//     are on the interrupt stack, and the exception frame it ends in is on
//     the interrupted thread's stack, at a PSP the coredump does not hold.
//     The thread is the kernel's current one: its stack is searched for
//     8-word frames of thread mode (xPSR Thumb bit, IPSR 0, PC in code),
//     highest address first, and the first whose walk reaches the thread's
//     entry function is taken as PSP.
//
// It returns what it did or could not do, as warnings; d.Regs is changed
// only on a unique, checked answer.
func zephyrContext(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, t *unwinders.Target, chain []unwinders.Unwinder) []string {
	if elf == nil || (d.Format != crashdump.FormatZephyr && d.Format != crashdump.FormatZephyrLog) {
		return nil
	}
	sp, spOK := d.Regs.Get(unwinders.SP)
	ipsr, ipsrOK := d.Regs.IPSR()
	_, pspOK := d.Regs.Get(unwinders.PSP)
	needSP := !spOK || sp == 0
	needPSP := ipsrOK && ipsr != 0 && !pspOK && !needSP
	if !needSP && !needPSP {
		return nil
	}
	k, err := rtos.Discover(rtos.Input{ELF: elf, Mem: t.Mem, Regs: d.Regs, Layouts: facts.layouts})
	if err != nil || k == nil || k.Kind != "zephyr" || len(k.Threads) == 0 || !k.Threads[0].Current {
		if needSP {
			return []string{"the coredump's SP is 0 (Zephyr records it only in its fault handler) and the current thread cannot be read from _kernel: the exception frame cannot be looked for, so the walk has only the registers"}
		}
		return nil
	}
	cur := k.Threads[0]
	name := cur.Name
	if name == "" {
		name = report.Hex(cur.ID)
	}
	lo, hi := cur.Stack.Start, cur.Stack.End
	if lo == 0 && hi == 0 {
		// No stack_info (an offsets table has none): look around the
		// stack pointer the kernel saved at the thread's last switch-out,
		// which lies in its stack.
		lo, hi = zephyrWindow(elf, facts, t, k)
		if hi > lo {
			name += " (stack bounds unknown: the part around its last saved SP)"
		}
	}
	if needSP {
		excRet, excOK := rtos.ZephyrSavedExcReturn(rtos.Input{ELF: elf, Mem: t.Mem, Layouts: facts.layouts}, cur.ID)
		return zephyrFindESF(elf, d, t, chain, lo, hi, name, excRet, excOK)
	}
	if lo == 0 && hi == 0 {
		return []string{fmt.Sprintf("the fault was taken in a handler (IPSR %d) and the coredump holds no PSP; thread %s's stack is not known, so the frame the interrupt stacked on it is not looked for: the walk stops at the handler's exception frame", ipsr, name)}
	}
	return zephyrFindPSP(elf, d, t, chain, lo, hi, name, ipsr)
}

// zephyrWindow is where the current thread's stack is looked for when its
// bounds are unknown: within zephyrSearchWindow of the stack pointer the
// kernel saved at its last switch-out, clipped at the other threads' saved
// stack pointers (a switched-out thread's live data, its saved exception
// frame first, runs from there up, so this stack ends below the next such
// pointer above and starts above the frame of the one below). 0, 0 when
// the saved SP cannot be read.
func zephyrWindow(elf *elfsym.File, facts elfFacts, t *unwinders.Target, k *rtos.Kernel) (lo, hi uint32) {
	saved, ok := rtos.ZephyrSavedSP(rtos.Input{ELF: elf, Mem: t.Mem, Layouts: facts.layouts}, k.Threads[0].ID)
	if !ok || saved < zephyrSearchWindow {
		return 0, 0
	}
	lo, hi = saved-zephyrSearchWindow, saved+min(zephyrSearchWindow, ^saved)
	for _, th := range k.Threads[1:] {
		sp := th.Stack.SP
		switch {
		case sp == 0:
		case sp <= saved && sp+0x20 > lo:
			lo = sp + 0x20
		case sp > saved && sp < hi:
			hi = sp
		}
	}
	return lo, hi
}

// stackBytes returns the dump's bytes for [lo, hi), or, when the bounds
// are unknown (0, 0), every region, each with its address.
func stackBytes(d *crashdump.Dump, lo, hi uint32) (addrs []uint32, data [][]byte) {
	for _, r := range d.Memory {
		if lo == 0 && hi == 0 {
			addrs, data = append(addrs, r.Addr), append(data, r.Data)
			continue
		}
		a, b := max(uint64(lo), uint64(r.Addr)), min(uint64(hi), r.End())
		if a >= b {
			continue
		}
		addrs = append(addrs, uint32(a))
		data = append(data, r.Data[a-uint64(r.Addr):b-uint64(r.Addr)])
	}
	return addrs, data
}

// zephyrFindESF looks for the arch block's exception frame on the current
// thread's stack [lo, hi) (the whole dump when unknown) and sets SP above
// it when it is found at exactly one place.
func zephyrFindESF(elf *elfsym.File, d *crashdump.Dump, t *unwinders.Target, chain []unwinders.Unwinder, lo, hi uint32, name string, excRet uint32, excOK bool) []string {
	var want [8]uint32
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		v, ok := d.Regs.Get(reg)
		if !ok {
			return []string{"the coredump's SP is 0 and its exception frame registers are incomplete: SP stays unknown"}
		}
		want[i] = v
	}
	where := fmt.Sprintf("thread %s's stack 0x%08x-0x%08x", name, lo, hi)
	if lo == 0 && hi == 0 {
		where = "the dump's memory (thread " + name + "'s stack bounds are unknown)"
	}
	var found []uint32
	addrs, data := stackBytes(d, lo, hi)
	for k, b := range data {
		for off := (4 - addrs[k]%4) % 4; int(off)+32 <= len(b) && len(found) <= zephyrMaxCandidates; off += 4 {
			if binary.LittleEndian.Uint32(b[off:]) != want[0] {
				continue
			}
			match := true
			for i := 1; i < 8 && match; i++ {
				match = binary.LittleEndian.Uint32(b[int(off)+4*i:]) == want[i]
			}
			if match {
				found = append(found, addrs[k]+off)
			}
		}
	}
	// The hardware aligns exception frames to 8 bytes: an unaligned copy
	// is not the frame.
	aligned := found[:0:0]
	for _, a := range found {
		if a%8 == 0 {
			aligned = append(aligned, a)
		}
	}
	switch len(aligned) {
	case 0:
		return []string{fmt.Sprintf("the coredump's SP is 0 (Zephyr records it only in its fault handler, not for k_oops/k_panic or an assertion) and its exception frame (r0-r3, r12, lr, pc, xpsr) is not on %s: the walk has only the registers", where)}
	case 1:
	default:
		return []string{fmt.Sprintf("the coredump's SP is 0 and its exception frame (r0-r3, r12, lr, pc, xpsr) is found %d times on %s (at 0x%08x and 0x%08x): SP stays unknown", len(aligned), where, aligned[0], aligned[1])}
	}
	esf := aligned[0]
	// The frame is 8 words, or 26 with live FP state (s0-s15, FPSCR):
	// the coredump does not say which. Each is tried: the one whose walk
	// reaches the thread's entry with every frame sure (no fallback) is
	// taken; when both or neither do, the EXC_RETURN the kernel saved at
	// the thread's last switch-out decides (live FP state then stays live),
	// else the basic frame, and the note says it is not verified.
	pad := uint32(0)
	if want[7]&(1<<9) != 0 {
		pad = 4
	}
	basic, ext := esf+0x20+pad, esf+0x68+pad
	okB, okE := zephyrCleanWalk(elf, d, t, chain, basic), zephyrCleanWalk(elf, d, t, chain, ext)
	newSP, how := basic, "a basic 8-word frame, whose walk reaches the thread's entry (with live FP state it would be 26 words)"
	switch {
	case okE && !okB:
		newSP, how = ext, "an extended 26-word frame (live FP state): only with it does the walk reach the thread's entry"
	case okB == okE && excOK && excRet&0x10 == 0:
		newSP, how = ext, fmt.Sprintf("an extended 26-word frame: the thread had live FP state at its last switch-out (saved EXC_RETURN 0x%08x), which it keeps", excRet)
	case okB == okE && excOK:
		how = fmt.Sprintf("a basic 8-word frame: the thread had no live FP state at its last switch-out (saved EXC_RETURN 0x%08x); unverified, it may have used FP since", excRet)
	case !okB:
		how = "unverified: a basic 8-word frame assumed; neither it nor an extended 26-word frame (live FP state) gives a walk that surely reaches the thread's entry"
	case okE:
		how = "unverified: a basic 8-word frame assumed; an extended 26-word frame (live FP state) gives a walk that reaches the thread's entry too"
	}
	d.Regs.Set(unwinders.SP, newSP)
	return []string{fmt.Sprintf("the coredump's SP is 0 (Zephyr records it only in its fault handler, not for k_oops/k_panic or an assertion): its exception frame (r0-r3, r12, lr, pc, xpsr, all eight equal) is at 0x%08x on %s, the only place it is, so SP before the exception was 0x%08x (%s)", esf, where, newSP, how)}
}

// zephyrCleanWalk says whether the walk from the dump's registers with SP
// sp reaches the thread's entry function with every frame of high
// confidence (no stack scan or other fallback).
func zephyrCleanWalk(elf *elfsym.File, d *crashdump.Dump, t *unwinders.Target, chain []unwinders.Unwinder, sp uint32) bool {
	regs := d.Regs
	regs.Set(unwinders.SP, sp)
	res := unwinders.Walk(t, regs, chain, unwinders.Options{MaxFrames: maxThreadFrames})
	n, ok := cutAtTaskEntry(elf, "zephyr", res.Frames)
	if !ok {
		return false
	}
	for _, f := range res.Frames[:n] {
		if f.Kind == unwinders.KindNormal && f.Confidence < unwinders.ConfidenceHigh {
			return false
		}
	}
	return true
}

// zephyrFindPSP looks for the exception frame an interrupt stacked on the
// current thread's stack [lo, hi) and sets PSP to it.
func zephyrFindPSP(elf *elfsym.File, d *crashdump.Dump, t *unwinders.Target, chain []unwinders.Unwinder, lo, hi uint32, name string, ipsr uint32) []string {
	var cands []uint32
	addrs, data := stackBytes(d, lo, hi)
	for k := len(data) - 1; k >= 0; k-- {
		b := data[k]
		start := (8 - addrs[k]%8) % 8
		for off := int64(len(b)) - 32; off >= int64(start) && len(cands) < zephyrMaxCandidates; off-- {
			a := addrs[k] + uint32(off)
			if a%8 != 0 {
				continue
			}
			w := func(i int) uint32 { return binary.LittleEndian.Uint32(b[off+int64(4*i):]) }
			xpsr, pc := w(7), w(6)
			if xpsr&(1<<24) == 0 || xpsr&0x1ff != 0 || pc&1 != 0 || !elf.IsCode(pc) {
				continue
			}
			cands = append(cands, a)
		}
	}
	saved := t.ProcessStack
	t.ProcessStack = unwinders.Range{Lo: lo, Hi: hi}
	defer func() { t.ProcessStack = saved }()
	for _, a := range cands {
		var regs unwinders.Registers
		for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
			v, _ := unwinders.ReadU32(t.Mem, a+uint32(4*i))
			regs.Set(reg, v)
		}
		sp := a + 0x20
		if regs.Value(unwinders.XPSR)&(1<<9) != 0 {
			sp += 4
		}
		regs.Set(unwinders.SP, sp)
		regs.Set(unwinders.PSP, sp)
		res := unwinders.Walk(t, regs, chain, unwinders.Options{MaxFrames: maxThreadFrames})
		if n, ok := cutAtTaskEntry(elf, "zephyr", res.Frames); ok && n > 0 {
			d.Regs.Set(unwinders.PSP, a)
			return []string{fmt.Sprintf("the fault was taken in a handler (IPSR %d) and the coredump holds no PSP: the frame the interrupt stacked on thread %s's stack is taken to be at 0x%08x, the highest 8-word thread-mode frame there (Thumb, IPSR 0, PC 0x%08x in code) whose walk reaches the thread's entry; PSP 0x%08x is used", ipsr, name, a, regs.Value(unwinders.PC), a)}
		}
	}
	return []string{fmt.Sprintf("the fault was taken in a handler (IPSR %d) and the coredump holds no PSP: no frame on thread %s's stack 0x%08x-0x%08x leads to the thread's entry (%d tried), so the walk stops at the handler's exception frame", ipsr, name, lo, hi, len(cands))}
}
