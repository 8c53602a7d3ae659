package load

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
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
	if r.SentToAud.N > 0 {
		fmt.Fprintf(&b, "streamed replies: first token %s; first sentence to first audio %s; longest silence in a reply %s\n", r.FirstTok, r.SentToAud, r.Silence)
	}
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
		fmt.Fprintf(&b, "reply audio: jitter |gap-%dms| p50/p95/p99 %s, max %.1f ms\n", r.Config.frameMS(), r.Jitter, float64(r.Jitter.Max)/1e6)
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
	if r.Config.Dialect == Twilio || r.Config.Dialect == SIP {
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
	deadline := float64(r.Goodput.Deadline) / 1e6
	return page.Execute(w, map[string]any{
		"R":        r,
		"Summary":  r.Summary(),
		"Timeline": template.HTML(timelineSVG(r)),
		"FirstAud": template.HTML(histSVG(r.Hist.FirstAud, r.Hist.BucketMS, deadline, "time to first audio")),
		"Wait":     template.HTML(histSVG(r.Hist.QueueWait, r.Hist.BucketMS, deadline, "queue wait")),
		"BinMS":    fmt.Sprintf("%.0f", float64(r.Timeline.Bin)/1e6),
		"Span":     fmt.Sprintf("%.1f", float64(len(r.Timeline.Bins))*float64(r.Timeline.Bin)/1e9),
		"Deadline": fmt.Sprintf("%.0f", deadline),
		"JSON":     string(js),
		"Outcomes": r.outcomeRows(),
	})
}

// outcomeRow is one line of the report page's table of outcomes. A new
// outcome (a field of the report) is one more row from outcomeRows.
type outcomeRow struct {
	Of, Outcome string
	Count       int
	Meaning     string
}

// outcomeMeaning says in words what each end of a caller and of a turn
// means.
var outcomeMeaning = map[string]map[string]string{
	"callers": {
		EndServed:    "admitted, spoke its turns and hung up",
		EndRefused:   "refused at the door: the session stage was full",
		EndQueued:    "still waiting for a session when the run ended",
		EndActive:    "still on the line when the run ended",
		EndExpired:   "waited in the session queue longer than -session-max-wait",
		EndAbandoned: "hung up out of patience while waiting",
		EndDropped:   "the server ended the call",
		EndError:     "could not connect, or broke the protocol",
	},
	"turns": {
		"completed":    "answered in full",
		"cancelled":    "stopped: the caller spoke over it or left",
		"failed":       "a backend failed (the server's /readyz and logs say which)",
		"overloaded":   "refused: the stage's slots and queue were full",
		"expired":      "refused: it waited longer than the stage's max wait",
		"stale":        "refused: a newer turn of the same call replaced it",
		"closed":       "refused: the stage was closed (draining or quarantined)",
		"out-of-order": "refused: it came behind a newer turn of the call",
		"none":         "no turn_end came: the call ended first",
	},
}

// outcomeRows are the callers' and the turns' ends, most frequent first.
func (r *Report) outcomeRows() []outcomeRow {
	var rows []outcomeRow
	add := func(of string, by map[string]int) {
		start := len(rows)
		for k, n := range by {
			d := k // a refusal is stage:disposition; no turn_end is none:caller-end
			if before, after, ok := strings.Cut(k, ":"); ok {
				d = after
				if before == "none" {
					d = before
				}
			}
			rows = append(rows, outcomeRow{Of: of, Outcome: k, Count: n, Meaning: outcomeMeaning[of][d]})
		}
		part := rows[start:]
		sort.Slice(part, func(i, j int) bool {
			if part[i].Count != part[j].Count {
				return part[i].Count > part[j].Count
			}
			return part[i].Outcome < part[j].Outcome
		})
	}
	add("callers", r.Callers.ByEnd)
	add("turns", r.Turns.ByEnd)
	return rows
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>frontdoor load report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:66em;color:#222}
svg{max-width:100%;height:auto;display:block}svg text{font:11px system-ui,sans-serif;fill:#222}
svg .grid{stroke:#e4e4e4}svg .axis{stroke:#222}.caption{color:#555;font-size:13px;margin:.25em 0 1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}pre{background:#f7f7f7;padding:1em;overflow:auto;white-space:pre-wrap}
details pre{max-height:30em}
.warn{color:#b00;font-weight:bold}
</style></head><body>
<h1>frontdoor load report</h1>
<p>{{.R.Config.Callers}} callers at {{.R.Config.Rate}}/s ({{.R.Config.Arrival}}), {{.R.Config.Turns}} turns each, against {{.R.Config.Target}}; started {{.R.Started.Format "2006-01-02 15:04:05 MST"}}.</p>
{{range .R.Warnings}}<p class="warn">⚠ {{.}}</p>{{end}}
<h2>Summary</h2>
<pre class="summary">{{.Summary}}</pre>
<h2>Outcomes</h2>
<table class="outcomes"><tr><th>of</th><th>outcome</th><th>count</th><th>meaning</th></tr>
{{range .Outcomes}}<tr><td>{{.Of}}</td><td>{{.Outcome}}</td><td>{{.Count}}</td><td style="text-align:left">{{.Meaning}}</td></tr>{{end}}</table>
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
<p class="caption">Turns per second in {{.BinMS}} ms bins; the legend gives each series' mean rate over the {{.Span}} s shown. Offered: turns the callers sent; admitted: taken by the model stage; completed: ended completed; goodput: completed with their first audio within the {{.Deadline}} ms deadline; late: first audio after it (work wasted); expired and refused: typed refusals.</p>
<h2>Time to first audio</h2>{{.FirstAud}}
<p class="caption">Turns by the time from sending the turn to its first reply audio, in buckets of {{printf "%.0f" .R.Hist.BucketMS}} ms; the last bucket holds everything slower.</p>
<h2>Queue wait</h2>{{.Wait}}
<p class="caption">Turns by their time waiting for the stages: from sending the turn to its model admission, plus its wait in the synthesis queue; same buckets.</p>
<details class="raw"><summary>Raw report (JSON, as -json writes it)</summary><pre>{{.JSON}}</pre></details>
</body></html>
`))
