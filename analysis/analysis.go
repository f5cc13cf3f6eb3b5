// Package analysis is faultline's engine: it turns a crash dump and the
// firmware ELF into a report.Report: the fault explained, the registers,
// the backtrace walked by the chosen strategy and symbolized with inlined
// frames, the RTOS threads, the pairing of dump and ELF, variables, logs,
// heaps. Analyze decodes one dump; an Analyzer decodes many dumps of one
// ELF, sharing its tables. The report is printed by the packages under
// analysis/render, bucketed by analysis/bucket and scored by
// analysis/score; see docs/library.md.
package analysis

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// Options select the strategy and bound the walk.
type Options struct {
	Unwinder  string // "auto" when empty
	MaxFrames int
	// Locals adds each crash frame's local variables (frames[].locals).
	Locals bool
	// Logs names user log buffers: SYMBOL (a NUL-terminated string) or
	// SYMBOL:INDEX_SYMBOL (a ring buffer and its write index).
	Logs []string
	// Message names a global char array or char pointer holding the
	// firmware's own crash message (--message).
	Message string
	// AssertHooks names the application's own assert hook functions,
	// told a file and a line (--assert-hook).
	AssertHooks []string
}

// hexes formats many addresses with one allocation: Hex of each value,
// concatenated; the k-th is hexAt(s, k). (A report formats several per
// frame of every thread: one string each was most of its allocations.)
func hexes(vals []uint32) string {
	var sb strings.Builder
	sb.Grow(len(vals) * report.HexLen) // one allocation, of the right size
	var buf [64 * report.HexLen]byte
	for len(vals) > 0 {
		n := min(len(vals), 64)
		b := buf[:0]
		for _, v := range vals[:n] {
			b = report.AppendHex(b, v)
		}
		sb.Write(b)
		vals = vals[n:]
	}
	return sb.String()
}

// hexAt is the k-th address of a hexes string.
func hexAt(s string, k int) string { return s[k*report.HexLen : (k+1)*report.HexLen] }

// Analyze decodes one dump against one ELF.
func Analyze(elf *elfsym.File, d *crashdump.Dump, opt Options) (*report.Report, error) {
	name := opt.Unwinder
	if name == "" {
		name = "auto"
	}
	strat, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return analyze(elf, factsOf(elf), d, name, strat.Chain(), opt.MaxFrames, opt, nil)
}

// analyze is Analyze with the strategy's chain already built, so that an
// Analyzer can share one chain (and the tables its unwinders cache) between
// many dumps.
func analyze(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, name string, chain []unwinders.Unwinder, maxFrames int, opt Options, s *Scratch) (*report.Report, error) {
	t, warnings, err := newTarget(elf, facts, d, chain)
	if err != nil {
		return nil, err
	}
	var r *report.Report
	if s != nil {
		r = &s.report // the previous report made with s is no longer used
	} else {
		r = new(report.Report)
	}
	*r = report.Report{
		Schema: report.Schema, Dump: d.Path, Unwinder: name, CPU: d.CPU, Regs: d.Regs,
		Truth: d.Truth, Profile: t.Profile, Warnings: warnings,
		Faultline: report.Version, Registers: report.RegistersJSON(&d.Regs), FaultRegisters: report.FaultRegistersJSON(d.Fault),
	}
	if elf != nil {
		r.ELF = filepath.Base(elf.Name())
		r.ELFInfo = &report.ELFJSON{Path: elf.Name(), BuildID: facts.buildID, CPU: facts.cpu}
	}
	kernel := discoverThreads(elf, facts.layouts, t, d.Regs, r, s)
	if kernel == nil {
		kernel = dumpThreads(d, r)
	}
	chain = threadChain(elf, kernel, chain)
	wopt := unwinders.Options{MaxFrames: maxFrames}
	if s != nil {
		wopt.Frames = s.crash[:0]
	}
	res := unwinders.Walk(t, d.Regs, chain, wopt)
	if s != nil && cap(res.Frames) > cap(s.crash) {
		s.crash = res.Frames[:0] // grown: keep the larger one for the next dump
	}
	r.Target = t
	r.Stop = demangleText(elf, memoryStop(partialStop(d, t, res), stackHeld(d, t, kernel, res.Frames)))
	if kernel != nil && cutWalk(elf, kernel.Kind, &res) {
		r.Stop = taskEntryStop
	}
	if elf != nil {
		pr, imgs := pairImages(elf, facts, d, t, res.Frames, d.Fault)
		r.Pairing, r.Images = &pr, imgs
		if pr.Verdict == report.PairMismatch {
			// Every frame was found with code that is not the crashed
			// firmware's: none of them deserves more than a hint.
			for i := range res.Frames {
				res.Frames[i].Confidence = min(res.Frames[i].Confidence, unwinders.ConfidenceLow)
			}
			r.Warnings = append(r.Warnings, MismatchWarning(elf.Name(), pr))
		} else if len(pr.Doubts) > 0 && pr.Verdict == report.PairUnverified {
			r.Warnings = append(r.Warnings, DoubtWarning(elf.Name(), pr))
		}
	}
	r.Walk = res

	// The fault: the exception from IPSR, the causes from the SCB, and the
	// faulting PC (the frame the first exception frame interrupted, or frame 0
	// when the dump holds a reconstructed pre-exception state).
	r.SCB = d.Fault
	r.FaultInfo = fault.DecodeInput(fault.Input{Profile: t.Profile, Regs: &d.Regs, SCB: r.SCB, Faulting: faultingRegs(res.Frames), Lockup: d.Lockup})
	belowRAM := spBelowRAM(elf, d)
	if d.Lockup != nil && belowRAM != "" {
		r.FaultInfo.Notes = append(r.FaultInfo.Notes, belowRAM)
	}
	r.StackVerdict = stackVerdict(elf, d, t, res.Frames, kernel, belowRAM)
	r.Fault = report.FaultJSON{Exception: r.FaultInfo.Exception, Number: r.FaultInfo.Number, Causes: r.FaultInfo.Causes, Notes: r.FaultInfo.Notes}
	if r.Fault.Causes == nil {
		r.Fault.Causes = []fault.Cause{}
	}
	if r.FaultInfo.Address != nil {
		r.Fault.Address = report.Hex(*r.FaultInfo.Address)
	}
	var symErrs []string
	if s != nil {
		r.Frames, symErrs = symbolizeFramesInto(s.crashJ[:0], elf, res.Frames)
		if cap(r.Frames) > cap(s.crashJ) {
			s.crashJ = r.Frames[:0]
		}
	} else {
		r.Frames, symErrs = symbolizeFrames(elf, res.Frames)
	}
	if w := attachVars(elf, t, res.Frames, r.Frames, opt.Locals); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	if w := noteTailCalls(elf, res.Frames, r.Frames); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	for i := range r.Frames {
		r.Frames[i].Note = demangleText(elf, r.Frames[i].Note)
	}
	var mw []string
	r.Message, mw = crashMessage(d, elf, t, res.Frames, r.Frames, opt.Message, opt.AssertHooks)
	r.Warnings = append(r.Warnings, mw...)
	if n := len(r.Frames); n > 0 && res.Stop.Kind == unwinders.StopMemory {
		// The frame whose caller needed memory the dump lacks says so.
		if m := memAddr.FindStringSubmatch(res.Stop.Detail); m != nil {
			f := &r.Frames[n-1]
			f.Note = joinNote(f.Note, "its caller is unknown: memory at "+m[1]+" not captured")
		}
	}
	for _, e := range symErrs {
		r.Warnings = append(r.Warnings, e+": file:line or inlined frames may be missing")
	}
	if kernel != nil {
		threadReports(elf, t, kernel, chain, maxFrames, opt.Locals, r, s)
	}
	if elf != nil {
		r.Heap = walkHeaps(elf, t, r)
		r.Allocations = recordedAllocations(elf, t, r)
	}
	if r.Pairing != nil && r.Pairing.Verdict == report.PairMismatch {
		for i := range r.Threads {
			for j := range r.Threads[i].Frames {
				if f := &r.Threads[i].Frames[j]; f.Confidence == "high" || f.Confidence == "medium" {
					f.Confidence = unwinders.ConfidenceLow.String()
				}
			}
		}
	}
	r.Logs, r.Warnings = findLogs(elf, t, d, opt.Logs, r.Threads, r.Warnings)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r, nil
}

// faultingRegs returns the registers of the frame the first exception
// frame interrupted, or nil when the walk found no exception frame (the
// dump then holds a reconstructed pre-exception state, or the walk stopped
// early, and the decoder judges the dump's own registers).
func faultingRegs(frames []unwinders.Frame) *unwinders.Registers {
	for i, f := range frames {
		if f.Kind == unwinders.KindException && i+1 < len(frames) {
			return &frames[i+1].Regs
		}
	}
	return nil
}

// NewTarget builds the unwinders' view of the device: the ELF's flash image
// under the dump's memory, the profile, the stack bounds and the reset
// handler.
func NewTarget(elf *elfsym.File, d *crashdump.Dump) (*unwinders.Target, []string, error) {
	return newTarget(elf, factsOf(elf), d, autoChain())
}

// elfFacts is what NewTarget takes from elf.Info: computing it walks the
// ELF's sections and symbols, so an Analyzer does it once.
type elfFacts struct {
	profile    unwinders.Profile // from Tag_CPU_name; ProfileUnknown without attributes
	cpu        string            // Tag_CPU_name as the ELF spells it
	buildID    string            // the GNU build ID in hex, "" without one
	ro         []roBlock         // read-only sections, for the pairing check
	vectors    bool              // the vector table is known
	vectorAddr uint32
	initialSP  uint32
	reset      uint32
	// layouts caches the RTOS struct layouts of this ELF across the
	// dumps an Analyzer decodes.
	layouts *rtos.Layouts
	// code is the ELF's own image (its segments), for the pairing check;
	// tails remembers that check's tail-call answers. Both depend on the
	// ELF only.
	code  unwinders.Memory
	tails *tailCache
	// images: the facts of every image of elf's set (this one's first),
	// nil when elf is used alone.
	images []elfFacts
}

func factsOf(elf *elfsym.File) elfFacts {
	var f elfFacts
	if elf == nil {
		return f
	}
	f.layouts = rtos.NewLayouts()
	f.code = elfImage(elf)
	f.tails = new(tailCache)
	info := elf.Info()
	if info.Attributes != nil {
		f.profile = unwinders.ProfileOf(info.Attributes.CPUName)
		f.cpu = cpuName(info.Attributes.CPUName)
	}
	f.buildID = info.BuildID
	f.ro = roBlocksOf(elf)
	if v := info.Vectors; v != nil {
		f.vectors, f.initialSP, f.reset, f.vectorAddr = true, v.InitialSP, v.Reset, v.Addr
	}
	if set := elf.Images(); set != nil && set.Files()[0] == elf {
		f.images = imageFacts(elf, f)
	}
	return f
}

func newTarget(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, chain []unwinders.Unwinder) (*unwinders.Target, []string, error) {
	var warnings []string
	im := &unwinders.Image{}
	t := &unwinders.Target{Mem: im}
	if elf != nil && len(d.SymbolRegions) > 0 {
		// A Zephyr coredump's threads block is _kernel: place it now.
		warnings = append(warnings, d.PlaceSymbolRegions(rtos.SymbolLookup(elf))...)
	}
	if multi, err := imagesLayer(elf, im, t); err != nil {
		return nil, nil, err
	} else if multi {
		warnings = append(warnings, imageWarnings(elf)...)
	} else if elf != nil {
		if err := im.AddLayer(elf.Segments()...); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", elf.Name(), err)
		}
		t.Prog = elf
		warnings = append(warnings, elf.Warnings()...)
	}
	if err := im.AddLayer(d.Memory...); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.Path, err)
	}
	t.Profile = unwinders.ProfileOf(d.CPU)
	var initialSP uint32
	if elf != nil {
		if t.Profile == unwinders.ProfileUnknown {
			t.Profile = facts.profile
		}
		if facts.vectors {
			initialSP = facts.initialSP
			t.ResetHandler = facts.reset &^ 1
		}
	}
	if t.Profile == unwinders.ProfileUnknown {
		t.Profile = unwinders.V7M
		warnings = append(warnings, "CPU unknown: assuming ARMv7-M")
	}
	// A Zephyr coredump of a k_oops/k_panic (SP 0) or of a fault in an
	// ISR (no PSP): complete the registers from the kernel's data.
	warnings = append(warnings, zephyrContext(elf, facts, d, t, chain)...)
	// Stack bounds: the dump region holding each stack pointer; the main
	// stack ends at the vector table's initial SP when that is known.
	region := func(a uint32) (unwinders.Region, bool) {
		for _, r := range d.Memory {
			if r.Contains(a) {
				return r, true
			}
		}
		// A full-descending stack that is empty has SP at its top, one
		// past the memory that holds it: a dump that saved the stack
		// from SP up (GDB's gcore) ends right there.
		for _, r := range d.Memory {
			if len(r.Data) > 0 && uint64(a) == r.End() {
				return r, true
			}
		}
		return unwinders.Region{}, false
	}
	msp, okM := d.Regs.Get(unwinders.MSP)
	if !okM {
		msp, okM = d.Regs.Get(unwinders.SP)
	}
	if okM {
		if r, ok := region(msp); ok {
			t.Stack = unwinders.Range{Lo: r.Addr, Hi: uint32(min(r.End(), 1<<32-1))}
			if initialSP > msp && uint64(initialSP) <= r.End() {
				t.Stack.Hi = initialSP
				t.MainStackTop = initialSP
			}
		} else {
			warnings = append(warnings, fmt.Sprintf("the dump holds no memory at the main stack pointer 0x%08x", msp))
		}
	}
	if okM && initialSP > msp && !inDump(d, initialSP-4) {
		if r, ok := region(msp); ok {
			warnings = append(warnings, fmt.Sprintf("the dump's memory ends at 0x%08x, below the initial stack pointer 0x%08x: the stack from there up is missing, so the outer frames may be too", uint32(min(r.End(), 1<<32-1)), initialSP))
		}
	}
	if psp, ok := d.Regs.Get(unwinders.PSP); ok && psp != 0 {
		if r, ok := region(psp); ok {
			t.ProcessStack = unwinders.Range{Lo: r.Addr, Hi: uint32(min(r.End(), 1<<32-1))}
		}
	}
	if v, ok := d.Fault.CFSR.Get(); ok && t.Profile != unwinders.V6M && v&(1<<4|1<<12) != 0 {
		t.StackingFailed = true
	}
	bankedStacks(d, t)
	return t, warnings, nil
}

// cpuName spells Tag_CPU_name as dumps do: "cortex-m4" as is (lower
// case); an architecture name such as "7-M", which GCC writes when built
// with -march, as "armv7-m".
func cpuName(tag string) string {
	s := strings.ToLower(tag)
	if s == "" || strings.HasPrefix(s, "cortex") || strings.HasPrefix(s, "arm") {
		return s
	}
	return "armv" + s
}

// memAddr finds the address of the first failed read in a stop's detail.
var memAddr = regexp.MustCompile(`at (0x[0-9a-fA-F]{8}): address not mapped`)

// memoryStop words a walk that stopped for lack of memory as "memory at
// ADDR not captured", the address first, then how much of the stack the
// dump holds (held, "" when unknown); other stops as they are.
func memoryStop(s unwinders.Stop, held string) string {
	if s.Kind == unwinders.StopMemory {
		if m := memAddr.FindStringSubmatch(s.Detail); m != nil {
			if held != "" {
				held = ": " + held
			}
			return fmt.Sprintf("memory at %s not captured%s (%s)", m[1], held, s.Detail)
		}
	}
	if held != "" && uncapturedNote.MatchString(s.Detail) {
		return s.String() + " (" + held + ")"
	}
	return s.String()
}

// uncapturedNote finds a frame note "memory at 0x... not captured".
var uncapturedNote = regexp.MustCompile(`memory at (0x[0-9a-f]{8}) not captured`)

// partialStop rewords a stop that a partial dump caused: an exception
// frame whose caller's SP lies above the memory the dump holds (below the
// stack's top) stopped for want of that memory; a walk that went on past
// memory it lacked (a guess found the caller) names that memory too.
func partialStop(d *crashdump.Dump, t *unwinders.Target, res unwinders.Result) unwinders.Stop {
	s := res.Stop
	if s.Kind == unwinders.StopSPOutOfStack && len(res.Frames) > 0 {
		sp := res.Frames[len(res.Frames)-1].SP
		if !inDump(d, sp) && t.Stack.Hi != 0 && sp > t.Stack.Hi && (t.MainStackTop == 0 || sp < t.MainStackTop) {
			return unwinders.Stop{Kind: unwinders.StopMemory, Detail: fmt.Sprintf("SP 0x%08x after the exception frame: read at 0x%08x: address not mapped", sp, sp)}
		}
	}
	if s.Kind != unwinders.StopMemory {
		for i, f := range res.Frames {
			if m := uncapturedNote.FindStringSubmatch(f.Note); m != nil {
				s.Detail = joinNote(s.Detail, fmt.Sprintf("the walk went on past memory at %s not captured from frame %d, found by %s", m[1], i, f.Method))
				break
			}
		}
	}
	return s
}

// stackHeld says how much of the stack the walk's last frame runs on the
// dump holds: the dumped memory from that frame's SP up, and, when the
// stack's top is known (the vector table's initial SP, the current RTOS
// task's stack end), how far short of it the dump ends.
func stackHeld(d *crashdump.Dump, t *unwinders.Target, kernel *rtos.Kernel, frames []unwinders.Frame) string {
	// The innermost-first frames' last SP the dump holds (a frame whose
	// caller's SP lies above the dump is measured from its own).
	for k := len(frames) - 1; k >= 0; k-- {
		if s := stackHeldAt(d, t, kernel, frames[k].SP); s != "" {
			return s
		}
	}
	return ""
}

func stackHeldAt(d *crashdump.Dump, t *unwinders.Target, kernel *rtos.Kernel, sp uint32) string {
	for _, r := range d.Memory {
		if len(r.Data) == 0 || sp < r.Addr || uint64(sp) > r.End() {
			continue // (SP at the region's end: the dump holds nothing above it)
		}
		end := uint32(min(r.End(), 1<<32-1))
		top := uint32(0)
		if t.MainStackTop != 0 && sp < t.MainStackTop && t.MainStackTop-sp <= 1<<20 {
			top = t.MainStackTop
		}
		if kernel != nil {
			for _, th := range kernel.Threads {
				if th.Current && th.Stack.Start <= sp && sp < th.Stack.End {
					top = th.Stack.End
				}
			}
		}
		s := fmt.Sprintf("the dump holds %d bytes of this stack, from SP 0x%08x up to 0x%08x", end-sp, sp, end)
		if top > end {
			s += fmt.Sprintf(", %d bytes short of its top 0x%08x", top-end, top)
		}
		return s
	}
	return ""
}
