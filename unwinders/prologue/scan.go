package prologue

import (
	"fmt"
	"sort"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// Tracked save slots: r4-r11, LR, s16-s31.
const (
	slotLR   = 8
	slotS16  = 9
	numSlots = slotS16 + 16
)

// Core register bits (bit n = rn).
const (
	bitR7       = 1 << 7
	bitSP       = 1 << 13
	bitLR       = 1 << 14
	bitPC       = 1 << 15
	callerSaved = 0x100F // r0-r3, r12
	calleeSaved = 0x0FF0 // r4-r11
)

// slotOf maps a register to its save-slot index.
func slotOf(r unwinders.Reg) (int, bool) {
	switch {
	case r >= unwinders.R4 && r <= unwinders.R11:
		return int(r - unwinders.R4), true
	case r == unwinders.LR:
		return slotLR, true
	case r >= unwinders.S(16) && r <= unwinders.S(31):
		return slotS16 + int(r-unwinders.S(16)), true
	}
	return 0, false
}

// regOfSlot is the inverse of slotOf.
func regOfSlot(i int) unwinders.Reg {
	switch {
	case i < slotLR:
		return unwinders.R4 + unwinders.Reg(i)
	case i == slotLR:
		return unwinders.LR
	}
	return unwinders.S(16 + i - slotS16)
}

// state is the abstract machine state of the sweep at one instruction. All
// stack offsets are relative to the SP at function entry (the CFA).
type state struct {
	depth   int32 // SP - CFA, valid when depthOK
	depthOK bool
	slot    [numSlots]int32 // where each register's caller value is stored
	saved   uint32          // bit i: slot[i] is valid
	written uint16          // core registers written along the path (bit n = rn)
	konst   [16]uint32      // constants held by core registers
	konstOK uint16
	rel     [16]int32 // registers holding CFA + rel
	relOK   uint16

	branched bool // a branch was stepped over or the state came from a branch
	assumed  bool // resumed after an unconditional transfer with no known path
	conflict bool // a join saw two different depths
	unknown  bool // an SP change was not understood
	resumeAt int32
}

func (s *state) clobber(mask uint16) {
	mask &^= bitPC
	s.written |= mask
	s.konstOK &^= mask
	s.relOK &^= mask
}

func (s *state) setKonst(r unwinders.Reg, v uint32) {
	if r < 16 {
		s.konst[r], s.konstOK = v, s.konstOK|1<<r
	}
}

func (s *state) getKonst(r unwinders.Reg) (uint32, bool) {
	if r < 16 && s.konstOK&(1<<r) != 0 {
		return s.konst[r], true
	}
	return 0, false
}

func (s *state) setRel(r unwinders.Reg, v int32) {
	if r < 16 && r != unwinders.SP && r != unwinders.PC {
		s.rel[r], s.relOK = v, s.relOK|1<<r
	}
}

func (s *state) getRel(r unwinders.Reg) (int32, bool) {
	if r == unwinders.SP {
		return s.depth, s.depthOK
	}
	if r < 16 && s.relOK&(1<<r) != 0 {
		return s.rel[r], true
	}
	return 0, false
}

// save records that r's caller value is at CFA+off, unless r was written
// before (then the stored value is not the caller's) or already saved.
func (s *state) save(r unwinders.Reg, off int32) {
	i, ok := slotOf(r)
	if !ok || s.saved&(1<<i) != 0 {
		return
	}
	if r < 16 && s.written&(1<<r) != 0 {
		return
	}
	s.slot[i] = off
	s.saved |= 1 << i
}

// restore accounts for a load of r from CFA+off: if that is r's save slot,
// r holds its caller value again.
func (s *state) restore(r unwinders.Reg, off int32) {
	i, ok := slotOf(r)
	if !ok || s.saved&(1<<i) == 0 || s.slot[i] != off {
		if r < 16 {
			s.clobber(1 << r)
		}
		return
	}
	s.saved &^= 1 << i
	if r < 16 {
		s.written &^= 1 << r
	}
}

// scanner sweeps one function from its start to a stop address.
type scanner struct {
	t      *unwinders.Target
	fn     unwinders.Function
	start  uint32
	stop   uint32
	code   []byte
	max    int
	insns  int
	dead   bool
	last   thumb.Inst
	body   state
	bodyOK bool
	// targets holds the state recorded by branches to an address.
	targets map[uint32]state
	// lits holds the words known to be literal-pool data.
	lits map[uint32]bool
	// skip holds ranges known to be TBB/TBH tables: start -> end.
	skip map[uint32]uint32
}

// forward runs the sweep and turns its final state into an Analysis.
func forward(t *unwinders.Target, f *unwinders.Frame, fn unwinders.Function, max int) (*Analysis, error) {
	stop := f.PC
	if fn.End > fn.Start && stop > fn.End {
		return nil, declined(ErrNoFunction, "PC 0x%08x is past the end of %s (0x%08x)", f.PC, fnName(fn), fn.End)
	}
	if uint64(stop-fn.Start) > uint64(max)*4 {
		return nil, declined(ErrTooFar, "PC 0x%08x is %d bytes into %s, more than %d instructions", f.PC, stop-fn.Start, fnName(fn), max)
	}
	s := &scanner{t: t, fn: fn, start: fn.Start, stop: stop, max: max}
	s.code = make([]byte, stop-fn.Start)
	if err := t.Mem.Read(fn.Start, s.code); err != nil {
		return nil, memError("code of "+fnName(fn), fn.Start, err)
	}
	st, err := s.run()
	if err != nil {
		return nil, err
	}
	if f.ReturnAddress && !s.last.IsCall() {
		return nil, declined(ErrOutOfStep, "the instruction before return address 0x%08x decodes as %v, not a call", f.PC, &s.last)
	}
	return s.finish(&st, f)
}

// run sweeps [start, stop) and returns the state at stop.
func (s *scanner) run() (state, error) {
	st := state{depthOK: true}
	var it thumb.ITState
	addr := s.start
	for {
		// Arriving at addr: join with the states branches recorded for it,
		// or, after an unconditional transfer, pick the state to resume
		// with.
		if ts, ok := s.targets[addr]; ok {
			if s.dead {
				st = ts
				s.dead = false
				it = 0
			} else if ts.depthOK != st.depthOK || ts.depth != st.depth {
				st.conflict = true
			}
			st.branched = true
		} else if s.dead && addr < s.stop {
			if s.lits[addr] {
				addr += 4
				continue
			}
			if end, ok := s.skip[addr]; ok && end > addr {
				addr = end
				continue
			}
			s.resume(&st)
			it = 0
		} else if s.dead {
			s.resume(&st)
		}
		if addr >= s.stop {
			break
		}
		if s.insns >= s.max {
			return st, declined(ErrTooFar, "more than %d instructions before 0x%08x in %s", s.max, s.stop, fnName(s.fn))
		}
		s.insns++
		in, err := thumb.Decode(s.code[addr-s.start:], addr)
		if err != nil {
			return st, declined(ErrOutOfStep, "the instruction at 0x%08x runs past the PC 0x%08x", addr, s.stop)
		}
		it.Apply(&in)
		s.exec(&st, &in)
		s.last = in
		addr += uint32(in.Len)
	}
	if addr != s.stop {
		return st, declined(ErrOutOfStep, "skipping data at 0x%08x stepped over the PC 0x%08x", addr, s.stop)
	}
	return st, nil
}

// resume picks the state for code after an unconditional transfer that no
// earlier branch targets: the last call or branch site's state, assumed.
func (s *scanner) resume(st *state) {
	s.dead = false
	if s.bodyOK {
		*st = s.body
		st.resumeAt = st.depth
	} else {
		*st = state{written: st.written, unknown: true}
	}
	st.assumed = true
	st.branched = true
}

// record stores the state for a branch target inside the scanned range.
func (s *scanner) record(target uint32, st *state) {
	if target < s.start || target > s.stop || target&1 != 0 {
		return
	}
	if s.targets == nil {
		s.targets = map[uint32]state{}
	}
	if old, ok := s.targets[target]; ok {
		if old.depthOK != st.depthOK || old.depth != st.depth {
			old.conflict = true
			s.targets[target] = old
		}
		return
	}
	s.targets[target] = *st
}

// exec applies one instruction to st.
func (s *scanner) exec(st *state, in *thumb.Inst) {
	conditional := in.IsConditional()
	switch {
	case in.IsCall():
		st.clobber(in.Writes | callerSaved | bitLR)
		s.body, s.bodyOK = *st, true
		return
	case in.WritesPC():
		s.branch(st, in, conditional)
		return
	}
	if in.Op == thumb.OpLDRLit {
		if s.lits == nil {
			s.lits = map[uint32]bool{}
		}
		s.lits[in.Target&^3] = true
	}
	// The value the destination register will hold, computed before the
	// instruction's writes clobber its sources.
	var (
		k      uint32
		kOK    bool
		rel    int32
		relOK  bool
		target = in.Rd
	)
	if !conditional {
		k, kOK, rel, relOK = s.value(st, in)
	}
	if in.WritesSP() {
		st.clobber(in.Writes &^ bitSP)
		if conditional {
			st.depthOK, st.unknown = false, true
		} else {
			s.moveSP(st, in)
		}
	} else {
		st.clobber(in.Writes)
	}
	if target == unwinders.SP {
		return
	}
	if kOK {
		st.setKonst(target, k)
	}
	if relOK {
		st.setRel(target, rel)
	}
}

// value computes what a data-processing instruction puts in Rd: a constant
// or an SP-relative value.
func (s *scanner) value(st *state, in *thumb.Inst) (k uint32, kOK bool, rel int32, relOK bool) {
	imm := in.Flags&thumb.FlagImm != 0
	switch in.Op {
	case thumb.OpMOVW:
		return uint32(in.Imm), true, 0, false
	case thumb.OpMOVT:
		if v, ok := st.getKonst(in.Rd); ok {
			return v&0xffff | uint32(in.Imm)<<16, true, 0, false
		}
	case thumb.OpMVN:
		if imm {
			return ^uint32(in.Imm), true, 0, false
		}
	case thumb.OpADR:
		return in.Target, true, 0, false
	case thumb.OpLDRLit:
		if v, err := unwinders.ReadU32(s.t.Mem, in.Target); err == nil {
			return v, true, 0, false
		}
	case thumb.OpMOV:
		if imm {
			return uint32(in.Imm), true, 0, false
		}
		if in.Shift != thumb.LSL || in.ShiftN != 0 {
			if v, ok := st.getKonst(in.Rm); ok && in.Shift == thumb.LSL {
				return v << in.ShiftN, true, 0, false
			}
			return
		}
		if v, ok := st.getKonst(in.Rm); ok {
			return v, true, 0, false
		}
		if v, ok := st.getRel(in.Rm); ok {
			return 0, false, v, true
		}
	case thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW:
		var operand uint32
		if imm {
			operand = uint32(in.Imm)
		} else if v, ok := st.getKonst(in.Rm); ok && in.Shift == thumb.LSL {
			operand = v << in.ShiftN
		} else {
			return
		}
		if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
			operand = -operand
		}
		if v, ok := st.getKonst(in.Rn); ok {
			return v + operand, true, 0, false
		}
		if v, ok := st.getRel(in.Rn); ok {
			return 0, false, v + int32(operand), true
		}
	}
	return
}

// moveSP applies an unconditional write of SP.
func (s *scanner) moveSP(st *state, in *thumb.Inst) {
	if d, ok := in.SPDelta(); ok {
		if !st.depthOK {
			return
		}
		s.transfers(st, in, d)
		st.depth += d
		return
	}
	imm := in.Flags&thumb.FlagImm != 0
	switch in.Op {
	case thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW:
		if in.Rd != unwinders.SP {
			break
		}
		var operand uint32
		if imm {
			operand = uint32(in.Imm)
		} else if v, ok := st.getKonst(in.Rm); ok && in.Shift == thumb.LSL {
			operand = v << in.ShiftN
		} else {
			break
		}
		if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
			operand = -operand
		}
		if base, ok := st.getRel(in.Rn); ok {
			st.depth, st.depthOK = base+int32(operand), true
			return
		}
	case thumb.OpMOV:
		if in.Rd == unwinders.SP && !imm && in.Shift == thumb.LSL && in.ShiftN == 0 {
			if v, ok := st.getRel(in.Rm); ok {
				st.depth, st.depthOK = v, true
				return
			}
		}
	}
	st.depthOK, st.unknown = false, true
}

// transfers records the saves and restores of an SP-writeback store or
// load whose SP change d is known; st.depth is the SP before it.
func (s *scanner) transfers(st *state, in *thumb.Inst, d int32) {
	switch in.Op {
	case thumb.OpPUSH:
		off := st.depth + d
		for r := 0; r < 16; r++ {
			if in.RegList&(1<<r) != 0 {
				st.save(unwinders.Reg(r), off)
				off += 4
			}
		}
	case thumb.OpPOP:
		off := st.depth
		for r := 0; r < 16; r++ {
			if in.RegList&(1<<r) != 0 {
				st.restore(unwinders.Reg(r), off)
				off += 4
			}
		}
	case thumb.OpSTR, thumb.OpSTRD:
		at := st.depth
		if in.Index == thumb.PreIndex {
			at += in.Imm
		}
		st.save(in.Rd, at)
		if in.Op == thumb.OpSTRD {
			st.save(in.Rt2, at+4)
		}
	case thumb.OpLDR, thumb.OpLDRD:
		at := st.depth
		if in.Index == thumb.PreIndex {
			at += in.Imm
		}
		st.restore(in.Rd, at)
		if in.Op == thumb.OpLDRD {
			st.restore(in.Rt2, at+4)
		}
	case thumb.OpVPUSH, thumb.OpVPOP:
		off := st.depth
		if in.Op == thumb.OpVPUSH {
			off += d
		}
		for k := 0; k < int(in.VCount); k++ {
			regs := []int{int(in.VFirst) + k}
			if in.VDouble {
				regs = []int{2 * (int(in.VFirst) + k), 2*(int(in.VFirst)+k) + 1}
			}
			for _, n := range regs {
				if n < 32 {
					if in.Op == thumb.OpVPUSH {
						st.save(unwinders.S(n), off)
					} else {
						st.restore(unwinders.S(n), off)
					}
				}
				off += 4
			}
		}
	}
}

// branch handles an instruction that writes PC (not a call).
func (s *scanner) branch(st *state, in *thumb.Inst, conditional bool) {
	switch in.Op {
	case thumb.OpB, thumb.OpCBZ, thumb.OpCBNZ:
		s.record(in.Target, st)
	case thumb.OpTBB, thumb.OpTBH:
		if in.Rn == unwinders.PC {
			s.table(st, in)
		}
	}
	if !in.IsReturn() {
		s.body, s.bodyOK = *st, true
	}
	if conditional {
		st.branched = true
		// A conditional load into PC other than a return may also write
		// other registers on the taken path only; the fall-through keeps
		// them.
		return
	}
	st.branched = true
	s.dead = true
}

// table records the targets of a TBB/TBH jump table that follows the
// instruction (ARMv7-M ARM A7.7 TBB, TBH: target = PC + 2*entry, PC = the
// instruction's address + 4) and marks the table as data. The table ends
// where the lowest target begins; at most 256 entries are read.
func (s *scanner) table(st *state, in *thumb.Inst) {
	base := in.Addr + 4
	size := uint32(1)
	if in.Op == thumb.OpTBH {
		size = 2
	}
	end := s.stop
	var p uint32
	var targets []uint32
	for n := 0; n < 256 && base+p < end && base+p+size <= s.stop; n++ {
		off := base + p - s.start
		e := uint32(s.code[off])
		if size == 2 {
			e |= uint32(s.code[off+1]) << 8
		}
		tgt := base + 2*e
		targets = append(targets, tgt)
		if tgt < end && tgt > base {
			end = tgt
		}
		p += size
	}
	tableEnd := (base + p + 1) &^ 1
	for _, tgt := range targets {
		if tgt >= tableEnd { // an entry pointing into the table is padding or garbage
			s.record(tgt, st)
		}
	}
	if s.skip == nil {
		s.skip = map[uint32]uint32{}
	}
	s.skip[base] = tableEnd
}

// finish turns the state at the PC into an Analysis.
func (s *scanner) finish(st *state, f *unwinders.Frame) (*Analysis, error) {
	a := &Analysis{Func: s.fn, FrameReg: NoFrameReg, Insns: s.insns}
	// A frame register: a register holding CFA+rel whose value the frame
	// knows. r7 first (the Thumb frame pointer), then r11, then any other.
	fpCFA, fpReg, fpOK := uint32(0), NoFrameReg, false
	for _, r := range []unwinders.Reg{unwinders.R7, unwinders.R11, unwinders.R4, unwinders.R5, unwinders.R6, unwinders.R8, unwinders.R9, unwinders.R10, unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12} {
		rel, ok := st.getRel(r)
		if !ok {
			continue
		}
		v, known := f.Regs.Get(r)
		if !known {
			continue
		}
		fpCFA, fpReg, fpOK = v-uint32(rel), r, true
		break
	}
	var cfa uint32
	switch {
	case st.depthOK:
		if st.depth > 0 {
			return nil, declined(ErrFrameSize, "SP is %d bytes above the entry SP at 0x%08x in %s", st.depth, f.PC, fnName(s.fn))
		}
		if st.assumed && st.depth != st.resumeAt && !fpOK {
			return nil, declined(ErrFrameSize, "an SP change of %d bytes at 0x%08x is not balanced after a branch", st.depth-st.resumeAt, f.PC)
		}
		cfa = f.SP - uint32(st.depth)
		if cfa < f.SP {
			return nil, declined(ErrFrameSize, "the CFA wraps around the address space")
		}
		if fpOK && fpCFA != cfa {
			// SP tracking is sound unless the depth was assumed or two
			// paths disagreed; the frame register may be stale (a walk
			// that lost a restored r7) or reused. Prefer SP tracking, and
			// never a CFA below SP.
			a.Notes = append(a.Notes, fmt.Sprintf("SP tracking gives CFA 0x%08x, %v = 0x%08x gives 0x%08x", cfa, fpReg, f.Regs.Value(fpReg), fpCFA))
			if (st.assumed || st.conflict) && fpCFA >= f.SP {
				cfa, a.FrameReg = fpCFA, fpReg
			}
			st.conflict = true
		}
	case fpOK:
		if fpCFA < f.SP {
			return nil, declined(ErrFrameSize, "%v = 0x%08x puts the CFA below SP", fpReg, f.Regs.Value(fpReg))
		}
		cfa, a.FrameReg = fpCFA, fpReg
		a.Notes = append(a.Notes, fmt.Sprintf("CFA from %v: SP moved by an amount the code does not reveal", fpReg))
	default:
		return nil, declined(ErrFrameSize, "SP moved by an amount the code of %s does not reveal before 0x%08x, and no frame register is known", fnName(s.fn), f.PC)
	}
	a.CFA, a.Size = cfa, cfa-f.SP
	if st.assumed {
		a.Notes = append(a.Notes, "the path to the PC crosses an unconditional branch: the stack depth there was assumed from the last call or branch site")
	}
	a.Straight = !st.branched && !st.assumed && !st.conflict && !st.unknown && a.FrameReg == NoFrameReg

	switch {
	case st.saved&(1<<slotLR) != 0:
		addr := cfa + uint32(st.slot[slotLR])
		v, err := unwinders.ReadU32(s.t.Mem, addr)
		if err != nil {
			return nil, memError("LR's save slot", addr, err)
		}
		a.Mode, a.ReturnAddress, a.ReturnSlot = ModeFrame, v, addr
	case st.written&bitLR == 0 && !f.ReturnAddress:
		lr, ok := f.Regs.Get(unwinders.LR)
		if !ok {
			return nil, declined(ErrNoReturnAddress, "%s has not saved LR at 0x%08x and LR is not known", fnName(s.fn), f.PC)
		}
		a.Mode, a.ReturnAddress = ModeLeaf, lr
	default:
		return nil, declined(ErrNoReturnAddress, "LR was overwritten without being saved before 0x%08x in %s", f.PC, fnName(s.fn))
	}
	for i := 0; i < numSlots; i++ {
		if i == slotLR || st.saved&(1<<i) == 0 {
			continue
		}
		addr := cfa + uint32(st.slot[i])
		v, err := unwinders.ReadU32(s.t.Mem, addr)
		r := regOfSlot(i)
		if err != nil {
			a.Clobbered = append(a.Clobbered, r)
			a.Notes = append(a.Notes, fmt.Sprintf("%v's save slot 0x%08x is not in the dump", r, addr))
			continue
		}
		a.Saved = append(a.Saved, Saved{Reg: r, Addr: addr, Value: v})
	}
	for r := unwinders.R4; r <= unwinders.R11; r++ {
		i, _ := slotOf(r)
		if st.saved&(1<<i) == 0 && st.written&(1<<r) != 0 {
			a.Clobbered = append(a.Clobbered, r)
		}
	}
	sort.Slice(a.Saved, func(i, j int) bool { return a.Saved[i].Reg < a.Saved[j].Reg })
	return a, nil
}
