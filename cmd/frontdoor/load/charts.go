package load

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The report's charts are plain SVG: a plot area with labelled axes (units
// in the labels), light grid lines at round tick values, and a legend in
// a column of its own to the right, so that no text is drawn over another
// (TestReportChartsInBrowser measures every text's box in Chromium).
const (
	svgW    = 900.0
	svgH    = 300.0
	plotL   = 76.0  // the y axis; its tick labels end left of it, its label further left
	plotR   = 610.0 // the plot's right edge; the legend starts after it
	plotT   = 14.0
	plotB   = 236.0 // the x axis; its tick labels below, its label below them
	legendX = 632.0
)

// timelineSeries are the timeline's lines: a name, a colour, a count per
// bin, and whether it is drawn dashed (the goodput's share of completed).
var timelineSeries = []struct {
	name, color string
	dash        bool
	get         func(Bin) int
}{
	{"offered", "#555555", false, func(b Bin) int { return b.Offered }},
	{"admitted", "#1f77b4", false, func(b Bin) int { return b.Admitted }},
	{"completed", "#2ca02c", false, func(b Bin) int { return b.Completed }},
	{"goodput", "#17becf", true, func(b Bin) int { return b.Good }},
	{"late", "#ff7f0e", false, func(b Bin) int { return b.Late }},
	{"expired", "#9467bd", false, func(b Bin) int { return b.Expired }},
	{"refused", "#d62728", false, func(b Bin) int { return b.Refused }},
}

// tick is one labelled position on an axis.
type tick struct {
	at    float64 // in the axis's units
	label string
}

// niceTicks covers [0, max] with at most about n round steps (1, 2, 2.5 or
// 5 times a power of ten) and returns the ticks and the axis' top.
func niceTicks(maxV float64, n int) ([]tick, float64) {
	if maxV <= 0 || math.IsNaN(maxV) || math.IsInf(maxV, 0) {
		maxV = 1
	}
	raw := maxV / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(maxV/step-1e-9) * step
	var ts []tick
	for i := 0; float64(i)*step <= top+step/1e6; i++ {
		v := float64(i) * step
		ts = append(ts, tick{v, num(v)})
	}
	return ts, top
}

// num formats v with at most one decimal and no trailing zeros.
func num(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 1, 64), "0"), ".")
}

// rate formats a per-second rate the way the legend says it: "95/s",
// "9.9/s".
func rate(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%.1f/s", v)
}

type chart struct {
	b          strings.Builder
	xTop, yTop float64
}

func (c *chart) x(v float64) float64 { return plotL + v/c.xTop*(plotR-plotL) }
func (c *chart) y(v float64) float64 { return plotB - v/c.yTop*(plotB-plotT) }

// open starts the SVG and draws the axes, grid, ticks and axis labels.
func (c *chart) open(aria string, xs, ys []tick, xLabel, yLabel string) {
	fmt.Fprintf(&c.b, `<svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		svgW, svgH, svgW, svgH, template.HTMLEscapeString(aria))
	for _, t := range ys {
		y := c.y(t.at)
		fmt.Fprintf(&c.b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, y, plotR, y)
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, plotL-6, y, t.label)
	}
	for _, t := range xs {
		x := c.x(t.at)
		fmt.Fprintf(&c.b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, plotB, x, plotB+4)
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, plotB+17, template.HTMLEscapeString(t.label))
	}
	fmt.Fprintf(&c.b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, plotT, plotL, plotB)
	fmt.Fprintf(&c.b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, plotB, plotR, plotB)
	fmt.Fprintf(&c.b, `<text class="axis-label" data-axis="x" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
		(plotL+plotR)/2, plotB+44, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&c.b, `<text class="axis-label" data-axis="y" transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`,
		(plotT+plotB)/2, template.HTMLEscapeString(yLabel))
}

// legend draws one entry per line in the column right of the plot: a
// swatch (a line, dashed or not, or a block) and its text.
type legendEntry struct {
	color, text string
	dash, block bool
}

func (c *chart) legend(es []legendEntry) {
	c.b.WriteString(`<g class="legend">`)
	for i, e := range es {
		y := plotT + 8 + float64(i)*20
		switch {
		case e.block:
			fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="18" height="10" fill="%s"/>`, legendX, y-5, e.color)
		default:
			dash := ""
			if e.dash {
				dash = ` stroke-dasharray="4 3"`
			}
			fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, legendX, y, legendX+18, y, e.color, dash)
		}
		fmt.Fprintf(&c.b, `<text class="legend-entry" x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`, legendX+24, y, template.HTMLEscapeString(e.text))
	}
	c.b.WriteString(`</g>`)
}

func (c *chart) close() string {
	c.b.WriteString(`</svg>`)
	return c.b.String()
}

// timelineSVG draws each series in turns per second over the run, the
// legend naming each with its mean rate ("offered 95/s", "goodput 9.9/s").
func timelineSVG(r *Report) string {
	bins := r.Timeline.Bins
	binS := float64(r.Timeline.Bin) / 1e9
	if binS <= 0 {
		binS = 1
	}
	span := float64(max(len(bins), 1)) * binS
	peak := 0.0
	for _, bin := range bins {
		for _, s := range timelineSeries {
			peak = max(peak, float64(s.get(bin))/binS)
		}
	}
	c := &chart{}
	ys, yTop := niceTicks(peak, 5)
	xs, xTop := niceTicks(span, 8)
	c.xTop, c.yTop = xTop, yTop
	c.open("turns per second over time", xs, ys, "time since the run started (s)", "turns per second")
	var legend []legendEntry
	for _, s := range timelineSeries {
		pts := make([]string, 0, len(bins))
		total := 0
		for j, bin := range bins {
			n := s.get(bin)
			total += n
			// Each bin's rate is drawn at the bin's middle.
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", c.x((float64(j)+0.5)*binS), c.y(float64(n)/binS)))
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&c.b, `<polyline data-series="%s" fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`,
			s.name, s.color, dash, strings.Join(pts, " "))
		legend = append(legend, legendEntry{color: s.color, dash: s.dash, text: s.name + " " + rate(float64(total)/span)})
	}
	c.legend(legend)
	return c.close()
}

// histSVG draws turns per latency bucket (the last one: that or slower),
// green within the deadline and orange past it, with the deadline marked.
func histSVG(h []int, bucketMS, deadlineMS float64, what string) string {
	if bucketMS <= 0 {
		bucketMS = 1
	}
	peak, within, past := 0, 0, 0
	for i, n := range h {
		peak = max(peak, n)
		if float64(i)*bucketMS >= deadlineMS {
			past += n
		} else {
			within += n
		}
	}
	c := &chart{}
	ys, yTop := niceTicks(float64(peak), 5)
	span := bucketMS * float64(max(len(h), 1))
	xs, _ := niceTicks(span, 8)
	c.xTop, c.yTop = span, yTop
	for len(xs) > 0 && xs[len(xs)-1].at > span+1e-9 {
		xs = xs[:len(xs)-1]
	}
	c.open(what+" per "+num(bucketMS)+" ms bucket", xs, ys, what+" (ms)", "turns")
	bw := (plotR - plotL) / float64(max(len(h), 1))
	for i, n := range h {
		top := c.y(float64(n))
		color := "#2ca02c"
		if float64(i)*bucketMS >= deadlineMS {
			color = "#ff7f0e"
		}
		lo, hi := float64(i)*bucketMS, float64(i+1)*bucketMS
		label := fmt.Sprintf("%s-%s ms: %d", num(lo), num(hi), n)
		if i == len(h)-1 {
			label = fmt.Sprintf("≥ %s ms: %d", num(lo), n)
		}
		fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
			plotL+float64(i)*bw, top, math.Max(bw-1, 1), plotB-top, color, label)
	}
	if deadlineMS > 0 && deadlineMS <= span {
		x := c.x(deadlineMS)
		fmt.Fprintf(&c.b, `<line class="deadline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="4 3"/>`, x, plotT, x, plotB)
	}
	c.legend([]legendEntry{
		{color: "#2ca02c", block: true, text: fmt.Sprintf("within the deadline: %d turns", within)},
		{color: "#ff7f0e", block: true, text: fmt.Sprintf("past the deadline: %d turns", past)},
		{color: "#d62728", dash: true, text: fmt.Sprintf("deadline %s ms", num(deadlineMS))},
	})
	return c.close()
}
