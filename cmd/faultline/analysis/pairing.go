package analysis

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// Pairing verdicts (design.md, "Threads, gaps, pairing").
const (
	PairVerified   = "verified"   // build IDs equal, or the dump's code bytes equal the ELF's
	PairUnverified = "unverified" // nothing decisive to compare, and nothing contradicts
	PairMismatch   = "mismatch"   // the dump was not made by this ELF's firmware
)

// Pairing is the "pairing" object of faultline.analysis/1: whether the
// ELF is the firmware that crashed, and the evidence either way.
type Pairing struct {
	Verdict  string   `json:"verdict"`
	Evidence []string `json:"evidence"`
	// Differences say what contradicts the pairing, one line each; the
	// analysis warning is built from them. Part of Evidence too.
	Differences []string `json:"-"`
}

// Thresholds of the stack-word test (see stackWords).
const (
	maxStackScan       = 64 << 10 // bytes of stack scanned at most
	minStackCodeWords  = 4        // code-looking words needed before the ratio means anything
	stackCallRatioMin  = 0.5      // below this share of call-preceded words, the code differs
	stackCallRatioGood = 0.8
)

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

// checkPairing judges whether the dump came from the firmware in elf:
//
//  1. the GNU build IDs, when both sides have one;
//  2. the dump's bytes at the addresses of the ELF's code and read-only
//     data, when the dump holds any;
//  3. the instructions the dump's stacked state names: the instruction
//     at the faulting PC must be one that can raise the fault the status
//     registers report (a division for DIVBYZERO, a memory access for a
//     precise data fault, not a well-defined instruction for UNDEFINSTR),
//     the return addresses the walk followed must follow a call, and the
//     code addresses on the live stack must mostly follow calls, and so
//     must the interrupted code's LR when it is a code address;
//  4. the core: an ELF built for an architecture or an FPU the dump's CPU
//     does not have, or without FP while the dump stacked FP state.
//
// Build IDs or code bytes decide "verified"; any contradiction decides
// "mismatch"; otherwise the pairing is "unverified" and the evidence says
// which checks passed.
func checkPairing(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, t *unwinders.Target, frames []unwinders.Frame, scb fault.SCB) Pairing {
	p := Pairing{Evidence: []string{}}
	if elf == nil {
		p.Verdict = PairUnverified
		return p
	}
	decisive := false
	differ := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		p.Differences = append(p.Differences, s)
		p.Evidence = append(p.Evidence, s)
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

	// 2. Code and read-only data bytes.
	var same, diff int
	var firstDiff uint32
	var firstName string
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
				continue
			}
			for i := range eb {
				if eb[i] == db[i] {
					same++
					continue
				}
				if diff == 0 {
					firstDiff, firstName = uint32(s)+uint32(i), b.name
				}
				diff++
			}
		}
	}
	switch {
	case diff > 0:
		differ("code bytes differ: %d of %d bytes the dump holds of the ELF's read-only sections, the first at 0x%08x (%s)", diff, diff+same, firstDiff, firstName)
	case same > 0:
		p.Evidence = append(p.Evidence, fmt.Sprintf("code bytes (%d bytes equal)", same))
		decisive = true
	}

	// 3. Instructions. The ELF's code is read from its own image, so a
	// dump that holds flash does not mask what the ELF says.
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
			differ("%s", msg)
		} else if checked != "" {
			p.Evidence = append(p.Evidence, checked)
		}
	}
	if msg := lrCheck(elf, code, faulting); msg != "" {
		differ("%s", msg)
	}
	// 4. The core: what the ELF was built for against the dump's CPU and
	// the FP state it stacked.
	attrs := elf.Attributes()
	if msg := coreCheck(attrs, d.CPU); msg != "" {
		differ("%s", msg)
	}
	if msg := fpFrameCheck(attrs, frames); msg != "" {
		differ("%s", msg)
	}
	if msg, ok := handlerCheck(elf, code, facts, d); msg != "" {
		if ok {
			p.Evidence = append(p.Evidence, msg)
		} else {
			differ("%s", msg)
		}
	}
	if links, bad, first := callChain(elf, code, frames, facts.tails); bad > 0 {
		differ("%d of the backtrace's calls do not call the function the walk found next, the first at 0x%08x", bad, first)
	} else if links > 0 {
		p.Evidence = append(p.Evidence, fmt.Sprintf("%d calls target the callee found", links))
	}
	calls, notCalls := 0, 0
	var firstNotCall uint32
	for i, f := range frames {
		if i == 0 || !f.ReturnAddress || f.Kind == unwinders.KindException || !elf.IsCode(f.PC) {
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
		differ("%d return address(es) of the backtrace do not follow a call in the ELF's code, the first 0x%08x", notCalls, firstNotCall)
	} else if calls > 0 {
		p.Evidence = append(p.Evidence, fmt.Sprintf("calls before %d return addresses", calls))
	}
	if n, c := stackWords(elf, code, d, t); n >= minStackCodeWords {
		ratio := float64(c) / float64(n)
		switch {
		case ratio < stackCallRatioMin:
			differ("only %d of the %d code addresses on the stack follow a call in the ELF's code", c, n)
		case ratio >= stackCallRatioGood:
			p.Evidence = append(p.Evidence, fmt.Sprintf("%d of %d code addresses on the stack follow calls", c, n))
		}
	}

	switch {
	case len(p.Differences) > 0:
		p.Verdict = PairMismatch
	case decisive:
		p.Verdict = PairVerified
	default:
		p.Verdict = PairUnverified
	}
	return p
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
			if v&1 == 0 || !elf.IsCode(v&^1) {
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
func MismatchWarning(elfName string, p Pairing) string {
	return fmt.Sprintf("%s is not the firmware that crashed (pairing mismatch): %s; every frame is lowered to low confidence: analyse with the ELF of the build that crashed", elfName, strings.Join(p.Differences, "; "))
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
// return address after a BL, the BL's target must be the function of
// frame i, or a function that branches to it (a tail call, two levels at
// most). It returns the links checked and the ones that fail.
func callChain(elf *elfsym.File, code unwinders.Memory, frames []unwinders.Frame, tails *tailCache) (links, bad int, first uint32) {
	for i := 0; i+1 < len(frames); i++ {
		inner, outer := frames[i], frames[i+1]
		if inner.Kind == unwinders.KindException || outer.Kind == unwinders.KindException || !outer.ReturnAddress {
			continue
		}
		if outer.Confidence < unwinders.ConfidenceMedium || inner.Confidence < unwinders.ConfidenceMedium {
			continue
		}
		cs, ok := unwinders.CallBefore(code, outer.PC)
		if !ok || cs.Kind != unwinders.CallBL {
			continue
		}
		// A return address is looked up at the call (LookupPC): after
		// a noreturn call that ends its function it is the first byte
		// of the next function.
		callee, ok1 := elf.FuncAt(inner.LookupPC())
		tfn, ok2 := elf.FuncAt(cs.Target)
		if !ok1 || !ok2 || tfn.Start != cs.Target&^1 {
			continue
		}
		links++
		if tfn.Start == callee.Start || tails.tailCalls(elf, code, tfn, callee.Start) {
			continue
		}
		if bad == 0 {
			first = cs.Addr
		}
		bad++
	}
	return links, bad, first
}

// tailCache remembers callChain's tailCalls answers for one ELF: they
// depend on its code only (code is the ELF's own image, not a dump's).
// Bounded; when full it starts over. A nil *tailCache remembers nothing.
type tailCache struct {
	mu sync.Mutex
	m  map[[2]uint32]bool
}

const tailCacheMax = 4096

// tailCalls is tailCalls(elf, code, fn, target, 2), remembered.
func (c *tailCache) tailCalls(elf *elfsym.File, code unwinders.Memory, fn unwinders.Function, target uint32) bool {
	if c == nil {
		return tailCalls(elf, code, fn, target, 2)
	}
	key := [2]uint32{fn.Start, target}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = tailCalls(elf, code, fn, target, 2)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= tailCacheMax {
		c.m = make(map[[2]uint32]bool)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

// tailCalls reports whether fn reaches target by branches (B, not BL) to
// function starts, at most depth levels deep.
func tailCalls(elf *elfsym.File, code unwinders.Memory, fn unwinders.Function, target uint32, depth int) bool {
	if depth == 0 {
		return false
	}
	end := fn.End
	if end <= fn.Start || end-fn.Start > 8192 {
		return true // unknown extent: cannot tell, do not accuse
	}
	dec := thumb.NewDecoder(code, fn.Start, end)
	var in thumb.Inst
	for n := 0; n < 4096 && dec.Next(&in) == nil; n++ {
		if in.Op != thumb.OpB {
			continue
		}
		t := in.Target &^ 1
		if t >= fn.Start && t < end {
			continue
		}
		if t == target {
			return true
		}
		if g, ok := elf.FuncAt(t); ok && g.Start == t && tailCalls(elf, code, g, target, depth-1) {
			return true
		}
	}
	return false
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
