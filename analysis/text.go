package analysis

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// WriteText prints the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Crash dump %s", r.Dump)
	if r.ELF != "" {
		fmt.Fprintf(&b, " with %s", r.ELF)
	}
	fmt.Fprintf(&b, " (%s, %v)\n", orUnknown(r.CPU), r.Profile)
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
		fmt.Fprintf(&b, "Message: %s (read from the %s)\n", m.Text, m.Source)
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

// frameName renders "function+0xoff", "?? (in the gap after sym+0x10)" or
// "??".
func frameName(f FrameJSON) string {
	off := ""
	if f.Offset != nil && f.Kind != unwinders.KindInlined.String() {
		off = fmt.Sprintf("+0x%x", *f.Offset)
	}
	switch {
	case f.Gap:
		return fmt.Sprintf("?? (in the gap after %s%s)", f.Symbol, off)
	case f.Function != "" && f.Kind == unwinders.KindInlined.String():
		return f.Function + " (inlined)"
	case f.Function != "":
		if f.Symbol != "" && f.Symbol != f.Function {
			return f.Function + off
		}
		return f.Function + off
	case f.Symbol != "":
		return f.Symbol + off
	}
	return "??"
}

// ArgsLine is the frame's arguments as the text report shows them, "" if none.
func (f FrameJSON) ArgsLine() string { return strings.TrimPrefix(argsText(f.Args), " ") }

// writeLogs prints the logs found in RAM, each line prefixed by "| ".
func writeLogs(b *strings.Builder, r *Report) {
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

// argsText is " (a=1, p=0x20000010 <buf>)": GDB's frame line, where a
// struct or array shows as "..." and a long value is cut.
func argsText(args []VarJSON) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (")
	for i, v := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		if strings.HasPrefix(v.Value, "{") {
			v.Value = "..."
		} else if len(v.Value) > 48 {
			v.Value = v.Value[:45] + "..."
		}
		b.WriteString(v.Text())
	}
	b.WriteString(")")
	return b.String()
}

func fileLine(f FrameJSON) string {
	if f.File == "" {
		return ""
	}
	file := DisplayPath(f.File)
	if f.Line == 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, f.Line)
}

// DisplayPath is a source path as the text and HTML reports print it:
// lexically cleaned ("././src/a.c" -> "./src/a.c", "/x/build/../../newlib/m.c"
// -> "/newlib/m.c"), keeping a leading "./" that the debug information
// gave, since it says the path is relative to the build directory. JSON
// keeps the path exactly as the debug information has it.
func DisplayPath(p string) string {
	if p == "" {
		return p
	}
	c := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if strings.HasPrefix(p, "./") && !strings.HasPrefix(c, "../") && !strings.HasPrefix(c, "/") && c != "." {
		c = "./" + c
	}
	return c
}

func orUnknown(s string) string {
	if s == "" {
		return "CPU unknown"
	}
	return s
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
func writeFrames(b *strings.Builder, frames []FrameJSON, indent string) {
	width, lwidth := 0, 0
	for _, f := range frames {
		if f.Kind != unwinders.KindException.String() && f.Kind != unwinders.KindGap.String() {
			width = max(width, len(frameName(f)))
			lwidth = max(lwidth, len(fileLine(f)))
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
		loc := fileLine(f)
		pc := f.PC
		if f.Kind == unwinders.KindInlined.String() {
			pc = strings.Repeat(" ", len(pc))
		}
		how := fmt.Sprintf("[%s, %s]", f.Method, f.Confidence)
		if f.Kind == unwinders.KindInlined.String() {
			how = "[inlined]"
		} else if f.Kind == unwinders.KindGuessed.String() {
			how = fmt.Sprintf("[%s, %s, guessed]", f.Method, f.Confidence)
		}
		fmt.Fprintf(b, "%s#%-2d %s  %-*s  %-*s  %s\n", indent, f.Index, pc, width, frameName(f)+argsText(f.Args), lwidth, loc, how)
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
func writeThreads(b *strings.Builder, r *Report) {
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
		fmt.Fprintf(b, "  %s  %-*s  %-9s  %-10s  %-22s  %s\n", mark, nw, t.Name, t.State, prioText(t), stackUse(t.Raw.Stack), t.WaitingOn)
	}
	for i, t := range r.Threads {
		fmt.Fprintf(b, "\nThread %d: %s (%s, priority %s), id %s\n", i+1, t.Name, t.State, prioText(t), t.ID)
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

func prioText(t ThreadJSON) string {
	if t.Priority == nil {
		return "?"
	}
	if t.BasePriority != nil {
		return fmt.Sprintf("%d (base %d)", *t.Priority, *t.BasePriority)
	}
	return fmt.Sprint(*t.Priority)
}

// stackUse renders "used/size bytes (pct%)" from rtos.Stack.UsedBytes: an
// overflow counts past the size (over 100%).
func stackUse(s rtos.Stack) string {
	used := s.UsedBytes()
	if used < 0 {
		return "?"
	}
	size := int(s.End - s.Start)
	out := fmt.Sprintf("%d/%d (%d%%)", used, size, used*100/size)
	if s.Overflow {
		out += " OVERFLOW"
	}
	return out
}

// writeVerdict prints the stack verdict: "Stack overflow: main (evidence:
// MSTKERR, SP below stack start)" and why, or a lockup with no overflow
// shown.
func writeVerdict(b *strings.Builder, r *Report) {
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
