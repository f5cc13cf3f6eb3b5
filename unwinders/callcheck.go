package unwinders

import "fmt"

// CallCheck is the verdict of the call-target check on a return address:
// does the call instruction before it lead to the function the walk just
// came from (the callee frame)? A direct BL names its target exactly; a
// BLX Rm names none.
type CallCheck uint8

const (
	CallUnchecked CallCheck = iota // no return address, or nothing to check it against (no symbols)
	CallMatches                    // a direct call to the callee's function (or into it)
	CallTailChain                  // a direct call to a function that reaches the callee by tail branches
	CallIndirect                   // BLX Rm, or a chain through an indirect branch: no claim either way
	CallMismatch                   // a direct call to a function that cannot reach the callee: frames are missing
)

func (c CallCheck) String() string {
	switch c {
	case CallMatches:
		return "call targets the callee"
	case CallTailChain:
		return "call reaches the callee by tail calls"
	case CallIndirect:
		return "indirect call"
	case CallMismatch:
		return "call targets another function"
	}
	return "unchecked"
}

// Bounds of the tail-call search: how many functions deep a chain of tail
// branches may go, how many functions are scanned in all, and how many bytes
// of one function are decoded.
const (
	maxTailDepth     = 4
	maxTailFunctions = 32
	maxTailScanBytes = 16 << 10
	noSizeScanBytes  = 256
)

// CheckCall checks the call before the return address ret against callee,
// the frame the walk is returning from. The detail names the call, its
// target and the callee when they do not match (raw symbol names).
//
// A direct call (BL) matches when its target is the start of the callee's
// function, or lies in that function. It also matches through tail calls:
// the target function may end in B/B.W (or a conditional branch, or a
// linker veneer's LDR.W PC) to the next function of a chain that reaches
// the callee, at most maxTailDepth functions deep. A chain through an
// indirect branch (BX Rm other than LR, MOV PC, Rm) could reach anything:
// the verdict is then CallIndirect, as for BLX Rm.
func (t *Target) CheckCall(callee *Frame, ret uint32) (CallCheck, string) {
	if t.Prog == nil {
		return CallUnchecked, ""
	}
	cs, ok := CallBefore(t.Mem, ret)
	if !ok {
		return CallUnchecked, ""
	}
	if cs.Kind != CallBL {
		return CallIndirect, ""
	}
	cfn, ok := t.Prog.FuncAt(callee.LookupPC())
	if !ok {
		return CallUnchecked, ""
	}
	if cs.Target == cfn.Start || inFunc(cfn, cs.Target) {
		return CallMatches, ""
	}
	switch t.reaches(cs.Target, cfn) {
	case CallTailChain:
		return CallTailChain, ""
	case CallIndirect:
		return CallIndirect, ""
	}
	return CallMismatch, fmt.Sprintf("the call at 0x%08x targets %s, not %s (0x%08x), and no tail call connects them",
		cs.Addr, t.funcName(cs.Target), nameOr(cfn.Name, "the callee"), cfn.Start)
}

func inFunc(fn Function, a uint32) bool {
	return fn.End > fn.Start && a >= fn.Start && a < fn.End
}

func nameOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// funcName names the function at a (raw symbol), or its address.
func (t *Target) funcName(a uint32) string {
	if fn, ok := t.Prog.FuncAt(a); ok && fn.Name != "" {
		if fn.Start == a {
			return fmt.Sprintf("%s (0x%08x)", fn.Name, a)
		}
		return fmt.Sprintf("%s+0x%x (0x%08x)", fn.Name, a-fn.Start, a)
	}
	return fmt.Sprintf("0x%08x", a)
}

// reaches searches, breadth first and bounded, the functions reachable
// from the code at start by direct tail branches for one that holds the
// callee's code.
func (t *Target) reaches(start uint32, callee Function) CallCheck {
	type item struct {
		addr  uint32
		depth int
	}
	queue := []item{{start, 0}}
	seen := map[uint32]bool{}
	indirect := false
	for n := 0; len(queue) > 0 && n < maxTailFunctions; n++ {
		it := queue[0]
		queue = queue[1:]
		lo, hi := it.addr, it.addr+noSizeScanBytes
		if fn, ok := t.Prog.FuncAt(it.addr); ok {
			lo = fn.Start
			if fn.End > fn.Start {
				hi = fn.End
			}
		}
		if seen[lo] {
			continue
		}
		seen[lo] = true
		if hi-lo > maxTailScanBytes {
			hi = lo + maxTailScanBytes
		}
		dests, ind := branchesOut(t.Mem, lo, hi)
		indirect = indirect || ind
		for _, d := range dests {
			if d == callee.Start || inFunc(callee, d) {
				return CallTailChain
			}
			if it.depth+1 < maxTailDepth && t.IsCode(d) {
				queue = append(queue, item{d, it.depth + 1})
			}
		}
	}
	if indirect {
		return CallIndirect
	}
	return CallMismatch
}

// branchesOut decodes the Thumb code in [lo, hi) and returns the
// destinations of its direct branches that leave the range (B T1-T4, LDR.W
// PC, [PC, #imm] with its literal), and whether it holds an indirect branch
// that is not a return (BX Rm with Rm other than LR, MOV PC, Rm).
// ARMv7-M ARM A7.7.12 (B), A7.7.20 (BX), A7.7.77 (MOV register).
func branchesOut(m Memory, lo, hi uint32) ([]uint32, bool) {
	var out []uint32
	indirect := false
	leaves := func(d uint32) bool { return d < lo || d >= hi }
	for a := lo; a+2 <= hi; {
		h1, err := ReadU16(m, a)
		if err != nil {
			break
		}
		if h1>>11 < 0b11101 { // 16-bit
			switch {
			case h1&0xF800 == 0xE000: // B T2
				off := uint32(h1&0x7FF) << 1
				if off&0x800 != 0 {
					off |= 0xFFFFF000
				}
				if d := a + 4 + off; leaves(d) {
					out = append(out, d)
				}
			case h1&0xF000 == 0xD000 && h1&0x0F00 < 0x0E00: // B<c> T1
				off := uint32(h1&0xFF) << 1
				if off&0x100 != 0 {
					off |= 0xFFFFFE00
				}
				if d := a + 4 + off; leaves(d) {
					out = append(out, d)
				}
			case h1&0xFF87 == 0x4700 && (h1>>3)&0xF != uint16(LR): // BX Rm
				indirect = true
			case h1&0xFF87 == 0x4687 && (h1>>3)&0xF != uint16(LR): // MOV PC, Rm
				indirect = true
			}
			a += 2
			continue
		}
		if a+4 > hi {
			break
		}
		h2, err := ReadU16(m, a+2)
		if err != nil {
			break
		}
		switch {
		case h1&0xF800 == 0xF000 && h2&0xD000 == 0x9000: // B.W T4
			if d := blTarget(a, h1, h2); leaves(d) {
				out = append(out, d)
			}
		case h1&0xF800 == 0xF000 && h2&0xD000 == 0x8000 && (h1>>6)&0xE != 0xE: // B<c>.W T3
			s := uint32(h1>>10) & 1
			imm := s<<20 | uint32(h2>>11&1)<<19 | uint32(h2>>13&1)<<18 | uint32(h1&0x3F)<<12 | uint32(h2&0x7FF)<<1
			if s != 0 {
				imm |= 0xFFE00000
			}
			if d := a + 4 + imm; leaves(d) {
				out = append(out, d)
			}
		case (h1 == 0xF8DF || h1 == 0xF85F) && h2&0xF000 == 0xF000: // LDR.W PC, [PC, #±imm12]
			base := (a + 4) &^ 3
			lit := base + uint32(h2&0xFFF)
			if h1 == 0xF85F {
				lit = base - uint32(h2&0xFFF)
			}
			if v, err := ReadU32(m, lit); err == nil && v&1 != 0 && leaves(v&^1) {
				out = append(out, v&^1)
			}
		}
		a += 4
	}
	return out, indirect
}
