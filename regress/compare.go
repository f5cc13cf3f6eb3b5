package regress

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/emu"
)

// causes returns a fault's status bits as REGISTER.BIT, in report order.
func causes(f report.FaultJSON) []string {
	out := make([]string, 0, len(f.Causes))
	for _, c := range f.Causes {
		out = append(out, c.Register+"."+c.Bit)
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func addressOrNone(a string) string {
	if a == "" {
		return "none recorded"
	}
	return a
}

// compareFault checks the harness's fault against the spec: the exception,
// the causes (each expected one must be set; others may be), the address.
func compareFault(want *FaultExpect, got report.FaultJSON) []Problem {
	var lines, summaries []string
	if want.Exception != "" && want.Exception != got.Exception {
		summaries = append(summaries, fmt.Sprintf("the crash is a %s, the spec expects %s", got.Exception, want.Exception))
		lines = append(lines, fmt.Sprintf("exception  expected %s, got %s", want.Exception, got.Exception))
	}
	have := causes(got)
	var missing []string
	for _, c := range want.Causes {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		summaries = append(summaries, fmt.Sprintf("%s not set (set: %s)", strings.Join(missing, ", "), listOrNone(have)))
		lines = append(lines, fmt.Sprintf("causes     expected %s, got %s; missing %s",
			strings.Join(want.Causes, ", "), listOrNone(have), strings.Join(missing, ", ")))
	}
	if want.hasAddress {
		if w := report.Hex(want.address); w != got.Address {
			summaries = append(summaries, fmt.Sprintf("the faulting address is %s, the spec expects %s", addressOrNone(got.Address), w))
			lines = append(lines, fmt.Sprintf("address    expected %s, got %s", w, addressOrNone(got.Address)))
		}
	}
	if len(summaries) == 0 {
		return nil
	}
	return []Problem{{Kind: "fault", Summary: "fault: " + strings.Join(summaries, "; "),
		Detail: strings.Join(lines, "\n") + "\n"}}
}

// compareFrames checks the harness's backtrace (exception pseudo-frames
// removed) against the expected frames: they must be its first frames
// (MatchPrefix) or all of it (MatchExact).
func compareFrames(want []FrameExpect, got []Frame, match, unwinder string) (Problem, bool) {
	first := -1
	for i, w := range want {
		if i >= len(got) || !w.Match(got[i]) {
			first = i
			break
		}
	}
	var summary string
	switch {
	case first >= 0 && first >= len(got):
		summary = fmt.Sprintf("backtrace: it ends after %s; the spec expects frame #%d %s", frameCount(len(got)), first, want[first])
	case first >= 0:
		summary = fmt.Sprintf("backtrace: frame #%d is %s, the spec expects %s", first, describe(got[first]), want[first])
	case match == MatchExact && len(got) > len(want):
		summary = fmt.Sprintf("backtrace: %s, the spec expects exactly %d; the first extra one is #%d %s",
			frameCount(len(got)), len(want), len(want), describe(got[len(want)]))
	default:
		return Problem{}, true
	}
	exp := make([][]string, len(want))
	for i, w := range want {
		exp[i] = []string{w.String()}
	}
	act := make([][]string, len(got))
	for i, f := range got {
		act[i] = frameCells(f)
	}
	// The trailing frames a prefix does not cover are neither missing nor
	// extra.
	lastMatch := -1
	pairs := align(len(want), len(got), func(i, j int) bool { return want[i].Match(got[j]) })
	for _, p := range pairs {
		if p.mark == "=" {
			lastMatch = max(lastMatch, p.j)
		}
	}
	if match == MatchPrefix {
		for k := range pairs {
			if p := &pairs[k]; p.i < 0 && p.j > lastMatch && p.j >= len(want) {
				p.mark = ""
			}
		}
	}
	detail := sideBySide("expected ("+match+")", "actual (unwinder "+unwinder+")", exp, act, pairs) +
		"(= matches, ! differs, - expected but missing, + not expected)\n"
	return Problem{Kind: "backtrace", Summary: summary, Detail: detail}, false
}

// frameCells is a frame as table cells: PC, function, file:line.
func frameCells(f Frame) []string {
	if f.Exception {
		return []string{"", "<exception>", ""}
	}
	fn := f.Function
	if fn == "" {
		fn = "??"
	}
	if f.Inlined {
		fn += " [inlined]"
	}
	return []string{f.PC, fn, location(f)}
}

func location(f Frame) string {
	switch {
	case f.File == "":
		return ""
	case f.Line == 0:
		return f.File
	}
	return fmt.Sprintf("%s:%d", f.File, f.Line)
}

// describe names a frame in a sentence: "deep5_mixed (./src/main.c:63)",
// "?? at 0x20003e4c", "an exception frame".
func describe(f Frame) string {
	switch {
	case f.Exception:
		return "an exception frame"
	case f.Function == "":
		return "?? at " + f.PC
	case location(f) != "":
		return f.Function + " (" + location(f) + ")"
	}
	return f.Function
}

// sameFrame is the identity the handler check compares: the function and
// its source line, or an exception pseudo-frame.
func sameFrame(a, b Frame) bool {
	return a.Exception == b.Exception && a.Function == b.Function && a.File == b.File &&
		a.Line == b.Line && a.Inlined == b.Inlined
}

// compareHandler checks the analysis of the device's own dump against the
// harness's analysis of the same crash: the backtrace from the faulting
// frame outwards (exception pseudo-frames included, as markers) and the
// fault (exception, causes, address).
func compareHandler(harness, device []Frame, hf, df report.FaultJSON, dev *crashdump.Dump, outcome *emu.HandlerOutcome) []Problem {
	var probs []Problem
	notes := handlerOutcome(outcome)
	for _, w := range dev.Warnings {
		notes += "Dump warning: " + w + "\n"
	}
	first := -1
	for i := 0; i < max(len(harness), len(device)); i++ {
		if i >= len(harness) || i >= len(device) || !sameFrame(harness[i], device[i]) {
			first = i
			break
		}
	}
	if first >= 0 {
		saw := func(fs []Frame) string {
			if first < len(fs) {
				return describe(fs[first])
			}
			return "no frame (the backtrace ends)"
		}
		left := make([][]string, len(harness))
		for i, f := range harness {
			left[i] = frameCells(f)
		}
		right := make([][]string, len(device))
		for i, f := range device {
			right[i] = frameCells(f)
		}
		pairs := align(len(harness), len(device), func(i, j int) bool { return sameFrame(harness[i], device[j]) })
		table := sideBySide("harness (emulator)", "device (crash handler dump)", left, right, pairs) +
			"(= same, ! differs, - only the harness has it, + only the device's dump has it)\n"
		probs = append(probs, Problem{Kind: "handler",
			Summary: fmt.Sprintf("handler: the device's crash handler reports frame #%d as %s, the harness saw %s", first, saw(device), saw(harness)),
			Detail: "The dump the firmware's crash handler wrote decodes to a different backtrace than the emulator's dump of the same crash:\n" +
				table + notes})
	}
	var diffs []string
	if hf.Exception != df.Exception {
		diffs = append(diffs, fmt.Sprintf("the device's crash handler reports a %s, the harness saw a %s", df.Exception, hf.Exception))
	}
	if hc, dc := causes(hf), causes(df); !sameSet(hc, dc) {
		diffs = append(diffs, fmt.Sprintf("the device's crash handler reports causes %s, the harness saw %s", listOrNone(dc), listOrNone(hc)))
	}
	if hf.Address != df.Address {
		diffs = append(diffs, fmt.Sprintf("the device's crash handler reports fault address %s, the harness saw %s", addressOrNone(df.Address), addressOrNone(hf.Address)))
	}
	if len(diffs) > 0 {
		probs = append(probs, Problem{Kind: "handler", Summary: "handler: " + diffs[0],
			Detail: strings.Join(diffs, "\n") + "\n" + notes})
	}
	return probs
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// pair is one row of a side-by-side diff: left item i and right item j
// (-1 when the row has none) and its mark: "=" same, "!" differs, "-"
// only on the left, "+" only on the right.
type pair struct {
	i, j int
	mark string
}

// align lines up two lists along a longest common subsequence of equal
// items; between two matches, the unmatched items are paired off as
// differing rows, and what is left over shows as missing or extra. The
// lists are backtraces (at most a few hundred frames): the quadratic
// table is small.
func align(n, m int, eq func(i, j int) bool) []pair {
	// lcs[i][j] is the LCS length of left[i:] and right[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if eq(i, j) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []pair
	var gapL, gapR []int
	flush := func() {
		k := 0
		for ; k < len(gapL) && k < len(gapR); k++ {
			out = append(out, pair{gapL[k], gapR[k], "!"})
		}
		for _, i := range gapL[k:] {
			out = append(out, pair{i, -1, "-"})
		}
		for _, j := range gapR[k:] {
			out = append(out, pair{-1, j, "+"})
		}
		gapL, gapR = gapL[:0], gapR[:0]
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && eq(i, j) && lcs[i][j] == lcs[i+1][j+1]+1:
			flush()
			out = append(out, pair{i, j, "="})
			i, j = i+1, j+1
		case j >= m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			gapL = append(gapL, i)
			i++
		default:
			gapR = append(gapR, j)
			j++
		}
	}
	flush()
	return out
}

// sideBySide renders aligned rows: a mark, the left index and cells, a
// bar, the right index and cells. Each side's cells are aligned on their
// own.
func sideBySide(leftTitle, rightTitle string, left, right [][]string, pairs []pair) string {
	side := func(items [][]string) []string {
		t := newTable()
		for _, c := range items {
			t.add(c...)
		}
		return strings.Split(strings.TrimSuffix(t.String(), "\n"), "\n")
	}
	l, r := side(left), side(right)
	t := newTable()
	t.add("", "#", leftTitle, "|", "#", rightTitle)
	for _, p := range pairs {
		row := []string{p.mark, "", "", "|", "", ""}
		if p.i >= 0 {
			row[1], row[2] = fmt.Sprint(p.i), l[p.i]
		}
		if p.j >= 0 {
			row[4], row[5] = fmt.Sprint(p.j), r[p.j]
		}
		t.add(row...)
	}
	return t.String()
}

// frameCount says "1 frame", "2 frames".
func frameCount(n int) string {
	if n == 1 {
		return "1 frame"
	}
	return fmt.Sprintf("%d frames", n)
}
