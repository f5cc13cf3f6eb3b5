package regress

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// table aligns cells in columns; the last cell of a row is not padded.
type table struct{ rows [][]string }

func newTable() *table { return &table{} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString(" ")
			}
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
	return b.String()
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// reproduce returns the commands that run a scenario by hand; stream is
// the semihosting stream the crash handler writes its dump to.
func reproduce(sc *Scenario, unwinder, stream string) []string {
	emulate := append([]string{"faultline", "emulate", "--elf", sc.ELFPath, "-o", "crash.json"}, trigger(sc).Args()...)
	analyze := []string{"faultline", "analyze", "--elf", sc.ELFPath}
	if unwinder != "auto" {
		analyze = append(analyze, "--unwinder", unwinder)
	}
	if h := sc.Expect.Heap; h != nil {
		hp := append([]string{"faultline", "heap", "--elf", sc.ELFPath}, trigger(sc).Args()...)
		if h.Alloc != "" {
			hp = append(hp, "--alloc", h.Alloc, "--free", h.Free)
		}
		if sc.Expect.Fault == nil && len(sc.Frames) == 0 {
			return []string{shellJoin(hp)}
		}
		return []string{shellJoin(hp), shellJoin(emulate), shellJoin(append(analyze, "crash.json"))}
	}
	if !sc.Handler.Check {
		return []string{shellJoin(emulate), shellJoin(append(analyze, "crash.json"))}
	}
	// emulate passes the handler's semihosting output (the device's dump)
	// through to its own stdout and stderr.
	redirect := "> handler.txt"
	if stream == OutputStderr {
		redirect = "2> handler.txt"
	}
	return []string{shellJoin(emulate) + " " + redirect,
		shellJoin(append(analyze, "crash.json")) + "    # the harness's view",
		shellJoin(append(analyze, "handler.txt")) + "   # the crash handler's dump"}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, prefix) + "\n"
}

// Text is the readable report of one result: the status line and, for a
// failure or an error, what differs and how to reproduce it. verbose
// adds the backtrace of a passing scenario.
func (r *Result) Text(verbose bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %s (%s)\n", r.Status, r.Scenario.Name, seconds(r.Time))
	if r.Status != StatusPass {
		b.WriteString(indent(r.Details(), "      "))
	} else if verbose {
		t := newTable()
		for i, f := range r.Frames {
			t.add(append([]string{"#" + fmt.Sprint(i)}, frameCells(f)...)...)
		}
		b.WriteString(indent(t.String(), "      "))
		if r.Handler != "" {
			b.WriteString("      handler: " + r.Handler + "\n")
		}
	}
	return b.String()
}

// Details says what went wrong (each problem's summary and diff, or the
// error) and how to reproduce the scenario; "" when it passed.
func (r *Result) Details() string {
	var b strings.Builder
	switch r.Status {
	case StatusPass:
		return ""
	case StatusError:
		b.WriteString(r.Err.Error() + "\n")
	default:
		for _, p := range r.Problems {
			b.WriteString(p.Summary + "\n")
			if p.Detail != "" {
				b.WriteString(indent(p.Detail, "  "))
			}
		}
	}
	b.WriteString("reproduce:\n")
	for _, c := range r.Reproduce {
		b.WriteString("  " + c + "\n")
	}
	return b.String()
}

// WriteText writes the summary line of a run.
func (s *Summary) WriteText(w io.Writer) error {
	n := len(s.Results)
	var err error
	switch {
	case s.Interrupted:
		_, err = fmt.Fprintf(w, "FAIL  %s: interrupted after %d %s: %d passed, %d failed, %d could not run (%s)\n",
			s.Spec.Path, n, plural(n, "scenario"), s.Passed, s.Failed, s.Errors, seconds(s.Time))
	case n == 0:
		_, err = fmt.Fprintf(w, "FAIL  %s: no scenario ran\n", s.Spec.Path)
	case s.OK():
		_, err = fmt.Fprintf(w, "ok    %s: %d %s passed (%s)\n", s.Spec.Path, n, plural(n, "scenario"), seconds(s.Time))
	default:
		_, err = fmt.Fprintf(w, "FAIL  %s: %d of %d %s failed, %d could not run (%s)\n",
			s.Spec.Path, s.Failed, n, plural(n, "scenario"), s.Errors, seconds(s.Time))
	}
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
