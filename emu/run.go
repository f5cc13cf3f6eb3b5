package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

const (
	// chunkInsns is how many instructions run between checkpoints. A
	// checkpoint is taken from the C block hook (onEvent) at a block
	// boundary, where the register state is exact; after a data abort the
	// harness restores the last one and replays at most this many
	// instructions with the exact-PC hook on the faulting block only.
	chunkInsns = 1 << 22
	// shadowCapacity is the depth of the shadow call stack.
	shadowCapacity = 4096
	// returnAddr is where a called function (Config.Call) returns to: LR is
	// 0xFFFFFFFF, its reset value (B1.4.7).
	returnAddr = 0xFFFFFFFE
)

// testSetup, when set by a test or benchmark, runs after setup.
var testSetup func(*machine) error

// machine is one run: the engine, the models and the run state.
type machine struct {
	// faultIT is the IT state of the faulting instruction while takeFault
	// enters the exception (faultITSet): enterException stacks it.
	faultIT    uint8
	faultITSet bool

	cfg     Config
	img     *image
	cpu     cpuInfo
	eng     *uc.Engine
	tr      *uc.Tracker
	scs     SCS
	regions []Region
	chunk   uint64

	active []int // exceptions being handled, innermost last

	// Recorded by hooks while the guest runs.
	invalid   invalidAccess
	intr      uint32
	intrValid bool
	hookErr   error
	setsDone  bool
	mainAddr  uint32 // stop here to apply Config.Sets again; 0: no

	cp checkpoint

	replaying      bool   // re-running the last chunk to find the faulting PC
	nextCheckpoint uint64 // instruction count of the next checkpoint
	irqs           []irqState
	// forced marks external interrupts raised by Config.IRQs: they are
	// taken even when the firmware has not enabled them in NVIC_ISER.
	forced     [16]uint32
	excReturns []uint32 // EXC_RETURN of each active exception, innermost last
	semihost   semihostState

	// C access checks (checks.go).
	checksOn      bool          // the tracker exists: keep the checks in sync
	checks        checksState   // what the C checks were last set to
	checksApplied bool          // checks is valid
	alignWatches  int           // the first code-hook watches are the alignment ones
	resyncStop    bool          // the event handler stopped the run to apply checks
	flushes       int           // translation cache flushes made for the checks
	flushTime     time.Duration // time they took
	entryFault    *entryFault   // exception entry stacking failed inside a hook
	threadStacks  threadStacks  // suspended threads' shadow stacks (threads.go)
	probe         *ProbeRun     // Config.Probe's handle (probe.go)
	// The heap probe's data-access hook (pretranslate.go).
	entryArmed          bool     // stop before the first allocator entry
	pretranslated       bool     // allocator blocks were translated without the hook
	pretranslatedBlocks int      // how many
	allocCode           []uint32 // the functions whose blocks were translated ahead
}

type irqState struct {
	IRQ
	fired bool
}

type invalidAccess struct {
	access uc.MemAccess
	addr   uint32
	size   int
	valid  bool
	// The block running when the access failed, and (under the exact-PC
	// hook) the instruction count, address and IT state of the access.
	// Unicorn stops at once after an unmapped access, but after a write
	// to read-only memory it only skips the write and runs the rest of
	// the block (and the next block's hook may run): the core is then
	// past the faulting instruction.
	blk, blkSize uint32
	exact        uint64
	exactPC      uint32
	it           uint8
}

// checkpoint is the state at the start of a chunk, for the exact-PC replay.
type checkpoint struct {
	ctx      *uc.Context
	ram      [][]byte
	scs      SCS
	tr       uc.TrackerState
	active   []int
	setsDone bool
	pc       uint64
	irqs     []irqState
	excRet   []uint32
	nextCP   uint64
	forced   [16]uint32
	threads  threadStacks
}

// Run loads cfg.ELF, runs it until it faults and returns the state at the
// first instruction of the fault handler. It returns an error wrapping
// ErrNoFault when the firmware does not fault within the bounds, one
// wrapping uc.ErrUnavailable when faultline was built without cgo, a
// *FormatError for an ELF it cannot run, and ctx.Err() when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	return runChunked(ctx, cfg, chunkInsns)
}

// runChunked is Run with checkpoints every chunk instructions.
func runChunked(ctx context.Context, cfg Config, chunk uint64) (*Result, error) {
	f, err := os.Open(cfg.ELF)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := loadImage(cfg.ELF, f)
	if err != nil {
		return nil, err
	}
	name := cfg.CPU
	if name == "" {
		name = img.cpu
	}
	if name == "" {
		name = "cortex-m4"
	}
	cpu, err := lookupCPU(name)
	if err != nil {
		return nil, err
	}
	if cfg.MaxInsns == 0 {
		cfg.MaxInsns = DefaultMaxInsns
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	eng, err := uc.Open(cpu.model)
	if errors.Is(err, uc.ErrUnavailable) {
		// Already says what it is (and, when libunicorn could not be
		// loaded, why: a *uc.LoadError); the caller adds its own prefix.
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	m := &machine{cfg: cfg, img: img, cpu: cpu, eng: eng, scs: newSCS(cpu), chunk: chunk}
	if err := m.setup(); err != nil {
		return nil, err
	}
	if testSetup != nil {
		if err := testSetup(m); err != nil {
			return nil, err
		}
	}
	res, err := m.run(ctx)
	if m.probe != nil {
		m.probe.finish()
	}
	return res, err
}

// setup maps memory, loads the image, installs the models and hooks and sets
// the reset state (B1.5.5 TakeReset).
func (m *machine) setup() error {
	e := m.eng
	m.regions = append(m.regions, m.img.regions...)
	for _, r := range m.cfg.Maps {
		r.Name = "map"
		if r.Zero {
			r.Perm = uc.PermNone
		}
		if r.Size == 0 || r.Addr%regionAlign != 0 || r.Size%regionAlign != 0 {
			return configErrorf("--map %#x:%#x: address and size must be non-zero multiples of %#x", r.Addr, r.Size, regionAlign)
		}
		for _, o := range m.regions {
			if uint64(r.Addr) < o.End() && uint64(o.Addr) < r.End() {
				what := o.Name
				if what == "map" {
					what = "another --map region"
				}
				return configErrorf("--map %#x:%#x: [%#x, %#x) overlaps %s [%#x, %#x)", r.Addr, r.Size, r.Addr, r.End(), what, o.Addr, o.End())
			}
		}
		if r.contains(scsBase) || (r.Addr > scsBase && r.Addr < scsBase+scsSize) {
			return configErrorf("--map %#x:%#x: [%#x, %#x) overlaps the System Control Space [%#x, %#x)", r.Addr, r.Size, r.Addr, r.End(), scsBase, scsBase+scsSize)
		}
		m.regions = append(m.regions, r)
	}
	for _, r := range m.regions {
		if r.contains(scsBase) || (r.Addr > scsBase && r.Addr < scsBase+scsSize) {
			return fmt.Errorf("region %s [%#x, %#x) overlaps the System Control Space", r.Name, r.Addr, r.End())
		}
		if r.Zero {
			// Reads as zero, ignores writes.
			if err := e.MMIOMap(uint64(r.Addr), uint64(r.Size), func(uint64, int) uint64 { return 0 }, func(uint64, int, uint64) {}); err != nil {
				return fmt.Errorf("mapping %s [%#x, %#x) as zero: %w", r.Name, r.Addr, r.End(), err)
			}
			continue
		}
		if err := e.MemMap(uint64(r.Addr), uint64(r.Size), r.Perm); err != nil {
			return fmt.Errorf("mapping %s [%#x, %#x) %v: %w", r.Name, r.Addr, r.End(), r.Perm, err)
		}
	}
	for _, c := range m.img.chunks {
		if err := e.MemWrite(uint64(c.addr), c.data); err != nil {
			return fmt.Errorf("loading %d bytes at %#x: %w", len(c.data), c.addr, err)
		}
	}
	m.scs.VTOR = m.img.vtor
	m.scs.onCCR = func(ccr uint32) {
		if m.tr != nil {
			m.tr.SetDivideTrap(ccr&ccrDIV0TRP != 0)
		}
	}
	if err := e.MMIOMap(scsBase, scsSize,
		func(off uint64, size int) uint64 {
			m.lazyFPPull()
			return uint64(m.scs.Read(scsBase+uint32(off), size))
		},
		func(off uint64, size int, v uint64) {
			m.lazyFPPull()
			m.scs.Write(scsBase+uint32(off), size, uint32(v))
			m.lazyFPPush()
		},
	); err != nil {
		return fmt.Errorf("mapping the System Control Space: %w", err)
	}

	tr, err := e.NewTracker(!m.cfg.NoTruth, shadowCapacity)
	if err != nil {
		return err
	}
	m.tr = tr
	if !m.cfg.NoTruth {
		if err := tr.SetFunctions(m.img.funcRanges()); err != nil {
			return err
		}
	}
	m.scs.now = tr.Insns
	m.scs.onWrite = m.updateEvents
	tr.SetEventHandler(m.onEvent)
	m.checksOn = true
	if m.cfg.Probe != nil {
		if err := m.startProbe(); err != nil {
			return err
		}
	}
	if err := m.watchAligned(); err != nil {
		return err
	}
	if err := m.syncChecks(); err != nil {
		return err
	}
	for _, q := range m.cfg.IRQs {
		m.irqs = append(m.irqs, irqState{IRQ: q})
	}
	m.nextCheckpoint = m.chunk
	if err := m.watchFP(); err != nil {
		return err
	}
	if !m.cpu.v6m {
		for _, a := range m.img.divides() {
			if err := tr.WatchDivide(a); err != nil {
				return err
			}
		}
	}
	if _, err := e.HookMemInvalid(m.onInvalid); err != nil {
		return err
	}
	if _, err := e.HookInterrupt(m.onInterrupt); err != nil {
		return err
	}

	if err := m.applySets(); err != nil {
		return err
	}
	start := m.img.pc
	if m.cfg.Call != "" {
		s, ok := m.img.byName[m.cfg.Call]
		if !ok || !s.fn {
			return configErrorf("%s: --call %s: no such function", m.img.path, m.cfg.Call)
		}
		start = s.addr | 1
	} else if mainSym, ok := m.img.byName["main"]; ok && mainSym.fn && len(m.cfg.Sets) > 0 {
		// Stop at main to write the globals again once the startup code
		// has run. (A code hook would do too, but any UC_HOOK_CODE slows
		// Unicorn 2.0.1 down to the hook's speed everywhere.)
		m.mainAddr = mainSym.addr
	}
	if start&1 == 0 {
		if m.cfg.Call == "" {
			// The entry is the reset vector: name the slot it was read
			// from, so that a vector table elsewhere is recognised.
			return fmt.Errorf("%s: the reset vector (the word at %#08x, slot 1 of the vector table at %#08x) is %#x, not a Thumb code address (bit 0 clear); if the vector table is elsewhere, start with --call FUNCTION",
				m.img.path, m.img.vtor+4, m.img.vtor, start)
		}
		return fmt.Errorf("%s: entry point %#x is not Thumb code (bit 0 clear)", m.img.path, start)
	}
	for _, w := range []struct {
		r uc.Reg
		v uint64
	}{
		{uc.RegPC, uint64(start)}, // bit 0 set: Thumb (EPSR.T)
		{uc.RegMSP, uint64(m.img.sp &^ 3)},
		{uc.RegLR, 0xFFFFFFFF},
	} {
		if err := e.RegWrite(w.r, w.v); err != nil {
			return fmt.Errorf("reset state: %w", err)
		}
	}
	return nil
}

// setValueString shows a --set value as given: negative numbers in
// decimal, others in hex.
func setValueString(v uint64) string {
	if int64(v) < 0 {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%#x", v)
}

// applySets writes Config.Sets (--set SYMBOL=VALUE) at the symbols' run
// addresses and, for initialised data, at their load addresses.
func (m *machine) applySets() error {
	for name, v := range m.cfg.Sets {
		s, ok := m.img.byName[name]
		if !ok {
			return configErrorf("%s: --set %s: no such symbol", m.img.path, name)
		}
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], v)
		switch s.size {
		case 1, 2, 4, 8:
		default:
			return configErrorf("%s: --set %s: symbol size %d is not 1, 2, 4 or 8", m.img.path, name, s.size)
		}
		// A value fits when its bits above the symbol's size are all
		// zero, or all one for a negative number (--set x=-1, stored as
		// two's complement) whose sign bit is set in the symbol's size.
		if bits := 8 * s.size; s.size < 8 && v>>bits != 0 && !(int64(v) < 0 && int64(v) >= -(1<<(bits-1))) {
			return configErrorf("%s: --set %s=%s: value does not fit in %d bytes", m.img.path, name, setValueString(v), s.size)
		}
		for _, a := range append([]uint32{s.addr}, m.img.loadAddrs(s.addr)...) {
			if err := m.eng.MemWrite(uint64(a), buf[:s.size]); err != nil {
				return fmt.Errorf("--set %s at %#x: %w", name, a, err)
			}
		}
	}
	return nil
}

// divides returns the address of every halfword-aligned SDIV/UDIV encoding
// in executable memory (A7.7.127, A7.7.195). Scanning every offset cannot
// miss one; a false match never executes, so its check never runs.
func (img *image) divides() []uint32 {
	return img.scanFlash(func(hw1, hw2 uint16) bool {
		return hw1&0xffd0 == 0xfb90 && hw2&0xf0f0 == 0xf0f0
	})
}

// scanFlash returns the address of every halfword-aligned 32-bit
// instruction encoding in executable flash whose two halfwords match.
func (img *image) scanFlash(match func(hw1, hw2 uint16) bool) []uint32 {
	var out []uint32
	for _, c := range img.chunks {
		exec := false
		for _, r := range img.regions {
			if r.contains(c.addr) && r.Perm&uc.PermExec != 0 && r.Name == "flash" {
				exec = true
			}
		}
		if !exec {
			continue
		}
		d := c.data
		for i := 0; i+4 <= len(d); i += 2 {
			if match(binary.LittleEndian.Uint16(d[i:]), binary.LittleEndian.Uint16(d[i+2:])) {
				out = append(out, c.addr+uint32(i))
			}
		}
	}
	return out
}

func (m *machine) onInvalid(access uc.MemAccess, addr uint64, size int, value int64) bool {
	m.invalid = invalidAccess{access: access, addr: uint32(addr), size: size, valid: true}
	m.invalid.blk, m.invalid.blkSize = m.tr.Block()
	if m.replaying {
		m.invalid.exact, m.invalid.exactPC, m.invalid.it = m.tr.ExactCount(), m.tr.LastPC(), m.tr.LastIT()
	}
	return false
}

// onInterrupt handles the exceptions Unicorn reports instead of taking
// them (docs/unicorn.md). Exception return and SVCall are handled in place
// and the guest continues; the others stop the run and become faults.
func (m *machine) onInterrupt(intno uint32) {
	switch intno {
	case uc.IntrExceptionExit:
		if err := m.exceptionReturn(); err != nil {
			m.hookErr = err
			m.eng.Stop()
		}
		return
	case uc.IntrSWI:
		pc, err := m.eng.RegRead(uc.RegPC)
		var ef *entryFault
		if err == nil {
			ef, err = m.enterException(excSVCall, uint32(pc))
		}
		if err != nil {
			m.hookErr = err
			m.eng.Stop()
		}
		if ef != nil {
			m.entryFault = ef
			m.eng.Stop()
		}
		return
	case uc.IntrBKPT:
		if m.semihosting() {
			return
		}
	}
	m.intr, m.intrValid = intno, true
	m.eng.Stop()
}

func (m *machine) reg(r uc.Reg) uint32 {
	v, err := m.eng.RegRead(r)
	if err != nil && m.hookErr == nil {
		m.hookErr = err
	}
	return uint32(v)
}

func (m *machine) writableRegions() []Region {
	var out []Region
	for _, r := range m.regions {
		if r.Perm&uc.PermWrite != 0 {
			out = append(out, r)
		}
	}
	return out
}

func (m *machine) saveCheckpoint(pc uint64) error {
	c := &m.cp
	var err error
	if c.ctx, err = m.eng.SaveContext(c.ctx); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	rs := m.writableRegions()
	if c.ram == nil {
		c.ram = make([][]byte, len(rs))
		for i, r := range rs {
			c.ram[i] = make([]byte, r.Size)
		}
	}
	for i, r := range rs {
		if err := m.eng.MemRead(uint64(r.Addr), c.ram[i]); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	m.lazyFPPull()
	c.scs = m.scs
	m.tr.Save(&c.tr)
	c.active = append(c.active[:0], m.active...)
	c.setsDone = m.setsDone
	c.pc = pc
	c.irqs = append(c.irqs[:0], m.irqs...)
	c.excRet = append(c.excRet[:0], m.excReturns...)
	c.nextCP = m.nextCheckpoint
	c.forced = m.forced
	c.threads = m.threadStacks.clone()
	if m.probe != nil {
		m.probe.checkpoint()
	}
	return nil
}

func (m *machine) restoreCheckpoint() error {
	c := &m.cp
	if err := m.eng.RestoreContext(c.ctx); err != nil {
		return fmt.Errorf("restoring checkpoint: %w", err)
	}
	for i, r := range m.writableRegions() {
		if err := m.eng.MemWrite(uint64(r.Addr), c.ram[i]); err != nil {
			return fmt.Errorf("restoring checkpoint: %w", err)
		}
	}
	// The function fields (now, onWrite, onCCR) are the same in the copy.
	m.scs = c.scs
	m.lazyFPPush()
	m.tr.Restore(&c.tr)
	m.tr.SetDivideTrap(m.scs.CCR&ccrDIV0TRP != 0)
	m.active = append(m.active[:0], c.active...)
	m.setsDone = c.setsDone
	m.irqs = append(m.irqs[:0], c.irqs...)
	m.excReturns = append(m.excReturns[:0], c.excRet...)
	m.nextCheckpoint = c.nextCP
	m.forced = c.forced
	m.threadStacks = c.threads.clone()
	if m.probe != nil {
		if err := m.probe.restore(); err != nil {
			return err
		}
	}
	m.entryFault = nil
	m.tr.ClearCheckFault()
	m.activeChanged()
	if err := m.syncChecks(); err != nil {
		return err
	}
	m.updateEvents()
	return nil
}

// exactFaultPC finds the instruction that made the data access Unicorn
// reported as want: after a data abort Unicorn's PC is the start of the
// translated block (docs/unicorn.md, trap 2). It restores the last
// checkpoint (at most chunkInsns instructions back) and replays with the
// exact-PC code hook on the faulting block's addresses only, so the replay
// runs at full speed elsewhere. Events (exception entries, SysTick,
// Config.IRQs) repeat identically: they depend only on the instruction
// count and the guest's own accesses. The replay ends in the same state,
// now with the exact PC.
func (m *machine) exactFaultPC(want uc.Error, timeout time.Duration) (uint32, uint8, error) {
	insns := m.tr.Insns()
	blk, size := m.tr.Block()
	if m.invalid.valid && m.invalid.blkSize != 0 {
		// The block that made the access: after a write to read-only
		// memory the emulation ran on past it (invalidAccess).
		blk, size = m.invalid.blk, m.invalid.blkSize
	}
	if size == 0 {
		size = 2
	}
	defer m.tr.SetExactPC(false, 0, 0)
	defer m.tr.SetExactStop(0)
	replay := func(stopAt uint64) error {
		if err := m.restoreCheckpoint(); err != nil {
			return err
		}
		if err := m.tr.SetExactPC(true, blk, blk+size-1); err != nil {
			return err
		}
		m.tr.SetExactStop(stopAt)
		m.tr.ClearCheckFault()
		m.tr.SetBudget(0)
		m.replaying = true
		defer func() { m.replaying = false }()
		m.updateEvents()
		m.invalid = invalidAccess{}
		until := uint64(returnAddr)
		if m.mainAddr != 0 && !m.setsDone {
			until = uint64(m.mainAddr)
		}
		err := m.start(m.cp.pc, until, timeout)
		if m.hookErr != nil {
			return m.hookErr
		}
		return err
	}
	err := replay(0)
	if !errors.Is(err, want) {
		if err == nil && m.hookErr != nil {
			err = m.hookErr
		}
		return 0, 0, fmt.Errorf("replaying the last %d instructions to find the faulting PC did not repeat the fault (%v, want %v)", insns-m.cp.tr.Insns, err, want)
	}
	if inv := m.invalid; inv.valid && inv.exact != 0 && inv.exactPC != m.tr.LastPC() {
		// The block ran on past the access (a write to read-only
		// memory): replay again and stop before the instruction, so
		// that the core is in its state (issue 23, item 14: a
		// conditional store in a leaf was reported at the caller's
		// return address, the leaf's frame lost).
		if err := replay(inv.exact); err != nil && !errors.Is(err, want) {
			return 0, 0, fmt.Errorf("replaying to stop before the faulting instruction at %#08x: %w", inv.exactPC, err)
		}
		got, ok := m.tr.CheckFault()
		if !ok || got.Kind != uc.CheckStopped || got.PC != inv.exactPC {
			return 0, 0, fmt.Errorf("the second replay did not stop before the faulting instruction at %#08x", inv.exactPC)
		}
		m.tr.ClearCheckFault()
		m.invalid = inv
		if err := m.eng.RegWrite(uc.RegPC, uint64(inv.exactPC)|1); err != nil {
			return 0, 0, err
		}
		return inv.exactPC, inv.it, nil
	}
	pc, err := m.eng.RegRead(uc.RegPC)
	if err != nil {
		return 0, 0, err
	}
	if uint32(pc) < blk || uint32(pc) >= blk+size {
		pc = uint64(m.tr.LastPC())
	}
	var it uint8
	if uint32(pc)&^1 == m.tr.LastPC() {
		it = m.tr.LastIT()
	}
	if err := m.eng.RegWrite(uc.RegPC, pc|1); err != nil {
		return 0, 0, err
	}
	return uint32(pc) &^ 1, it, nil
}

// run executes chunk after chunk until a fault, a bound, or ctx ends.
func (m *machine) run(ctx context.Context) (*Result, error) {
	deadline := time.Now().Add(m.cfg.Timeout)
	pc, err := m.eng.RegRead(uc.RegPC)
	if err != nil {
		return nil, err
	}
	pc |= 1
	// tail is how many instructions of the block at pc still fit the
	// instruction limit after the block hook stopped before it (it would
	// have crossed the limit): they run under the exact-PC hook, which
	// stops before the first one past the limit.
	var tail uint64
	// Arm the first chunk's checkpoint event: firmware that never writes
	// the System Control Space (whose writes update the events) otherwise
	// ran without a checkpoint after the first, and a fault replayed the
	// whole run.
	m.updateEvents()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		insns := m.tr.Insns()
		if left <= 0 {
			return nil, &NoFaultError{Reason: fmt.Sprintf("timeout of %v reached", m.cfg.Timeout), Insns: insns, PC: uint32(pc &^ 1)}
		}
		if insns >= m.cfg.MaxInsns {
			return nil, &NoFaultError{Reason: limitReason(m.cfg.MaxInsns, insns), Insns: insns, PC: uint32(pc &^ 1)}
		}
		if tail > 0 {
			blk, size := m.tr.Block()
			if err := m.tr.SetExactPC(true, blk, blk+size-1); err != nil {
				return nil, err
			}
			m.tr.SetExactStop(tail + 1)
			// The block itself is counted whole when it starts; a
			// budget just past it stops the run if an exception
			// diverts it before the exact stop.
			m.tr.SetBudget(insns + m.tr.BudgetBlock())
		} else {
			m.tr.SetBudget(m.cfg.MaxInsns)
		}
		if err := m.saveCheckpoint(pc); err != nil {
			return nil, err
		}
		m.invalid, m.intrValid, m.hookErr = invalidAccess{}, false, nil
		until := uint64(returnAddr)
		if m.mainAddr != 0 && !m.setsDone {
			until = uint64(m.mainAddr)
		}
		startErr := m.start(pc, until, left)

		var pe *uc.CallbackPanicError
		if errors.As(startErr, &pe) {
			return nil, startErr
		}
		if m.hookErr != nil {
			return nil, m.hookErr
		}
		if tail > 0 {
			tail = 0
			cf, stopped := m.tr.CheckFault()
			stopped = stopped && cf.Kind == uc.CheckStopped
			if stopped {
				m.tr.ClearCheckFault()
			}
			m.tr.SetExactStop(0)
			if err := m.tr.SetExactPC(false, 0, 0); err != nil {
				return nil, err
			}
			if stopped {
				m.tr.SetInsns(m.cfg.MaxInsns)
				if err := m.eng.RegWrite(uc.RegPC, uint64(cf.PC)|1); err != nil {
					return nil, err
				}
				return nil, &NoFaultError{Reason: limitReason(m.cfg.MaxInsns, m.cfg.MaxInsns), Insns: m.cfg.MaxInsns, PC: cf.PC}
			}
		}
		if m.semihost.exited {
			cur := m.reg(uc.RegPC)
			return nil, &NoFaultError{Reason: m.semihost.reason, Insns: m.tr.Insns(), PC: cur}
		}
		if ef := m.entryFault; ef != nil {
			// An interrupt's or SVCall's entry stacking faulted (the
			// harness is already at the derived exception's handler, or
			// locked up).
			m.entryFault = nil
			res, err := m.entryFaultResult(ef)
			if err == nil && m.cfg.RunHandler && !res.Lockup {
				res.Handler, err = m.runHandler(ctx, deadline)
			}
			return res, err
		}
		f, ok, err := m.classify(startErr, left)
		if err != nil {
			return nil, err
		}
		if ok && f.pc&^1 == returnAddr&^1 && len(m.active) == 0 {
			// A branch to LR's reset value 0xFFFFFFFF: the entry function
			// returned (B1.4.7).
			what := "the reset handler"
			if m.cfg.Call != "" {
				what = m.cfg.Call
			}
			return nil, &NoFaultError{Reason: what + " returned", Insns: m.tr.Insns(), PC: f.pc}
		}
		if ok {
			res, err := m.takeFault(f)
			if err == nil && m.cfg.RunHandler && !res.Lockup {
				res.Handler, err = m.runHandler(ctx, deadline)
			}
			return res, err
		}
		cur, err := m.eng.RegRead(uc.RegPC)
		if err != nil {
			return nil, err
		}
		if m.mainAddr != 0 && !m.setsDone && uint32(cur) == m.mainAddr {
			m.setsDone = true
			if err := m.applySets(); err != nil {
				return nil, err
			}
			pc = cur | 1
			continue
		}
		if m.tr.EntryHit() {
			// The block hook stopped before the first allocator entry
			// (pretranslate.go); resume at that block.
			if err := m.allocatorEntry(); err != nil {
				return nil, err
			}
			pc = cur | 1
			if a, _ := m.tr.Block(); a != 0 {
				pc = uint64(a) | 1
			}
			continue
		}
		if m.tr.BudgetHit() {
			// The block hook stopped before a block that would cross
			// the limit; Unicorn's PC may still name an earlier block
			// (docs/unicorn.md, trap 2).
			pc = cur | 1
			if a, _ := m.tr.Block(); a != 0 {
				pc = uint64(a) | 1
			}
			if m.tr.Insns()+m.tr.BudgetLeft() == m.cfg.MaxInsns {
				tail = m.tr.BudgetLeft()
			}
			continue
		}
		if uint32(cur) == returnAddr {
			what := "the reset handler"
			if m.cfg.Call != "" {
				what = m.cfg.Call
			}
			return nil, &NoFaultError{Reason: what + " returned", Insns: m.tr.Insns(), PC: uint32(cur)}
		}
		// Unicorn's own timeout, or a stop we did not ask for.
		pc = cur | 1
		if time.Until(deadline) > 0 {
			return nil, fmt.Errorf("emulation stopped unexpectedly at pc=%#08x", cur)
		}
	}
}

// fault is a synchronous fault found by the harness (B1.5.14).
type fault struct {
	exc   int    // MemManage, BusFault, UsageFault or HardFault
	cfsr  uint32 // CFSR bits
	hfsr  uint32 // HFSR bits other than FORCED (e.g. DEBUGEVT)
	addr  uint32 // MMFAR/BFAR when cfsr has MMARVALID/BFARVALID
	pc    uint32 // the return address to stack
	armPC bool   // EPSR.T was clear (INVSTATE): keep it clear in the frame
	// it is the IT state (ITSTATE) of the faulting instruction, stacked in
	// the xPSR's IT bits; Unicorn's own copy is only current at block
	// boundaries, so a fault inside an IT block needs it (defect 7c).
	it    uint8
	about string
}

// classify turns how uc_emu_start ended into a fault, if it was one.
func (m *machine) classify(startErr error, left time.Duration) (fault, bool, error) {
	if cf, ok := m.tr.CheckFault(); ok {
		f, err := m.checkFault(cf, left)
		return f, err == nil, err
	}
	if pc, ok := m.tr.DivideFault(); ok {
		return fault{exc: excUsageFault, cfsr: cfsrDIVBYZERO, pc: pc, about: "integer divide by zero with CCR.DIV_0_TRP set"}, true, nil
	}
	if m.intrValid {
		pc := m.reg(uc.RegPC)
		switch m.intr {
		case uc.IntrPrefetchAbort:
			return fault{exc: excMemManage, cfsr: cfsrIACCVIOL, pc: pc, about: fmt.Sprintf("instruction fetch from execute-never address %#08x", pc)}, true, nil
		case uc.IntrDataAbort, uc.IntrUnaligned:
			return fault{exc: excUsageFault, cfsr: cfsrUNALIGNED, pc: pc, about: "unaligned access"}, true, nil
		case uc.IntrUDEF:
			return fault{exc: excUsageFault, cfsr: cfsrUNDEFINSTR, pc: pc, about: "undefined instruction"}, true, nil
		case uc.IntrNOCP:
			return fault{exc: excUsageFault, cfsr: cfsrNOCP, pc: pc, about: "coprocessor access with the coprocessor disabled"}, true, nil
		case uc.IntrINVSTATE:
			return fault{exc: excUsageFault, cfsr: cfsrINVSTATE, pc: pc, about: "invalid EPSR state"}, true, nil
		case uc.IntrBKPT:
			// No debugger attached: BKPT escalates to HardFault (C1.5).
			return fault{exc: excHardFault, hfsr: hfsrDEBUGEVT, pc: pc, about: "BKPT with no debugger attached"}, true, nil
		}
		return fault{}, false, fmt.Errorf("unhandled CPU exception %d at pc=%#08x", m.intr, pc)
	}
	var ue uc.Error
	if !errors.As(startErr, &ue) {
		if startErr != nil {
			return fault{}, false, startErr
		}
		return fault{}, false, nil
	}
	switch ue {
	case uc.ErrFetchUnmapped, uc.ErrFetchProt:
		pc := m.reg(uc.RegPC)
		if m.invalid.valid {
			pc = m.invalid.addr
		}
		if m.mpuDenied(pc, mpuFetch) {
			return fault{exc: excMemManage, cfsr: cfsrIACCVIOL, pc: pc, about: fmt.Sprintf("instruction fetch from %#08x denied by the MPU (execute-never or no access)", pc)}, true, nil
		}
		return fault{exc: excBusFault, cfsr: cfsrIBUSERR, pc: pc, about: fmt.Sprintf("instruction fetch from %#08x failed (%v)", pc, ue)}, true, nil
	case uc.ErrReadUnmapped, uc.ErrWriteUnmapped, uc.ErrReadProt, uc.ErrWriteProt:
		inv := m.invalid
		pc, it, err := m.exactFaultPC(ue, left)
		if err != nil {
			return fault{}, false, err
		}
		if m.invalid.valid {
			inv = m.invalid
		}
		what := "read from"
		if ue == uc.ErrWriteUnmapped || ue == uc.ErrWriteProt {
			what = "write to"
		}
		kind := mpuRead
		if what == "write to" {
			kind = mpuWrite
		}
		if m.mpuDenied(inv.addr, kind) {
			return fault{exc: excMemManage, cfsr: cfsrDACCVIOL | cfsrMMARVALID, addr: inv.addr, pc: pc, it: it,
				about: fmt.Sprintf("MPU access violation: %d-byte %s %#08x", inv.size, what, inv.addr)}, true, nil
		}
		if ue == uc.ErrWriteUnmapped && m.cfg.ImpreciseStores {
			f, err := m.impreciseStore(pc, inv, left)
			return f, err == nil, err
		}
		return fault{exc: excBusFault, cfsr: cfsrPRECISERR | cfsrBFARVALID, addr: inv.addr, pc: pc, it: it,
			about: fmt.Sprintf("precise data bus error: %d-byte %s %#08x (%v)", inv.size, what, inv.addr, ue)}, true, nil
	case uc.ErrReadUnaligned, uc.ErrWriteUnaligned:
		pc, it, err := m.exactFaultPC(ue, left)
		if err != nil {
			return fault{}, false, err
		}
		return fault{exc: excUsageFault, cfsr: cfsrUNALIGNED, pc: pc, it: it, about: "unaligned access"}, true, nil
	case uc.ErrInsnInvalid:
		pc := m.reg(uc.RegPC)
		xpsr := m.reg(uc.RegXPSR)
		if xpsr&(1<<24) == 0 {
			if m.mpuDenied(pc, mpuFetch) {
				// The MPU fetch check comes before EPSR.T (QEMU agrees).
				return fault{exc: excMemManage, cfsr: cfsrIACCVIOL, pc: pc, armPC: true,
					about: fmt.Sprintf("branch to %#08x, an address the MPU makes execute-never (e.g. a call through a NULL function pointer)", pc)}, true, nil
			}
			return fault{exc: excUsageFault, cfsr: cfsrINVSTATE, pc: pc, armPC: true,
				about: fmt.Sprintf("branch to %#08x with the Thumb bit clear (EPSR.T=0), e.g. a call through a NULL or bad function pointer", pc)}, true, nil
		}
		return fault{exc: excUsageFault, cfsr: cfsrUNDEFINSTR, pc: pc, about: "undefined instruction"}, true, nil
	}
	return fault{}, false, startErr
}

// execPriority is the current execution priority (B1.5.4): the highest
// priority (lowest number) of the active exceptions and the boosts from
// PRIMASK, FAULTMASK and BASEPRI; 256 when nothing boosts it.
func (m *machine) execPriority() int {
	p := 256
	for _, e := range m.active {
		p = min(p, m.scs.priority(e))
	}
	if !m.cpu.v6m {
		if bp := int(m.sysReg(uc.RegBASEPRI) & 0xff); bp != 0 {
			p = min(p, bp)
		}
		if m.sysReg(uc.RegFAULTMSK)&1 != 0 {
			p = min(p, -1)
		}
	}
	if m.sysReg(uc.RegPRIMASK)&1 != 0 {
		p = min(p, 0)
	}
	return p
}

var excNames = map[int]string{
	excNMI: "NMI", excHardFault: "HardFault", excMemManage: "MemManage",
	excBusFault: "BusFault", excUsageFault: "UsageFault", excSVCall: "SVCall",
	excPendSV: "PendSV", excSysTick: "SysTick",
}

// takeFault escalates the fault as the architecture does (B1.5.15): on
// ARMv6-M every fault is a HardFault; on v7-M/v8-M a configurable fault is
// taken only when SHCSR enables it and its priority is above the current
// execution priority, else it becomes a HardFault with HFSR.FORCED; a fault
// when the execution priority is already -1 or higher is a lockup. It
// records the fault in the SCB, synthesizes the exception entry and
// returns the result.
func (m *machine) takeFault(f fault) (*Result, error) {
	exec := m.execPriority()
	target, forced := f.exc, false
	if m.cpu.v6m {
		forced = target != excHardFault
		target = excHardFault
	} else if target != excHardFault {
		if m.scs.SHCSR&shcsrEnable[target] == 0 || m.scs.priority(target) >= exec {
			target, forced = excHardFault, true
		}
	}
	cause := Cause{Fault: excNames[f.exc], Bits: bitNames(f.cfsr, f.hfsr), PC: f.pc, Forced: forced, Detail: f.about}
	if f.cfsr&(cfsrBFARVALID|cfsrMMARVALID) != 0 {
		cause.Address, cause.HasAddress = f.addr, true
	}
	if forced {
		cause.Bits = append(cause.Bits, "FORCED")
	}
	if !m.cpu.v6m {
		m.scs.CFSR |= f.cfsr
		if f.cfsr&cfsrBFARVALID != 0 {
			m.scs.BFAR = f.addr
		}
		if f.cfsr&cfsrMMARVALID != 0 {
			m.scs.MMFAR = f.addr
		}
		m.scs.HFSR |= f.hfsr
		if forced {
			m.scs.HFSR |= hfsrFORCED
		}
	}
	if target == excHardFault && exec < 0 {
		// Lockup (B1.5.15): no handler can run.
		if err := m.eng.RegWrite(uc.RegPC, uint64(f.pc)|1); err != nil {
			return nil, err
		}
		res, err := m.result(cause)
		if err != nil {
			return nil, err
		}
		res.Lockup = true
		return res, nil
	}
	thumb := uint64(1)
	if f.armPC {
		thumb = 0
	}
	if err := m.eng.RegWrite(uc.RegPC, uint64(f.pc)|thumb); err != nil {
		return nil, err
	}
	if f.cfsr&(cfsrIACCVIOL|cfsrIBUSERR|cfsrINVSTATE) != 0 {
		// A call to an address that cannot be executed: the call
		// happened (LR holds its return address), its target's block
		// never started (issue 13, defect 7a).
		m.tr.SettleFetch(f.pc)
	}
	m.faultIT, m.faultITSet = f.it, true
	ef, err := m.enterException(target, f.pc)
	m.faultITSet = false
	if err != nil {
		return nil, err
	}
	if m.hookErr != nil {
		return nil, m.hookErr
	}
	if ef != nil {
		ef.addTo(&cause)
		if ef.taken == 0 {
			if err := m.eng.RegWrite(uc.RegPC, uint64(f.pc)|thumb); err != nil {
				return nil, err
			}
			res, err := m.result(cause)
			if err != nil {
				return nil, err
			}
			res.Lockup = true
			return res, nil
		}
	}
	return m.result(cause)
}

func bitNames(cfsr, hfsr uint32) []string {
	names := [32]string{
		0: "IACCVIOL", 1: "DACCVIOL", 3: "MUNSTKERR", 4: "MSTKERR", 5: "MLSPERR", 7: "MMARVALID",
		8: "IBUSERR", 9: "PRECISERR", 10: "IMPRECISERR", 11: "UNSTKERR", 12: "STKERR", 13: "LSPERR", 15: "BFARVALID",
		16: "UNDEFINSTR", 17: "INVSTATE", 18: "INVPC", 19: "NOCP", 20: "STKOF", 24: "UNALIGNED", 25: "DIVBYZERO",
	}
	var out []string
	for i := 0; i < 32; i++ {
		if cfsr&(1<<i) != 0 && names[i] != "" {
			out = append(out, names[i])
		}
	}
	if hfsr&hfsrVECTTBL != 0 {
		out = append(out, "VECTTBL")
	}
	if hfsr&hfsrDEBUGEVT != 0 {
		out = append(out, "DEBUGEVT")
	}
	return out
}

type semihostState struct {
	exited   bool
	exitCode int
	reason   string
}

// limitReason says that the instruction limit stopped the run. The run
// stops exactly at the limit: a block that would cross it does not start,
// and the instructions of it that fit run one by one. Only when an
// exception taken at that point diverted the last instructions can the
// count pass the limit, and then the reason says so.
func limitReason(limit, ran uint64) string {
	if ran <= limit {
		return fmt.Sprintf("instruction limit of %d reached", limit)
	}
	return fmt.Sprintf("instruction limit of %d reached; an exception taken at the limit ran its handler's first block to its end", limit)
}
