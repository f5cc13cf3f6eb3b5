package regress

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
)

func frames(names ...string) []Frame {
	var out []Frame
	for i, n := range names {
		if n == "<exception>" {
			out = append(out, Frame{Exception: true})
			continue
		}
		out = append(out, Frame{Function: n, File: "./src/main.c", Line: 10 * (i + 1), PC: fmt.Sprintf("0x%08x", 0x100+16*i)})
	}
	return out
}

func expects(names ...string) []FrameExpect {
	var out []FrameExpect
	for _, n := range names {
		out = append(out, FrameExpect{Function: n})
	}
	return out
}

func TestRegressAlign(t *testing.T) {
	marks := func(ps []pair) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%s%d:%d ", p.mark, p.i, p.j)
		}
		return strings.TrimSpace(b.String())
	}
	for _, c := range []struct{ l, r, want string }{
		{"abc", "abc", "=0:0 =1:1 =2:2"},
		{"abcd", "xcd", "!0:0 -1:-1 =2:1 =3:2"},
		{"ab", "abcd", "=0:0 =1:1 +-1:2 +-1:3"},
		{"axc", "ayc", "=0:0 !1:1 =2:2"},
		{"", "ab", "+-1:0 +-1:1"},
		{"ab", "", "-0:-1 -1:-1"},
	} {
		got := marks(align(len(c.l), len(c.r), func(i, j int) bool { return c.l[i] == c.r[j] }))
		if got != c.want {
			t.Errorf("align(%q, %q) = %s, want %s", c.l, c.r, got, c.want)
		}
	}
}

func TestRegressCompareFrames(t *testing.T) {
	got := frames("null_store", "deep5_mixed", "deep4_huge_locals", "main")
	if p, ok := compareFrames(expects("null_store", "deep5_mixed"), got, MatchPrefix, "auto"); !ok {
		t.Errorf("prefix: %+v", p)
	}
	if p, ok := compareFrames(expects("null_store", "*", "deep4_huge_locals", "main"), got, MatchExact, "auto"); !ok {
		t.Errorf("exact with wildcard: %+v", p)
	}
	for _, c := range []struct {
		want    []FrameExpect
		match   string
		summary string
		rows    []string
	}{
		{expects("null_store", "deep4_huge_locals"), MatchPrefix,
			"backtrace: frame #1 is deep5_mixed (./src/main.c:20), the spec expects deep4_huge_locals",
			[]string{"= 0 null_store", "+ | 1 0x00000110 deep5_mixed", "= 1 deep4_huge_locals | 2 0x00000120 deep4_huge_locals ./src/main.c:30"}},
		{expects("null_store", "deep5_mixed"), MatchExact,
			"backtrace: 4 frames, the spec expects exactly 2; the first extra one is #2 deep4_huge_locals (./src/main.c:30)",
			[]string{"+ | 3 0x00000130 main"}},
		{append(expects("null_store", "deep5_mixed", "deep4_huge_locals", "main"), FrameExpect{Function: "Reset_Handler", File: "startup.c"}), MatchPrefix,
			"backtrace: it ends after 4 frames; the spec expects frame #4 Reset_Handler startup.c",
			[]string{"- 4 Reset_Handler startup.c |"}},
		{[]FrameExpect{{Function: "null_store", File: "main.c", Line: 11}}, MatchPrefix,
			"backtrace: frame #0 is null_store (./src/main.c:10), the spec expects null_store main.c:11",
			[]string{"! 0 null_store main.c:11 | 0 0x00000100 null_store"}},
	} {
		p, ok := compareFrames(c.want, got, c.match, "auto")
		if ok {
			t.Errorf("%v: no difference found", c.want)
			continue
		}
		if p.Summary != c.summary {
			t.Errorf("summary %q\nwant    %q", p.Summary, c.summary)
		}
		for _, r := range c.rows {
			if !strings.Contains(collapse(p.Detail), r) {
				t.Errorf("diff lacks %q:\n%s", r, p.Detail)
			}
		}
	}
}

// collapse squeezes runs of spaces, so tests do not depend on column
// widths.
func collapse(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

func TestRegressCompareFault(t *testing.T) {
	got := report.FaultJSON{Exception: "HardFault", Number: 3, Address: "0x00000000",
		Causes: []fault.Cause{{Register: "CFSR", Bit: "DACCVIOL"}, {Register: "HFSR", Bit: "FORCED"}}}
	if p := compareFault(&FaultExpect{Exception: "HardFault", Causes: []string{"HFSR.FORCED"}, address: 0, hasAddress: true}, got); p != nil {
		t.Errorf("matching fault: %+v", p)
	}
	p := compareFault(&FaultExpect{Exception: "BusFault", Causes: []string{"CFSR.PRECISERR", "HFSR.FORCED"}, address: 4, hasAddress: true}, got)
	if len(p) != 1 {
		t.Fatalf("problems %+v", p)
	}
	for _, want := range []string{"the crash is a HardFault, the spec expects BusFault", "CFSR.PRECISERR not set (set: CFSR.DACCVIOL, HFSR.FORCED)",
		"the faulting address is 0x00000000, the spec expects 0x00000004"} {
		if !strings.Contains(p[0].Summary, want) {
			t.Errorf("summary %q lacks %q", p[0].Summary, want)
		}
	}
}

func TestRegressCompareHandler(t *testing.T) {
	h := frames("irq_touch_device", "irq_service", "fl_crash_irq_handler", "<exception>", "irq_raise", "main")
	hf := report.FaultJSON{Exception: "HardFault", Causes: []fault.Cause{{Register: "CFSR", Bit: "PRECISERR"}}, Address: "0x30000010"}
	dump := &crashdump.Dump{}
	if p := compareHandler(h, h, hf, hf, dump, nil); p != nil {
		t.Errorf("same crash: %+v", p)
	}
	d := append([]Frame{{PC: "0x20003e4c"}}, h[2:]...)
	df := hf
	df.Causes = nil
	dump.Warnings = []string{"the handler's stack overflowed"}
	p := compareHandler(h, d, hf, df, dump, nil)
	if len(p) != 2 {
		t.Fatalf("problems %+v", p)
	}
	if want := "handler: the device's crash handler reports frame #0 as ?? at 0x20003e4c, the harness saw irq_touch_device (./src/main.c:10)"; p[0].Summary != want {
		t.Errorf("summary %q\nwant    %q", p[0].Summary, want)
	}
	for _, row := range []string{"! 0 0x00000100 irq_touch_device ./src/main.c:10 | 0 0x20003e4c ??",
		"- 1 0x00000110 irq_service ./src/main.c:20 |", "= 3 <exception> | 2 <exception>",
		"Dump warning: the handler's stack overflowed"} {
		if !strings.Contains(collapse(p[0].Detail), row) {
			t.Errorf("diff lacks %q:\n%s", row, p[0].Detail)
		}
	}
	if want := "handler: the device's crash handler reports causes none, the harness saw CFSR.PRECISERR"; p[1].Summary != want {
		t.Errorf("fault summary %q\nwant %q", p[1].Summary, want)
	}
}

// TestFrameCountWording: one frame is "1 frame".
func TestFrameCountWording(t *testing.T) {
	p, ok := compareFrames(expects("a", "b"), frames("a"), MatchPrefix, "auto")
	if ok || !strings.Contains(p.Summary, "ends after 1 frame;") {
		t.Errorf("got %q", p.Summary)
	}
	p, ok = compareFrames(expects("a"), frames("a", "b"), MatchExact, "auto")
	if ok || !strings.Contains(p.Summary, "backtrace: 2 frames, the spec expects exactly 1") {
		t.Errorf("got %q", p.Summary)
	}
}
