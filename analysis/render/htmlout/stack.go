package htmlout

import (
	"encoding/binary"
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/unwinders"
)

// The stack picture of the HTML report: a model computed from the walk and
// the dump's RAM (StackColumns), and its SVG rendering (stackSVG).

// StackWord is one row of the stack picture: a 32-bit word, or a gap
// standing for words not drawn.
type StackWord struct {
	Addr  uint32
	Value uint32
	Known bool   // the dump holds the word
	Label string // what the word is: "r0", "saved LR → main+0x2c", ...
	Class string // "lr" (a saved return address), "exc" (stacked register), "fp", "pad", "ctx", "" (plain)
	Gap   int    // > 0: this row stands for Gap words that are not shown
}

// StackBlock is one frame's span on a stack: [Lo, Hi).
type StackBlock struct {
	Frame    int    // index in report.Report.Frames of the frame (the out-of-line entry)
	Title    string // "#3 deep5_mixed"
	Detail   string // "24 bytes", "32-byte exception frame"
	Kind     string // "frame" or "exception"
	Faulting bool   // the frame the fault interrupted
	Lo, Hi   uint32
	// SavedAt is the address of the word holding the return address into
	// the caller (LR pushed by the prologue, or EXC_RETURN), found by
	// searching the span for that value; 0 with SavedHow explaining when
	// it is not on the stack.
	SavedAt  uint32
	SavedHow string
	Empty    string      // why a block has no rows
	Rows     []StackWord // high addresses first
}

// StackMark is a register pointing into a stack.
type StackMark struct {
	Addr  uint32
	Label string
}

// StackColumn is one stack (main or process) with its frames, high
// addresses first.
type StackColumn struct {
	Name   string // "MSP" or "PSP"
	Blocks []StackBlock
	Marks  []StackMark
}

// maxSpan bounds a frame span drawn (bytes): larger spans are not
// believable on a microcontroller and would only be noise.
const maxSpan = 64 << 10

// memWords reads little-endian words from the dump's regions.
type memWords []unwinders.Region

func (m memWords) word(a uint32) (uint32, bool) {
	for _, r := range m {
		if r.Contains(a) && uint64(a)+4 <= r.End() {
			o := a - r.Addr
			return binary.LittleEndian.Uint32(r.Data[o : o+4]), true
		}
	}
	return 0, false
}

// StackColumns computes the stack picture of r from the dump's memory.
// stackTop is the main stack's initial SP from the vector table (0 when
// unknown): it bounds the outermost frame on the main stack.
func StackColumns(r *report.Report, mem []unwinders.Region, stackTop uint32) []StackColumn {
	wf := r.Walk.Frames
	if len(wf) == 0 {
		return nil
	}
	m := memWords(mem)
	// The entry of r.Frames that names each walk frame: the last of its
	// inline chain.
	entry := make([]int, 0, len(wf))
	for i, f := range r.Frames {
		if f.Kind != unwinders.KindInlined.String() {
			entry = append(entry, i)
		}
	}
	if len(entry) != len(wf) {
		return nil
	}
	faulting := report.FaultingFrame(r)
	faultingWalk := -1
	for k, e := range entry {
		if e >= faulting && faultingWalk < 0 {
			faultingWalk = k
		}
	}
	// Which stack each frame lives on.
	msp, okM := r.Regs.Get(unwinders.MSP)
	psp, okP := r.Regs.Get(unwinders.PSP)
	cur := "MSP"
	if okP && psp != 0 && wf[0].SP == psp && (!okM || msp != psp) {
		cur = "PSP"
	}
	stackOf := make([]string, len(wf))
	for k, f := range wf {
		if f.Kind == unwinders.KindException && f.Exception != nil && !f.Exception.FNCReturn {
			cur = f.Exception.Stack
		}
		stackOf[k] = cur
	}
	cols := map[string]*StackColumn{}
	col := func(name string) *StackColumn {
		if c := cols[name]; c != nil {
			return c
		}
		c := &StackColumn{Name: name}
		cols[name] = c
		return c
	}
	for k, f := range wf {
		if f.Kind == unwinders.KindGap {
			continue // no stack of its own: the frames it stands for are gone
		}
		e := entry[k]
		var b StackBlock
		if f.Kind == unwinders.KindException && f.Exception != nil && !f.Exception.FNCReturn {
			b = exceptionBlock(f.Exception, m, r.Profile)
			b.Title = fmt.Sprintf("#%d exception frame", r.Frames[e].Index)
			if k+1 < len(wf) {
				for i := range b.Rows {
					if b.Rows[i].Label == "return address (pc)" {
						b.Rows[i].Label = "pc → " + report.FrameName(r.Frames[entry[k+1]])
					}
				}
			}
		} else {
			b = frameBlock(wf, stackOf, k, m, stackTop)
			b.Title = fmt.Sprintf("#%d %s", r.Frames[e].Index, report.FrameName(r.Frames[e]))
			if k+1 < len(wf) && wf[k+1].Kind != unwinders.KindException {
				for i := range b.Rows {
					if b.Rows[i].Class == "lr" {
						b.Rows[i].Label = "saved LR → " + report.FrameName(r.Frames[entry[k+1]])
					}
				}
			}
			if first := firstOfGroup(r.Frames, e); first < e {
				var in []string
				for _, g := range r.Frames[first:e] {
					in = append(in, g.Function)
				}
				b.Detail += ", inlines " + strings.Join(in, ", ")
			}
		}
		b.Frame = e
		b.Faulting = k == faultingWalk
		c := col(stackOf[k])
		c.Blocks = append(c.Blocks, b)
	}
	if sp, ok := r.Regs.Get(unwinders.SP); ok {
		col(stackOf[0]).Marks = append(col(stackOf[0]).Marks, StackMark{Addr: sp, Label: "SP"})
	}
	if okM && cols["MSP"] != nil && !(stackOf[0] == "MSP" && r.Regs.Value(unwinders.SP) == msp) {
		cols["MSP"].Marks = append(cols["MSP"].Marks, StackMark{Addr: msp, Label: "MSP"})
	}
	if okP && cols["PSP"] != nil && !(stackOf[0] == "PSP" && r.Regs.Value(unwinders.SP) == psp) {
		cols["PSP"].Marks = append(cols["PSP"].Marks, StackMark{Addr: psp, Label: "PSP"})
	}
	var out []StackColumn
	for _, name := range []string{"MSP", "PSP"} {
		c := cols[name]
		if c == nil {
			continue
		}
		// High addresses first; a later (outer) frame first among equals.
		slices.SortStableFunc(c.Blocks, func(a, b StackBlock) int {
			switch {
			case a.Lo > b.Lo:
				return -1
			case a.Lo < b.Lo:
				return 1
			case a.Frame > b.Frame:
				return -1
			case a.Frame < b.Frame:
				return 1
			}
			return 0
		})
		out = append(out, *c)
	}
	return out
}

func firstOfGroup(frames []report.FrameJSON, e int) int {
	i := e
	for i > 0 && frames[i-1].Kind == unwinders.KindInlined.String() {
		i--
	}
	return i
}

// frameBlock is the span of code frame k: from its SP to its caller's SP.
func frameBlock(wf []unwinders.Frame, stackOf []string, k int, m memWords, stackTop uint32) StackBlock {
	f := wf[k]
	b := StackBlock{Kind: "frame", Lo: f.SP, Hi: f.SP}
	var want uint32
	var wantLabel string
	if k+1 < len(wf) {
		next := wf[k+1]
		switch {
		case next.Kind == unwinders.KindException && next.Exception != nil:
			ef := next.Exception
			want, wantLabel = uint32(ef.ExcReturn), fmt.Sprintf("saved EXC_RETURN 0x%08x", uint32(ef.ExcReturn))
			if ef.FNCReturn {
				want, wantLabel = next.PC, "saved FNC_RETURN"
			}
			if stackOf[k+1] == stackOf[k] && ef.Addr >= f.SP {
				b.Hi = ef.Addr
			} else if a, ok := searchWord(m, f.SP, f.SP+512, want); ok {
				// The frame is on the main stack, the exception frame on
				// the process stack: the span ends at the saved EXC_RETURN.
				b.Hi = a + 4
			}
		case stackOf[k+1] == stackOf[k] && next.SP >= f.SP:
			b.Hi = next.SP
			want, wantLabel = next.PC|1, "saved LR (return address)"
		}
		if next.Method == unwinders.MethodLR {
			want = 0
			b.SavedHow = "return address still in LR (not saved)"
		}
	} else if stackOf[k] == "MSP" && stackTop > f.SP && stackTop-f.SP <= maxSpan {
		b.Hi = stackTop
		b.SavedHow = "outermost frame: up to the initial SP"
	}
	b.Empty = fmt.Sprintf("no frame on the stack yet (SP 0x%08x)", f.SP)
	if k+1 == len(wf) {
		b.Empty = fmt.Sprintf("outermost frame at SP 0x%08x; its span is not known", f.SP)
	}
	if b.Hi-b.Lo > maxSpan {
		b.Hi = b.Lo + maxSpan
	}
	if want != 0 {
		if a, ok := searchWord(m, b.Lo, b.Hi, want); ok {
			b.SavedAt = a
		} else if b.SavedHow == "" {
			b.SavedHow = "return address not found in the span"
		}
	}
	size := b.Hi - b.Lo
	switch {
	case size == 0 && k+1 == len(wf):
		b.Detail = "outermost frame"
	case size == 0:
		b.Detail = "no stack frame (yet)"
	default:
		b.Detail = fmt.Sprintf("%d bytes", size)
	}
	// The rows: every word of a small frame; the top two, the saved
	// return address and the bottom two of a large one.
	n := size / 4
	show := func(a uint32) bool {
		if n <= 16 {
			return true
		}
		return a >= b.Hi-8 || a < b.Lo+8 || (b.SavedAt != 0 && a == b.SavedAt)
	}
	gap := 0
	for a := b.Hi; a >= b.Lo+4; a -= 4 {
		w := a - 4
		if !show(w) {
			gap++
			continue
		}
		if gap > 0 {
			b.Rows = append(b.Rows, StackWord{Addr: w + 4, Gap: gap})
			gap = 0
		}
		v, ok := m.word(w)
		row := StackWord{Addr: w, Value: v, Known: ok}
		if b.SavedAt != 0 && w == b.SavedAt {
			row.Label, row.Class = wantLabel, "lr"
		}
		b.Rows = append(b.Rows, row)
	}
	return b
}

// searchWord finds the highest word in [lo, hi) equal to v.
func searchWord(m memWords, lo, hi, v uint32) (uint32, bool) {
	if hi < lo || hi-lo > maxSpan {
		return 0, false
	}
	for a := hi &^ 3; a >= lo+4 && a >= 4; a -= 4 {
		if w, ok := m.word(a - 4); ok && w == v {
			return a - 4, true
		}
	}
	return 0, false
}

// exceptionBlock lays out a hardware-stacked frame word by word
// (ARMv7-M B1.5.7, ARMv8-M B3.19): the v8-M additional state context,
// r0-r3, r12, lr, the return address, xPSR, the FP area (s0-s15, FPSCR,
// a reserved word, then s16-s31 when the Secure FP context is stacked)
// and the 4-byte alignment pad that xPSR bit 9 announces.
func exceptionBlock(ef *unwinders.ExceptionFrame, m memWords, p unwinders.Profile) StackBlock {
	b := StackBlock{Kind: "exception", Lo: ef.Addr, Hi: ef.CallerSP}
	if b.Hi < b.Lo || b.Hi-b.Lo > 0x200 {
		b.Hi = ef.Base + ef.Size
		if ef.Padded {
			b.Hi += 4
		}
	}
	b.Detail = fmt.Sprintf("%d bytes on %s, EXC_RETURN 0x%08X", ef.Size, ef.Stack, uint32(ef.ExcReturn))
	if ef.Padded {
		b.Detail = fmt.Sprintf("%d+4 bytes on %s, EXC_RETURN 0x%08X", ef.Size, ef.Stack, uint32(ef.ExcReturn))
	}
	basic := []string{"r0", "r1", "r2", "r3", "r12", "lr", "return address (pc)", "xPSR"}
	ctx := []string{"integrity signature", "reserved", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"}
	for a := b.Hi; a >= b.Lo+4; a -= 4 {
		w := a - 4
		v, ok := m.word(w)
		row := StackWord{Addr: w, Value: v, Known: ok, Class: "exc"}
		switch {
		case w < ef.Base:
			i := int(w-ef.Addr) / 4
			row.Class = "ctx"
			if i < len(ctx) {
				row.Label = ctx[i] + " (state context)"
			}
		case w < ef.Base+0x20:
			row.Label = basic[(w-ef.Base)/4]
			if row.Label == "xPSR" && ef.Padded {
				row.Label = "xPSR (bit 9: pad above the frame)"
			}
		case w < ef.Base+ef.Size:
			o := (w - ef.Base - 0x20) / 4
			row.Class = "fp"
			switch {
			case o < 16:
				row.Label = fmt.Sprintf("s%d", o)
			case o == 16:
				row.Label = "FPSCR"
			case o == 17:
				row.Label = "reserved"
			default:
				row.Label = fmt.Sprintf("s%d", o-2)
			}
			if ef.LazyFP {
				row.Label += " (lazy: not written)"
				row.Known = false
			}
		default:
			row.Class, row.Label = "pad", "alignment pad (xPSR bit 9)"
		}
		b.Rows = append(b.Rows, row)
	}
	return b
}

// SVG geometry of a stack column.
const (
	svgRowH    = 20
	svgMarkW   = 58  // SP arrows
	svgAddrW   = 88  // address
	svgValW    = 88  // value
	svgLabelW  = 272 // what the word is: room for 40 characters
	svgBracket = 10  // bracket
	svgTitleW  = 340
	svgWidth   = svgMarkW + svgAddrW + svgValW + svgLabelW + svgBracket + svgTitleW
	svgHeadH   = 26
	// Widths of one character in tenths of a pixel, a little generous,
	// for clipping text to its column: the 12px monospace title (0.6 em)
	// and the 11px sans-serif detail (an average character).
	svgTitleCharW = 73
	svgSubCharW   = 62
)

// stackSVG draws one column: addresses grow upwards, each frame's span is
// bracketed on the right with its name, saved return addresses, exception
// frames, FP areas and alignment pads are coloured, and the stack pointers
// point at their words from the left.
func stackSVG(c StackColumn) string {
	type row struct {
		w     StackWord
		block int
		empty bool
	}
	var rows []row
	for i, b := range c.Blocks {
		if len(b.Rows) == 0 {
			rows = append(rows, row{w: StackWord{Addr: b.Lo}, block: i, empty: true})
			continue
		}
		for _, w := range b.Rows {
			rows = append(rows, row{w: w, block: i})
		}
	}
	h := svgHeadH + len(rows)*svgRowH + 24
	var s strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" class="stack" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s stack">`, svgWidth, h, svgWidth, h, esc(c.Name))
	x0 := svgMarkW
	xVal := x0 + svgAddrW
	xLab := xVal + svgValW
	xBr := xLab + svgLabelW
	// The labels go into a nested viewport that clips them to their
	// column, so that a name wider than the estimate never runs into the
	// bracket.
	var labels strings.Builder
	fmt.Fprintf(&s, `<text class="colhead" x="%d" y="16">%s stack</text>`, x0, esc(c.Name))
	fmt.Fprintf(&s, `<text class="hint" x="%d" y="16">↑ higher addresses</text>`, xLab)
	y := svgHeadH
	for i, r := range rows {
		cls := "w"
		if r.w.Class != "" {
			cls += " " + r.w.Class
		}
		if c.Blocks[r.block].Kind == "exception" && r.w.Class == "" {
			cls += " exc"
		}
		if c.Blocks[r.block].Faulting {
			cls += " faulting"
		}
		if r.block%2 == 1 {
			cls += " alt"
		}
		switch {
		case r.empty:
			ecls := "w empty"
			if c.Blocks[r.block].Faulting {
				ecls += " faulting"
			}
			fmt.Fprintf(&s, `<rect class="%s" x="%d" y="%d" width="%d" height="%d"/>`, ecls, x0, y, xBr-x0, svgRowH)
			fmt.Fprintf(&s, `<text class="note" x="%d" y="%d">%s</text>`, x0+8, y+14, esc(c.Blocks[r.block].Empty))
		case r.w.Gap > 0:
			fmt.Fprintf(&s, `<rect class="%s gap" x="%d" y="%d" width="%d" height="%d"/>`, cls, x0, y, xBr-x0, svgRowH)
			fmt.Fprintf(&s, `<text class="note" x="%d" y="%d">⋮ %d words (%d bytes) not shown</text>`, x0+8, y+14, r.w.Gap, r.w.Gap*4)
		default:
			fmt.Fprintf(&s, `<rect class="%s" x="%d" y="%d" width="%d" height="%d"/>`, cls, x0, y, xBr-x0, svgRowH)
			fmt.Fprintf(&s, `<text class="addr" x="%d" y="%d">%08x</text>`, x0+6, y+14, r.w.Addr)
			val := "········"
			if r.w.Known {
				val = fmt.Sprintf("%08x", r.w.Value)
			}
			fmt.Fprintf(&s, `<text class="val" x="%d" y="%d">%s</text>`, xVal+6, y+14, val)
			if r.w.Label != "" {
				fmt.Fprintf(&labels, `<text class="lab" x="6" y="%d">%s</text>`, y+14, esc(clip(r.w.Label, 40)))
			}
		}
		// The block separator above the block's first row.
		if i == 0 || rows[i-1].block != r.block {
			fmt.Fprintf(&s, `<line class="sep" x1="%d" y1="%d" x2="%d" y2="%d"/>`, x0, y, xBr, y)
		}
		y += svgRowH
	}
	if len(rows) > 0 {
		fmt.Fprintf(&s, `<line class="sep" x1="%d" y1="%d" x2="%d" y2="%d"/>`, x0, y, xBr, y)
	}
	if labels.Len() > 0 {
		fmt.Fprintf(&s, `<svg x="%d" y="0" width="%d" height="%d" overflow="hidden">%s</svg>`, xLab, svgLabelW-4, h, labels.String())
	}
	// Brackets and titles.
	y = svgHeadH
	for i, b := range c.Blocks {
		n := 0
		for _, r := range rows {
			if r.block == i {
				n++
			}
		}
		top, bot := y+2, y+n*svgRowH-2
		cls := "br"
		if b.Kind == "exception" {
			cls += " brexc"
		}
		if b.Faulting {
			cls += " brfault"
		}
		fmt.Fprintf(&s, `<path class="%s" d="M%d %d h6 V%d h-6"/>`, cls, xBr+1, top, bot)
		title := clip(b.Title, 40)
		if n == 1 {
			// One row: the detail goes on the title's line, so that it
			// cannot run into the title of a one-row block below.
			room := (10*(svgTitleW-svgBracket-16) - svgTitleCharW*len([]rune(title))) / svgSubCharW
			fmt.Fprintf(&s, `<text class="title" x="%d" y="%d">%s`, xBr+svgBracket+4, top+12, esc(title))
			if room >= 8 {
				fmt.Fprintf(&s, `<tspan class="sub" dx="8">%s</tspan>`, esc(clip(b.Detail, room)))
			}
			s.WriteString(`</text>`)
		} else {
			ty := (top+bot)/2 - 2
			fmt.Fprintf(&s, `<text class="title" x="%d" y="%d">%s</text>`, xBr+svgBracket+4, ty, esc(title))
			fmt.Fprintf(&s, `<text class="sub" x="%d" y="%d">%s</text>`, xBr+svgBracket+4, ty+13, esc(clip(b.Detail, 50)))
		}
		y += n * svgRowH
	}
	// Stack pointers: an arrow to the word they address.
	for _, mk := range c.Marks {
		for i, r := range rows {
			if r.w.Gap > 0 || r.w.Addr != mk.Addr {
				continue
			}
			ry := svgHeadH + i*svgRowH + svgRowH/2
			// A register that addresses the word of an empty block's
			// row, or of a real word: same arrow.
			fmt.Fprintf(&s, `<text class="mark" x="2" y="%d">%s</text>`, ry+4, esc(mk.Label))
			fmt.Fprintf(&s, `<path class="arrow" d="M%d %d H%d l-5 -4 m5 4 l-5 4"/>`, 30, ry, x0-2)
			break
		}
	}
	fmt.Fprintf(&s, `<text class="hint" x="%d" y="%d">↓ lower addresses (the stack grows down)</text>`, xLab, h-8)
	s.WriteString(`</svg>`)
	return s.String()
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
