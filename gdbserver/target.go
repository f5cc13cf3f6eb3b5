package gdbserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// Signal is a signal number as the remote protocol carries it: GDB's own
// numbering (include/gdb/signals.def), which matches Linux for these.
type Signal uint8

// The signals StopSignal reports.
const (
	SIGILL  Signal = 4
	SIGTRAP Signal = 5
	SIGFPE  Signal = 8
	SIGBUS  Signal = 10
	SIGSEGV Signal = 11
)

func (s Signal) String() string {
	switch s {
	case SIGILL:
		return "SIGILL"
	case SIGTRAP:
		return "SIGTRAP"
	case SIGFPE:
		return "SIGFPE"
	case SIGBUS:
		return "SIGBUS"
	case SIGSEGV:
		return "SIGSEGV"
	}
	return fmt.Sprintf("signal %d", uint8(s))
}

// StopSignal maps a decoded fault to the signal GDB is told the target
// stopped with. The first status bit in the report's causes (CFSR in bit
// order, then SFSR, then HFSR; cortex-m.md section 2) that has a mapping
// decides; causes of the class of the exception that was taken are
// preferred when that is a configurable fault:
//
//	MemManage: IACCVIOL, DACCVIOL, MUNSTKERR, MSTKERR, MLSPERR  SIGSEGV
//	BusFault:  IBUSERR, PRECISERR, IMPRECISERR, UNSTKERR,
//	           STKERR, LSPERR                                   SIGSEGV
//	UsageFault: UNDEFINSTR, INVSTATE, INVPC, NOCP               SIGILL
//	UsageFault: DIVBYZERO                                       SIGFPE
//	UsageFault: UNALIGNED                                       SIGBUS
//	UsageFault: STKOF (stack limit, ARMv8-M)                    SIGSEGV
//	SecureFault: any SFSR fault bit                             SIGSEGV
//	HardFault: VECTTBL (vector table read failed)               SIGSEGV
//	anything else (no status bits, a debug event, an IRQ)       SIGTRAP
//
// The *VALID bits and HFSR.FORCED say nothing about the kind of fault and
// are skipped. ARMv6-M has no status registers: its HardFaults are SIGTRAP.
func StopSignal(r fault.Report) Signal {
	class := map[string]string{
		"IACCVIOL": "MemManage", "DACCVIOL": "MemManage", "MUNSTKERR": "MemManage", "MSTKERR": "MemManage", "MLSPERR": "MemManage",
		"IBUSERR": "BusFault", "PRECISERR": "BusFault", "IMPRECISERR": "BusFault", "UNSTKERR": "BusFault", "STKERR": "BusFault", "LSPERR": "BusFault",
		"UNDEFINSTR": "UsageFault", "INVSTATE": "UsageFault", "INVPC": "UsageFault", "NOCP": "UsageFault",
		"DIVBYZERO": "UsageFault", "UNALIGNED": "UsageFault", "STKOF": "UsageFault",
	}
	sig := func(c fault.Cause) (Signal, bool) {
		switch c.Register {
		case "SFSR":
			if c.Bit == "SFARVALID" {
				return 0, false
			}
			return SIGSEGV, true
		case "HFSR":
			if c.Bit == "VECTTBL" {
				return SIGSEGV, true
			}
			return 0, false
		case "CFSR":
		default:
			return 0, false
		}
		switch c.Bit {
		case "UNDEFINSTR", "INVSTATE", "INVPC", "NOCP":
			return SIGILL, true
		case "DIVBYZERO":
			return SIGFPE, true
		case "UNALIGNED":
			return SIGBUS, true
		case "MMARVALID", "BFARVALID":
			return 0, false
		}
		if _, ok := class[c.Bit]; ok {
			return SIGSEGV, true
		}
		return 0, false
	}
	for _, c := range r.Causes {
		if c.Register == "CFSR" && class[c.Bit] == r.Exception {
			if s, ok := sig(c); ok {
				return s
			}
		}
	}
	for _, c := range r.Causes {
		if s, ok := sig(c); ok {
			return s
		}
	}
	return SIGTRAP
}

// Remote register numbers (the regnum attributes of the target
// description). 16-24 are the FPA registers of GDB's classic ARM numbering,
// which an M-profile target does not have.
const (
	regnumXPSR  = 25
	regnumMSP   = 26 // msp, psp, primask, basepri, faultmask, control follow
	regnumD0    = 32 // d0..d15
	regnumFPSCR = 48
)

// sysRegs are the registers of the m-system feature in remote register
// order from regnumMSP.
var sysRegs = []unwinders.Reg{unwinders.MSP, unwinders.PSP, unwinders.PRIMASK, unwinders.BASEPRI, unwinders.FAULTMASK, unwinders.CONTROL}

// Target is a crash dump as GDB sees it: registers, memory, a memory map
// and a target description. It is immutable once built and safe for
// concurrent use by several sessions.
type Target struct {
	mem   *unwinders.Image
	hasFP bool
	// sysFeature names the feature of msp, psp and the masks:
	// org.gnu.gdb.arm.m-system when both stack pointers are known, else a
	// name GDB does not interpret (see targetXML).
	sysFeature string
	signal     Signal
	fault      fault.Report
	tdesc      []byte
	memmap     []byte
	name       string // the dump's path, for qThreadExtraInfo and monitor output
	// threads are what GDB lists: the crashing thread first (id 1, the
	// dump's registers), then the RTOS's other threads, if any, each with
	// the registers its saved context holds.
	threads []thread
	// kernel says which RTOS was found and how ("" none); kernelNotes are
	// its warnings and why discovery failed, for "monitor threads".
	kernel      string
	kernelNotes []string
}

// thread is one thread as GDB sees it. Its remote id is its index + 1.
type thread struct {
	name  string // "" without an RTOS
	extra string // qThreadExtraInfo text
	regs  unwinders.Registers
}

// NewTarget builds the target of a dump. elf may be nil; then only the
// dump's own memory is readable. It fails when the ELF's segments or the
// dump's regions overlap within themselves or run past 4 GiB.
func NewTarget(d *crashdump.Dump, elf *elfsym.File) (*Target, error) {
	if d == nil {
		return nil, errors.New("gdbserver: no dump")
	}
	t := &Target{mem: new(unwinders.Image), name: d.Path}
	if elf != nil && len(d.SymbolRegions) > 0 {
		// A Zephyr coredump's threads block is _kernel: place it, in a
		// copy (the caller's dump is not changed).
		dd := *d
		dd.Memory = append([]unwinders.Region(nil), d.Memory...)
		dd.SymbolRegions = append([]crashdump.SymbolRegion(nil), d.SymbolRegions...)
		t.kernelNotes = append(t.kernelNotes, dd.PlaceSymbolRegions(rtos.SymbolLookup(elf))...)
		d = &dd
	}
	var flash []unwinders.Region
	if elf != nil {
		flash = elf.Segments()
		if err := t.mem.AddLayer(flash...); err != nil {
			return nil, fmt.Errorf("gdbserver: %s: %w", elf.Name(), err)
		}
	}
	if err := t.mem.AddLayer(d.Memory...); err != nil {
		return nil, fmt.Errorf("gdbserver: %s: %w", d.Path, err)
	}
	profile := d.Profile()
	if profile == unwinders.ProfileUnknown {
		profile = unwinders.V7M
	}
	t.fault = fault.Decode(profile, &d.Regs, d.Fault)
	t.signal = StopSignal(t.fault)
	t.sysFeature = featureMSystem
	if !d.Regs.Known(unwinders.MSP) || !d.Regs.Known(unwinders.PSP) {
		t.sysFeature = featureSysRegs
	}
	t.threads = []thread{{extra: "crash dump, " + t.fault.Exception, regs: d.Regs}}
	if elf != nil {
		t.findThreads(d, elf)
	}
	// The FP registers are described when any thread's context has one.
	for _, th := range t.threads {
		t.hasFP = t.hasFP || th.regs.Known(unwinders.FPSCR)
		for i := 0; i < 32 && !t.hasFP; i++ {
			t.hasFP = th.regs.Known(unwinders.S(i))
		}
	}
	t.tdesc = targetXML(t.sysFeature, t.hasFP)
	t.memmap = memoryMapXML(flash, d.Memory)
	return t, nil
}

// findThreads lists the RTOS's threads (package rtos): the crashing one
// keeps id 1 and the dump's registers; every other thread gets the
// registers of its saved context, with MSP from the dump (GDB needs both
// stack pointers to unwind an exception frame) and PSP its own SP.
func (t *Target) findThreads(d *crashdump.Dump, elf *elfsym.File) {
	k, err := rtos.Discover(rtos.Input{ELF: elf, Mem: t.mem, Regs: d.Regs})
	if err != nil {
		t.kernelNotes = append(t.kernelNotes, err.Error())
		return
	}
	if k == nil || len(k.Threads) == 0 {
		return
	}
	t.kernel = fmt.Sprintf("%s (layouts from %s)", k.Kind, k.Source)
	t.kernelNotes = append(t.kernelNotes, k.Warnings...)
	msp, mspOK := d.Regs.Get(unwinders.MSP)
	threads := make([]thread, 0, len(k.Threads))
	for _, th := range k.Threads {
		g := thread{name: th.Name, extra: threadExtra(th)}
		if th.Current {
			g.regs = d.Regs
			g.extra += ", crash dump, " + t.fault.Exception
			// The crashing thread keeps id 1 whatever its place.
			threads = append([]thread{g}, threads...)
			continue
		}
		g.regs = th.Regs
		if th.Err == nil {
			if mspOK {
				g.regs.Set(unwinders.MSP, msp)
			}
			if sp, ok := th.Regs.Get(unwinders.SP); ok {
				g.regs.Set(unwinders.PSP, sp)
			}
		}
		threads = append(threads, g)
	}
	if len(threads) > 0 && threads[0].regs == d.Regs {
		t.threads = threads
		return
	}
	// No current thread (e.g. the fault came before the scheduler ran):
	// the dump's own context stays thread 1.
	t.threads = append(t.threads, threads...)
}

// threadExtra is the text GDB shows after a thread in "info threads":
// name, state, priority, what it waits on, or why its context is lost.
func threadExtra(th rtos.Thread) string {
	var b strings.Builder
	name := th.Name
	if name == "" {
		name = fmt.Sprintf("thread 0x%08x", th.ID)
	}
	fmt.Fprintf(&b, "%s, %s", name, th.State)
	if th.WaitingOn != "" {
		fmt.Fprintf(&b, " (%s)", th.WaitingOn)
	}
	if th.Priority != rtos.PriorityUnknown {
		fmt.Fprintf(&b, ", prio %d", th.Priority)
	}
	if th.Err != nil {
		fmt.Fprintf(&b, ", context lost: %v", th.Err)
	}
	for _, d := range th.Diagnosis {
		fmt.Fprintf(&b, "; %s", d)
	}
	return b.String()
}

// Signal returns the signal the target reports as its stop reason.
func (t *Target) Signal() Signal { return t.signal }

// Fault returns the decoded fault the stop signal was derived from.
func (t *Target) Fault() fault.Report { return t.fault }

// TargetXML returns the target description served as target.xml.
func (t *Target) TargetXML() []byte { return t.tdesc }

// MemoryMapXML returns the memory map served by qXfer:memory-map:read.
func (t *Target) MemoryMapXML() []byte { return t.memmap }

// ReadMemory reads len(p) bytes at addr from the image. It returns how many
// bytes from the start could be read: a read that runs off the end of the
// mapped memory returns the readable prefix, and the error wrapping
// unwinders.ErrUnmapped only when not even the first byte is mapped.
func (t *Target) ReadMemory(addr uint32, p []byte) (int, error) {
	if err := t.mem.Read(addr, p); err == nil {
		return len(p), nil
	} else if !t.mem.Mapped(addr) {
		return 0, err
	}
	// Find the readable prefix: mapped bytes are contiguous up to the
	// first hole, and a region boundary may hide inside the range, so
	// probe byte by byte from the start (len(p) is bounded by the packet
	// size).
	n := 0
	for n < len(p) && uint64(addr)+uint64(n) < 1<<32 && t.mem.Mapped(addr+uint32(n)) {
		n++
	}
	if err := t.mem.Read(addr, p[:n]); err != nil {
		return 0, err
	}
	return n, nil
}

// regValue is one register in the remote protocol: its little-endian
// bytes, and whether it is known.
type regValue struct {
	b     [8]byte
	size  int
	known bool
}

// register returns the value of remote register n in regs (one thread's
// registers); ok is false when the target description has no register n.
func (t *Target) register(regs *unwinders.Registers, n int) (v regValue, ok bool) {
	v.size = 4
	var r unwinders.Reg
	switch {
	case n >= 0 && n <= 15:
		r = unwinders.R0 + unwinders.Reg(n)
	case n == regnumXPSR:
		r = unwinders.XPSR
	case n >= regnumMSP && n < regnumMSP+len(sysRegs):
		r = sysRegs[n-regnumMSP]
	case t.hasFP && n >= regnumD0 && n < regnumD0+16:
		k := n - regnumD0
		lo, okLo := regs.Get(unwinders.S(2 * k))
		hi, okHi := regs.Get(unwinders.S(2*k + 1))
		binary.LittleEndian.PutUint32(v.b[0:], lo)
		binary.LittleEndian.PutUint32(v.b[4:], hi)
		v.size, v.known = 8, okLo && okHi
		return v, true
	case t.hasFP && n == regnumFPSCR:
		r = unwinders.FPSCR
	default:
		return v, false
	}
	val, known := regs.Get(r)
	binary.LittleEndian.PutUint32(v.b[:], val)
	v.known = known
	return v, true
}

// regOrder is the order of the registers in a g reply: ascending remote
// number (GDB's remote.c lays out the g packet that way).
func (t *Target) regOrder() []int {
	n := []int{}
	for i := 0; i <= 15; i++ {
		n = append(n, i)
	}
	n = append(n, regnumXPSR)
	for i := range sysRegs {
		n = append(n, regnumMSP+i)
	}
	if t.hasFP {
		for i := 0; i < 16; i++ {
			n = append(n, regnumD0+i)
		}
		n = append(n, regnumFPSCR)
	}
	return n
}

// appendReg appends a register in the hex of a g or p reply, "xx" for
// each byte of an unknown register.
func appendReg(dst []byte, v regValue) []byte {
	for i := 0; i < v.size; i++ {
		if !v.known {
			dst = append(dst, 'x', 'x')
			continue
		}
		dst = append(dst, hexDigits[v.b[i]>>4], hexDigits[v.b[i]&15])
	}
	return dst
}

// Names of the feature that holds msp, psp, primask, basepri, faultmask
// and control.
const (
	// featureMSystem is GDB's own feature (GDB 13 and later): it must hold
	// msp and psp, and GDB then unwinds an exception frame from the stack
	// EXC_RETURN names. GDB fails to unwind any exception frame when one
	// of them is unavailable ("Register 92 is not available").
	featureMSystem = "org.gnu.gdb.arm.m-system"
	// featureSysRegs is used instead when the dump lacks msp or psp: GDB
	// shows its registers but does not interpret them, and unwinds
	// exception frames from sp as before GDB 13 (right for frames on the
	// main stack, the usual case in a fault handler).
	featureSysRegs = "org.faultline.arm.m-system"
)

// targetXML builds the target description (GDB manual G.5.3).
func targetXML(sysFeature string, fp bool) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
  <architecture>arm</architecture>
  <feature name="org.gnu.gdb.arm.m-profile">
`)
	reg := func(name string, bits, num int, typ, group string) {
		fmt.Fprintf(&b, "    <reg name=%q bitsize=\"%d\" regnum=\"%d\" type=%q group=%q/>\n", name, bits, num, typ, group)
	}
	for i := 0; i <= 12; i++ {
		reg(fmt.Sprintf("r%d", i), 32, i, "uint32", "general")
	}
	reg("sp", 32, 13, "data_ptr", "general")
	reg("lr", 32, 14, "uint32", "general")
	reg("pc", 32, 15, "code_ptr", "general")
	reg("xpsr", 32, regnumXPSR, "uint32", "general")
	fmt.Fprintf(&b, "  </feature>\n  <feature name=%q>\n", sysFeature)
	for i, r := range sysRegs {
		typ := "uint32"
		if r == unwinders.MSP || r == unwinders.PSP {
			typ = "data_ptr"
		}
		reg(r.String(), 32, regnumMSP+i, typ, "general")
	}
	b.WriteString("  </feature>\n")
	if fp {
		b.WriteString("  <feature name=\"org.gnu.gdb.arm.vfp\">\n")
		for i := 0; i < 16; i++ {
			reg(fmt.Sprintf("d%d", i), 64, regnumD0+i, "ieee_double", "float")
		}
		reg("fpscr", 32, regnumFPSCR, "int", "float")
		b.WriteString("  </feature>\n")
	}
	b.WriteString("</target>\n")
	return []byte(b.String())
}

// span is one range of the flattened memory map.
type span struct {
	lo, hi uint64 // [lo, hi)
	ram    bool
}

// flatten turns the two layers (flash below, dump above) into disjoint,
// sorted spans typed by the topmost layer covering them; touching spans of
// the same type are merged. GDB drops a memory map whose regions overlap.
func flatten(flash, dump []unwinders.Region) []span {
	var cuts []uint64
	for _, l := range [][]unwinders.Region{flash, dump} {
		for _, r := range l {
			if len(r.Data) > 0 {
				cuts = append(cuts, uint64(r.Addr), r.End())
			}
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	// One image per layer answers "is a covered?" in O(log n); the layers
	// were checked by NewTarget, so AddLayer cannot fail here.
	var flashIm, dumpIm unwinders.Image
	_ = flashIm.AddLayer(flash...)
	_ = dumpIm.AddLayer(dump...)
	var out []span
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		if lo == hi {
			continue
		}
		var s span
		switch {
		case dumpIm.Mapped(uint32(lo)):
			s = span{lo, hi, true}
		case flashIm.Mapped(uint32(lo)):
			s = span{lo, hi, false}
		default:
			continue
		}
		if n := len(out); n > 0 && out[n-1].hi == s.lo && out[n-1].ram == s.ram {
			out[n-1].hi = s.hi
			continue
		}
		out = append(out, s)
	}
	return out
}

// memoryMapXML builds the memory map (GDB manual G.4 "Memory Map Format").
func memoryMapXML(flash, dump []unwinders.Region) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<!DOCTYPE memory-map PUBLIC "+//IDN gnu.org//DTD GDB Memory Map V1.0//EN" "http://sourceware.org/gdb/gdb-memory-map.dtd">
<memory-map>
`)
	for _, s := range flatten(flash, dump) {
		typ := "rom"
		if s.ram {
			typ = "ram"
		}
		fmt.Fprintf(&b, "  <memory type=%q start=\"0x%x\" length=\"0x%x\"/>\n", typ, s.lo, s.hi-s.lo)
	}
	b.WriteString("</memory-map>\n")
	return []byte(b.String())
}
