package matrix

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// The heatmap colours: class aN for a frame accuracy in [N/10, (N+1)/10),
// a10 for 100%, from red through yellow to green. Light enough for black
// text, and each cell also says its accuracy in words, so the page reads
// without colour (printed in black and white, or by a colour-blind reader).
func heatCSS() string {
	var b strings.Builder
	for i := 0; i <= 10; i++ {
		fmt.Fprintf(&b, ".a%d{background:hsl(%d,70%%,%d%%)}\n", i, 12*i, 80-i/2)
	}
	return b.String()
}

func heatClass(acc float64) string {
	return fmt.Sprintf("a%d", min(10, max(0, int(math.Floor(10*acc+1e-9)))))
}

type htmlCell struct {
	Class, Text, Mark, Title string
}

type htmlRow struct {
	Build, Scenario, Count string
	Cells                  []htmlCell
	Invalid                string
}

type htmlPage struct {
	CSS        template.CSS
	Headline   string
	Strategies []string
	Builds     []htmlRow
	Threads    []htmlRow
	Cases      []htmlRow
	Legend     []htmlCell
	New        []string
	Invalid    []string
	Stale      []string
	Span       int
}

// WriteHTML writes one self-contained page (inline CSS; no script, nothing
// fetched): a heatmap per build and one per case, rows against strategies,
// each cell coloured by frame accuracy and marked when exact or when it
// reports bogus frames; new failures are outlined.
func (r *Report) WriteHTML(w io.Writer) error {
	if r.Summary == nil {
		r.Summarize()
	}
	t := r.Aggregate()
	p := htmlPage{CSS: template.CSS(heatCSS()), Headline: r.headline(t), Strategies: r.Strategies, Span: len(r.Strategies)}
	buildRow := func(name string, n, bad int, cells map[string]*Cell) htmlRow {
		row := htmlRow{Build: name, Count: fmt.Sprint(n)}
		if bad > 0 {
			row.Count += fmt.Sprintf(" (+%d invalid)", bad)
		}
		for _, s := range r.Strategies {
			c := cells[s]
			if c == nil || c.Cases == 0 {
				row.Cells = append(row.Cells, htmlCell{Class: "none", Text: "-"})
				continue
			}
			hc := htmlCell{Class: heatClass(c.FrameAccuracy), Text: fmt.Sprintf("%d/%d · %s", c.Exact, c.Cases, pct(c.FrameAccuracy))}
			var marks []string
			if c.Exact == c.Cases {
				marks = append(marks, "✓ all exact")
			}
			if c.Bogus > 0 {
				marks = append(marks, fmt.Sprintf("⚠ %d bogus", c.Bogus))
			}
			if c.New > 0 {
				hc.Class += " new"
				marks = append(marks, fmt.Sprintf("%d NEW", c.New))
			}
			hc.Mark = strings.Join(marks, " ")
			row.Cells = append(row.Cells, hc)
		}
		return row
	}
	for _, b := range t.Builds {
		p.Builds = append(p.Builds, buildRow(b, t.Valid[b], t.Invalid[b], t.Rows[b]))
	}
	p.Builds = append(p.Builds, buildRow("all", t.Valid[""], t.Invalid[""], t.Total))
	if tb := threadRows(t); len(tb) > 0 {
		for _, b := range append(tb, "all") {
			row := htmlRow{Build: b}
			for _, s := range r.Strategies {
				c := t.Rows[b][s]
				if b == "all" {
					c = threadTotal(t, tb, s)
				}
				if c == nil || c.Threads == nil || c.Threads.Threads == 0 {
					row.Cells = append(row.Cells, htmlCell{Class: "none", Text: "-"})
					continue
				}
				th := c.Threads
				hc := htmlCell{Class: heatClass(th.FrameAccuracy), Text: fmt.Sprintf("%d/%d · %s", th.Exact, th.Threads, pct(th.FrameAccuracy))}
				var marks []string
				if th.Exact == th.Threads {
					marks = append(marks, "✓ all exact")
				}
				if th.Bogus > 0 {
					marks = append(marks, fmt.Sprintf("⚠ %d bogus", th.Bogus))
				}
				hc.Mark = strings.Join(marks, " ")
				row.Cells = append(row.Cells, hc)
			}
			p.Threads = append(p.Threads, row)
		}
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		row := htmlRow{Build: c.Build, Scenario: c.Scenario}
		if c.Invalid() {
			row.Invalid = c.Error
			p.Cases = append(p.Cases, row)
			continue
		}
		for _, s := range r.Strategies {
			res, ok := c.Results[s]
			if !ok {
				row.Cells = append(row.Cells, htmlCell{Class: "none", Text: "-"})
				continue
			}
			hc := htmlCell{Class: heatClass(res.FrameAccuracy), Text: pct(res.FrameAccuracy)}
			var marks []string
			switch {
			case !res.Fails():
				marks = append(marks, "✓ exact")
			case res.New:
				hc.Class += " new"
				marks = append(marks, "NEW")
				if !res.Exact {
					p.New = append(p.New, fmt.Sprintf("%s %s %s: got %s; truth %s", c.Build, c.Scenario, s, joinNames(res.Frames), joinNames(c.Truth)))
				}
				for _, th := range res.ThreadFailures {
					p.New = append(p.New, fmt.Sprintf("%s %s %s, thread %s: got %s; truth %s", c.Build, c.Scenario, s, th.Thread, joinNames(th.Frames), joinNames(th.Truth)))
				}
			case res.Known != "":
				marks = append(marks, "known")
				hc.Title = "known failure: " + res.Known
			}
			if res.Bogus > 0 {
				marks = append(marks, fmt.Sprintf("⚠ %d bogus", res.Bogus))
			}
			if res.Error != "" {
				marks = append(marks, "error")
				hc.Title = strings.TrimSpace(hc.Title + " " + res.Error)
			}
			if !res.Exact {
				hc.Title = strings.TrimSpace(hc.Title + "\ngot: " + joinNames(res.Frames) + "\ntruth: " + joinNames(c.Truth))
			}
			if n := len(res.ThreadFailures); n > 0 {
				marks = append(marks, plural(n, "thread")+" not exact")
				for _, th := range res.ThreadFailures {
					hc.Title = strings.TrimSpace(hc.Title + "\nthread " + th.Thread + ": got " + joinNames(th.Frames) + "; truth " + joinNames(th.Truth))
				}
			}
			hc.Mark = strings.Join(marks, " ")
			row.Cells = append(row.Cells, hc)
		}
		p.Cases = append(p.Cases, row)
	}
	for _, g := range r.InvalidGroups() {
		p.Invalid = append(p.Invalid, fmt.Sprintf("%s: %s", g.Name(), g.Error))
	}
	for _, e := range r.Stale {
		p.Stale = append(p.Stale, fmt.Sprintf("%s: %s", e, e.Reason))
	}
	for i := 0; i <= 10; i++ {
		p.Legend = append(p.Legend, htmlCell{Class: fmt.Sprintf("a%d", i), Text: fmt.Sprintf("%d%%", 10*i)})
	}
	return pageTmpl.Execute(w, p)
}

var pageTmpl = template.Must(template.New("matrix").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>faultline firmware matrix</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em;color:#111;background:#fff}
h1{font-size:1.5em;margin:0 0 .3em}
h2{font-size:1.15em;margin:1.5em 0 .3em}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #999;padding:3px 7px;text-align:center;vertical-align:middle}
th{background:#e8e8e8;font-weight:600}
td.name{text-align:left;white-space:nowrap;font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:13px;background:#fff}
td .mk{display:block;font-size:11px;color:#333}
td.new{outline:3px solid #000;outline-offset:-3px;font-weight:700}
td.none{background:#f4f4f4;color:#777}
td.invalid{text-align:left;background:repeating-linear-gradient(45deg,#ddd,#ddd 6px,#f6f6f6 6px,#f6f6f6 12px)}
tr.all td{font-weight:700;border-top:2px solid #333}
ul{margin:.3em 0;padding-left:1.4em}
li{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:12px}
.legend td{min-width:3em;font-size:12px}
p.note{color:#333;max-width:60em}
tr{break-inside:avoid}
@media print{body{margin:0;font-size:10px}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}h2{break-after:avoid}th,td{padding:1px 4px}}
{{.CSS}}</style>
</head>
<body>
<h1>faultline firmware matrix</h1>
<p>{{.Headline}}</p>
<p class="note">Each cell is coloured by frame accuracy (the common prefix of the strategy's backtrace and the emulator's true call stack, over the truth's length).
✓ marks an exact backtrace, ⚠ a backtrace with bogus frames, a thick outline a failure that is not in the known-failures file (NEW).
Hover over a failing cell for its backtrace and the reason it is a known failure.</p>
<table class="legend"><tr><th>frame accuracy</th>{{range .Legend}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr></table>

<h2>Per build</h2>
<p class="note">Each cell: exact cases/cases · mean frame accuracy.</p>
<table>
<thead><tr><th>build</th><th>cases</th>{{range .Strategies}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Builds}}<tr{{if eq .Build "all"}} class="all"{{end}}><td class="name">{{.Build}}</td><td>{{.Count}}</td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}{{if .Mark}}<span class="mk">{{.Mark}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>

{{if .Threads}}<h2>Thread unwinding (RTOS cases)</h2>
<p class="note">Each cell: exact threads/threads · mean frame accuracy, over every thread with a true stack (the crashing one included), each scored against the emulator's shadow call stack of that thread.</p>
<table>
<thead><tr><th>build</th>{{range .Strategies}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Threads}}<tr{{if eq .Build "all"}} class="all"{{end}}><td class="name">{{.Build}}</td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}{{if .Mark}}<span class="mk">{{.Mark}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>

{{end}}<h2>Per case</h2>
<table>
<thead><tr><th>build</th><th>scenario</th>{{range .Strategies}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Cases}}<tr><td class="name">{{.Build}}</td><td class="name">{{.Scenario}}</td>{{if .Invalid}}<td class="invalid" colspan="{{$.Span}}">invalid case: {{.Invalid}}</td>{{else}}{{range .Cells}}<td class="{{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}{{if .Mark}}<span class="mk">{{.Mark}}</span>{{end}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
{{if .New}}
<h2>New failures ({{len .New}})</h2>
<ul>{{range .New}}
<li>{{.}}</li>{{end}}
</ul>{{end}}{{if .Invalid}}
<h2>Invalid cases ({{len .Invalid}})</h2>
<ul>{{range .Invalid}}
<li>{{.}}</li>{{end}}
</ul>{{end}}{{if .Stale}}
<h2>Stale known-failure entries ({{len .Stale}})</h2>
<ul>{{range .Stale}}
<li>{{.}}</li>{{end}}
</ul>{{end}}
</body>
</html>
`))
