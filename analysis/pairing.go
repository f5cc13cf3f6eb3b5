package analysis

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// doubtPrefix starts the evidence line of a doubt.
const doubtPrefix = "not confirmed: "

// Thresholds of the stack-word test (see stackWords).
const (
	maxStackScan       = 64 << 10 // bytes of stack scanned at most
	minStackCodeWords  = 4        // code-looking words needed before the ratio means anything
	stackCallRatioMin  = 0.5      // below this share of call-preceded words, the stack does not look like this code's
	stackCallRatioGood = 0.8
)

// maxWalkedFunc bounds the bytes of one function the code-byte comparison
// takes as used by the walk; a larger (or sizeless) function counts only
// the instructions around the frame's PC.
const maxWalkedFunc = 64 << 10

// roBlock is a read-only allocated section of the ELF: code or constant
// data that a dump holding the same addresses must hold unchanged.
type roBlock struct {
	name string
	addr uint32
	data []byte
}

// roBlocksOf lists the ELF's allocated, non-writable sections that have
// file bytes.
func roBlocksOf(elf *elfsym.File) []roBlock {
	if elf == nil {
		return nil
	}
	var out []roBlock
	for _, s := range elf.Sections() {
		if !s.Alloc || s.Write || s.Size == 0 || s.TypeS == "NOBITS" {
			continue
		}
		_, data, ok := elf.Section(s.Name)
		if !ok || len(data) == 0 {
			continue
		}
		out = append(out, roBlock{name: s.Name, addr: s.Addr, data: data})
	}
	return out
}

// walkedRanges are the code addresses the walk used: the function of
// every frame it found (its CFI, prologue or epilogue was read there), or
// a few bytes around the frame's PC when the function's extent is not
// known, and the call instruction before each return address.
func walkedRanges(elf *elfsym.File, frames []unwinders.Frame) [][2]uint64 {
	var out [][2]uint64
	for _, f := range frames {
		if f.Kind != unwinders.KindNormal {
			continue
		}
		pc := f.LookupPC() &^ 1
		if !elf.IsCode(pc) {
			continue
		}
		if fn, ok := elf.FuncAt(pc); ok && fn.End > fn.Start && fn.End-fn.Start <= maxWalkedFunc {
			out = append(out, [2]uint64{uint64(fn.Start), uint64(fn.End)})
		} else {
			out = append(out, [2]uint64{uint64(max(pc, 4) - 4), uint64(pc) + 4})
		}
	}
	slices.SortFunc(out, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// checkPairing judges whether the dump came from the firmware in elf.
//
// Positive evidence decides a mismatch, and nothing else does:
//
//  1. the GNU build IDs, when both sides have one, differ;
//  2. the dump's bytes at the ELF's code the walk used (the functions of
//     its frames) differ from the ELF's;
//  3. the core cannot run the ELF's code: an ELF built for an
//     architecture or an FPU the dump's CPU does not have.
//
// Build IDs or code bytes that are equal decide "verified". Heuristics
// follow, each of which can only doubt (see Pairing.Doubts): bytes that
// differ elsewhere in the ELF's read-only sections; the instruction at the
// faulting PC against the fault the status registers report; the PC
// against the handler the ELF's vector table names; the return addresses
// the walk followed, the interrupted code's LR and the code addresses on
// the live stack, which should follow a call; the calls, which should
// target the callee (directly or by a chain of tail calls); and an FP
// exception frame under an ELF built without FP. A verdict that is
// neither mismatch nor verified is "unverified", its evidence saying
// which checks passed and which doubts remain.
func checkPairing(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, t *unwinders.Target, frames []unwinders.Frame, scb fault.SCB) report.Pairing {
	p := report.Pairing{Evidence: []string{}}
	if elf == nil {
		p.Verdict = report.PairUnverified
		return p
	}
	decisive := false
	differ := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		p.Differences = append(p.Differences, s)
		p.Evidence = append(p.Evidence, s)
	}
	doubt := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		p.Doubts = append(p.Doubts, s)
		p.Evidence = append(p.Evidence, doubtPrefix+s)
	}

	// 1. Build IDs.
	switch {
	case d.BuildID != "" && facts.buildID != "":
		if d.BuildID == facts.buildID {
			p.Evidence = append(p.Evidence, "build-id "+short(d.BuildID))
			decisive = true
		} else {
			differ("build-id differs: the dump's is %s, the ELF's %s", short(d.BuildID), short(facts.buildID))
		}
	case d.BuildID != "":
		p.Evidence = append(p.Evidence, fmt.Sprintf("the dump carries build-id %s but the ELF has none", short(d.BuildID)))
	}

	// 2. Code and read-only data bytes: those of the code the walk used
	// decide; others that differ only doubt (flash the firmware writes,
	// a section the linker script marks read-only but the code updates).
	walked := walkedRanges(elf, frames)
	inWalk := func(a uint64) bool {
		for _, w := range walked {
			if a >= w[0] && a < w[1] {
				return true
			}
		}
		return false
	}
	var same, diff, diffWalk, sameWalk int
	var firstDiff, firstWalk uint32
	var firstName, firstWalkName string
	for _, b := range facts.ro {
		lo, hi := uint64(b.addr), uint64(b.addr)+uint64(len(b.data))
		for _, r := range d.Memory {
			s, e := max(lo, uint64(r.Addr)), min(hi, r.End())
			if s >= e {
				continue
			}
			eb := b.data[s-lo : e-lo]
			db := r.Data[s-uint64(r.Addr) : e-uint64(r.Addr)]
			if bytes.Equal(eb, db) {
				same += len(eb)
				for _, w := range walked {
					sameWalk += int(max(0, int64(min(e, w[1]))-int64(max(s, w[0]))))
				}
				continue
			}
			for i := range eb {
				a := s + uint64(i)
				walkedByte := inWalk(a)
				if eb[i] == db[i] {
					same++
					if walkedByte {
						sameWalk++
					}
					continue
				}
				if walkedByte {
					if diffWalk == 0 {
						firstWalk, firstWalkName = uint32(a), b.name
					}
					diffWalk++
					continue
				}
				if diff == 0 {
					firstDiff, firstName = uint32(a), b.name
				}
				diff++
			}
		}
	}
	if diffWalk > 0 {
		differ("code bytes differ where the walk read them: %d bytes of the functions of the backtrace differ from the ELF's, the first at %s (%s)", diffWalk, codeAddr(elf, firstWalk), firstWalkName)
	}
	if diff > 0 {
		doubt("%d of %d bytes the dump holds of the ELF's read-only sections differ from the ELF's, outside the code the walk used, the first at 0x%08x (%s)", diff, diff+same, firstDiff, firstName)
	}
	switch {
	case diffWalk > 0:
	case diff == 0 && same > 0:
		p.Evidence = append(p.Evidence, fmt.Sprintf("code bytes (%d bytes equal)", same))
		decisive = true
	case sameWalk > 0:
		p.Evidence = append(p.Evidence, fmt.Sprintf("code bytes the walk used (%d bytes equal)", sameWalk))
	}

	// 3. The core: what the ELF was built for against the dump's CPU.
	attrs := elf.Attributes()
	if msg := coreCheck(attrs, d.CPU, d.FPU); msg != "" {
		differ("%s", msg)
	}

	// Heuristics. The ELF's code is read from its own image, so a dump
	// that holds flash does not mask what the ELF says.
	code := facts.code
	if code == nil {
		code = elfImage(elf)
	}
	faulting := &d.Regs
	if fr := faultingRegs(frames); fr != nil {
		faulting = fr
	}
	if pc, ok := faulting.Get(unwinders.PC); ok {
		if msg, checked := faultInstruction(elf, code, d, pc&^1, scb); msg != "" {
			doubt("%s", msg)
		} else if checked != "" {
			p.Evidence = append(p.Evidence, checked)
		}
	}
	if msg := lrCheck(elf, code, faulting); msg != "" {
		doubt("%s", msg)
	}
	if msg := fpFrameCheck(attrs, frames); msg != "" {
		doubt("%s", msg)
	}
	if msg, ok := handlerCheck(elf, code, facts, d); msg != "" {
		if ok {
			p.Evidence = append(p.Evidence, msg)
		} else {
			doubt("%s", msg)
		}
	}
	if links, bad, first := callChain(elf, code, t, frames, facts.tails); bad > 0 {
		doubt("%d of the backtrace's calls %s not reach the function the walk found next, directly or by tail calls, the first at 0x%08x", bad, report.Verb(bad, "does", "do"), first)
	} else if links > 0 {
		p.Evidence = append(p.Evidence, report.Plural(links, "call targets", "calls target")+" the callee found")
	}
	calls, notCalls := 0, 0
	var firstNotCall uint32
	for i, f := range frames {
		if i == 0 || !f.ReturnAddress || f.Kind == unwinders.KindException || !isCodeWord(elf, f.PC) {
			continue
		}
		if fn, ok := elf.FuncAt(f.PC); ok && fn.Start == f.PC&^1 {
			continue // a return address planted at a function's start (an RTOS task's exit hook)
		}
		if _, ok := unwinders.CallBefore(code, f.PC); ok {
			calls++
		} else {
			if notCalls == 0 {
				firstNotCall = f.PC
			}
			notCalls++
		}
	}
	if notCalls > 0 {
		doubt("%s of the backtrace %s not follow a call in the ELF's code, the first 0x%08x", report.Plural(notCalls, "return address", "return addresses"), report.Verb(notCalls, "does", "do"), firstNotCall)
	} else if calls > 0 {
		p.Evidence = append(p.Evidence, "calls before "+report.Plural(calls, "return address", "return addresses"))
	}
	if n, c := stackWords(elf, code, d, t); n >= minStackCodeWords {
		ratio := float64(c) / float64(n)
		switch {
		case ratio < stackCallRatioMin:
			doubt("only %d of the %d code addresses on the stack follow a call in the ELF's code", c, n)
		case ratio >= stackCallRatioGood:
			p.Evidence = append(p.Evidence, fmt.Sprintf("%d of %d code addresses on the stack follow calls", c, n))
		}
	}

	switch {
	case len(p.Differences) > 0:
		p.Verdict = report.PairMismatch
	case decisive:
		p.Verdict = report.PairVerified
	default:
		p.Verdict = report.PairUnverified
	}
	return p
}

// codeAddr names a code address with its function when the ELF knows it.
func codeAddr(elf *elfsym.File, a uint32) string {
	if fn, ok := elf.FuncAt(a); ok && fn.Name != "" {
		return fmt.Sprintf("0x%08x (%s+0x%x)", a, fn.Name, a-fn.Start)
	}
	return fmt.Sprintf("0x%08x", a)
}

// isCodeWord reports whether v can be a Thumb code address of the ELF:
// inside an executable section, not in data its mapping symbols mark
// ($d: literal pools, constant data linked inside .text), and inside a
// function when the ELF has function symbols at all (constant objects
// linked between functions are not).
func isCodeWord(elf *elfsym.File, v uint32) bool {
	a := v &^ 1
	if !elf.IsCode(a) || elf.Mapping(a) == elfsym.MapData {
		return false
	}
	if _, ok := elf.FuncAt(a); ok {
		return true
	}
	_, hasFuncs := elf.FuncAt(elf.Entry() &^ 1)
	return !hasFuncs
}

func short(id string) string {
	if len(id) > 16 {
		return id[:16] + "..."
	}
	return id
}

// elfImage is the ELF's loadable bytes alone, as memory.
func elfImage(elf *elfsym.File) unwinders.Memory {
	im := new(unwinders.Image)
	if err := im.AddLayer(elf.Segments()...); err != nil {
		return new(unwinders.Image)
	}
	return im
}

// faultInstruction checks the instruction at the faulting PC against the
// fault the status registers report. It returns a difference, or what it
// checked, or neither when the fault says nothing about the instruction.
func faultInstruction(elf *elfsym.File, code unwinders.Memory, d *crashdump.Dump, pc uint32, scb fault.SCB) (diff, checked string) {
	cfsr, ok := scb.CFSR.Get()
	if !ok {
		return "", ""
	}
	const fetchFaults = 1<<0 | 1<<8 | 1<<16 | 1<<17 | 1<<18 // IACCVIOL, IBUSERR, UNDEFINSTR, INVSTATE, INVPC
	if !elf.IsCode(pc) {
		if cfsr != 0 && cfsr&fetchFaults == 0 && !inDump(d, pc) {
			return fmt.Sprintf("the faulting PC 0x%08x is not in the ELF's code, yet the fault (CFSR 0x%08x) is not one of executing a bad address", pc, cfsr), ""
		}
		return "", ""
	}
	var b [4]byte
	if err := code.Read(pc, b[:2]); err != nil {
		return "", ""
	}
	h1 := binary.LittleEndian.Uint16(b[:])
	var h2 uint16
	if thumb.Is32Bit(h1) {
		if err := code.Read(pc+2, b[2:4]); err != nil {
			return "", ""
		}
		h2 = binary.LittleEndian.Uint16(b[2:])
	}
	in, err := thumb.DecodeAt(code, pc)
	if err != nil {
		return "", ""
	}
	name := func() string {
		if fn, ok := elf.FuncAt(pc); ok && fn.Name != "" {
			return fmt.Sprintf("0x%08x (%s+0x%x)", pc, fn.Name, pc-fn.Start)
		}
		return fmt.Sprintf("0x%08x", pc)
	}
	const (
		undefinstr = 1 << 16
		divbyzero  = 1 << 25
		daccviol   = 1 << 1
		mmarvalid  = 1 << 7
		preciserr  = 1 << 9
	)
	switch {
	case cfsr&divbyzero != 0:
		isDiv := thumb.Is32Bit(h1) && (h1&0xFFF0 == 0xFB90 || h1&0xFFF0 == 0xFBB0) && h2&0x00F0 == 0x00F0
		if !isDiv {
			return fmt.Sprintf("the fault is a division by zero, but the ELF's instruction at %s is %s, not SDIV/UDIV", name(), in.Op), ""
		}
		return "", "the faulting instruction is a division"
	case cfsr&undefinstr != 0:
		udf := (!thumb.Is32Bit(h1) && h1&0xFF00 == 0xDE00) || (thumb.Is32Bit(h1) && h1&0xFFF0 == 0xF7F0 && h2&0xF000 == 0xA000)
		if udf {
			return "", "the faulting instruction is UDF"
		}
		if in.Op != thumb.OpOther {
			return fmt.Sprintf("the fault is an undefined instruction, but the ELF's instruction at %s is a defined %s", name(), in.Op), ""
		}
	case cfsr&(daccviol|mmarvalid) == daccviol|mmarvalid || cfsr&preciserr != 0:
		switch in.Op {
		case thumb.OpB, thumb.OpBL, thumb.OpBLXImm, thumb.OpCBZ, thumb.OpCBNZ, thumb.OpIT,
			thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW, thumb.OpADR,
			thumb.OpMOV, thumb.OpMOVW, thumb.OpMOVT, thumb.OpMVN:
			return fmt.Sprintf("the fault is a precise data access, but the ELF's instruction at %s is %s, which does not access memory", name(), in.Op), ""
		case thumb.OpOther:
		default:
			return "", "the faulting instruction accesses memory"
		}
	}
	return "", ""
}

// stackWords scans the live stacks of the dump (from each stack pointer
// up to the end of its stack, at most maxStackScan bytes each) for words
// that look like return addresses into the ELF's code: odd (Thumb), inside
// a code section, not the start of a function (a function pointer). It
// returns how many there are and how many of them follow a call
// instruction in the ELF's code. With the firmware that made the dump,
// nearly all do (live and stale return addresses alike); with another
// build's ELF, the same words land at arbitrary places in its code.
func stackWords(elf *elfsym.File, code unwinders.Memory, d *crashdump.Dump, t *unwinders.Target) (n, calls int) {
	scan := func(sp uint32, r unwinders.Range) {
		if r.Hi <= r.Lo || sp < r.Lo || sp >= r.Hi {
			return
		}
		end := min(uint64(r.Hi), uint64(sp)+maxStackScan)
		var w [4]byte
		for a := uint64(sp) &^ 3; a+4 <= end; a += 4 {
			if t.Mem.Read(uint32(a), w[:]) != nil {
				continue
			}
			v := binary.LittleEndian.Uint32(w[:])
			if v&1 == 0 || !isCodeWord(elf, v) {
				continue
			}
			if fn, ok := elf.FuncAt(v); ok && fn.Start == v&^1 {
				continue
			}
			n++
			if _, ok := unwinders.CallBefore(code, v); ok {
				calls++
			}
		}
	}
	if sp, ok := d.Regs.Get(unwinders.MSP); ok {
		scan(sp, t.Stack)
	} else if sp, ok := d.Regs.Get(unwinders.SP); ok {
		scan(sp, t.Stack)
	}
	if sp, ok := d.Regs.Get(unwinders.PSP); ok && sp != 0 {
		scan(sp, t.ProcessStack)
	}
	return n, calls
}

// MismatchWarning is the warning of a mismatched pairing: which ELF, and
// what differs.
func MismatchWarning(elfName string, p report.Pairing) string {
	return fmt.Sprintf("%s is not the firmware that crashed (pairing mismatch): %s; every frame is lowered to low confidence: analyse with the ELF of the build that crashed", elfName, strings.Join(p.Differences, "; "))
}

// DoubtWarning is the warning of an unverified pairing that heuristics
// doubt: what they found, and that it proves nothing.
func DoubtWarning(elfName string, p report.Pairing) string {
	return fmt.Sprintf("the pairing of %s with the dump is unverified: %s; real firmware does these things too (tail calls through pointers, constant data inside .text, stale fault status), so this is not proof of another build, but if %s is not the build that crashed, the frames are wrong", elfName, strings.Join(p.Doubts, "; "), elfName)
}

// handlerCheck looks at a dump taken inside an exception handler (IPSR
// not 0): the PC must lie in the handler the ELF's vector table names for
// that exception, or, while LR still holds the EXC_RETURN value (the
// handler has made no call), in a function the handler branches to. It
// returns a message and whether it is evidence for (true) or against.
func handlerCheck(elf *elfsym.File, code unwinders.Memory, facts elfFacts, d *crashdump.Dump) (string, bool) {
	ipsr, ok := d.Regs.IPSR()
	pc, okPC := d.Regs.Get(unwinders.PC)
	lr, okLR := d.Regs.Get(unwinders.LR)
	if !ok || !okPC || ipsr == 0 || ipsr >= 512 || !facts.vectors || !elf.IsCode(pc&^1) {
		return "", false
	}
	var w [4]byte
	if code.Read(facts.vectorAddr+4*ipsr, w[:]) != nil {
		return "", false
	}
	vec := binary.LittleEndian.Uint32(w[:]) &^ 1
	handler, ok := elf.FuncAt(vec)
	if !ok || handler.Start != vec {
		return "", false
	}
	fn, ok := elf.FuncAt(pc &^ 1)
	if ok && fn.Start == handler.Start {
		return fmt.Sprintf("the PC is in %s, the handler of exception %d", handler.Name, ipsr), true
	}
	if !okLR || lr>>24 != 0xff {
		return "", false // the handler has called on: the PC may be anywhere
	}
	if ok && branchesTo(code, handler, fn.Start, 2) {
		return fmt.Sprintf("the PC is in %s, which the handler of exception %d branches to", fn.Name, ipsr), true
	}
	where := fmt.Sprintf("0x%08x", pc&^1)
	if ok {
		where += fmt.Sprintf(" (%s+0x%x)", fn.Name, pc&^1-fn.Start)
	}
	return fmt.Sprintf("the dump stopped in exception %d at %s, which is not in its handler %s in the ELF", ipsr, where, handler.Name), false
}

// branchesTo reports whether fn's code holds a B or BL whose target is
// target, or (up to depth levels) the start of a function that does.
func branchesTo(code unwinders.Memory, fn unwinders.Function, target uint32, depth int) bool {
	end := fn.End
	if end <= fn.Start || end-fn.Start > 4096 {
		end = fn.Start + min(4096, max(end-fn.Start, 256))
	}
	dec := thumb.NewDecoder(code, fn.Start, end)
	var in thumb.Inst
	var next []uint32
	for n := 0; n < 2048 && dec.Next(&in) == nil; n++ {
		if in.Op != thumb.OpB && in.Op != thumb.OpBL {
			continue
		}
		if in.Target&^1 == target {
			return true
		}
		if in.Target < fn.Start || in.Target >= end {
			next = append(next, in.Target&^1)
		}
	}
	_ = next
	return false
}

// callChain checks the links of the backtrace: where frame i+1 is a
// return address after a BL, the BL must reach the function of frame i,
// directly or by a chain of tail calls, as the walk's own call check
// (unwinders.Target.CheckCall: up to 4 functions deep, and a chain through
// an indirect branch, an interpreter's dispatcher ending in BX Rn, may
// reach anything) decides it on the ELF's own code. It returns the links
// checked and the ones that fail.
func callChain(elf *elfsym.File, code unwinders.Memory, t *unwinders.Target, frames []unwinders.Frame, tails *tailCache) (links, bad int, first uint32) {
	ct := unwinders.Target{Mem: code, Prog: elf}
	if t != nil {
		ct.Profile = t.Profile
	}
	for i := 0; i+1 < len(frames); i++ {
		inner, outer := frames[i], frames[i+1]
		if inner.Kind != unwinders.KindNormal || outer.Kind != unwinders.KindNormal || !outer.ReturnAddress {
			continue
		}
		if outer.Confidence < unwinders.ConfidenceMedium || inner.Confidence < unwinders.ConfidenceMedium {
			continue
		}
		cs, ok := unwinders.CallBefore(code, outer.PC)
		if !ok || cs.Kind != unwinders.CallBL {
			continue
		}
		callee, ok := elf.FuncAt(inner.LookupPC())
		if !ok {
			continue
		}
		switch tails.check(&ct, &inner, outer.PC, callee.Start) {
		case unwinders.CallMatches, unwinders.CallTailChain:
			links++
		case unwinders.CallMismatch:
			links++
			if bad == 0 {
				first = cs.Addr
			}
			bad++
		}
	}
	return links, bad, first
}

// tailCache remembers callChain's answers for one ELF: they depend on its
// code only (the ELF's own image, not a dump's). Bounded; when full it
// starts over. A nil *tailCache remembers nothing.
type tailCache struct {
	mu sync.Mutex
	m  map[[2]uint32]unwinders.CallCheck
}

const tailCacheMax = 4096

// check is ct.CheckCall(callee, ret), remembered by the return address
// and the callee's function.
func (c *tailCache) check(ct *unwinders.Target, callee *unwinders.Frame, ret, calleeStart uint32) unwinders.CallCheck {
	if c == nil {
		v, _ := ct.CheckCall(callee, ret)
		return v
	}
	key := [2]uint32{ret, calleeStart}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v, _ = ct.CheckCall(callee, ret)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= tailCacheMax {
		c.m = make(map[[2]uint32]unwinders.CallCheck)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

// inDump reports whether the dump holds memory at addr (code running from
// RAM is not in the ELF's code sections).
func inDump(d *crashdump.Dump, addr uint32) bool {
	for _, r := range d.Memory {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}
