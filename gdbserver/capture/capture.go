// Package capture reads a crash dump from a live target through a GDB
// server (package gdbserver/client): the registers the server's target
// description offers, the SCB fault registers, and the RAM the firmware's
// ELF describes, as a crashdump.Dump. It is the engine of `faultline
// capture` (design.md).
package capture

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/unwinders"
)

// Range is memory to read: --region ADDR:SIZE.
type Range struct {
	Addr uint32
	Size uint32
	Why  string // where it came from, for messages
}

func (r Range) end() uint64 { return uint64(r.Addr) + uint64(r.Size) }

// Set is --set SYMBOL=VALUE.
type Set struct {
	Symbol string
	Value  uint64
}

// Options say what to capture.
type Options struct {
	ELF     *elfsym.File // the firmware (required)
	ELFPath string       // its path, for --set (symbol sizes, load addresses)
	Regions []Range      // --region, read besides the ELF's RAM
	// WaitFault arms breakpoints at the fault handlers of the ELF's vector
	// table, applies Sets, resumes the target and captures when it stops
	// there, within Timeout.
	WaitFault bool
	Timeout   time.Duration
	Sets      []Set
	// Resume lets the target run again after the capture; otherwise it is
	// left halted.
	Resume bool
	// NoStep keeps the target untouched: the special registers the
	// server does not offer (MSP, PSP, CONTROL and the masks under QEMU)
	// are then left unknown instead of read by single-stepping MRS
	// instructions written at the PC (recoverSysRegs).
	NoStep bool
	// Progress, when not nil, receives a progress line for large reads
	// (a terminal).
	Progress io.Writer
}

// MaxRegion bounds one memory range read (the native format's limit of
// one region is larger; a capture over a probe at this size already takes
// minutes).
const MaxRegion = 64 << 20

// maxStackGap bounds the stack the ELF implies (from the end of the
// writable sections below the initial SP up to it).
const maxStackGap = 16 << 20

// NoFaultError is returned by Capture with WaitFault when the target did
// not stop at a fault handler before the timeout.
type NoFaultError struct {
	Timeout time.Duration
	PC      string
}

func (e *NoFaultError) Error() string {
	return fmt.Sprintf("the target did not fault within %v (interrupted at pc %s, left halted there)", e.Timeout, e.PC)
}

// Result is a capture.
type Result struct {
	Dump     *crashdump.Dump
	Handler  string // with WaitFault: the fault handler the target stopped in
	Warnings []string
}

// handler is a fault handler breakpoint.
type handler struct {
	addr  uint32
	names []string
	kind  int // 1 hardware, 0 software
}

// Capture reads the dump through c, which must be connected (not yet
// handshaken).
func Capture(c *client.Client, opt Options) (*Result, error) {
	res := &Result{}
	warn := func(format string, args ...any) { res.Warnings = append(res.Warnings, fmt.Sprintf(format, args...)) }
	if opt.ELF == nil {
		return nil, errors.New("capture: no ELF")
	}
	stop, err := c.Handshake()
	if errors.Is(err, client.ErrTimeout) {
		// A server that does not answer "?" while the target runs: stop it.
		stop, err = c.Interrupt()
		warn("the target was running: interrupted; it is left halted unless --resume")
	}
	if err != nil {
		return nil, err
	}
	if len(stop) > 0 && (stop[0] == 'W' || stop[0] == 'X') {
		// A Black Magic Probe answers "W00" until a target is attached:
		// scan (monitor swdp_scan, as its documentation does in GDB) and
		// attach the first target found (vAttach;1, GDB's "attach 1").
		if s, err := attachFirst(c); err != nil {
			return nil, err
		} else if s != nil {
			warn("the server had no target attached (stop reply %q): scanned with \"monitor swdp_scan\" and attached target 1 (vAttach;1), as a Black Magic Probe needs; attaching halts the target", stop)
			stop = s
		}
	}
	if err := stopOK(stop); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Remote, err)
	}
	var desc *client.Description
	if c.Supported("qXfer:features:read") {
		if desc, err = c.TargetDescription(); err != nil {
			return nil, err
		}
	} else {
		desc = client.DefaultDescription()
		warn("the server offers no target description (qXfer:features:read): registers read as GDB's default M-profile layout (r0-r15 at 0-15, xpsr at 25)")
	}
	mmap, err := c.MemoryMap()
	if err != nil {
		warn("memory map: %v", err)
		mmap = nil
	}
	if opt.WaitFault {
		hs, err := faultHandlers(opt.ELF)
		if err != nil {
			return nil, err
		}
		pc, err := readPC(c)
		if err != nil {
			return nil, err
		}
		if h, ok := handlerAt(hs, pc); ok {
			// Already stopped in a fault handler: running would leave it.
			res.Handler = handlerName(opt.ELF, h)
			warn("the target is already halted in %s: captured as it is (--set and --timeout not used)", res.Handler)
		} else {
			if err := applySets(c, opt, warn); err != nil {
				return nil, err
			}
			name, s, err := waitFault(c, hs, opt)
			if err != nil {
				return nil, err
			}
			res.Handler, stop = name, s
		}
	}
	d, err := read(c, desc, mmap, opt, warn)
	if err != nil {
		return nil, err
	}
	d.Capture.Stop = string(stop)
	if opt.Resume {
		// "c" without waiting for the stop; the connection is then closed.
		if err := c.Resume(); err != nil {
			return nil, err
		}
	}
	d.Capture.Warnings = res.Warnings
	res.Dump = d
	return res, nil
}

// attachFirst scans and attaches target 1; nil when the server does not
// do that (no qRcmd, the scan fails or finds nothing to attach).
func attachFirst(c *client.Client) ([]byte, error) {
	ok, err := c.Monitor("swdp_scan")
	if errors.Is(err, client.ErrTimeout) {
		return nil, nil
	}
	if err != nil || !ok {
		return nil, err
	}
	s, err := c.Attach(1)
	var er *client.ErrorReply
	if errors.As(err, &er) {
		return nil, nil
	}
	return s, err
}

// stopOK checks a stop reply: the target is halted (S or T), not gone.
func stopOK(stop []byte) error {
	if len(stop) == 0 {
		return errors.New("empty reply to ?")
	}
	switch stop[0] {
	case 'S', 'T':
		return nil
	case 'W', 'X':
		return fmt.Errorf("the target has exited (stop reply %q)", stop)
	}
	return fmt.Errorf("stop reply %q: want S or T", stop)
}

// faultHandlers returns the distinct handlers of vector table entries 3-6
// (HardFault, MemManage, BusFault, UsageFault), read from the ELF's image.
func faultHandlers(f *elfsym.File) ([]handler, error) {
	in := f.Info()
	if in.Vectors == nil {
		return nil, fmt.Errorf("%s: --wait-fault: no vector table found (no symbol such as g_pfnVectors, no .isr_vector section)", f.Name())
	}
	names := []string{3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault"}
	var hs []handler
	for n := 3; n <= 6; n++ {
		v, ok := imageWord(f, in.Vectors.Addr+4*uint32(n))
		if !ok || v == 0 || v == 0xffffffff {
			continue
		}
		a := v &^ 1
		found := false
		for i := range hs {
			if hs[i].addr == a {
				hs[i].names = append(hs[i].names, names[n])
				found = true
			}
		}
		if !found {
			hs = append(hs, handler{addr: a, names: []string{names[n]}})
		}
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%s: --wait-fault: vector table at 0x%08x (%s) holds no fault handler in entries 3-6", f.Name(), in.Vectors.Addr, in.Vectors.Source)
	}
	return hs, nil
}

// imageWord reads a word of the ELF's load image.
func imageWord(f *elfsym.File, addr uint32) (uint32, bool) {
	for _, r := range f.Segments() {
		if r.Contains(addr) && uint64(addr)+4 <= r.End() {
			return binary.LittleEndian.Uint32(r.Data[addr-r.Addr:]), true
		}
	}
	return 0, false
}

func handlerName(f *elfsym.File, h handler) string {
	s := strings.Join(h.names, "/")
	if fn, ok := f.FuncAt(h.addr); ok && fn.Name != "" {
		s = fn.Name + " (" + s + ")"
	}
	return s
}

// applySets writes each --set value at the symbol's address and, for
// initialised data, at its load address (the startup code copies .data
// from there), as `emulate` does.
func applySets(c *client.Client, opt Options, warn func(string, ...any)) error {
	if len(opt.Sets) == 0 {
		return nil
	}
	ef, err := elf.Open(opt.ELFPath)
	if err != nil {
		return fmt.Errorf("--set: %w", err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		return fmt.Errorf("--set: %s: %w", opt.ELFPath, err)
	}
	atMain, err := runToMain(c, opt, syms)
	if err != nil {
		return err
	}
	for _, s := range opt.Sets {
		var sym *elf.Symbol
		for i := range syms {
			if syms[i].Name == s.Symbol && syms[i].Section != elf.SHN_UNDEF && elf.ST_TYPE(syms[i].Info) == elf.STT_OBJECT {
				if sym == nil || elf.ST_BIND(syms[i].Info) == elf.STB_GLOBAL {
					sym = &syms[i]
				}
			}
		}
		if sym == nil {
			return fmt.Errorf("--set %s: %s: no such data symbol", s.Symbol, opt.ELFPath)
		}
		size := int(sym.Size)
		switch size {
		case 1, 2, 4, 8:
		default:
			return fmt.Errorf("--set %s: symbol size %d is not 1, 2, 4 or 8", s.Symbol, size)
		}
		if bits := 8 * size; size < 8 && s.Value>>bits != 0 && !(int64(s.Value) < 0 && int64(s.Value) >= -(1<<(bits-1))) {
			return fmt.Errorf("--set %s=%#x: value does not fit in %d bytes", s.Symbol, s.Value, size)
		}
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], s.Value)
		addr := uint32(sym.Value)
		addrs := []uint32{addr}
		for _, p := range ef.Progs {
			if atMain {
				break // the startup code has copied .data already
			}
			if p.Type == elf.PT_LOAD && p.Filesz > 0 && p.Paddr != p.Vaddr && uint64(addr) >= p.Vaddr && uint64(addr)+uint64(size) <= p.Vaddr+p.Filesz {
				addrs = append(addrs, uint32(p.Paddr+(uint64(addr)-p.Vaddr)))
			}
		}
		for i, a := range addrs {
			if err := c.WriteMemory(a, buf[:size]); err != nil {
				var er *client.ErrorReply
				if i > 0 && errors.As(err, &er) {
					// Flash behind a probe is often not writable this way.
					warn("--set %s: the load address 0x%08x (the initial value the startup code copies) could not be written (%s): unless the target is already past its startup, the value set at 0x%08x may be overwritten", s.Symbol, a, er.Code, addr)
					continue
				}
				return fmt.Errorf("--set %s at 0x%08x: %w", s.Symbol, a, err)
			}
		}
	}
	return nil
}

// runToMain: a target fresh out of reset (its PC at the vector table's
// reset entry) whose ELF has a main is first run to main (a breakpoint
// there, within Timeout), so that the startup code has copied .data and
// zeroed .bss before the values are written, as a GDB script would set
// them; the load addresses (flash, often not writable through a probe)
// are then left alone and the startup code's registers are those of an
// unmodified image. It reports whether it did.
func runToMain(c *client.Client, opt Options, syms []elf.Symbol) (bool, error) {
	in := opt.ELF.Info()
	if in.Vectors == nil {
		return false, nil
	}
	var main uint32
	for _, s := range syms {
		if s.Name == "main" && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
			main = uint32(s.Value) &^ 1
		}
	}
	pc, err := readPC(c)
	if err != nil || main == 0 || pc != in.Vectors.Reset&^1 {
		return false, err
	}
	kind := 1
	ok, err := c.Breakpoint(kind, main, true)
	if err != nil || !ok {
		kind = 0
		if ok, err = c.Breakpoint(kind, main, true); err != nil || !ok {
			return false, nil // no breakpoint: write at the load addresses too
		}
	}
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	stop, timedOut, err := c.Continue(timeout)
	if _, err2 := c.Breakpoint(kind, main, false); err == nil && err2 != nil {
		err = err2
	}
	if err != nil {
		return false, err
	}
	if err := stopOK(stop); err != nil {
		return false, fmt.Errorf("%s: --set: running to main: %w", c.Remote, err)
	}
	if pc, err = readPC(c); err != nil {
		return false, err
	}
	if pc != main {
		if timedOut {
			return false, &NoFaultError{Timeout: timeout, PC: fmt.Sprintf("0x%08x (running from reset to main, to write --set)", pc)}
		}
		return false, fmt.Errorf("%s: --set: running from reset to main 0x%08x, the target stopped at pc 0x%08x (stop reply %q)", c.Remote, main, pc, stop)
	}
	return true, nil
}

// waitFault arms the handlers, resumes the target and waits for it to
// stop at one. The breakpoints are removed before it returns.
func waitFault(c *client.Client, hs []handler, opt Options) (string, []byte, error) {
	var armed []handler
	defer func() {
		for _, h := range armed {
			c.Breakpoint(h.kind, h.addr, false)
		}
	}()
	for _, h := range hs {
		ok, err := c.Breakpoint(1, h.addr, true)
		if err != nil || !ok {
			h.kind = 0
			ok, err = c.Breakpoint(0, h.addr, true)
		} else {
			h.kind = 1
		}
		if err != nil {
			return "", nil, fmt.Errorf("--wait-fault: breakpoint at %s 0x%08x: %w", handlerName(opt.ELF, h), h.addr, err)
		}
		if !ok {
			return "", nil, fmt.Errorf("--wait-fault: the server supports neither hardware (Z1) nor software (Z0) breakpoints")
		}
		armed = append(armed, h)
	}
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	stop, timedOut, err := c.Continue(timeout)
	if err != nil {
		return "", nil, err
	}
	if err := stopOK(stop); err != nil {
		return "", nil, fmt.Errorf("%s: --wait-fault: %w", c.Remote, err)
	}
	pc, err := readPC(c)
	if err != nil {
		return "", nil, err
	}
	if h, ok := handlerAt(hs, pc); ok {
		return handlerName(opt.ELF, h), stop, nil
	}
	if timedOut {
		return "", nil, &NoFaultError{Timeout: timeout, PC: fmt.Sprintf("0x%08x", pc)}
	}
	return "", nil, fmt.Errorf("%s: --wait-fault: the target stopped at pc 0x%08x (stop reply %q), not at a fault handler", c.Remote, pc, stop)
}

func handlerAt(hs []handler, pc uint32) (handler, bool) {
	for _, h := range hs {
		if pc == h.addr {
			return h, true
		}
	}
	return handler{}, false
}

func readPC(c *client.Client) (uint32, error) {
	p, err := c.Command("pf")
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		// No p: the pc is register 15 of g in every M-profile layout.
		g, err := c.Command("g")
		if err != nil {
			return 0, err
		}
		if len(g) >= 16*8 {
			p = g[15*8 : 16*8]
		}
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("%s: reading pc (pf): reply %q", c.Remote, p)
	}
	v, err := strconv.ParseUint(string(p), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: reading pc (pf): reply %q", c.Remote, p)
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(v))
	return binary.LittleEndian.Uint32(b[:]), nil
}

// SCB addresses (ARMv7-M ARM B3.2.2, ARMv8-M ARM D1.2).
const (
	scbBase  = 0xe000ed00 // CPUID .. AFSR
	scbLen   = 0x40
	sauBase  = 0xe000ede4 // SFSR, SFAR
	sauLen   = 8
	fpBase   = 0xe000ef34 // FPCCR, FPCAR, FPDSCR
	fpLen    = 12
	cpacrReg = 0xe000ed88
)

// cores maps CPUID PARTNO to the core's name.
var cores = map[uint32]string{
	0xc20: "cortex-m0", 0xc60: "cortex-m0plus", 0xc21: "cortex-m1", 0xc23: "cortex-m3",
	0xc24: "cortex-m4", 0xc27: "cortex-m7", 0xd20: "cortex-m23", 0xd21: "cortex-m33",
	0xd31: "cortex-m35p", 0xd22: "cortex-m55", 0xd23: "cortex-m85",
}

// read takes the registers, the system registers and the RAM.
func read(c *client.Client, desc *client.Description, mmap []client.MemoryRegion, opt Options, warn func(string, ...any)) (*crashdump.Dump, error) {
	d := &crashdump.Dump{Format: crashdump.FormatNative, BuildID: opt.ELF.BuildID()}
	d.Capture = &crashdump.CaptureInfo{Remote: c.Remote, Time: time.Now().UTC().Format(time.RFC3339)}
	id := c.Identity()
	feats := strings.Join(desc.Features, ", ")
	if id == "" {
		id = "GDB server at " + c.Remote
	}
	d.Capture.Server = fmt.Sprintf("%s (target features: %s)", id, feats)
	vals, notes, err := c.ReadRegisters(desc, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		warn("%s", n)
	}
	var holes []client.Hole
	add := func(r Range) error {
		data, h, err := c.ReadMemory(r.Addr, r.Size, progress(opt.Progress, r))
		if err != nil {
			return err
		}
		holes = append(holes, h...)
		d.Memory = append(d.Memory, readable(r, data, h)...)
		return nil
	}
	// CPUID first: the core's name decides which system registers exist.
	sys := []Range{{Addr: scbBase, Size: scbLen, Why: "SCB"}}
	cpuid, h, err := c.ReadMemory(scbBase, 4, nil)
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		v := binary.LittleEndian.Uint32(cpuid)
		if d.CPU = cores[v>>4&0xfff]; d.CPU == "" {
			warn("CPUID 0x%08x names no Cortex-M core faultline knows; the dump names no CPU", v)
		}
	} else {
		warn("CPUID could not be read (%s); the dump names no CPU", h[0].Reply)
	}
	if opt.NoStep {
		var miss []string
		for _, s := range sysRegs {
			if _, ok := vals[s.name]; !ok && !(s.main && baseline(d.CPU)) {
				miss = append(miss, strings.ToUpper(s.name))
			}
		}
		if len(miss) > 0 {
			warn("the server gives no %s; --no-step: not read from the core (the target is left untouched)", strings.Join(miss, "/"))
		}
	} else {
		note, err := recoverSysRegs(c, desc, vals, d.CPU)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Remote, err)
		}
		if note != "" {
			warn("%s", note)
		}
	}
	if err := setRegisters(d, vals, warn); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Remote, err)
	}
	switch d.CPU {
	case "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85":
		sys = append(sys, Range{Addr: sauBase, Size: sauLen, Why: "SFSR/SFAR"})
	}
	if hasFP(desc) {
		sys = append(sys, Range{Addr: fpBase, Size: fpLen, Why: "FPCCR/FPCAR/FPDSCR"})
	}
	rs, err := ramRanges(opt, d, mmap, warn)
	if err != nil {
		return nil, err
	}
	rs = merge(append(rs, sys...))
	for _, r := range rs {
		if err := add(r); err != nil {
			return nil, err
		}
	}
	for _, h := range holes {
		d.Capture.Holes = append(d.Capture.Holes, crashdump.CaptureHole{Address: fmt.Sprintf("0x%08x", h.Addr), Size: int(h.Size), Reply: h.Reply})
		warn("memory 0x%08x-0x%08x: the server replied %s; left out of the dump", h.Addr, uint64(h.Addr)+uint64(h.Size), h.Reply)
	}
	sort.Slice(d.Memory, func(i, j int) bool { return d.Memory[i].Addr < d.Memory[j].Addr })
	return d, nil
}

func hasFP(desc *client.Description) bool {
	_, ok := desc.Lookup("fpscr")
	return ok
}

// readable splits a range read into the regions outside its holes.
func readable(r Range, data []byte, holes []client.Hole) []unwinders.Region {
	var out []unwinders.Region
	start := uint32(0)
	emit := func(end uint32) {
		if end > start {
			out = append(out, unwinders.Region{Name: fmt.Sprintf("%s@0x%08x", r.Why, r.Addr+start), Addr: r.Addr + start, Data: data[start:end]})
		}
	}
	for _, h := range holes {
		emit(h.Addr - r.Addr)
		start = h.Addr - r.Addr + h.Size
	}
	emit(r.Size)
	return out
}

// progress returns a progress callback for reads over 64 KiB on a
// terminal.
func progress(w io.Writer, r Range) func(uint32) {
	if w == nil || r.Size < 64<<10 {
		return nil
	}
	last := time.Time{}
	return func(done uint32) {
		if now := time.Now(); done == r.Size || now.Sub(last) > 200*time.Millisecond {
			last = now
			fmt.Fprintf(w, "\rfaultline: reading 0x%08x (%s): %d of %d KiB", r.Addr, r.Why, done>>10, r.Size>>10)
			if done == r.Size {
				fmt.Fprintln(w)
			}
		}
	}
}

// ramRanges returns the memory to read: every writable allocated section
// of the ELF, the stack below the initial SP, the memory around SP and
// --region, merged.
func ramRanges(opt Options, d *crashdump.Dump, mmap []client.MemoryRegion, warn func(string, ...any)) ([]Range, error) {
	var rs []Range
	var topBelowSP uint64
	in := opt.ELF.Info()
	var initSP uint32
	if in.Vectors != nil {
		initSP = in.Vectors.InitialSP
	}
	for _, s := range opt.ELF.Sections() {
		if !s.Alloc || !s.Write || s.Size == 0 {
			continue
		}
		rs = append(rs, Range{Addr: s.Addr, Size: s.Size, Why: "section " + s.Name})
		if e := uint64(s.Addr) + uint64(s.Size); initSP != 0 && e <= uint64(initSP) && e > topBelowSP {
			topBelowSP = e
		}
	}
	if initSP != 0 && topBelowSP != 0 && uint64(initSP)-topBelowSP <= maxStackGap && uint64(initSP) > topBelowSP {
		rs = append(rs, Range{Addr: uint32(topBelowSP), Size: uint32(uint64(initSP) - topBelowSP), Why: "stack below the initial SP"})
	}
	for _, reg := range []unwinders.Reg{unwinders.SP, unwinders.MSP, unwinders.PSP} {
		// SP at the end of a range is an empty full-descending stack.
		if sp, ok := d.Regs.Get(reg); ok && sp != 0 && !covered(rs, sp) && !covered(rs, sp-1) {
			// The stack in use lies outside what the ELF describes: take
			// 4 KiB above SP (within the memory map, when there is one).
			a := sp &^ 3
			size := uint32(4096)
			if uint64(a)+uint64(size) > 1<<32 {
				size = uint32(1<<32 - uint64(a))
			}
			bound := ""
			if m, ok := mapRegionAt(mmap, a); ok && uint64(a)+uint64(size) > uint64(m.Start)+m.Length {
				// The server's memory map ends the memory before: read no
				// further (a probe answers reads past it with errors or
				// bus faults).
				size = uint32(uint64(m.Start) + m.Length - uint64(a))
				bound = fmt.Sprintf(" (bounded by the server's memory map: %s 0x%08x-0x%08x)", m.Type, m.Start, uint64(m.Start)+m.Length)
			}
			if size == 0 {
				continue
			}
			rs = append(rs, Range{Addr: a, Size: size, Why: reg.String() + " (outside the ELF's RAM)"})
			warn("%s 0x%08x lies outside the ELF's RAM sections: read 0x%08x-0x%08x%s", reg, sp, a, uint64(a)+uint64(size), bound)
		}
	}
	rs = append(rs, opt.Regions...)
	for _, r := range rs {
		if r.Size > MaxRegion {
			return nil, fmt.Errorf("%s 0x%08x size %d: more than %d bytes", r.Why, r.Addr, r.Size, MaxRegion)
		}
	}
	// A range the server's memory map does not cover is still asked for
	// (the server answers or refuses), and said.
	for _, r := range rs {
		if len(mmap) > 0 && !inMap(mmap, r) {
			warn("%s 0x%08x-0x%08x lies outside the server's memory map", r.Why, r.Addr, r.end())
		}
	}
	return rs, nil
}

// mapRegionAt returns the memory map's region holding a.
func mapRegionAt(mmap []client.MemoryRegion, a uint32) (client.MemoryRegion, bool) {
	for _, m := range mmap {
		if a >= m.Start && uint64(a) < uint64(m.Start)+m.Length {
			return m, true
		}
	}
	return client.MemoryRegion{}, false
}

func inMap(mmap []client.MemoryRegion, r Range) bool {
	for _, m := range mmap {
		if r.Addr >= m.Start && r.end() <= uint64(m.Start)+m.Length {
			return true
		}
	}
	return false
}

func covered(rs []Range, a uint32) bool {
	for _, r := range rs {
		if a >= r.Addr && uint64(a) < r.end() {
			return true
		}
	}
	return false
}

// mergeGap is the largest gap between two ranges that merge reads too
// (alignment padding between .data and .bss).
const mergeGap = 256

// merge sorts ranges and joins those that overlap or lie within mergeGap
// bytes of each other; the SCB ranges read before are not among them.
func merge(rs []Range) []Range {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Addr < rs[j].Addr })
	var out []Range
	for _, r := range rs {
		if r.Size == 0 {
			continue
		}
		gap := uint64(mergeGap)
		if r.Addr >= 0xe0000000 {
			gap = 0 // system registers: only what was asked for
		}
		if n := len(out); n > 0 && uint64(r.Addr) <= out[n-1].end()+gap {
			if r.end() > out[n-1].end() {
				out[n-1].Size = uint32(r.end() - uint64(out[n-1].Addr))
			}
			if !strings.Contains(out[n-1].Why, "RAM") {
				out[n-1].Why = "RAM"
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// setRegisters fills d.Regs from the values read; where the banked stack
// pointers are missing, the active one is SP (handler mode, or thread
// mode with CONTROL.SPSEL known), said in a warning; the other is never
// guessed.
func setRegisters(d *crashdump.Dump, v client.RegisterValues, warn func(string, ...any)) error {
	names := map[string]unwinders.Reg{
		"sp": unwinders.SP, "r13": unwinders.SP, "lr": unwinders.LR, "r14": unwinders.LR, "pc": unwinders.PC, "r15": unwinders.PC,
		"xpsr": unwinders.XPSR, "msp": unwinders.MSP, "psp": unwinders.PSP, "control": unwinders.CONTROL,
		"primask": unwinders.PRIMASK, "basepri": unwinders.BASEPRI, "faultmask": unwinders.FAULTMASK, "fpscr": unwinders.FPSCR,
	}
	for i := 0; i <= 12; i++ {
		names[fmt.Sprintf("r%d", i)] = unwinders.R0 + unwinders.Reg(i)
	}
	for i := 0; i < 32; i++ {
		names[fmt.Sprintf("s%d", i)] = unwinders.S(i)
	}
	for n, r := range names {
		if x, ok := v.U32(n); ok {
			d.Regs.Set(r, x)
		}
	}
	// d registers: s(2n) low word, s(2n+1) high word.
	for i := 0; i < 16; i++ {
		if b, ok := v[fmt.Sprintf("d%d", i)]; ok && len(b) == 8 {
			if !d.Regs.Known(unwinders.S(2 * i)) {
				d.Regs.Set(unwinders.S(2*i), binary.LittleEndian.Uint32(b))
			}
			if !d.Regs.Known(unwinders.S(2*i + 1)) {
				d.Regs.Set(unwinders.S(2*i+1), binary.LittleEndian.Uint32(b[4:]))
			}
		}
	}
	// Masks packed in one register by some servers (OpenOCD's older
	// "primask"... are separate; J-Link may give CFBP: CONTROL, FAULTMASK,
	// BASEPRI, PRIMASK from the top byte down).
	if x, ok := v.U32("cfbp"); ok {
		for r, sh := range map[unwinders.Reg]uint{unwinders.CONTROL: 24, unwinders.FAULTMASK: 16, unwinders.BASEPRI: 8, unwinders.PRIMASK: 0} {
			if !d.Regs.Known(r) {
				d.Regs.Set(r, x>>sh&0xff)
			}
		}
	}
	sp, okSP := d.Regs.Get(unwinders.SP)
	pc, okPC := d.Regs.Get(unwinders.PC)
	if !okSP || !okPC {
		return fmt.Errorf("the server gave no SP or PC (registers read: %d)", len(v))
	}
	_ = pc
	msp, pspKnown := d.Regs.Known(unwinders.MSP), d.Regs.Known(unwinders.PSP)
	if msp && pspKnown {
		return nil
	}
	xpsr, okX := d.Regs.Get(unwinders.XPSR)
	switch {
	case okX && xpsr&0x1ff != 0:
		// Handler mode always runs on the main stack.
		if !msp {
			d.Regs.Set(unwinders.MSP, sp)
		}
		lr, _ := d.Regs.Get(unwinders.LR)
		detail := ""
		if lr>>24 == 0xff && lr&4 != 0 {
			detail = fmt.Sprintf(" EXC_RETURN 0x%08x says the interrupted code ran on the process stack, whose pointer is therefore needed past the exception and is not known.", lr)
		}
		if !pspKnown {
			warn("the server gives no MSP/PSP: MSP is SP 0x%08x (handler mode, IPSR %d, runs on the main stack); PSP is unknown.%s", sp, xpsr&0x1ff, detail)
		}
	case okX:
		ctl, okC := d.Regs.Get(unwinders.CONTROL)
		switch {
		case okC && ctl&2 != 0 && !pspKnown:
			d.Regs.Set(unwinders.PSP, sp)
			warn("the server gives no PSP: PSP is SP 0x%08x (thread mode, CONTROL.SPSEL=1); MSP is unknown", sp)
		case okC && ctl&2 == 0 && !msp:
			d.Regs.Set(unwinders.MSP, sp)
			warn("the server gives no MSP: MSP is SP 0x%08x (thread mode, CONTROL.SPSEL=0); PSP is unknown", sp)
		default:
			warn("the server gives no MSP/PSP nor CONTROL: which stack SP 0x%08x is cannot be told in thread mode; both are left unknown", sp)
		}
	default:
		warn("the server gives no xPSR: MSP/PSP are left unknown")
	}
	return nil
}
