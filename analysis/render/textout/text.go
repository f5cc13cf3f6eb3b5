// Package textout renders a report, or a summary of many, as the
// human-readable text faultline prints by default.
package textout

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/unwinders"
)

// Write prints the human-readable report of r.
func Write(w io.Writer, r *report.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Crash dump %s", r.Dump)
	if len(r.Images) > 1 {
		names := make([]string, len(r.Images))
		for i, im := range r.Images {
			names[i] = filepath.Base(im.Path)
		}
		fmt.Fprintf(&b, " with %s", strings.Join(names, " + "))
	} else if r.ELF != "" {
		fmt.Fprintf(&b, " with %s", r.ELF)
	}
	fmt.Fprintf(&b, " (%s, %v)\n", report.CPUText(r.CPU), r.Profile)
	if p := r.Pairing; p != nil {
		fmt.Fprintf(&b, "Pairing: %s", p.Verdict)
		if r.ELFInfo != nil && r.ELFInfo.BuildID != "" {
			fmt.Fprintf(&b, ", ELF build-id %s", r.ELFInfo.BuildID)
		}
		if len(p.Evidence) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(p.Evidence, "; "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

	// The fault.
	fmt.Fprintf(&b, "%s", r.Fault.Exception)
	if r.Fault.Number > 0 {
		fmt.Fprintf(&b, " (exception %d)", r.Fault.Number)
	}
	b.WriteString("\n")
	for _, c := range r.Fault.Causes {
		fmt.Fprintf(&b, "  %-22s %s\n", c.Register+"."+c.Bit, c.Text)
	}
	if r.Fault.Address != "" {
		fmt.Fprintf(&b, "  %-22s %s\n", "faulting address", r.Fault.Address)
	}
	for _, n := range r.Fault.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if m := r.Message; m != nil {
		fmt.Fprintf(&b, "Message: %s (read from the %s)\n", m.Summary(), m.Where())
		if m.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", m.Note)
		}
	}
	writeVerdict(&b, r)

	// Registers.
	b.WriteString("\nRegisters\n")
	writeRegs(&b, &r.Regs)

	// The backtrace.
	fmt.Fprintf(&b, "\nBacktrace (unwinder %s)\n", r.Unwinder)
	writeFrames(&b, r.Frames, "  ")
	fmt.Fprintf(&b, "Stop: %s\n", r.Stop)
	writeThreads(&b, r)
	writeHeap(&b, r)
	writeAllocations(&b, r)
	writeLogs(&b, r)
	if len(r.Warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, wr := range r.Warnings {
			fmt.Fprintf(&b, "  - %s\n", wr)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLogs prints the logs found in RAM, each line prefixed by "| ".
func writeLogs(b *strings.Builder, r *report.Report) {
	if len(r.Logs) == 0 {
		return
	}
	b.WriteString("\nLogs (text left in RAM, oldest first)\n")
	for _, l := range r.Logs {
		fmt.Fprintf(b, "  %s %q at %s", l.Source, l.Name, l.Address)
		if l.Unread > 0 {
			fmt.Fprintf(b, ", %d bytes unread", l.Unread)
		}
		if l.Truncated {
			b.WriteString(", only the end shown")
		}
		b.WriteString("\n")
		if l.Note != "" {
			fmt.Fprintf(b, "    note: %s\n", l.Note)
		}
		if l.Text == "" {
			b.WriteString("    (empty)\n")
			continue
		}
		for _, line := range strings.Split(strings.TrimSuffix(l.Text, "\n"), "\n") {
			fmt.Fprintf(b, "    | %s\n", line)
		}
	}
}

func writeRegs(b *strings.Builder, r *unwinders.Registers) {
	order := []unwinders.Reg{
		unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3,
		unwinders.R4, unwinders.R5, unwinders.R6, unwinders.R7,
		unwinders.R8, unwinders.R9, unwinders.R10, unwinders.R11,
		unwinders.R12, unwinders.SP, unwinders.LR, unwinders.PC,
		unwinders.XPSR, unwinders.MSP, unwinders.PSP, unwinders.CONTROL,
		unwinders.PRIMASK, unwinders.BASEPRI, unwinders.FAULTMASK,
	}
	col := 0
	for _, reg := range order {
		v, ok := r.Get(reg)
		val := "   unknown"
		if ok {
			val = fmt.Sprintf("0x%08x", v)
		}
		if col == 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(b, " %-9s %s ", reg, val)
		col++
		if col == 4 {
			b.WriteString("\n")
			col = 0
		}
	}
	if col != 0 {
		b.WriteString("\n")
	}
	if _, ok := r.Get(unwinders.FPSCR); ok {
		fmt.Fprintf(b, "  %-9s 0x%08x\n", "fpscr", r.Value(unwinders.FPSCR))
	}
}

// writeFrames prints a backtrace, each line indented by indent.
func writeFrames(b *strings.Builder, frames []report.FrameJSON, indent string) {
	width, lwidth := 0, 0
	for _, f := range frames {
		if f.Kind != unwinders.KindException.String() && f.Kind != unwinders.KindGap.String() {
			width = max(width, len(report.FrameName(f)))
			lwidth = max(lwidth, len(report.FileLine(f)))
		}
	}
	width = min(width, 48)
	lwidth = min(lwidth, 40)
	for _, f := range frames {
		if f.Kind == unwinders.KindException.String() {
			fmt.Fprintf(b, "%s#%-2d <exception> %s  [%s, %s]\n", indent, f.Index, f.Note, f.Method, f.Confidence)
			continue
		}
		if f.Kind == unwinders.KindGap.String() {
			fmt.Fprintf(b, "%s#%-2d <gap> frames are missing here  [%s, %s]\n%s    note: %s\n", indent, f.Index, f.Method, f.Confidence, indent, f.Note)
			continue
		}
		loc := report.FileLine(f)
		pc := f.PC
		if f.Kind == unwinders.KindInlined.String() {
			pc = strings.Repeat(" ", len(pc))
		}
		how := fmt.Sprintf("[%s, %s]", f.Method, f.Confidence)
		if f.Image != "" {
			// Several images: the one that holds the frame's code.
			how = fmt.Sprintf("[%s, %s, %s]", f.Image, f.Method, f.Confidence)
		}
		if f.Kind == unwinders.KindInlined.String() {
			how = "[inlined]"
		} else if f.Kind == unwinders.KindGuessed.String() {
			how = strings.TrimSuffix(how, "]") + ", guessed]"
		}
		fmt.Fprintf(b, "%s#%-2d %s  %-*s  %-*s  %s\n", indent, f.Index, pc, width, report.FrameName(f)+report.ArgsText(f.Args), lwidth, loc, how)
		if f.Note != "" {
			fmt.Fprintf(b, "%s    note: %s\n", indent, f.Note)
		}
		for _, v := range f.Locals {
			fmt.Fprintf(b, "%s    local %s\n", indent, v.Text())
		}
	}
}

// writeThreads prints the RTOS threads: a table, then each thread's
// backtrace, the crashing one first (its backtrace is the one above).
func writeThreads(b *strings.Builder, r *report.Report) {
	if r.RTOS == nil {
		return
	}
	fmt.Fprintf(b, "\nThreads (%s, layouts from %s): %d\n", r.RTOS.Kind, r.RTOS.Source, len(r.Threads))
	nw := 4
	for _, t := range r.Threads {
		nw = max(nw, min(len(t.Name), 24))
	}
	fmt.Fprintf(b, "     %-*s  %-9s  %-10s  %-22s  %s\n", nw, "name", "state", "prio", "stack used", "waiting on")
	for _, t := range r.Threads {
		mark := " "
		if t.Current {
			mark = "*"
		}
		fmt.Fprintf(b, "  %s  %-*s  %-9s  %-10s  %-22s  %s\n", mark, nw, t.Name, t.State, report.PriorityText(t), report.StackUse(t.Raw.Stack), t.WaitingOn)
	}
	for i, t := range r.Threads {
		fmt.Fprintf(b, "\nThread %d: %s (%s, priority %s), id %s\n", i+1, t.Name, t.State, report.PriorityText(t), t.ID)
		st := t.Raw.Stack
		if st.Start != 0 {
			end := "?"
			if st.End != 0 {
				end = fmt.Sprintf("0x%08x", st.End)
			}
			fmt.Fprintf(b, "  stack 0x%08x-%s, SP 0x%08x", st.Start, end, st.SP)
			if st.HighWaterBytes >= 0 {
				fmt.Fprintf(b, ", %d bytes never used", st.HighWaterBytes)
			}
			b.WriteString("\n")
		}
		for _, d := range t.Diagnosis {
			fmt.Fprintf(b, "  diagnosis: %s\n", d)
		}
		switch {
		case t.Error != "":
			fmt.Fprintf(b, "  error: %s\n", t.Error)
			continue
		case t.Current:
			b.WriteString("  the crashing thread: its backtrace is the one above\n")
			continue
		}
		writeFrames(b, t.Frames, "  ")
		fmt.Fprintf(b, "  Stop: %s\n", t.Stop)
	}
}

// writeVerdict prints the stack verdict: "Stack overflow: main (evidence:
// MSTKERR, SP below stack start)" and why, or a lockup with no overflow
// shown.
func writeVerdict(b *strings.Builder, r *report.Report) {
	v := r.StackVerdict
	if v == nil {
		return
	}
	if v.Overflow {
		fmt.Fprintf(b, "Stack overflow: %s (evidence: %s)\n", v.Stack, strings.Join(v.Evidence, ", "))
	} else {
		fmt.Fprintf(b, "Lockup: no stack overflow shown (evidence: %s)\n", strings.Join(v.Evidence, ", "))
	}
	for _, d := range v.Details {
		fmt.Fprintf(b, "  %s\n", d)
	}
}

// writeHeap prints the heap walks.
func writeHeap(b *strings.Builder, r *report.Report) {
	for _, w := range r.Heap {
		fmt.Fprintf(b, "\nHeap (%s)", w.Allocator)
		if w.End > w.Start {
			fmt.Fprintf(b, " 0x%08x-0x%08x", w.Start, w.End)
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "  used %d bytes in %d blocks, free %d bytes in %d blocks, largest free block %d bytes, fragmentation %.0f%%\n",
			w.UsedBytes, w.UsedBlocks, w.FreeBytes, w.FreeBlocks, w.LargestFree, 100*w.Fragmentation)
		if w.Corrupt != "" {
			fmt.Fprintf(b, "  CORRUPT: %s\n", w.Corrupt)
		}
		if w.Unreadable != "" {
			fmt.Fprintf(b, "  incomplete: %s\n", w.Unreadable)
		}
		for _, n := range w.Notes {
			fmt.Fprintf(b, "  note: %s\n", n)
		}
	}
}

// maxTextSites bounds the sites the text report lists one by one.
const maxTextSites = 20

// writeAllocations prints the recorder's table: the sites, most bytes
// first (the first maxTextSites), each with the return addresses of its
// largest block.
func writeAllocations(b *strings.Builder, r *report.Report) {
	a := r.Allocations
	if a == nil {
		return
	}
	fmt.Fprintf(b, "\nAllocations recorded on the device (%s at %s)\n", a.Symbol, a.Address)
	if a.Error != "" {
		fmt.Fprintf(b, "  unusable: %s\n", a.Error)
		return
	}
	fmt.Fprintf(b, "  %d live blocks, %d bytes; table version %d (layout from %s), %d of %d entries, %d dropped, %d unknown frees, return addresses: LR exact",
		a.LiveBlocks, a.LiveBytes, a.Version, a.Layout, a.Count, a.Capacity, a.Dropped, a.UnknownFrees)
	if a.StackScan {
		b.WriteString(", callers above it from a stack scan (may be stale)")
	}
	b.WriteString("\n")
	for i, s := range a.Sites {
		if i == maxTextSites {
			var bytes uint64
			blocks := 0
			for _, r := range a.Sites[i:] {
				bytes += r.Bytes
				blocks += r.Blocks
			}
			fmt.Fprintf(b, "  and %d more sites: %d bytes in %d blocks (the JSON lists every site)\n", len(a.Sites)-i, bytes, blocks)
			break
		}
		where := "??"
		if s.Function != "" {
			where = s.Function
		}
		if s.File != "" {
			where += fmt.Sprintf(" (%s:%d)", report.DisplayPath(s.File), s.Line)
		}
		plural := "s"
		if s.Blocks == 1 {
			plural = ""
		}
		fmt.Fprintf(b, "  %d bytes in %d block%s allocated in %s\n", s.Bytes, s.Blocks, plural, where)
		writeFrames(b, s.Stack, "      ")
	}
	for _, p := range a.Problems {
		fmt.Fprintf(b, "  problem: %s\n", p)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}
