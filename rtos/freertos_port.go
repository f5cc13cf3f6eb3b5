package rtos

import (
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// How a FreeRTOS Cortex-M port leaves a switched-out task's context is read
// from the firmware itself: the instructions of its PendSV handler
// (PendSV_Handler or xPortPendSVHandler) up to the call of
// vTaskSwitchContext are executed symbolically, tracking which register
// holds the stacked PSP, pxCurrentTCB, EXC_RETURN, PSPLIM, CONTROL and the
// task's r4-r11, and where each is stored relative to the value the handler
// writes to the task control block's first word (pxTopOfStack). The ports
// differ by version and configuration (ARM_CM0 saves EXC_RETURN with r4-r11
// since V11.1; ARM_CM33 saves PSPLIM, xSecureContext with TrustZone,
// CONTROL with the MPU; the V11 MPU ports save the context inside the task
// control block), so no layout is assumed from the port's name. Only when
// the handler cannot be decoded is a layout chosen from the ELF's build
// attributes, with a warning.

// ctxWhat is what one saved word holds.
type ctxWhat uint8

const (
	cwReg     ctxWhat = iota // a register (reg)
	cwExcRet                 // EXC_RETURN
	cwPSP                    // the task's PSP after the hardware stacked its frame, plus n
	cwHW                     // the word at PSP + n (a copy of the hardware frame)
	cwPSPLIM                 // PSPLIM
	cwControl                // CONTROL
	cwSecure                 // xSecureContext
)

// ctxSlot is one saved word: its offset from pxTopOfStack when the task
// had no FP context (offNF, valid if inNF) and when it had one (offFP).
type ctxSlot struct {
	what       ctxWhat
	reg        unwinders.Reg
	n          int32
	offNF      int32
	offFP      int32
	inNF, inFP bool
}

// ctxLayout is a port's saved-context layout.
type ctxLayout struct {
	source string // how it was found: "PendSV_Handler at 0x..." or "build attributes ..."
	name   string // a short description: "r4-r11" ...
	slots  []ctxSlot
	// pspNF/pspFP: the PSP relative to pxTopOfStack, when no slot holds it.
	pspNF, pspFP int32
	pspKnown     bool
	// hasFP: the handler saves s16-s31 when EXC_RETURN bit 4 is clear.
	hasFP bool
	// switchRet is the return address of the handler's call of
	// vTaskSwitchContext, mspPushed what it pushed on the main stack
	// before it (valid when mspKnown): a walk inside the call continues
	// into the interrupted task from its saved context.
	switchRet uint32
	mspPushed uint32
	mspKnown  bool
}

func (l *ctxLayout) excSlot() (ctxSlot, bool) {
	for _, s := range l.slots {
		if s.what == cwExcRet {
			return s, true
		}
	}
	return ctxSlot{}, false
}

// describe summarises the layout in saved order for messages and docs.
func (l *ctxLayout) describe() string {
	if l.name != "" {
		return l.name
	}
	return fmt.Sprintf("%d saved words", len(l.slots))
}

// abstract values of the symbolic execution.
type absKind uint8

const (
	aUnknown absKind = iota
	aOrig            // the handler's entry value of register n (r4-r11, LR = EXC_RETURN)
	aPSP             // PSP + n (+ s when the task has an FP context)
	aHW              // the word at PSP + n
	aPSPLIM
	aControl
	aCurPtr // &pxCurrentTCB
	aTCB    // pxCurrentTCB
	aCtx    // the word at pxCurrentTCB (the V11 MPU ports: where in the TCB to save) + n (+ s)
	aSecPtr // &xSecureContext
	aSec    // xSecureContext
	aSReg   // the entry value of FP register Sn
)

type absVal struct {
	k absKind
	n int32 // register number, or offset
	s int32 // the extra offset when the task has an FP context (pointers only)
}

func (v absVal) pointer() bool { return v.k == aPSP || v.k == aCtx }

// absStore is one word the handler stores through a tracked pointer.
type absStore struct {
	base       absKind // aPSP or aCtx
	n, s       int32
	val        absVal
	inNF, inFP bool
}

// Bounds of the symbolic execution.
const (
	maxPendSVInsts = 256
	maxAbsStack    = 32
)

var errNoHandler = errors.New("no PendSV_Handler or xPortPendSVHandler symbol")

// decodeSaveLayout reads the layout from the firmware's PendSV handler.
func decodeSaveLayout(f *elfsym.File) (*ctxLayout, error) {
	var entry uint32
	var name string
	for _, n := range []string{"xPortPendSVHandler", "PendSV_Handler"} {
		if a, ok := f.Symbol(n); ok && f.IsCode(a&^1) {
			entry, name = a&^1, n
			break
		}
	}
	if name == "" {
		return nil, errNoHandler
	}
	cur, ok := f.Symbol("pxCurrentTCB")
	if !ok {
		return nil, errors.New("no pxCurrentTCB symbol")
	}
	sw, ok := f.Symbol("vTaskSwitchContext")
	if !ok {
		return nil, errors.New("no vTaskSwitchContext symbol")
	}
	sec, haveSec := f.Symbol("xSecureContext")
	code := new(unwinders.Image)
	if err := code.AddLayer(f.Segments()...); err != nil {
		return nil, err
	}
	l, err := symbolicSave(code, f, entry, cur, sw&^1, sec, haveSec)
	if err != nil {
		return nil, fmt.Errorf("%s at 0x%08x: %v", name, entry, err)
	}
	l.source = fmt.Sprintf("%s at 0x%08x", name, entry)
	return l, nil
}

// symbolicSave executes the handler's save sequence from entry up to the
// call of vTaskSwitchContext (at switchFn).
func symbolicSave(code unwinders.Memory, f *elfsym.File, entry, curSym, switchFn, secSym uint32, haveSec bool) (*ctxLayout, error) {
	var r [16]absVal
	for i := unwinders.R4; i <= unwinders.R11; i++ {
		r[i] = absVal{k: aOrig, n: int32(i)}
	}
	r[unwinders.LR] = absVal{k: aOrig, n: int32(unwinders.LR)}
	var stack []absVal
	var stores []absStore
	var top absVal
	topSet := false
	fpTest := false // the flags hold "EXC_RETURN bit 4" (tst lr, #0x10)
	fpSeen := false
	var sbad uint32  // FP registers overwritten
	mspLost := false // SP moved other than by push and pop
	pc := entry
	var it thumb.ITState
	for steps := 0; steps < maxPendSVInsts; steps++ {
		if !f.IsCode(pc) {
			return nil, fmt.Errorf("the save sequence leaves the code at 0x%08x", pc)
		}
		in, err := thumb.DecodeAt(code, pc)
		if err != nil {
			return nil, fmt.Errorf("0x%08x: %v", pc, err)
		}
		it.Apply(&in)
		next := pc + uint32(in.Len)
		// Conditional execution: only an FP-context test is understood.
		fpOnly := false
		if in.Op != thumb.OpIT && in.Cond != thumb.AL && in.Flags&thumb.FlagInIT != 0 {
			if fpTest && in.Cond == thumb.EQ {
				fpOnly = true
			} else {
				// Executed on some path only: what it writes is unknown.
				if isStore(in.Op) {
					return nil, fmt.Errorf("0x%08x: a conditional store that does not depend on the FP context", pc)
				}
				clobber(&r, in.Writes)
				pc = next
				continue
			}
		}
		get := func(reg unwinders.Reg) absVal {
			if reg < 16 {
				return r[reg]
			}
			return absVal{}
		}
		set := func(reg unwinders.Reg, v absVal) {
			if reg < 16 {
				r[reg] = v
			}
		}
		if in.WritesSP() && in.Op != thumb.OpPUSH && in.Op != thumb.OpPOP {
			mspLost = true
		}
		store := func(addr absVal, v absVal) {
			stores = append(stores, absStore{base: addr.k, n: addr.n, s: addr.s, val: v, inNF: !fpOnly, inFP: true})
		}
		switch in.Op {
		case thumb.OpIT:
		case thumb.OpBL, thumb.OpBLXReg, thumb.OpBLXImm:
			if in.Op == thumb.OpBL && in.Target&^1 == switchFn {
				if !topSet {
					return nil, errors.New("vTaskSwitchContext is called before the top of the saved context is written to the task control block")
				}
				l, err := buildLayout(stores, top, fpSeen)
				if l != nil {
					l.switchRet, l.mspPushed, l.mspKnown = next, uint32(4*len(stack)), !mspLost
				}
				return l, err
			}
			// Another call (the TrustZone port saves the secure context
			// first): the caller-saved registers are lost.
			clobber(&r, 1<<0|1<<1|1<<2|1<<3|1<<12|1<<14)
			fpTest = false
		case thumb.OpB:
			if in.Cond != thumb.AL {
				break // both paths save the same layout; take the fall-through
			}
			next = in.Target &^ 1
		case thumb.OpCBZ, thumb.OpCBNZ:
			// fall through
		case thumb.OpPUSH:
			for i := 0; i < 16; i++ {
				if in.RegList&(1<<i) != 0 {
					stack = append(stack, r[i])
				}
			}
			if len(stack) > maxAbsStack {
				return nil, errors.New("too many pushes")
			}
		case thumb.OpPOP:
			if in.RegList&(1<<15) != 0 {
				return nil, errors.New("the handler returns before calling vTaskSwitchContext")
			}
			for i := 15; i >= 0; i-- {
				if in.RegList&(1<<i) != 0 {
					if len(stack) == 0 {
						r[i] = absVal{}
						continue
					}
					r[i] = stack[len(stack)-1]
					stack = stack[:len(stack)-1]
				}
			}
		case thumb.OpMOV:
			if in.Flags&thumb.FlagImm == 0 && in.Shift == thumb.LSL && in.ShiftN == 0 && in.Rm < 16 {
				set(in.Rd, get(in.Rm))
			} else {
				clobber(&r, in.Writes)
			}
			if in.Flags&thumb.FlagS != 0 {
				fpTest = false
			}
		case thumb.OpADD, thumb.OpSUB, thumb.OpADDW, thumb.OpSUBW:
			src := get(in.Rn)
			if in.Flags&thumb.FlagImm != 0 || in.Op == thumb.OpADDW || in.Op == thumb.OpSUBW {
				if src.pointer() {
					d := in.Imm
					if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
						d = -d
					}
					src.n += d
					set(in.Rd, src)
				} else {
					clobber(&r, in.Writes)
				}
			} else {
				clobber(&r, in.Writes)
			}
			if in.Flags&thumb.FlagS != 0 {
				fpTest = false
			}
		case thumb.OpLDRLit:
			w, err := unwinders.ReadU32(code, in.Target)
			v := absVal{}
			if err == nil {
				switch {
				case w == curSym:
					v = absVal{k: aCurPtr}
				case haveSec && w == secSym:
					v = absVal{k: aSecPtr}
				}
			}
			set(in.Rd, v)
		case thumb.OpLDR:
			base := get(in.Rn)
			v := absVal{}
			if in.Index == thumb.Offset && in.Imm == 0 {
				switch base.k {
				case aCurPtr:
					v = absVal{k: aTCB}
				case aSecPtr:
					v = absVal{k: aSec}
				case aTCB:
					v = absVal{k: aCtx}
				}
			}
			if in.Index != thumb.Offset {
				set(in.Rn, absVal{})
			}
			set(in.Rd, v)
		case thumb.OpLDMIA, thumb.OpLDMDB:
			base := get(in.Rn)
			cnt := int32(popcount16(in.RegList))
			first := base.n
			if in.Op == thumb.OpLDMDB {
				first -= 4 * cnt
			}
			k := int32(0)
			for i := 0; i < 16; i++ {
				if in.RegList&(1<<i) == 0 {
					continue
				}
				if base.k == aPSP && base.s == 0 && !fpOnly {
					r[i] = absVal{k: aHW, n: first + 4*k}
				} else {
					r[i] = absVal{}
				}
				k++
			}
			if in.Flags&thumb.FlagWriteback != 0 && in.RegList&(1<<in.Rn) == 0 {
				if in.Op == thumb.OpLDMIA {
					base.n += 4 * cnt
				} else {
					base.n -= 4 * cnt
				}
				if !base.pointer() {
					base = absVal{}
				}
				set(in.Rn, base)
			}
		case thumb.OpSTMIA, thumb.OpSTMDB:
			base := get(in.Rn)
			if !base.pointer() {
				return nil, fmt.Errorf("0x%08x: a store through a register the save sequence does not track", pc)
			}
			cnt := int32(popcount16(in.RegList))
			addr := base
			if in.Op == thumb.OpSTMDB {
				addr.n -= 4 * cnt
			}
			for i := 0; i < 16; i++ {
				if in.RegList&(1<<i) != 0 {
					store(addr, r[i])
					addr.n += 4
				}
			}
			if in.Flags&thumb.FlagWriteback != 0 {
				if in.Op == thumb.OpSTMIA {
					base.n += 4 * cnt
				} else {
					base.n -= 4 * cnt
				}
				set(in.Rn, base)
			}
		case thumb.OpSTR:
			base, v := get(in.Rn), get(in.Rd)
			addr := base
			if in.Index != thumb.PostIndex {
				addr.n += in.Imm
			}
			switch {
			case base.k == aTCB && addr.n == 0 && in.Index == thumb.Offset:
				if !v.pointer() {
					return nil, fmt.Errorf("0x%08x: the value written to pxTopOfStack is not tracked", pc)
				}
				if fpOnly {
					return nil, fmt.Errorf("0x%08x: pxTopOfStack written only with an FP context", pc)
				}
				top, topSet = v, true
			case base.pointer():
				store(addr, v)
			case base.k == aSecPtr || base.k == aCurPtr || base.k == aTCB:
				return nil, fmt.Errorf("0x%08x: a store into the kernel's variables the save sequence does not understand", pc)
			default:
				// a store through an untracked pointer (a hardware register)
			}
			if in.Index != thumb.Offset {
				nb := base
				nb.n += in.Imm
				if !nb.pointer() {
					nb = absVal{}
				}
				set(in.Rn, nb)
			}
		case thumb.OpVSTMIA, thumb.OpVSTMDB:
			base := get(in.Rn)
			if !base.pointer() {
				return nil, fmt.Errorf("0x%08x: an FP store through a register the save sequence does not track", pc)
			}
			if in.VDouble || in.Flags&thumb.FlagWriteback == 0 {
				return nil, fmt.Errorf("0x%08x: an FP store of a shape no port uses", pc)
			}
			size := 4 * int32(in.VCount)
			addr := base
			if in.Op == thumb.OpVSTMDB {
				if fpOnly {
					addr.s -= size
				} else {
					addr.n -= size
				}
			}
			for i := 0; i < int(in.VCount); i++ {
				n := int32(in.VFirst) + int32(i)
				v := absVal{k: aSReg, n: n}
				if n >= 32 || sbad&(1<<n) != 0 {
					v = absVal{}
				}
				stores = append(stores, absStore{base: addr.k, n: addr.n + 4*int32(i), s: addr.s, val: v, inFP: true, inNF: !fpOnly})
			}
			if fpOnly {
				fpSeen = true
				// The pointer moves only when the task has an FP context.
				if in.Op == thumb.OpVSTMDB {
					base.s -= size
				} else {
					base.s += size
				}
			} else if in.Op == thumb.OpVSTMDB {
				base.n -= size
			} else {
				base.n += size
			}
			set(in.Rn, base)
		case thumb.OpVLDMIA, thumb.OpVLDMDB:
			// FP registers loaded (the V11 MPU ports copy the hardware's
			// FP frame): their values are not tracked.
			for i := 0; i < int(in.VCount) && int(in.VFirst)+i < 32; i++ {
				sbad |= 1 << (int(in.VFirst) + i)
			}
			if in.Flags&thumb.FlagWriteback != 0 {
				set(in.Rn, absVal{})
			}
		default:
			raw := in.Raw
			switch {
			case in.Len == 4 && raw>>16 == 0xF3EF && raw&0xF000 == 0x8000: // MRS Rd, spec_reg
				rd := unwinders.Reg(raw >> 8 & 0xF)
				switch raw & 0xFF {
				case 9: // PSP
					set(rd, absVal{k: aPSP})
				case 11: // PSPLIM
					set(rd, absVal{k: aPSPLIM})
				case 20: // CONTROL
					set(rd, absVal{k: aControl})
				default:
					set(rd, absVal{})
				}
			case in.Len == 4 && raw&0xFBF08F00 == 0xF0100F00: // TST Rn, #imm
				rn := unwinders.Reg(raw >> 16 & 0xF)
				imm := raw>>26&1<<11 | raw>>12&7<<8 | raw&0xFF
				fpTest = imm == 0x10 && r[rn] == absVal{k: aOrig, n: int32(unwinders.LR)}
			default:
				if in.WritesPC() {
					return nil, fmt.Errorf("0x%08x: the handler branches away before calling vTaskSwitchContext", pc)
				}
				if isStore(in.Op) {
					return nil, fmt.Errorf("0x%08x: a store the save sequence does not understand", pc)
				}
				clobber(&r, in.Writes)
				if in.Flags&thumb.FlagS != 0 || in.Writes == 0 {
					// a comparison or another flag-setting instruction
					fpTest = false
				}
			}
		}
		pc = next
	}
	return nil, fmt.Errorf("no call of vTaskSwitchContext within %d instructions", maxPendSVInsts)
}

func isStore(op thumb.Op) bool {
	switch op {
	case thumb.OpSTR, thumb.OpSTRD, thumb.OpSTMIA, thumb.OpSTMDB, thumb.OpPUSH, thumb.OpVSTMIA, thumb.OpVSTMDB, thumb.OpVPUSH:
		return true
	}
	return false
}

func clobber(r *[16]absVal, writes uint16) {
	for i := 0; i < 16; i++ {
		if writes&(1<<i) != 0 {
			r[i] = absVal{}
		}
	}
}

func popcount16(x uint16) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// buildLayout turns the stores into offsets from pxTopOfStack.
func buildLayout(stores []absStore, top absVal, fp bool) (*ctxLayout, error) {
	l := &ctxLayout{hasFP: fp}
	seen := map[ctxWhat]int{}
	var regs uint16
	for _, s := range stores {
		if s.base != top.k {
			return nil, errors.New("the context is saved in two places")
		}
		sl := ctxSlot{offNF: s.n - top.n, offFP: s.n + s.s - top.n - top.s, inNF: s.inNF, inFP: s.inFP}
		switch s.val.k {
		case aOrig:
			if s.val.n == int32(unwinders.LR) {
				sl.what = cwExcRet
			} else {
				sl.what, sl.reg = cwReg, unwinders.Reg(s.val.n)
				regs |= 1 << s.val.n
			}
		case aPSP:
			if s.val.s != 0 {
				return nil, errors.New("a saved PSP that depends on the FP context")
			}
			sl.what, sl.n = cwPSP, s.val.n
		case aHW:
			if s.val.n < 0 || s.val.n >= 32 {
				continue // the FP part of the hardware frame
			}
			sl.what, sl.n = cwHW, s.val.n
		case aPSPLIM:
			sl.what = cwPSPLIM
		case aControl:
			sl.what = cwControl
		case aSec:
			sl.what = cwSecure
		case aSReg:
			sl.what, sl.reg = cwReg, unwinders.S(int(s.val.n))
			if !s.inNF && s.val.n < 16 {
				continue // s0-s15 are in the hardware frame too
			}
		default:
			continue // a word of no interest (scratch)
		}
		if sl.what != cwReg {
			seen[sl.what]++
		}
		l.slots = append(l.slots, sl)
	}
	if regs&0x0FF0 != 0x0FF0 {
		return nil, fmt.Errorf("r4-r11 are not all saved (saved: %#04x)", regs&0x0FF0)
	}
	if fp && seen[cwExcRet] == 0 {
		return nil, errors.New("an FP context is saved but not EXC_RETURN")
	}
	if top.k == aPSP {
		l.pspNF, l.pspFP, l.pspKnown = -top.n, -top.n-top.s, true
	} else if seen[cwPSP] == 0 {
		return nil, errors.New("the context is saved away from the stack and the PSP is not saved")
	}
	l.name = describeSlots(l)
	return l, nil
}

// describeSlots lists the saved words from pxTopOfStack up (no FP context).
func describeSlots(l *ctxLayout) string {
	type w struct {
		off  int32
		text string
	}
	var ws []w
	for _, s := range l.slots {
		if !s.inNF {
			continue
		}
		t := ""
		switch s.what {
		case cwReg:
			t = s.reg.String()
		case cwExcRet:
			t = "EXC_RETURN"
		case cwPSP:
			t = "PSP"
		case cwHW:
			t = fmt.Sprintf("frame+%d", s.n)
		case cwPSPLIM:
			t = "PSPLIM"
		case cwControl:
			t = "CONTROL"
		case cwSecure:
			t = "xSecureContext"
		}
		ws = append(ws, w{s.offNF, t})
	}
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j].off < ws[j-1].off; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
	out := ""
	for i, x := range ws {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%+d:%s", x.off, x.text)
	}
	if l.hasFP {
		out += ", s16-s31 when EXC_RETURN bit 4 is clear"
	}
	return out
}

// attrLayout builds the layout of a known port: words from pxTopOfStack up
// ("r4".."r11", "exc", "psplim", "control"), then optionally s16-s31.
func attrLayout(name string, fp bool, words ...string) *ctxLayout {
	l := &ctxLayout{hasFP: fp, pspKnown: true}
	for i, w := range words {
		sl := ctxSlot{offNF: int32(4 * i), offFP: int32(4 * i), inNF: true, inFP: true}
		switch w {
		case "exc":
			sl.what = cwExcRet
		case "psplim":
			sl.what = cwPSPLIM
		case "control":
			sl.what = cwControl
		case "secure":
			sl.what = cwSecure
		default:
			reg, _ := unwinders.ParseReg(w)
			sl.what, sl.reg = cwReg, reg
		}
		l.slots = append(l.slots, sl)
	}
	n := int32(4 * len(words))
	l.pspNF, l.pspFP = n, n
	if fp {
		for i := 0; i < 16; i++ {
			l.slots = append(l.slots, ctxSlot{what: cwReg, reg: unwinders.S(16 + i), offFP: n + int32(4*i), inFP: true})
		}
		l.pspFP = n + 64
	}
	l.name = name + ": " + describeSlots(l)
	return l
}

var r4r11 = []string{"r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"}

func words(pre []string, mid []string, post ...string) []string {
	out := append(append(append([]string(nil), pre...), mid...), post...)
	return out
}

// Known layouts of the FreeRTOS GCC ports, for the fallback.
var (
	layoutCM3    = attrLayout("ARM_CM3 (and ARM_CM0 before V11.1)", false, r4r11...)
	layoutCM0V11 = attrLayout("ARM_CM0 V11.1 and later", false, words([]string{"exc"}, r4r11)...)
	layoutCM4F   = attrLayout("ARM_CM4F/ARM_CM7", true, words(nil, r4r11, "exc")...)
	layoutCM33   = attrLayout("ARM_CM33_NTZ", true, words([]string{"psplim", "exc"}, r4r11)...)
	layoutCM33M  = attrLayout("ARM_CM33_NTZ with the MPU (V10)", true, words([]string{"psplim", "control", "exc"}, r4r11)...)
	layoutCM33TZ = attrLayout("ARM_CM33 (TrustZone)", true, words([]string{"secure", "psplim", "exc"}, r4r11)...)
)

// attrLayouts returns the candidate layouts the ELF's build attributes
// allow, most likely first.
func attrLayouts(f *elfsym.File, mpu bool) []*ctxLayout {
	a := f.Attributes()
	if a == nil {
		return []*ctxLayout{layoutCM3, layoutCM4F, layoutCM0V11}
	}
	switch a.CPUArchRaw {
	case 16, 17, 21: // v8-M.baseline, v8-M.mainline, v8.1-M.mainline
		if mpu {
			return []*ctxLayout{layoutCM33M, layoutCM33, layoutCM33TZ}
		}
		return []*ctxLayout{layoutCM33, layoutCM33TZ, layoutCM33M}
	case 11, 12: // v6-M, v6S-M
		return []*ctxLayout{layoutCM0V11, layoutCM3}
	}
	if a.FPArch != "" {
		return []*ctxLayout{layoutCM4F, layoutCM3}
	}
	return []*ctxLayout{layoutCM3, layoutCM4F}
}

// ctxRead is one task's saved context read with a layout.
type ctxRead struct {
	regs unwinders.Registers
	exc  uint32
	psp  uint32
	bad  string // why it does not fit the layout; "" when it does
}

// readContext reads a task's saved context at top with layout l.
func readContext(m unwinders.Memory, f *elfsym.File, l *ctxLayout, top uint32) (ctxRead, error) {
	var c ctxRead
	word := func(off int32) (uint32, error) { return unwinders.ReadU32(m, top+uint32(off)) }
	fp := false
	c.exc = 0xFFFFFFFD
	if s, ok := l.excSlot(); ok {
		off := s.offNF
		if !s.inNF {
			off = s.offFP
		}
		v, err := word(off)
		if err != nil {
			return c, err
		}
		if l.hasFP && v&0x10 == 0 && s.offFP != s.offNF {
			if v, err = word(s.offFP); err != nil {
				return c, err
			}
		}
		c.exc = v
		fp = l.hasFP && v&0x10 == 0
	}
	if !unwinders.LooksLikeExcReturn(c.exc) || c.exc&0xC != 0xC {
		c.bad = fmt.Sprintf("its saved EXC_RETURN 0x%08x is not a return to thread mode on the process stack", c.exc)
		return c, nil
	}
	var hw [8]uint32
	var hwHave uint8
	pspHave := false
	for _, s := range l.slots {
		if (fp && !s.inFP) || (!fp && !s.inNF) {
			continue
		}
		off := s.offNF
		if fp {
			off = s.offFP
		}
		v, err := word(off)
		if err != nil {
			return c, err
		}
		switch s.what {
		case cwReg:
			c.regs.Set(s.reg, v)
		case cwControl:
			c.regs.Set(unwinders.CONTROL, v)
		case cwPSP:
			c.psp, pspHave = v-uint32(s.n), true
		case cwHW:
			hw[s.n/4] = v
			hwHave |= 1 << (s.n / 4)
		}
	}
	if !pspHave {
		if !l.pspKnown {
			return c, errors.New("the layout has no PSP")
		}
		if fp {
			c.psp = top + uint32(l.pspFP)
		} else {
			c.psp = top + uint32(l.pspNF)
		}
	}
	for i := 0; i < 8; i++ {
		if hwHave&(1<<i) != 0 {
			continue
		}
		v, err := unwinders.ReadU32(m, c.psp+uint32(4*i))
		if err != nil {
			return c, err
		}
		hw[i] = v
	}
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		c.regs.Set(reg, hw[i])
	}
	sp := c.psp + 0x20
	if fp {
		for i := 0; i < 16; i++ {
			if v, err := unwinders.ReadU32(m, c.psp+0x20+uint32(4*i)); err == nil {
				c.regs.Set(unwinders.S(i), v)
			}
		}
		if v, err := unwinders.ReadU32(m, c.psp+0x60); err == nil {
			c.regs.Set(unwinders.FPSCR, v)
		}
		sp = c.psp + 0x68
	}
	if hw[7]&(1<<9) != 0 {
		sp += 4
	}
	c.regs.Set(unwinders.SP, sp)
	c.regs.Set(unwinders.PSP, sp)
	switch {
	case hw[7]&(1<<24) == 0:
		c.bad = fmt.Sprintf("its stacked xPSR 0x%08x has the Thumb bit clear", hw[7])
	case !f.IsCode(hw[6] &^ 1):
		c.bad = fmt.Sprintf("its stacked PC 0x%08x is not in the firmware's code", hw[6])
	}
	return c, nil
}
