package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/fleet/store"
)

// sparkline draws daily counts (daily[len-1] is now's UTC day) as an
// inline SVG bar chart width x height pixels: one bar per day scaled to
// the busiest day, a hairline for a day without a dump, and a tooltip per
// day with its date and count. Only numbers and dates go into the markup.
func sparkline(daily [store.Days]int, now time.Time, width, height int) template.HTML {
	n := len(daily)
	peak, total := 0, 0
	for _, c := range daily {
		peak = max(peak, c)
		total += c
	}
	slot := float64(width) / float64(n)
	bar := slot * 0.75
	today := now.UTC().Truncate(24 * time.Hour)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%d dumps in the last %d days, at most %d a day">`,
		width, height, width, height, total, n, peak)
	for i, c := range daily {
		day := today.AddDate(0, 0, i-(n-1)).Format("2006-01-02")
		x := float64(i) * slot
		h := 1.0
		class := "z"
		if c > 0 {
			h = max(2, float64(height-2)*float64(c)/float64(peak))
			class = "d"
		}
		word := "dumps"
		if c == 1 {
			word = "dump"
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d %s</title></rect>`,
			class, x, float64(height)-h, bar, h, day, c, word)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
