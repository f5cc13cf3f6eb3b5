package thumb

// ITState tracks an IT block across straight-line decoding: it is the
// ITSTATE register of the ARMv7-M ARM A7.3 (firstcond in bits [7:4], the
// shifting mask in bits [3:0]). The zero value is "outside any IT block".
type ITState uint8

// InBlock reports whether the next instruction is inside an IT block.
func (s ITState) InBlock() bool { return s&0xf != 0 }

// Cond returns the condition of the next instruction: AL outside a block.
func (s ITState) Cond() Cond {
	if !s.InBlock() {
		return AL
	}
	return Cond(s >> 4)
}

// Apply accounts for the IT block in effect at i, which must be the
// instruction following the one last passed to Apply: inside a block it sets
// i.Cond to the block's condition for i, sets FlagInIT, and clears FlagS of
// the 16-bit encodings that set flags only outside IT blocks (ADDS, MOVS,
// ...: A7.3). Then it advances the state (ITAdvance, A7.3) and, if i is
// an IT instruction, starts its block.
//
// Apply cannot know about a branch into the middle of an IT block; callers
// decoding from an arbitrary PC should treat the first few instructions as
// possibly conditional.
func (s *ITState) Apply(i *Inst) {
	if s.InBlock() {
		i.Flags |= FlagInIT
		if i.Op != OpIT { // IT inside an IT block is UNPREDICTABLE: keep its own firstcond
			i.Cond = s.Cond()
		}
		if i.Flags&flagSOutsideIT != 0 {
			i.Flags &^= FlagS
		}
		if *s&7 == 0 {
			*s = 0
		} else {
			*s = *s&0xe0 | *s<<1&0x1f
		}
	}
	if i.Op == OpIT {
		*s = ITState(uint8(i.Cond)<<4 | i.ITMask&0xf)
	}
}
