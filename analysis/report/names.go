package report

import (
	"fmt"
	"github.com/faultline-dev/faultline/rtos"
	"path"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// The model's own words for its parts, shared by every rendering.

// FrameName renders a frame as the text and HTML reports name it: "function+0xoff", "?? (in the gap after sym+0x10)" or
// "??".
func FrameName(f FrameJSON) string {
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
func (f FrameJSON) ArgsLine() string { return strings.TrimPrefix(ArgsText(f.Args), " ") }

// ArgsText is " (a=1, p=0x20000010 <buf>)": GDB's frame line, where a
// struct or array shows as "..." and a long value is cut.
func ArgsText(args []VarJSON) string {
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

// FileLine is a frame's "file:line" as the reports print it (the path
// through DisplayPath), "" without a file.
func FileLine(f FrameJSON) string {
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

// FaultingFrame returns the index in r.Frames of the faulting frame: the
// first entry after the first exception pseudo-frame, or 0 when there is
// none; -1 when the report has no frames.
func FaultingFrame(r *Report) int {
	for i, f := range r.Frames {
		if f.Kind == unwinders.KindException.String() && i+1 < len(r.Frames) {
			return i + 1
		}
	}
	if len(r.Frames) == 0 {
		return -1
	}
	return 0
}

// PriorityText is a thread's priority as the reports show it: "5", "7 (base 5)"
// when a mutex raised it, "?" when unknown.
func PriorityText(t ThreadJSON) string {
	if t.Priority == nil {
		return "?"
	}
	if t.BasePriority != nil {
		return fmt.Sprintf("%d (base %d)", *t.Priority, *t.BasePriority)
	}
	return fmt.Sprint(*t.Priority)
}

// StackUse renders "used/size bytes (pct%)" from rtos.Stack.UsedBytes: an
// overflow counts past the size (over 100%).
func StackUse(s rtos.Stack) string {
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

// CPUText is a report's CPU as the reports print it: as the dump names it,
// "CPU unknown" when it does not.
func CPUText(s string) string {
	if s == "" {
		return "CPU unknown"
	}
	return s
}
