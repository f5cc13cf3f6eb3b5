package analysis

import (
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// Symbolize turns walked frames into report frames: each code frame is
// looked up at its LookupPC (inside the call for a return address) and
// expanded into its inline chain, innermost first, as addr2line -i does.
// Exception pseudo-frames stay single entries.
func Symbolize(elf *elfsym.File, frames []unwinders.Frame) []report.FrameJSON {
	out, _ := symbolizeFrames(elf, frames)
	return out
}

// symbolizeFrames is Symbolize that also returns the distinct errors met
// while decoding DWARF (an undecodable line table or unit loses file:line
// or inline frames: the report must say so, not drop them silently).
func symbolizeFrames(elf *elfsym.File, frames []unwinders.Frame) ([]report.FrameJSON, []string) {
	return symbolizeFramesInto(make([]report.FrameJSON, 0, len(frames)), elf, frames)
}

// symbolizeFramesInto is symbolizeFrames appending to out, which must be
// empty (its capacity is used).
func symbolizeFramesInto(out []report.FrameJSON, elf *elfsym.File, frames []unwinders.Frame) ([]report.FrameJSON, []string) {
	// Every address the frames show, formatted at once.
	var valBuf [3 * 32]uint32
	return symbolizeFramesHex(out, elf, frames, hexes(frameHexVals(valBuf[:0], frames)), 0, nil)
}

// frameHexVals appends the addresses symbolizeFramesHex shows of each
// frame: PC, SP and EXC_RETURN (0 when none).
func frameHexVals(vals []uint32, frames []unwinders.Frame) []uint32 {
	for _, f := range frames {
		var exc uint32
		if f.Exception != nil {
			exc = uint32(f.Exception.ExcReturn)
		}
		vals = append(vals, f.PC, f.SP, exc)
	}
	return vals
}

// symbolizeFramesHex is symbolizeFramesInto with the frames' addresses
// already formatted: those of frame i are hexAt(hex, 3(first+i)) (PC),
// 3(first+i)+1 (SP) and 3(first+i)+2 (EXC_RETURN), as frameHexVals lists
// them (first frames of other walks come first). The frames' offsets are
// appended to offs, which must have room for one per frame (a nil offs
// gets one allocation for them all).
func symbolizeFramesHex(out []report.FrameJSON, elf *elfsym.File, frames []unwinders.Frame, hex string, first int, offs []int64) ([]report.FrameJSON, []string) {
	var errs []string
	out = out[:0]
	if cap(out) == 0 {
		out = make([]report.FrameJSON, 0, len(frames))
	}
	if cap(offs)-len(offs) < len(frames) {
		offs = make([]int64, 0, len(frames))
	}
	for fi, f := range frames {
		phys := fi
		fi := first + fi
		base := report.FrameJSON{
			Phys:       phys,
			Kind:       f.Kind.String(),
			Method:     f.Method,
			Confidence: f.Confidence.String(),
			Note:       f.Note,
		}
		if f.Kind == unwinders.KindException {
			ef := f.Exception
			base.SP = hexAt(hex, 3*fi+1)
			if ef != nil {
				base.ExcReturn = hexAt(hex, 3*fi+2)
				base.Stack = ef.Stack
				base.Note = exceptionNote(ef, f.Note)
			}
			out = append(out, base)
			continue
		}
		if f.Kind == unwinders.KindGap {
			// Frames are missing here: no code address to look up.
			out = append(out, base)
			continue
		}
		base.PC = hexAt(hex, 3*fi)
		base.SP = hexAt(hex, 3*fi+1)
		if elf == nil {
			out = append(out, base)
			continue
		}
		look := f.LookupPC()
		fe := elf.ImageAt(look) // the image that holds the code (elf alone: elf)
		base.Image = imageLabel(elf, look)
		var buf [4]elfsym.Location // most chains: no allocation
		locs, err := fe.AppendSymbolize(buf[:0], look)
		if err != nil && !slices.Contains(errs, err.Error()) {
			errs = append(errs, err.Error())
		}
		ref, haveSym := fe.SymbolFor(look)
		if haveSym && ref.Kind == elfsym.SymObject {
			// A PC inside a data object (a call through a NULL or corrupt
			// pointer lands in the vector table, a string...) is not code.
			base.Note = joinNote(base.Note, fmt.Sprintf("PC is inside the data object %s, not code", ref.Name))
			haveSym = false
			locs = nil
		}
		if haveSym {
			base.Symbol = ref.Name
			offs = append(offs, int64(f.PC)-int64(ref.Start)) // never grows: room for every frame
			base.Offset = &offs[len(offs)-1]
			base.Gap = ref.Placement == elfsym.InGap
		}
		if len(locs) == 0 {
			if haveSym && ref.Placement != elfsym.InGap {
				base.Function = ref.Name
			}
			out = append(out, base)
			continue
		}
		for i, l := range locs {
			fr := base
			fr.Function = l.Function
			fr.File = l.File
			fr.Line = l.Line
			if i < len(locs)-1 {
				// An inlined call: same PC, its own frame.
				fr.Kind = unwinders.KindInlined.String()
			}
			if base.Gap && i == len(locs)-1 && l.Function == "" {
				fr.Function = ""
			}
			out = append(out, fr)
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out, errs
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func exceptionNote(ef *unwinders.ExceptionFrame, note string) string {
	var s string
	if ef.FNCReturn {
		s = fmt.Sprintf("FNC_RETURN frame (Secure call to Non-secure) at %s", report.Hex(ef.Addr))
	} else {
		s = fmt.Sprintf("%v, %d-byte frame on %s at %s", ef.ExcReturn, ef.Size, ef.Stack, report.Hex(ef.Base))
		if ef.Padded {
			s += ", +4 alignment pad (xPSR bit 9)"
		}
		if ef.StateCtx {
			s += ", with the v8-M additional state context"
		}
		if ef.LazyFP {
			s += ", FP registers lazily reserved"
		}
	}
	if note != "" {
		s += "; " + note
	}
	return s
}
