package load

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Summary is a few lines for a terminal.
func (r *Report) Summary() string {
	var b strings.Builder
	g := r.Goodput
	fmt.Fprintf(&b, "callers: offered %d = refused %d + queued %d + active %d + terminal %d (balanced %v)\n",
		r.Callers.Offered, r.Callers.RefusedBeforeRetention, r.Callers.Queued, r.Callers.Active, r.Callers.Terminal, r.Callers.Balanced)
	fmt.Fprintf(&b, "         %d connected; ended: %s\n", r.Callers.Connected, counts(r.Callers.ByEnd))
	for _, e := range r.Callers.Errors {
		fmt.Fprintf(&b, "         %d× %s\n", e.Count, e.Error)
	}
	fmt.Fprintf(&b, "turns:   offered %d = refused %d + queued %d + active %d + terminal %d (balanced %v)\n",
		r.Turns.Offered, r.Turns.RefusedBeforeRetention, r.Turns.Queued, r.Turns.Active, r.Turns.Terminal, r.Turns.Balanced)
	if len(r.Turns.ByEnd) > 0 {
		fmt.Fprintf(&b, "         ended: %s\n", counts(r.Turns.ByEnd))
	}
	fmt.Fprintf(&b, "goodput: %d turns with first audio within %v (%.1f/s), %d late, %d refused (typed), %d untyped\n",
		g.Good, durMS(g.Deadline), g.GoodPerSecond, g.Late, g.Refused, g.Untyped)
	fmt.Fprintf(&b, "completed: %d turns, %.1f/s from the first turn sent to the last completed\n", g.Completed, g.CompletedPerSecond)
	fmt.Fprintf(&b, "first audio p50/p95/p99 %s; queue wait %s\n", r.FirstAud, r.QueueWait)
	if r.ModelWait.N > 0 || r.SynthWait.N > 0 {
		fmt.Fprintf(&b, "queue wait: model %s; synthesis %s\n", r.ModelWait, r.SynthWait)
	}
	if f := r.Fallback; len(f.Prompts) > 0 || f.CallbackOffered > 0 {
		fmt.Fprintf(&b, "fallback: prompts %s; callbacks offered %d, accepted %d\n", counts(f.Prompts), f.CallbackOffered, f.CallbackAccepted)
	}
	if r.Server.Error == "" && !r.Server.Matches {
		for _, s := range r.Server.Stages {
			for _, m := range s.Mismatch {
				fmt.Fprintf(&b, "server %s: %s\n", s.Stage, m)
			}
		}
	}
	if r.Jitter.N > 0 {
		fmt.Fprintf(&b, "reply audio: jitter |gap-20ms| p50/p95/p99 %s, max %.1f ms\n", r.Jitter, float64(r.Jitter.Max)/1e6)
	}
	fmt.Fprintf(&b, "cpu: %.1f call-seconds, %.1f s of reply audio received; server %s; generator %s\n",
		r.CPU.CallSeconds, r.CPU.ReplyAudioSeconds, r.CPU.Server, r.CPU.Generator)
	fmt.Fprintf(&b, "generator: lag %s, %.1f of %.1f callers/s\n", r.Generator.Lag, r.Generator.AchievedRate, r.Generator.TargetRate)
	switch {
	case r.BargeIn.Sent > 0 && r.Config.Dialect == Twilio:
		fmt.Fprintf(&b, "barge-in: %d spoken over a reply, %d cleared, %d stale frames after clear; server last old write p99 <= %.3g ms\n",
			r.BargeIn.Sent, r.BargeIn.Interrupted, r.BargeIn.StaleAfter, r.Server.BargeIn.P99Max)
	case r.BargeIn.Sent > 0:
		fmt.Fprintf(&b, "barge-in: %d sent, %d interrupted, %d stale frames after interrupted; server last old write p99 <= %.3g ms\n",
			r.BargeIn.Sent, r.BargeIn.Interrupted, r.BargeIn.StaleAfter, r.Server.BargeIn.P99Max)
	}
	if r.Config.Dialect == Twilio {
		r.twilioSummary(&b)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	return b.String()
}

// counts formats a count map as "a 1, b 2" in key order ("none" when empty).
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func durMS(m Millis) string { return fmt.Sprintf("%.0fms", float64(m)/1e6) }

// String formats p50/p95/p99.
func (p Percentiles) String() string {
	return fmt.Sprintf("%.1f/%.1f/%.1f ms (n=%d)", float64(p.P50)/1e6, float64(p.P95)/1e6, float64(p.P99)/1e6, p.N)
}

// WriteHTML writes a self-contained HTML report: inline CSS and SVG charts,
// no scripts, no external assets.
func (r *Report) WriteHTML(w io.Writer) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return page.Execute(w, map[string]any{
		"R":        r,
		"Summary":  r.Summary(),
		"Timeline": template.HTML(timelineSVG(r)),
		"FirstAud": template.HTML(histSVG(r.Hist.FirstAud, r.Hist.BucketMS, float64(r.Goodput.Deadline)/1e6, "time to first audio (ms)")),
		"Wait":     template.HTML(histSVG(r.Hist.QueueWait, r.Hist.BucketMS, float64(r.Goodput.Deadline)/1e6, "queue wait (ms)")),
		"JSON":     string(js),
	})
}

type series struct {
	name, color string
	get         func(Bin) int
}

var timelineSeries = []series{
	{"offered", "#555", func(b Bin) int { return b.Offered }},
	{"admitted", "#1f77b4", func(b Bin) int { return b.Admitted }},
	{"completed", "#2ca02c", func(b Bin) int { return b.Completed }},
	{"good", "#17becf", func(b Bin) int { return b.Good }},
	{"late", "#ff7f0e", func(b Bin) int { return b.Late }},
	{"expired", "#9467bd", func(b Bin) int { return b.Expired }},
	{"refused", "#d62728", func(b Bin) int { return b.Refused }},
}

const chartW, chartH, padL, padB = 720.0, 260.0, 50.0, 30.0

func timelineSVG(r *Report) string {
	bins := r.Timeline.Bins
	var b strings.Builder
	peak := 1
	for _, bin := range bins {
		for _, s := range timelineSeries {
			peak = max(peak, s.get(bin))
		}
	}
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" role="img" aria-label="turns over time">`, chartW, chartH+40)
	axes(&b, float64(peak), fmt.Sprintf("turns per %.0f ms bin", float64(r.Timeline.Bin)/1e6),
		fmt.Sprintf("%.1f s", float64(len(bins))*float64(r.Timeline.Bin)/1e9))
	n := max(len(bins)-1, 1)
	for i, s := range timelineSeries {
		var pts []string
		for j, bin := range bins {
			x := padL + float64(j)/float64(n)*(chartW-padL-10)
			y := chartH - padB - float64(s.get(bin))/float64(peak)*(chartH-padB-10)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f" font-size="11">%s</text>`,
			padL+float64(i)*95, chartH+5, s.color, padL+float64(i)*95+14, chartH+14, s.name)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func axes(b *strings.Builder, peak float64, ylabel, xmax string) {
	fmt.Fprintf(b, `<line x1="%.0f" y1="10" x2="%.0f" y2="%.0f" stroke="#000"/>`, padL, padL, chartH-padB)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#000"/>`, padL, chartH-padB, chartW-10, chartH-padB)
	fmt.Fprintf(b, `<text x="4" y="16" font-size="11">%s</text>`, template.HTMLEscapeString(ylabel))
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%.0f</text>`, padL-4, 20.0, peak)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">0</text>`, padL-4, chartH-padB)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, chartW-10, chartH-padB+14, template.HTMLEscapeString(xmax))
}

func histSVG(h []int, bucketMS, deadlineMS float64, label string) string {
	var b strings.Builder
	peak := 1
	for _, n := range h {
		peak = max(peak, n)
	}
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" role="img" aria-label="%s">`, chartW, chartH, template.HTMLEscapeString(label))
	axes(&b, float64(peak), label, fmt.Sprintf("≥ %.0f ms", bucketMS*float64(len(h)-1)))
	bw := (chartW - padL - 10) / float64(max(len(h), 1))
	for i, n := range h {
		hgt := float64(n) / float64(peak) * (chartH - padB - 10)
		color := "#2ca02c"
		if float64(i)*bucketMS >= deadlineMS {
			color = "#ff7f0e"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%.0f-%.0f ms: %d</title></rect>`,
			padL+float64(i)*bw, chartH-padB-hgt, math.Max(bw-1, 1), hgt, color, float64(i)*bucketMS, float64(i+1)*bucketMS, n)
	}
	if bucketMS > 0 {
		x := padL + deadlineMS/bucketMS*bw
		fmt.Fprintf(&b, `<line x1="%.1f" y1="10" x2="%.1f" y2="%.0f" stroke="#d62728" stroke-dasharray="4 3"/><text x="%.1f" y="20" font-size="11">deadline</text>`,
			x, x, chartH-padB, x+3)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>frontdoor load report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:60em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}pre{background:#f7f7f7;padding:1em;overflow:auto}
.warn{color:#b00;font-weight:bold}
</style></head><body>
<h1>frontdoor load report</h1>
<p>{{.R.Config.Callers}} callers at {{.R.Config.Rate}}/s ({{.R.Config.Arrival}}), {{.R.Config.Turns}} turns each, against {{.R.Config.Target}}; started {{.R.Started.Format "2006-01-02 15:04:05 MST"}}.</p>
{{range .R.Warnings}}<p class="warn">⚠ {{.}}</p>{{end}}
<pre>{{.Summary}}</pre>
<h2>Conservation ledger</h2>
<table><tr><th></th><th>offered</th><th>refused before retention</th><th>queued</th><th>active</th><th>terminal</th><th>balanced</th></tr>
<tr><td>callers</td><td>{{.R.Callers.Offered}}</td><td>{{.R.Callers.RefusedBeforeRetention}}</td><td>{{.R.Callers.Queued}}</td><td>{{.R.Callers.Active}}</td><td>{{.R.Callers.Terminal}}</td><td>{{.R.Callers.Balanced}}</td></tr>
<tr><td>turns</td><td>{{.R.Turns.Offered}}</td><td>{{.R.Turns.RefusedBeforeRetention}}</td><td>{{.R.Turns.Queued}}</td><td>{{.R.Turns.Active}}</td><td>{{.R.Turns.Terminal}}</td><td>{{.R.Turns.Balanced}}</td></tr></table>
<h2>Dispositions per stage (each identity once)</h2>
<table><tr><th>stage</th><th>offered</th><th>dispositions</th></tr>
{{range .R.Stages}}<tr><td>{{.Stage}}</td><td>{{.Offered}}</td><td>{{range $k, $v := .Dispositions}}{{$k}} {{$v}}; {{end}}</td></tr>{{end}}</table>
<h2>Server ledgers (delta over the run) against the callers' view</h2>
<table><tr><th>stage</th><th>offered</th><th>refused</th><th>admitted</th><th>expired</th><th>balanced</th><th>mismatch</th></tr>
{{range .R.Server.Stages}}<tr><td>{{.Stage}}</td><td>{{.Delta.Offered}} / {{.Client.Offered}}</td><td>{{.Delta.Refused.Total}} / {{.Client.Refused.Total}}</td><td>{{.Delta.Admitted}} / {{.Client.Admitted}}</td><td>{{.Delta.Expired}} / {{.Client.Expired}}</td><td>{{.Balanced}}</td><td>{{range .Mismatch}}{{.}}; {{end}}</td></tr>{{end}}</table>
<h2>Over time</h2>{{.Timeline}}
<h2>Time to first audio</h2>{{.FirstAud}}
<h2>Queue wait</h2>{{.Wait}}
<h2>Raw report</h2><pre>{{.JSON}}</pre>
</body></html>
`))
