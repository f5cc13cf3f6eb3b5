// Package htmlout renders a report as a self-contained HTML page (and the
// index page of a batch), with the stack drawn from the dump's memory.
package htmlout

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/logs"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/verdict"
)

// Options configure Write.
type Options struct {
	// ELF is the firmware; its vector table's initial SP bounds the main
	// stack in the stack picture. May be nil.
	ELF *elfsym.File
	// StackTop overrides the initial SP (0: take it from ELF).
	StackTop uint32
	// SourceDirs are tried, in order, to find the source files the debug
	// information names: a relative path (DW_AT_comp_dir "." or a relative
	// DW_AT_name) is joined to each; an absolute path is tried as is, then
	// with its leading directories dropped one by one under each dir.
	SourceDirs []string
	// Context is the number of source lines shown on each side of a
	// frame's line (0: 2).
	Context int
}

// maxSourceSize bounds the source files read for the report.
const maxSourceSize = 8 << 20

// Write writes a self-contained page for one crash: no external
// resources, CSS and the stack picture (SVG) inline. It shows the fault
// explained, the backtrace with the source around each line, the stack
// (each frame's span, where each return address was saved, the exception
// frames with their registers, FP area and alignment pad) and the
// registers. d provides the memory for the stack picture (nil: no
// picture).
func Write(w io.Writer, r *report.Report, d *crashdump.Dump, opt Options) error {
	v := buildPage(r, d, opt)
	return pageTemplate.Execute(w, v)
}

type htmlPage struct {
	Title     string
	Exception string
	Function  string
	Where     string
	Dump      string
	ELF       string
	CPU       string
	Unwinder  string
	Stop      string
	Fault     report.FaultJSON
	FaultRegs []htmlReg
	Frames    []htmlFrame
	Stacks    []template.HTML
	StackNote string
	Regs      []htmlReg
	Warnings  []string
	RTOS      *report.RTOSJSON
	Threads   []htmlThread
	Logs      []logs.Log
	Verdict   *verdict.Stack
	Message   *report.MessageJSON
}

// htmlThread is one row of the thread table and its backtrace.
type htmlThread struct {
	report.ThreadJSON
	Prio    string
	Usage   string // "used/size bytes (pct%)", or "?"
	Pct     int    // bar width, 0..100
	Over    bool   // overflowed: the bar is red
	BtNames []htmlFrame
}

type htmlReg struct {
	Name, Value, Note string
	Unknown           bool
}

type htmlFrame struct {
	report.FrameJSON
	Name     string
	Loc      string
	How      string
	Class    string
	Source   []htmlLine
	SrcPath  string
	Faulting bool
}

type htmlLine struct {
	N    int
	Text string
	Hot  bool
}

func buildPage(r *report.Report, d *crashdump.Dump, opt Options) *htmlPage {
	v := &htmlPage{
		Dump: r.Dump, ELF: r.ELF, CPU: report.CPUText(r.CPU) + ", " + r.Profile.String(),
		Unwinder: r.Unwinder, Stop: r.Stop, Fault: r.Fault, Warnings: r.Warnings,
		Logs: r.Logs, Verdict: r.StackVerdict, Message: r.Message,
	}
	fi := report.FaultingFrame(r)
	v.Exception = r.Fault.Exception
	if v.Exception == "" {
		v.Exception = "Crash"
	}
	v.Title = v.Exception
	if fi >= 0 {
		f := r.Frames[fi]
		v.Function = report.FrameName(f)
		v.Where = report.FileLine(f)
		v.Title += " in " + v.Function
	}
	v.Title += " — " + filepath.Base(r.Dump)

	// Fault status registers the dump holds.
	for _, fr := range []struct {
		name string
		o    fault.Opt
	}{{"CFSR", r.SCB.CFSR}, {"HFSR", r.SCB.HFSR}, {"MMFAR", r.SCB.MMFAR}, {"BFAR", r.SCB.BFAR},
		{"SFSR", r.SCB.SFSR}, {"SFAR", r.SCB.SFAR}, {"SHCSR", r.SCB.SHCSR}} {
		if val, ok := fr.o.Get(); ok {
			v.FaultRegs = append(v.FaultRegs, htmlReg{Name: fr.name, Value: report.Hex(val)})
		}
	}

	// The backtrace with source.
	ctx := opt.Context
	if ctx <= 0 {
		ctx = 2
	}
	src := &sourceCache{dirs: opt.SourceDirs, files: map[string]*sourceFile{}}
	for i, f := range r.Frames {
		hf := htmlFrame{FrameJSON: f, Faulting: i == fi}
		switch f.Kind {
		case unwinders.KindException.String():
			hf.Name = "exception frame"
			hf.Class = "exc"
		case unwinders.KindGap.String():
			hf.Name = "frames missing (gap)"
			hf.Class = "guess"
		case unwinders.KindInlined.String():
			hf.Name = report.FrameName(f)
			hf.Class = "inl"
			hf.How = "inlined"
		default:
			hf.Name = report.FrameName(f)
			hf.How = f.Method + ", " + f.Confidence
			if f.Kind == unwinders.KindGuessed.String() {
				hf.How += ", guessed"
				hf.Class = "guess"
			}
		}
		if f.Kind != unwinders.KindInlined.String() && f.Kind != unwinders.KindException.String() {
			hf.How = f.Method + " · " + f.Confidence
			if f.Image != "" {
				// Several images: the one that holds the frame's code.
				hf.How = f.Image + " · " + hf.How
			}
		}
		hf.Loc = report.FileLine(f)
		if f.File != "" && f.Line > 0 {
			if sf := src.get(f.File); sf != nil {
				hf.SrcPath = sf.path
				for n := max(1, f.Line-ctx); n <= f.Line+ctx && n <= len(sf.lines); n++ {
					hf.Source = append(hf.Source, htmlLine{N: n, Text: sf.lines[n-1], Hot: n == f.Line})
				}
			}
		}
		v.Frames = append(v.Frames, hf)
	}

	// The stack picture.
	if d != nil {
		top := opt.StackTop
		if top == 0 && opt.ELF != nil {
			if vec := opt.ELF.Info().Vectors; vec != nil {
				top = vec.InitialSP
			}
		}
		for _, c := range StackColumns(r, d.Memory, top) {
			v.Stacks = append(v.Stacks, template.HTML(stackSVG(c)))
		}
	}
	if len(v.Stacks) == 0 {
		v.StackNote = "The dump holds no memory for the stack, or the walk found no frames."
	}

	// RTOS threads: a table with stack-usage bars, then each backtrace.
	v.RTOS = r.RTOS
	for _, t := range r.Threads {
		ht := htmlThread{ThreadJSON: t, Prio: report.PriorityText(t), Usage: report.StackUse(t.Raw.Stack), Over: t.Raw.Stack.Overflow}
		if st := t.Raw.Stack; st.UsedBytes() >= 0 {
			ht.Pct = min(100, st.UsedBytes()*100/int(st.End-st.Start))
		}
		for _, f := range t.Frames {
			hf := htmlFrame{FrameJSON: f, Name: report.FrameName(f), Loc: report.FileLine(f), How: f.Method + " · " + f.Confidence}
			switch f.Kind {
			case unwinders.KindException.String():
				hf.Name, hf.Class, hf.How = "exception frame", "exc", f.Method
			case unwinders.KindInlined.String():
				hf.Class, hf.How = "inl", "inlined"
			}
			ht.BtNames = append(ht.BtNames, hf)
		}
		v.Threads = append(v.Threads, ht)
	}

	// Registers.
	order := []unwinders.Reg{
		unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3,
		unwinders.R4, unwinders.R5, unwinders.R6, unwinders.R7,
		unwinders.R8, unwinders.R9, unwinders.R10, unwinders.R11,
		unwinders.R12, unwinders.SP, unwinders.LR, unwinders.PC,
		unwinders.XPSR, unwinders.MSP, unwinders.PSP, unwinders.CONTROL,
		unwinders.PRIMASK, unwinders.BASEPRI, unwinders.FAULTMASK, unwinders.FPSCR,
	}
	for _, reg := range order {
		val, ok := r.Regs.Get(reg)
		if !ok {
			if reg == unwinders.FPSCR {
				continue
			}
			v.Regs = append(v.Regs, htmlReg{Name: reg.String(), Value: "unknown", Unknown: true})
			continue
		}
		v.Regs = append(v.Regs, htmlReg{Name: reg.String(), Value: report.Hex(val), Note: regNote(reg, val)})
	}
	return v
}

// regNote explains a register value: EXC_RETURN in LR, the xPSR fields,
// CONTROL's bits.
func regNote(reg unwinders.Reg, v uint32) string {
	switch reg {
	case unwinders.LR:
		if unwinders.LooksLikeExcReturn(v) {
			return unwinders.ExcReturn(v).String()
		}
	case unwinders.XPSR:
		var parts []string
		if ipsr := v & 0x1ff; ipsr != 0 {
			parts = append(parts, fmt.Sprintf("exception %d (%s)", ipsr, exceptionName(ipsr)))
		} else {
			parts = append(parts, "Thread mode")
		}
		if v&(1<<24) == 0 {
			parts = append(parts, "T=0: not Thumb!")
		}
		flags := ""
		for i, f := range "NZCVQ" {
			if v&(1<<(31-i)) != 0 {
				flags += string(f)
			}
		}
		if flags != "" {
			parts = append(parts, "flags "+flags)
		}
		return strings.Join(parts, ", ")
	case unwinders.CONTROL:
		var parts []string
		if v&2 != 0 {
			parts = append(parts, "SPSEL: PSP in Thread mode")
		}
		if v&1 != 0 {
			parts = append(parts, "nPRIV: unprivileged")
		}
		if v&4 != 0 {
			parts = append(parts, "FPCA: FP context active")
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

func exceptionName(n uint32) string {
	names := map[uint32]string{1: "Reset", 2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault",
		6: "UsageFault", 7: "SecureFault", 11: "SVCall", 12: "DebugMonitor", 14: "PendSV", 15: "SysTick"}
	if s, ok := names[n]; ok {
		return s
	}
	if n >= 16 {
		return fmt.Sprintf("IRQ %d", n-16)
	}
	return "reserved"
}

// sourceCache finds and reads source files once per page.
type sourceCache struct {
	dirs  []string
	files map[string]*sourceFile
}

type sourceFile struct {
	path  string
	lines []string
}

func (c *sourceCache) get(name string) *sourceFile {
	if f, ok := c.files[name]; ok {
		return f
	}
	var f *sourceFile
	for _, p := range sourceCandidates(name, c.dirs) {
		if lines, ok := readSource(p); ok {
			f = &sourceFile{path: p, lines: lines}
			break
		}
	}
	c.files[name] = f
	return f
}

// sourceCandidates lists the paths where the file the debug information
// names may be.
func sourceCandidates(name string, dirs []string) []string {
	name = filepath.FromSlash(name)
	if !filepath.IsAbs(name) {
		out := make([]string, 0, len(dirs))
		for _, d := range dirs {
			out = append(out, filepath.Join(d, name))
		}
		return out
	}
	out := []string{name}
	parts := strings.Split(strings.TrimPrefix(filepath.ToSlash(name), "/"), "/")
	for _, d := range dirs {
		for i := 1; i < len(parts); i++ {
			out = append(out, filepath.Join(d, filepath.Join(parts[i:]...)))
		}
	}
	return out
}

// readSource reads a regular text file of reasonable size as lines.
func readSource(p string) ([]string, bool) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSourceSize {
		return nil, false
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, maxSourceSize))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "\t", "    ")
		if strings.ContainsRune(line, 0) {
			return nil, false // not text
		}
		lines = append(lines, strings.TrimRight(line, "\r"))
	}
	return lines, sc.Err() == nil
}

// IndexEntry is one row of the HTML index of a batch.
type IndexEntry struct {
	Page      string // the page's file name; "" when the dump failed
	Dump      string
	Exception string
	Causes    string
	Function  string
	Location  string
	Error     string
}

// IndexEntryFor summarises a report for the index.
func IndexEntryFor(r *report.Report, page string) IndexEntry {
	e := IndexEntry{Page: page, Dump: r.Dump, Exception: r.Fault.Exception}
	var causes []string
	for _, c := range r.Fault.Causes {
		causes = append(causes, c.Bit)
	}
	e.Causes = strings.Join(causes, " ")
	if fi := report.FaultingFrame(r); fi >= 0 {
		e.Function = report.FrameName(r.Frames[fi])
		e.Location = report.FileLine(r.Frames[fi])
	}
	return e
}

// WriteIndex writes the index page of a batch of pages.
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	return indexTemplate.Execute(w, entries)
}

const pageCSS = `
:root{--fg:#1d2330;--muted:#5b6577;--line:#d9dee7;--bg:#f6f7f9;--card:#fff;--accent:#b42318;--accent-bg:#fdecea;--mono:"DejaVu Sans Mono",ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;--sans:"DejaVu Sans","Segoe UI",system-ui,-apple-system,Helvetica,Arial,sans-serif}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 var(--sans)}
main{max-width:1240px;margin:0 auto;padding:24px 28px 48px}
header.top{background:#1d2330;color:#fff;padding:18px 28px}
header.top .in{max-width:1184px;margin:0 auto}
header.top h1{margin:0;font-size:24px;font-weight:600;letter-spacing:.2px}
header.top h1 .exc{color:#ff8a80}
header.top .where{font-family:var(--mono);color:#c9d1e0;font-size:14px;margin-top:2px}
header.top .meta{margin-top:8px;color:#9aa5b8;font-size:12.5px}
header.top .meta b{color:#dfe5ef;font-weight:500}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin-top:18px}
h2{font-size:16px;margin:0 0 10px;font-weight:600}
h2 small{font-weight:400;color:var(--muted);font-size:12.5px;margin-left:8px}
.mono,code,pre{font-family:var(--mono);font-size:12.5px}
table{border-collapse:collapse;width:100%}
th{text-align:left;font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.4px;border-bottom:1px solid var(--line);padding:6px 8px}
td{padding:5px 8px;border-bottom:1px solid #eef1f5;vertical-align:top}
.causes td.bit{white-space:nowrap;width:1%}
.badge{display:inline-block;font-family:var(--mono);font-size:12px;background:var(--accent-bg);color:var(--accent);border-radius:4px;padding:1px 6px}
.badge.reg{background:#eef1f6;color:#33415c}
.notes{margin:10px 0 0;padding-left:20px}
.notes li{margin:3px 0}
.kv{display:flex;flex-wrap:wrap;gap:6px 18px;margin-top:10px}
.kv span{font-family:var(--mono);font-size:12.5px}
.kv b{color:var(--muted);font-weight:500;margin-right:6px}
.bt td.idx{color:var(--muted);width:1%;white-space:nowrap;font-family:var(--mono)}
.bt td.pc{width:1%;white-space:nowrap;font-family:var(--mono);color:#33415c}
.bt td.fn{font-family:var(--mono);font-weight:600}
.bt td.loc{font-family:var(--mono);color:#33415c;white-space:nowrap}
.bt td.how{color:var(--muted);white-space:nowrap;font-size:12.5px;width:1%}
.bt tr.exc td{background:#fff4e5;color:#8a4b00;font-weight:normal}
.bt tr.exc td.fn{font-weight:600;font-family:var(--sans)}
.bt tr.inl td.fn{font-weight:500;font-style:italic}
.bt tr.faulting td{background:var(--accent-bg)}
.bt tr.faulting td.fn{color:var(--accent)}
.bt tr.src td{border-bottom:1px solid #eef1f5;padding-top:0}
.bt .note{color:var(--muted);font-size:12.5px}
pre.src{margin:2px 0 6px;background:#f8f9fb;border:1px solid #e6e9ef;border-radius:6px;padding:6px 0;overflow-x:auto}
pre.src span{display:block;padding:0 10px;white-space:pre}
pre.src span.hot{background:#fff1c2}
pre.src span.hot i{color:#8a6d00;font-weight:600}
details summary{cursor:pointer;color:#33415c;list-style-position:outside;margin:0 0 2px 14px}
details summary code{white-space:pre;background:none}
details summary code i,pre.src span i{display:inline-block;width:44px;color:#98a2b3;font-style:normal;text-align:right;margin-right:14px;user-select:none}
.srcpath{color:var(--muted);font-size:11.5px;font-family:var(--mono)}
.stacks{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start;overflow-x:auto}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12.5px;color:var(--muted);margin-bottom:10px}
.legend i{display:inline-block;width:12px;height:12px;border:1px solid #9aa5b8;border-radius:2px;vertical-align:-2px;margin-right:5px}
svg.stack text{font-family:var(--mono);font-size:12px;fill:#1d2330}
svg.stack text.colhead{font-family:var(--sans);font-weight:600;font-size:13px}
svg.stack text.hint{font-family:var(--sans);font-size:11px;fill:#6b778c}
svg.stack text.addr{fill:#5b6577}
svg.stack text.lab{font-family:var(--sans);font-size:11.5px}
svg.stack text.note{font-family:var(--sans);font-size:11.5px;fill:#5b6577;font-style:italic}
svg.stack text.title{font-weight:600;font-size:12px}
svg.stack .sub{font-family:var(--sans);font-size:11px;font-weight:400;fill:#5b6577}
svg.stack text.mark{font-weight:700;fill:#0b57d0;font-size:11.5px}
svg.stack rect.w{fill:#f3f6fb;stroke:#dfe4ec;stroke-width:1}
svg.stack rect.w.alt{fill:#e8eef7}
svg.stack rect.w.faulting{fill:#fde7e4}
svg.stack rect.w.exc{fill:#ffe9c7}
svg.stack rect.w.ctx{fill:#fff3d6}
svg.stack rect.w.fp{fill:#ece6fb}
svg.stack rect.w.pad{fill:#e9ebef;stroke-dasharray:3 2}
svg.stack rect.w.lr{fill:#cdeed8;stroke:#3f9b62}
svg.stack rect.w.gap{fill:#fafbfc;stroke-dasharray:2 3}
svg.stack rect.w.empty{fill:#fff;stroke:#c4cad4;stroke-dasharray:4 3}
svg.stack rect.w.empty.faulting{fill:#fde7e4}
svg.stack line.sep{stroke:#6b778c;stroke-width:1.5}
svg.stack path.br{fill:none;stroke:#6b778c;stroke-width:1.5}
svg.stack path.brexc{stroke:#c77700}
svg.stack path.brfault{stroke:#b42318;stroke-width:2.5}
svg.stack path.arrow{fill:none;stroke:#0b57d0;stroke-width:1.6}
.regs{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:4px 16px}
.regs div{font-family:var(--mono);font-size:12.5px;padding:3px 0;border-bottom:1px solid #eef1f5}
.regs div b{display:inline-block;width:78px;color:var(--muted);font-weight:500}
.regs div.unk span{color:#8792a6}
.regs div em{display:block;font-style:normal;color:#5b6577;font-family:var(--sans);font-size:11.5px}
.warn li{color:#8a4b00}
.bar{display:inline-block;width:90px;height:9px;background:#eef1f5;border:1px solid #c4cad4;margin-right:8px;vertical-align:middle}
.bar i{display:block;height:100%;background:#3f9b62}
.bar i.over{background:#b42318}
table.threads td{padding:3px 10px 3px 0}
footer{color:var(--muted);font-size:12px;margin-top:18px;text-align:center}
`

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="faultline">
<title>{{.Title}}</title>
<style>` + pageCSS + `</style>
</head>
<body>
<header class="top"><div class="in">
<h1><span class="exc">{{.Exception}}</span>{{if .Function}} in {{.Function}}{{end}}</h1>
{{if .Where}}<div class="where">{{.Where}}</div>{{end}}
<div class="meta"><b>dump</b> {{.Dump}} &nbsp;·&nbsp; <b>firmware</b> {{if .ELF}}{{.ELF}}{{else}}none{{end}} &nbsp;·&nbsp; <b>cpu</b> {{.CPU}} &nbsp;·&nbsp; <b>unwinder</b> {{.Unwinder}}</div>
</div></header>
<main>
{{if .Warnings}}<section><h2>Warnings</h2><ul class="warn">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
<section class="fault">
<h2>What happened</h2>
{{if .Fault.Causes}}<table class="causes">
{{range .Fault.Causes}}<tr><td class="bit"><span class="badge">{{.Register}}.{{.Bit}}</span></td><td>{{.Text}}</td></tr>
{{end}}</table>{{else}}<p>No fault status bit is set (or the dump does not hold the fault status registers).</p>{{end}}
{{if .Fault.Notes}}<ul class="notes">{{range .Fault.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Message}}<p class="message"><span class="badge">message</span> <b>{{.Summary}}</b> · read from the {{.Where}}{{if .Note}}<br><small>{{.Note}}</small>{{end}}</p>{{end}}
{{with .Verdict}}<p class="verdict">{{if .Overflow}}<span class="badge">stack overflow</span> <b>{{.Stack}}</b>{{else}}<span class="badge">lockup</span>{{end}} · evidence: {{range $i, $e := .Evidence}}{{if $i}}, {{end}}{{$e}}{{end}}</p>
<ul class="notes">{{range .Details}}<li>{{.}}</li>{{end}}</ul>{{end}}
<div class="kv">{{if .Fault.Address}}<span><b>faulting address</b>{{.Fault.Address}}</span>{{end}}{{range .FaultRegs}}<span><b>{{.Name}}</b>{{.Value}}</span>{{end}}</div>
</section>

<section>
<h2>Backtrace <small>innermost first · stop: {{.Stop}}</small></h2>
<table class="bt">
<tr><th>#</th><th>pc</th><th>function</th><th>source</th><th>found by</th></tr>
{{range .Frames}}<tr class="{{.Class}}{{if .Faulting}} faulting{{end}}"><td class="idx">#{{.Index}}</td><td class="pc">{{.PC}}</td><td class="fn">{{.Name}}{{with .ArgsLine}} <span class="args">{{.}}</span>{{end}}{{if .Note}}<div class="note">{{.Note}}</div>{{end}}{{range .Locals}}<div class="note">local {{.Text}}</div>{{end}}</td><td class="loc">{{.Loc}}</td><td class="how">{{.How}}</td></tr>
{{if .Source}}<tr class="src"><td></td><td colspan="4">{{if .Faulting}}<pre class="src">{{range .Source}}<span{{if .Hot}} class="hot"{{end}}><i>{{.N}}</i>{{.Text}}</span>{{end}}</pre><div class="srcpath">{{.SrcPath}}</div>{{else}}<details><summary>{{range .Source}}{{if .Hot}}<code><i>{{.N}}</i>{{.Text}}</code>{{end}}{{end}}</summary><pre class="src">{{range .Source}}<span{{if .Hot}} class="hot"{{end}}><i>{{.N}}</i>{{.Text}}</span>{{end}}</pre><div class="srcpath">{{.SrcPath}}</div></details>{{end}}</td></tr>
{{end}}{{end}}</table>
</section>

{{if .Logs}}<section>
<h2>Logs <small>text the firmware left in RAM, oldest first</small></h2>
{{range .Logs}}<details open><summary><b>{{.Name}}</b> · {{.Source}} · {{.Address}}{{if .Unread}} · {{.Unread}} bytes unread{{end}}{{if .Truncated}} · only the end shown{{end}}{{if .Note}} · {{.Note}}{{end}}</summary><pre class="src">{{.Text}}</pre></details>
{{end}}</section>
{{end}}
{{if .RTOS}}<section>
<h2>Threads <small>{{.RTOS.Kind}} · layouts from {{.RTOS.Source}} · the crashing thread first</small></h2>
<table class="threads">
<tr><th>name</th><th>state</th><th>priority</th><th>stack used</th><th>waiting on</th><th>stop</th></tr>
{{range .Threads}}<tr{{if .Current}} class="faulting"{{end}}><td class="fn">{{.Name}}</td><td>{{.State}}</td><td>{{.Prio}}</td><td><div class="bar"><i style="width:{{.Pct}}%"{{if .Over}} class="over"{{end}}></i></div><span class="mono">{{.Usage}}</span></td><td>{{.WaitingOn}}</td><td>{{if .Error}}{{.Error}}{{else}}{{.Stop}}{{end}}</td></tr>
{{end}}</table>
{{range .Threads}}<details{{if .Current}} open{{end}}><summary><b>{{.Name}}</b> · {{.State}} · {{.ID}}{{range .Diagnosis}} · <span class="exc">{{.}}</span>{{end}}</summary>
{{if .Error}}<p>{{.Error}}</p>{{else}}<table class="bt">
{{range .BtNames}}<tr class="{{.Class}}"><td class="idx">#{{.Index}}</td><td class="pc">{{.PC}}</td><td class="fn">{{.Name}}{{with .ArgsLine}} <span class="args">{{.}}</span>{{end}}{{range .Locals}}<div class="note">local {{.Text}}</div>{{end}}</td><td class="loc">{{.Loc}}</td><td class="how">{{.How}}</td></tr>
{{end}}</table>{{end}}</details>
{{end}}</section>
{{end}}
<section>
<h2>Stack <small>each frame spans from its SP to its caller's SP; addresses grow upwards</small></h2>
<div class="legend"><span><i style="background:#cdeed8;border-color:#3f9b62"></i>saved return address (LR / EXC_RETURN)</span><span><i style="background:#ffe9c7"></i>hardware-stacked exception frame</span><span><i style="background:#ece6fb"></i>FP registers</span><span><i style="background:#e9ebef"></i>alignment pad</span><span><i style="background:#fde7e4;border-color:#b42318"></i>faulting frame</span></div>
{{if .Stacks}}<div class="stacks">{{range .Stacks}}{{.}}{{end}}</div>{{else}}<p>{{.StackNote}}</p>{{end}}
</section>

<section>
<h2>Registers <small>as the dump holds them</small></h2>
<div class="regs">{{range .Regs}}<div{{if .Unknown}} class="unk"{{end}}><b>{{.Name}}</b><span>{{.Value}}</span>{{if .Note}}<em>{{.Note}}</em>{{end}}</div>{{end}}</div>
</section>
<footer>faultline · faultline.analysis/1</footer>
</main>
</body>
</html>
`))

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="faultline">
<title>faultline: {{len .}} crash dumps</title>
<style>` + pageCSS + `</style>
</head>
<body>
<header class="top"><div class="in"><h1>{{len .}} crash dumps</h1></div></header>
<main><section>
<table class="bt">
<tr><th>dump</th><th>exception</th><th>causes</th><th>faulting function</th><th>source</th></tr>
{{range .}}<tr{{if .Error}} class="faulting"{{end}}><td class="loc">{{if .Page}}<a href="{{.Page}}">{{.Dump}}</a>{{else}}{{.Dump}}{{end}}</td>{{if .Error}}<td colspan="4">{{.Error}}</td>{{else}}<td>{{.Exception}}</td><td class="mono">{{.Causes}}</td><td class="fn">{{.Function}}</td><td class="loc">{{.Location}}</td>{{end}}</tr>
{{end}}</table>
</section></main>
</body>
</html>
`))

// PageCSS returns the style sheet of the analyze page, for other pages in
// the same style (faultline heap).
func PageCSS() string { return pageCSS }
