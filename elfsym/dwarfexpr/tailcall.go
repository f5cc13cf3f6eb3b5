package dwarfexpr

import "debug/dwarf"

// A tail call leaves no frame: when f tail-calls g (a B, not a BL), g
// returns straight to f's caller, and the walk finds the caller calling g
// directly. GDB (13) shows the missing f again as a "tail call frame" from
// DWARF call sites: the caller's call site at the return address names f
// as its origin, not g, and f has exactly one tail-call site whose origin
// is g. TailCallVia finds that f from the same facts, for one level; what
// it returns is an inference from DWARF, never a frame the stack holds.

// maxTailFuncs bounds the functions searched for the tail-calling one.
const maxTailFuncs = 1 << 16

// TailCall is a function the caller called that tail-called the callee.
type TailCall struct {
	Caller  string // the function that called Via (the caller frame's)
	Via     string // the function whose frame the tail call removed
	CallPC  uint32 // the caller's call site return address into Via
	TailRet uint32 // Via's tail call site's return address (GDB's PC of the frame it shows)
}

// TailCallVia reports the function Via that the call returning to
// returnPC (in the function holding callerPC) called, when Via is not the
// function holding calleePC but tail-called it from its only tail-call
// site to it.
func (p *Program) TailCallVia(callerPC, returnPC, calleePC uint32) (TailCall, bool) {
	var none TailCall
	if p == nil || p.D == nil {
		return none, false
	}
	cfn, gfn := p.funcAt(callerPC), p.funcAt(calleePC)
	if cfn == nil || gfn == nil {
		return none, false
	}
	callee := p.nameAt(gfn.off)
	root, err := p.tree(cfn.off)
	if err != nil || callee == "" {
		return none, false
	}
	var site *node
	eachCallSite(root, func(k *node) bool {
		if r, ok := callSiteReturn(k.e); ok && r == returnPC {
			site = k
			return false
		}
		return true
	})
	if site == nil {
		return none, false
	}
	if tc, _ := site.e.Val(attrCallTailCall).(bool); tc {
		return none, false
	}
	via := p.originName(site.e)
	if via == "" || via == callee {
		return none, false
	}
	// Via's concrete function: the one of that name with code.
	var vfn *fn
	p.index()
	for i := range p.funcs {
		if i >= maxTailFuncs {
			return none, false
		}
		if p.nameAt(p.funcs[i].off) == via {
			if vfn != nil && vfn.lo != p.funcs[i].lo {
				return none, false // two functions of that name: no proof
			}
			vfn = &p.funcs[i]
		}
	}
	if vfn == nil {
		return none, false
	}
	vroot, err := p.tree(vfn.off)
	if err != nil {
		return none, false
	}
	var tail []uint32
	eachCallSite(vroot, func(k *node) bool {
		if tc, _ := k.e.Val(attrCallTailCall).(bool); tc && p.originName(k.e) == callee {
			if r, ok := callSiteReturn(k.e); ok {
				tail = append(tail, r)
			}
		}
		return len(tail) < 2
	})
	if len(tail) != 1 {
		return none, false
	}
	return TailCall{Caller: p.nameAt(cfn.off), Via: via, CallPC: returnPC, TailRet: tail[0]}, true
}

// eachCallSite calls fn for each call site DIE below root (bounded depth)
// until it returns false.
func eachCallSite(root *node, fn func(*node) bool) {
	more := true
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if depth > 64 || !more {
			return
		}
		for _, k := range n.kids {
			if !more {
				return
			}
			if k.e.Tag == tagCallSite || k.e.Tag == tagGNUCallSite {
				more = fn(k)
				continue
			}
			walk(k, depth+1)
		}
	}
	walk(root, 0)
}

func callSiteReturn(e *dwarf.Entry) (uint32, bool) {
	ret, ok := e.Val(attrCallReturnPC).(uint64)
	if !ok {
		ret, ok = e.Val(dwarf.AttrLowpc).(uint64)
	}
	return uint32(ret), ok
}

// originName is the name of the function a call site calls, from its
// call origin (or abstract origin); "" when it names none.
func (p *Program) originName(e *dwarf.Entry) string {
	oo, ok := e.Val(attrCallOrigin).(dwarf.Offset)
	if !ok {
		oo, ok = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	}
	if !ok {
		return ""
	}
	return p.nameAt(oo)
}

func (p *Program) nameAt(off dwarf.Offset) string {
	r := p.D.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return ""
	}
	return p.nameOf(e)
}

// FuncName is the DWARF name of the function holding pc ("" when none).
func (p *Program) FuncName(pc uint32) string {
	if p == nil || p.D == nil {
		return ""
	}
	f := p.funcAt(pc)
	if f == nil {
		return ""
	}
	return p.nameAt(f.off)
}
