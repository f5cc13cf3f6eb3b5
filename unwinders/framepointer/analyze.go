package framepointer

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// Limits that keep the analysis of hostile code bounded.
const (
	// maxFuncBytes bounds the code analysed per function: longer
	// functions are analysed up to this size only.
	maxFuncBytes = 0x4000
	// maxTableEntries bounds the entries read from a TBB/TBH table.
	maxTableEntries = 1024
	// visitsPerInst bounds the data-flow iterations: every field of a
	// state can only lose precision, so a fixed point is reached long
	// before this many visits per instruction.
	visitsPerInst = 64
)

// r7Kind says what r7 holds at an instruction.
type r7Kind uint8

const (
	r7Unknown r7Kind = iota // overwritten with something the analysis does not track
	r7Entry                 // the caller's r7: untouched since entry, or restored
	r7Frame                 // entry SP + state.r7Off: a frame pointer
)

const (
	bitR7 = 1 << unwinders.R7
	bitSP = 1 << unwinders.SP
	bitLR = 1 << unwinders.LR
	bitPC = 1 << unwinders.PC
	// calleeSaved are the registers (besides r7) whose entry values the
	// analysis follows: r4-r6, r8-r11 (AAPCS callee-saved) and LR.
	calleeSaved = 0x0F70 | bitLR
	// callerSaved are the core registers a call may clobber (AAPCS).
	callerSaved = 0x100F
)

// state is what the analysis knows before an instruction executes. SP and
// r7 are relative to the SP at function entry (the caller's SP, the CFA).
// The zero value is "not reached". States form a lattice: meet keeps what
// two paths agree on.
type state struct {
	reached bool
	assumed bool // reached only through the assumption that unreached code is body code
	spOK    bool
	r7      r7Kind
	sp      int32
	r7Off   int32
	entry   uint16     // registers of calleeSaved still holding their entry value
	saved   uint16     // registers whose entry value is in a stack slot
	slot    [16]int32  // entry-relative address of each saved register's slot
	konst   uint16     // r0-r12 holding a known constant
	kval    [13]uint32 // the constants
}

func entryState() state {
	return state{reached: true, spOK: true, r7: r7Entry, entry: calleeSaved}
}

// framed reports whether r7 is a frame pointer with the caller's r7 saved.
func (s *state) framed() bool { return s.r7 == r7Frame && s.saved&bitR7 != 0 }

// holdsEntry reports whether register r still holds its value at entry.
func (s *state) holdsEntry(r int) bool {
	if r == int(unwinders.R7) {
		return s.r7 == r7Entry
	}
	return r < 16 && s.entry&(1<<r) != 0
}

// setReg records a write to core register r: restored says it now holds
// its entry value again (popped from its own slot).
func (s *state) setReg(r int, restored bool) {
	switch {
	case r == int(unwinders.R7):
		s.r7, s.r7Off = r7Unknown, 0
		if restored {
			s.r7 = r7Entry
		}
	case r == int(unwinders.SP):
		s.spOK, s.sp = false, 0
	case r < 16:
		s.entry &^= 1 << r
		if restored && calleeSaved&(1<<r) != 0 {
			s.entry |= 1 << r
		}
	}
	if r < 13 {
		s.konst &^= 1 << r
	}
}

// dropReleased forgets slots that lie below SP: they were popped or freed,
// and an interrupt may have overwritten them.
func (s *state) dropReleased() {
	if !s.spOK {
		return
	}
	for m := s.saved; m != 0; m &= m - 1 {
		r := bits.TrailingZeros16(m)
		if s.slot[r] < s.sp {
			s.saved &^= 1 << r
		}
	}
}

func (s *state) setConst(r unwinders.Reg, v uint32) {
	if r < 13 {
		s.konst |= 1 << r
		s.kval[r] = v
	}
}

func (s *state) constOf(r unwinders.Reg) (uint32, bool) {
	if r < 13 && s.konst&(1<<r) != 0 {
		return s.kval[r], true
	}
	return 0, false
}

// meet returns what both states agree on.
func meet(a, b state) state {
	if !a.reached {
		return b
	}
	if !b.reached {
		return a
	}
	o := state{reached: true, assumed: a.assumed || b.assumed}
	if a.spOK && b.spOK && a.sp == b.sp {
		o.spOK, o.sp = true, a.sp
	}
	if a.r7 == b.r7 && (a.r7 != r7Frame || a.r7Off == b.r7Off) {
		o.r7, o.r7Off = a.r7, a.r7Off
	}
	o.entry = a.entry & b.entry
	for m := a.saved & b.saved; m != 0; m &= m - 1 {
		r := bits.TrailingZeros16(m)
		if a.slot[r] == b.slot[r] {
			o.saved |= 1 << r
			o.slot[r] = a.slot[r]
		}
	}
	for m := a.konst & b.konst; m != 0; m &= m - 1 {
		r := bits.TrailingZeros16(m)
		if a.kval[r] == b.kval[r] {
			o.konst |= 1 << r
			o.kval[r] = a.kval[r]
		}
	}
	return o
}

// transfer returns the state after in executes unconditionally in state s.
func transfer(s state, in *thumb.Inst, m unwinders.Memory) state {
	o := s
	handled := uint16(bitPC)
	switch in.Op {
	case thumb.OpPUSH:
		handled |= bitSP
		n := int32(bits.OnesCount16(in.RegList))
		if o.spOK {
			base := o.sp - 4*n
			i := int32(0)
			for r := 0; r < 16; r++ {
				if in.RegList&(1<<r) == 0 {
					continue
				}
				if o.holdsEntry(r) && o.saved&(1<<r) == 0 {
					o.saved |= 1 << r
					o.slot[r] = base + 4*i
				}
				i++
			}
			o.sp = base
		}
	case thumb.OpPOP:
		handled |= bitSP | in.RegList
		i := int32(0)
		for r := 0; r < 16; r++ {
			if in.RegList&(1<<r) == 0 {
				continue
			}
			restored := o.spOK && o.saved&(1<<r) != 0 && o.slot[r] == o.sp+4*i
			if r != int(unwinders.SP) {
				o.setReg(r, restored)
			}
			i++
		}
		if in.RegList&bitSP != 0 {
			o.spOK = false
		} else if o.spOK {
			o.sp += 4 * i
		}
	}

	w := in.Writes &^ handled
	if w&bitSP != 0 {
		handled |= bitSP
		w &^= bitSP
		spWrite(&o, &s, in)
	}
	if w&bitR7 != 0 {
		w &^= bitR7
		r7Write(&o, &s, in)
	}
	for ; w != 0; w &= w - 1 {
		o.setReg(bits.TrailingZeros16(w), false)
	}
	if in.IsCall() {
		o.konst &^= callerSaved
		o.entry &^= bitLR
	}
	constWrite(&o, &s, in, m)
	o.dropReleased()
	return o
}

// spWrite applies a write to SP other than PUSH and POP.
func spWrite(o, s *state, in *thumb.Inst) {
	imm := in.Flags&thumb.FlagImm != 0
	add := in.Op == thumb.OpADD || in.Op == thumb.OpADDW
	sub := in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW
	if d, ok := in.SPDelta(); ok {
		if o.spOK {
			o.sp += d
		}
		return
	}
	switch {
	case in.Op == thumb.OpMOV && !imm && in.Rd == unwinders.SP && in.Rm == unwinders.R7 && in.Shift == thumb.LSL && in.ShiftN == 0 && s.r7 == r7Frame:
		o.spOK, o.sp = true, s.r7Off
	case (add || sub) && imm && in.Rd == unwinders.SP && in.Rn == unwinders.R7 && s.r7 == r7Frame:
		o.spOK, o.sp = true, s.r7Off+signed(sub, in.Imm)
	case (add || sub) && !imm && in.Rd == unwinders.SP && in.Rn == unwinders.SP && in.ShiftN == 0 && s.spOK:
		v, ok := s.constOf(in.Rm)
		o.spOK, o.sp = ok, s.sp+signed(sub, int32(v))
	default:
		o.spOK, o.sp = false, 0
	}
}

// r7Write applies a write to r7 other than POP: the frame-pointer set-ups
// (ADD r7, SP, #k; MOV r7, SP) and adjustments (ADD/SUB r7, r7, #k) keep r7
// relative to the entry SP; anything else makes it unknown.
func r7Write(o, s *state, in *thumb.Inst) {
	imm := in.Flags&thumb.FlagImm != 0
	add := in.Op == thumb.OpADD || in.Op == thumb.OpADDW
	sub := in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW
	o.setReg(int(unwinders.R7), false)
	if in.Rd != unwinders.R7 {
		return
	}
	switch {
	case in.Op == thumb.OpMOV && !imm && in.Rm == unwinders.SP && in.Shift == thumb.LSL && in.ShiftN == 0 && s.spOK:
		o.r7, o.r7Off = r7Frame, s.sp
	case (add || sub) && imm && in.Rn == unwinders.SP && s.spOK:
		o.r7, o.r7Off = r7Frame, s.sp+signed(sub, in.Imm)
	case (add || sub) && imm && in.Rn == unwinders.R7 && s.r7 == r7Frame:
		o.r7, o.r7Off = r7Frame, s.r7Off+signed(sub, in.Imm)
	}
}

// constWrite records the constants MOV, MOVW/MOVT, MVN and literal loads
// put in registers (for SUB SP, SP, Rm with a large frame).
func constWrite(o, s *state, in *thumb.Inst, m unwinders.Memory) {
	if in.Rd >= 13 || in.IsConditional() {
		return
	}
	imm := in.Flags&thumb.FlagImm != 0
	switch {
	case in.Op == thumb.OpMOV && imm:
		o.setConst(in.Rd, uint32(in.Imm))
	case in.Op == thumb.OpMOVW:
		o.setConst(in.Rd, uint32(in.Imm)&0xFFFF)
	case in.Op == thumb.OpMOVT:
		if v, ok := s.constOf(in.Rd); ok {
			o.setConst(in.Rd, v&0xFFFF|uint32(in.Imm)<<16)
		}
	case in.Op == thumb.OpMVN && imm:
		o.setConst(in.Rd, ^uint32(in.Imm))
	case in.Op == thumb.OpLDRLit && m != nil:
		if v, err := unwinders.ReadU32(m, in.Target); err == nil {
			o.setConst(in.Rd, v)
		}
	}
}

func signed(neg bool, v int32) int32 {
	if neg {
		return -v
	}
	return v
}

// analysis is the result of analysing one Thumb function: its decoded
// instructions and the state before each.
type analysis struct {
	fn       unwinders.Function
	limit    uint32 // one past the last byte decoded
	insts    []thumb.Inst
	targets  map[int][]uint32 // TBB/TBH: the table's branch targets
	index    map[uint32]int   // instruction address -> index
	states   []state
	setUp    uint32 // address of the first instruction after which r7 is a frame pointer
	hasSetUp bool
	err      error // the analysis did not converge: the states cannot be trusted
}

// analyzeThumb decodes the Thumb function fn from its start up to limit
// and runs the data-flow analysis. It fails only when the function's first
// instruction cannot be read.
func analyzeThumb(m unwinders.Memory, fn unwinders.Function, limit uint32) (*analysis, error) {
	a := &analysis{fn: fn, limit: limit, targets: map[int][]uint32{}, index: map[uint32]int{}}
	if err := a.decode(m); err != nil {
		return nil, err
	}
	a.solve(m)
	return a, nil
}

// decode decodes the function linearly, skipping the literal-pool words
// that LDR (literal) instructions name and the tables of TBB/TBH.
func (a *analysis) decode(m unwinders.Memory) error {
	data := map[uint32]bool{}
	var it thumb.ITState
	var buf [4]byte
	pc := a.fn.Start
	for pc < a.limit && pc >= a.fn.Start {
		if data[pc&^3] {
			pc = pc&^3 + 4
			it = 0
			continue
		}
		n := 2
		if err := m.Read(pc, buf[:2]); err == nil && thumb.Is32Bit(uint16(buf[0])|uint16(buf[1])<<8) {
			n = 4
		}
		err := m.Read(pc, buf[:n])
		var in thumb.Inst
		if err == nil {
			in, err = thumb.Decode(buf[:n], pc)
		}
		if err != nil {
			if len(a.insts) == 0 {
				return fmt.Errorf("the code of %s at 0x%08x: %w", funcName(a.fn), pc, err)
			}
			a.limit = pc
			break
		}
		it.Apply(&in)
		next := pc + uint32(in.Len)
		switch {
		case in.Op == thumb.OpLDRLit && in.Target > pc && in.Target < a.limit:
			data[in.Target&^3] = true
		case (in.Op == thumb.OpTBB || in.Op == thumb.OpTBH) && in.Rn == unwinders.PC:
			targets, end := readTable(m, &in, a.limit)
			a.targets[len(a.insts)] = targets
			next = end
			it = 0
		case in.IsBranch() && !in.IsReturn() && !in.IsConditional() && in.Op != thumb.OpB:
			// An indirect jump (ldr pc, [rN, rM, lsl #2] after adr rN):
			// GCC -O0 puts its table of Thumb addresses right after it.
			if targets, end := a.addressTable(m, next); len(targets) > 0 {
				a.targets[len(a.insts)] = targets
				next = end
				it = 0
			}
		}
		a.index[pc] = len(a.insts)
		a.insts = append(a.insts, in)
		if next <= pc {
			break
		}
		pc = next
	}
	return nil
}

// readTable reads the branch table of a TBB or TBH with Rn = PC (ARMv7-M
// ARM A7.7 TBB, TBH): entries of 1 or 2 bytes from PC+4, targets PC+4 +
// 2*entry. The table ends where the first target begins. It returns the
// targets and the address after the table.
func readTable(m unwinders.Memory, in *thumb.Inst, limit uint32) ([]uint32, uint32) {
	size := uint32(1)
	if in.Op == thumb.OpTBH {
		size = 2
	}
	base := in.Addr + 4
	end := limit
	var targets []uint32
	var b [2]byte
	for j := uint32(0); j < maxTableEntries && base+(j+1)*size <= end; j++ {
		if m.Read(base+j*size, b[:size]) != nil {
			break
		}
		t := base + 2*(uint32(b[0])|uint32(b[1])<<8)
		if t < base+(j+1)*size || t >= limit {
			continue // into the table itself or out of the function: not a case
		}
		targets = append(targets, t)
		end = min(end, t)
	}
	if end == limit && len(targets) == 0 {
		end = base
	}
	return targets, (end + 1) &^ 1
}

// addressTable reads the words from the first 4-aligned address at or
// after pc while they are Thumb addresses inside the function: the case
// table of an indirect jump. It returns the targets and the address after
// the table.
func (a *analysis) addressTable(m unwinders.Memory, pc uint32) ([]uint32, uint32) {
	p := (pc + 3) &^ 3
	var targets []uint32
	for len(targets) < maxTableEntries && p+4 <= a.limit && p >= pc {
		w, err := unwinders.ReadU32(m, p)
		if err != nil || w&1 == 0 || w&^1 < a.fn.Start || w&^1 >= a.limit {
			break
		}
		targets = append(targets, w&^1)
		p += 4
	}
	return targets, p
}

// solve runs the data-flow analysis to a fixed point. Code that no path
// reaches from the entry (case blocks of an untracked jump, code after a
// literal pool the decoder did not recognise) is assumed to be body code:
// it starts from the state at the nearest earlier call, marked assumed.
func (a *analysis) solve(m unwinders.Memory) {
	n := len(a.insts)
	a.states = make([]state, n)
	if n == 0 {
		return
	}
	inWork := make([]bool, n)
	var work []int
	push := func(j int, s state) {
		merged := meet(a.states[j], s)
		if merged != a.states[j] || !a.states[j].reached {
			a.states[j] = merged
			if !inWork[j] {
				inWork[j] = true
				work = append(work, j)
			}
		}
	}
	visits, maxVisits := 0, visitsPerInst*n+visitsPerInst
	drain := func() {
		for len(work) > 0 {
			if visits++; visits > maxVisits {
				a.err = fmt.Errorf("the analysis of %s did not converge", funcName(a.fn))
				work = work[:0]
				return
			}
			i := work[len(work)-1]
			work = work[:len(work)-1]
			inWork[i] = false
			a.step(i, m, push)
		}
	}
	push(0, entryState())
	drain()
	lastCall, lastFrame := -1, -1
	for i := 0; i < n; i++ {
		if !a.states[i].reached {
			push(i, a.bodyState(lastCall, lastFrame))
			drain()
		}
		if a.insts[i].IsCall() {
			lastCall = i
		}
		if a.states[i].framed() {
			lastFrame = i
		}
		if !a.hasSetUp {
			// The first instruction that leaves r7 a frame pointer.
			if out := transfer(a.states[i], &a.insts[i], m); out.framed() {
				a.setUp, a.hasSetUp = a.insts[i].Addr+uint32(a.insts[i].Len), true
			}
		}
	}
}

// step propagates the state before instruction i to its successors.
func (a *analysis) step(i int, m unwinders.Memory, push func(int, state)) {
	in := &a.insts[i]
	s := a.states[i]
	out := transfer(s, in, m)
	cond := in.IsConditional()
	to := func(addr uint32, st state) {
		if j, ok := a.index[addr]; ok {
			push(j, st)
		}
	}
	fall := true
	fallState := out
	switch {
	case in.IsCall():
	case in.Op == thumb.OpB || in.Op == thumb.OpCBZ || in.Op == thumb.OpCBNZ:
		to(in.Target, out)
		fall, fallState = cond, s
	case a.targets[i] != nil || in.Op == thumb.OpTBB || in.Op == thumb.OpTBH:
		for _, t := range a.targets[i] {
			to(t, out)
		}
		fall, fallState = cond, s
	case in.WritesPC():
		// A return or an untracked jump: the path leaves what the
		// analysis follows. When conditional, it falls through unexecuted.
		fall, fallState = cond, s
	case cond:
		fallState = meet(s, out)
	}
	if fall && i+1 < len(a.insts) {
		push(i+1, fallState)
	}
}

// bodyState is the state assumed for code no path reaches: that of the
// nearest earlier call (or else frame-pointer state), with LR and the
// constants forgotten.
func (a *analysis) bodyState(lastCall, lastFrame int) state {
	s := state{reached: true, r7: r7Unknown}
	switch {
	case lastCall >= 0:
		s = a.states[lastCall]
	case lastFrame >= 0:
		s = a.states[lastFrame]
	}
	s.reached, s.assumed = true, true
	s.entry &^= bitLR
	s.konst = 0
	return s
}

// stateAt returns the state at pc: before the instruction at pc for an
// interrupted frame, after the call that ends at pc for a return address.
func (a *analysis) stateAt(pc uint32, returnAddress bool) (state, error) {
	if a.err != nil {
		return state{}, a.err
	}
	if returnAddress {
		for _, back := range []uint32{4, 2} {
			if pc < back {
				continue
			}
			if i, ok := a.index[pc-back]; ok && a.insts[i].Len == int(back) && a.insts[i].IsCall() {
				return transfer(a.states[i], &a.insts[i], nil), nil
			}
		}
		return state{}, fmt.Errorf("%w: return address 0x%08x does not follow a call in the decoded code of %s", ErrNotDecodable, pc, funcName(a.fn))
	}
	i, ok := a.index[pc]
	if !ok {
		return state{}, fmt.Errorf("%w: 0x%08x is not an instruction boundary of the decoded code of %s", ErrNotDecodable, pc, funcName(a.fn))
	}
	return a.states[i], nil
}

// layout turns the state at pc into a Layout, or explains why r7 is not a
// frame pointer there.
func (a *analysis) layout(s state, pc uint32) (Layout, error) {
	name := funcName(a.fn)
	if s.r7 == r7Entry && s.spOK && s.entry&bitLR != 0 && s.saved&bitLR == 0 {
		// Neither r7 nor LR touched yet (a leaf, or before the
		// prologue): the return address is in LR. Only an interrupted
		// PC gets here: after a call LR no longer holds its entry value.
		l := Layout{Kind: LayoutLeaf, FP: unwinders.R7, CFA: -s.sp, Proven: !s.assumed}
		for m := s.saved &^ (bitR7 | bitLR); m != 0; m &= m - 1 {
			r := bits.TrailingZeros16(m)
			l.Saved[r] = s.slot[r] - s.sp
			l.SavedMask |= 1 << r
		}
		return l, nil
	}
	if s.r7 != r7Frame {
		switch {
		case !a.hasSetUp:
			return Layout{}, fmt.Errorf("%w: %s does not set up r7 as a frame pointer", ErrNoFramePointer, name)
		case s.r7 == r7Entry && pc < a.setUp:
			return Layout{}, fmt.Errorf("%w: 0x%08x in %s is before the frame pointer is set up (at 0x%08x)", ErrNotSetUp, pc, name, a.setUp)
		case s.r7 == r7Entry:
			return Layout{}, fmt.Errorf("%w: r7 at 0x%08x in %s still or again holds the caller's value (a path without the frame, or after the epilogue restored r7)", ErrNotSetUp, pc, name)
		}
		return Layout{}, fmt.Errorf("%w: r7 at 0x%08x in %s is not a frame pointer on every path (it is overwritten or changed in a way the analysis does not follow)", ErrNotSetUp, pc, name)
	}
	if s.saved&bitR7 == 0 {
		return Layout{}, fmt.Errorf("%w: r7 at 0x%08x in %s is SP-relative but the caller's r7 is not saved", ErrNoFramePointer, pc, name)
	}
	l := Layout{
		FP:      unwinders.R7,
		CFA:     -s.r7Off,
		SavedFP: s.slot[unwinders.R7] - s.r7Off,
		Proven:  !s.assumed,
	}
	switch {
	case s.saved&bitLR != 0:
		l.LRSaved, l.SavedLR = true, s.slot[unwinders.LR]-s.r7Off
	case s.entry&bitLR != 0:
		// A leaf that never saved LR: the return address is still there.
	default:
		return Layout{}, fmt.Errorf("%w: at 0x%08x in %s the return address is neither saved nor in LR", ErrNotSetUp, pc, name)
	}
	for m := s.saved &^ (bitR7 | bitLR); m != 0; m &= m - 1 {
		r := bits.TrailingZeros16(m)
		l.Saved[r] = s.slot[r] - s.r7Off
		l.SavedMask |= 1 << r
	}
	l.Kind = LayoutGCC
	if l.SavedFP == 0 {
		l.Kind = LayoutClang
	}
	return l, nil
}

// Analyze returns the frame layout of the Thumb or ARM function fn at pc:
// where the frame pointer points relative to the saved caller frame
// pointer, the return address and the caller's SP. returnAddress says that
// pc is a return address (the layout after the call that ends there); else
// pc is an interrupted instruction (the layout before it executes).
//
// It decodes the function from fn.Start to fn.End (at most 16 KiB; to pc
// when the size is unknown). Errors wrap ErrNoFramePointer (the function
// never sets one up), ErrNotSetUp (pc is in the prologue, the epilogue or
// code where r7 is not a frame pointer) or ErrNotDecodable (the code is not
// in m, or pc is not where the decoding puts an instruction). Analyze does
// not cache; Unwinder does.
func Analyze(m unwinders.Memory, fn unwinders.Function, pc uint32, returnAddress bool) (Layout, error) {
	if !fn.Thumb {
		return analyzeARM(m, fn, pc, returnAddress)
	}
	a, err := analyzeThumb(m, fn, funcLimit(fn, pc))
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %v", ErrNotDecodable, err)
	}
	s, err := a.stateAt(pc, returnAddress)
	if err != nil {
		return Layout{}, err
	}
	return a.layout(s, pc)
}

// funcLimit is where the analysis of fn stops decoding.
func funcLimit(fn unwinders.Function, pc uint32) uint32 {
	end := fn.End
	if end <= fn.Start {
		end = pc + 4
	}
	if end-fn.Start > maxFuncBytes || end < fn.Start {
		end = fn.Start + maxFuncBytes
		if end < fn.Start {
			end = 0xFFFFFFFE
		}
	}
	return end
}

func funcName(fn unwinders.Function) string {
	if fn.Name != "" {
		return fn.Name
	}
	return fmt.Sprintf("the function at 0x%08x", fn.Start)
}

// errorsIsAny reports whether err wraps any of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
