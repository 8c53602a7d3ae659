package load

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

const frame = 20 * time.Millisecond

func buildReport(cfg Config, recs []*callerRec, start, ended time.Time) *Report {
	r := &Report{Started: start, Elapsed: Millis(ended.Sub(start)), Warnings: []string{},
		Config: ReportConfig{Target: cfg.Target, Dialect: cfg.Dialect, Callers: cfg.Callers, Rate: cfg.Rate,
			Arrival: cfg.Arrival, MaxActive: cfg.MaxActive, Turns: cfg.Turns, Think: Millis(cfg.Think), Spread: Millis(cfg.Spread),
			Hold: Millis(cfg.Hold), Patience: Millis(cfg.Patience), BargeIn: cfg.BargeIn, Callback: cfg.Callback,
			StreamAudio: cfg.StreamAudio, FrameMS: cfg.FrameMS, Deadline: Millis(cfg.Deadline), Duration: Millis(cfg.Duration), Seed: cfg.Seed}}
	if cfg.Arrival == Burst {
		r.Config.BurstSize = cfg.BurstSize
	}
	if cfg.Dialect == Twilio || cfg.Dialect == SIP {
		r.Config.Utterance, r.Config.Settle = Millis(cfg.Utterance), Millis(cfg.Settle)
		r.Config.Signed = cfg.TwilioAuthToken != ""
	}
	r.generator(cfg, recs)
	r.callers(recs)
	r.turns(cfg, recs)
	r.timeline(cfg, recs, start, ended)
	if r.Generator.Behind {
		r.warn("generator fell behind: arrival lag p99 %v, max %v (tolerance %v), achieved %.1f of %.1f callers/s, %d not offered: arrivals came later than scheduled, read the figures with that in mind",
			time.Duration(r.Generator.Lag.P99), time.Duration(r.Generator.Lag.Max), cfg.LagTolerance,
			r.Generator.AchievedRate, r.Generator.TargetRate, r.Generator.NotOffered)
	}
	if !r.Callers.Balanced || !r.Turns.Balanced {
		r.warn("client ledger does not balance")
	}
	if r.BargeIn.StaleAfter > 0 {
		if cfg.Dialect == Twilio {
			r.warn("%d media frames of an interrupted reply arrived after `clear`", r.BargeIn.StaleAfter)
		} else {
			r.warn("%d frames of an older generation arrived after `interrupted`", r.BargeIn.StaleAfter)
		}
	}
	if r.Goodput.Untyped > 0 {
		r.warn("%d turns ended without a typed disposition", r.Goodput.Untyped)
	}
	return r
}

// topErrors are the n most frequent errors, most frequent first.
func topErrors(errs map[string]int, n int) []ErrorCount {
	var out []ErrorCount
	for e, c := range errs {
		out = append(out, ErrorCount{e, c})
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Error, b.Error)
	})
	return out[:min(n, len(out))]
}

func (r *Report) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

func (r *Report) generator(cfg Config, recs []*callerRec) {
	g := &r.Generator
	g.TargetRate = cfg.Rate
	var lags []time.Duration
	var firstS, lastS, firstA, lastA time.Time
	for _, c := range recs {
		if c.scheduled.IsZero() {
			continue
		}
		g.Scheduled++
		if c.started.IsZero() {
			g.NotOffered++
			continue
		}
		g.Offered++
		lags = append(lags, c.started.Sub(c.scheduled))
		if firstS.IsZero() {
			firstS, firstA = c.scheduled, c.started
		}
		lastS, lastA = c.scheduled, c.started
	}
	g.NotOffered += cfg.Callers - g.Scheduled
	g.Lag = percentiles(lags)
	g.AchievedRate = g.TargetRate
	if span, act := lastS.Sub(firstS), lastA.Sub(firstA); span > 0 && act > 0 {
		g.AchievedRate = g.TargetRate * float64(span) / float64(act)
	}
	g.Behind = time.Duration(g.Lag.P99) > cfg.LagTolerance || g.AchievedRate < 0.9*g.TargetRate || g.NotOffered > 0
}

func (r *Report) callers(recs []*callerRec) {
	l := &r.Callers
	l.ByEnd = map[string]int{}
	sess := StageCounts{Stage: "session", Dispositions: map[string]int{}, RefusedAtOffer: map[string]int{}}
	f := &r.Fallback
	f.Prompts, f.CallbackReplies = map[string]int{}, map[string]int{}
	errs := map[string]int{}
	defer func() { l.Errors = topErrors(errs, 3) }()
	for _, c := range recs {
		if c.started.IsZero() {
			continue
		}
		l.Offered++
		l.ByEnd[c.end]++
		if !c.connected.IsZero() {
			l.Connected++
		}
		if c.answered {
			l.Answered++
		}
		if c.end == EndError && c.err != "" {
			errs[c.err]++
		}
		switch c.end {
		case EndRefused:
			l.RefusedBeforeRetention++
		case EndQueued:
			l.Queued++
		case EndActive:
			l.Active++
		default:
			l.Terminal++
		}
		if c.sessDisp != "" {
			sess.Offered++
			if c.queued {
				sess.Dispositions[dQueued]++
			}
			sess.Dispositions[c.sessDisp]++
			switch {
			case c.queued && c.sessDisp == dExpired:
				sess.ExpiredQueued++
			case !c.queued && refusal(c.sessDisp):
				sess.RefusedAtOffer[c.sessDisp]++
			}
		}
		for _, p := range c.prompts {
			f.Prompts[p]++
		}
		f.PromptFrames += c.promptFrames
		if c.callbackOffered {
			f.CallbackOffered++
		}
		if c.callbackAccepted {
			f.CallbackAccepted++
			f.CallbackReplies[c.callbackReply]++
		}
	}
	l.Balanced = l.Offered == l.RefusedBeforeRetention+l.Queued+l.Active+l.Terminal
	r.Stages = append(r.Stages, sess)
}

func (r *Report) turns(cfg Config, recs []*callerRec) {
	l := &r.Turns
	l.ByEnd = map[string]int{}
	counts := map[string]*StageCounts{}
	var wait, mwait, swait, ttfa, jitter, barge, ttft, s2a, silence []time.Duration
	var firstSent, lastDone time.Time
	bucket := cfg.Deadline / 20
	r.Hist = Histograms{BucketMS: float64(bucket) / 1e6, FirstAud: make([]int, 61), QueueWait: make([]int, 61)}
	// A duration below zero (a phone caller's reply read before its
	// writer stamped the last frame it sent, under load) counts in the
	// first bucket.
	hist := func(h []int, d time.Duration) { h[max(min(int(d/bucket), len(h)-1), 0)]++ }
	for _, c := range recs {
		for _, t := range c.turns {
			l.Offered++
			if firstSent.IsZero() || t.sent.Before(firstSent) {
				firstSent = t.sent
			}
			if t.end == dCompleted {
				r.Goodput.Completed++
				if t.endAt.After(lastDone) {
					lastDone = t.endAt
				}
			}
			m := t.stages["model"]
			switch {
			case m != nil && refusal(m.first):
				l.RefusedBeforeRetention++
			case t.end != "":
				l.Terminal++
			case t.stagesLast() == dQueued || m == nil:
				l.Queued++
			default:
				l.Active++
			}
			end := t.end
			if end == "" {
				end = "none:" + c.end
				if c.end == EndDropped || c.end == EndError {
					r.Goodput.Untyped++
				}
			} else if refusal(end) {
				r.Goodput.Refused++
				end = t.endStage + ":" + end
			}
			if t.frames > 0 && (refusal(t.end) || t.end == dFailed) {
				r.Goodput.CutMidReply++
			}
			l.ByEnd[end]++
			for _, name := range t.order {
				s := t.stages[name]
				sc := counts[name]
				if sc == nil {
					sc = &StageCounts{Stage: name, Dispositions: map[string]int{}, RefusedAtOffer: map[string]int{}}
					counts[name] = sc
				}
				sc.Offered++
				seen := map[string]bool{s.first: true, s.last: true}
				if !s.admitted.IsZero() {
					seen[dAdmitted] = true
				}
				for d := range seen {
					sc.Dispositions[d]++
				}
				switch {
				case refusal(s.first):
					sc.RefusedAtOffer[s.first]++
				case s.first == dQueued && s.last == dExpired:
					sc.ExpiredQueued++
				}
			}
			if m != nil && !m.admitted.IsZero() {
				w := m.admitted.Sub(t.sent)
				mwait = append(mwait, w)
				if s := t.stages["synthesis"]; s != nil && !s.admitted.IsZero() && !m.done.IsZero() {
					sw := max(s.admitted.Sub(m.done), 0)
					swait = append(swait, sw)
					w += sw
				}
				wait = append(wait, w)
				hist(r.Hist.QueueWait, w)
			}
			if !t.firstText.IsZero() {
				ttft = append(ttft, t.firstText.Sub(t.sent))
			}
			if !t.firstAudio.IsZero() && !t.sentEnd.IsZero() {
				s2a = append(s2a, max(t.firstAudio.Sub(t.sentEnd), 0))
			}
			if t.frames > 0 {
				silence = append(silence, t.silence)
			}
			if !t.firstAudio.IsZero() {
				d := max(t.firstAudio.Sub(t.sent), 0)
				ttfa = append(ttfa, d)
				hist(r.Hist.FirstAud, d)
				if d <= cfg.Deadline {
					r.Goodput.Good++
				} else {
					r.Goodput.Late++
				}
			}
			for _, g := range t.gaps {
				jitter = append(jitter, (g - cfg.frameLen()).Abs())
			}
			if !t.bargeAt.IsZero() {
				r.BargeIn.Sent++
				if !t.interrupt.IsZero() {
					r.BargeIn.Interrupted++
					barge = append(barge, t.interrupt.Sub(t.bargeAt))
				}
			}
			r.BargeIn.StaleAfter += t.staleAfter
		}
	}
	l.Balanced = l.Offered == l.RefusedBeforeRetention+l.Queued+l.Active+l.Terminal
	for _, name := range []string{"model", "synthesis"} {
		if sc := counts[name]; sc != nil {
			r.Stages = append(r.Stages, *sc)
			delete(counts, name)
		}
	}
	for _, sc := range counts {
		r.Stages = append(r.Stages, *sc)
	}
	r.QueueWait, r.ModelWait, r.SynthWait = percentiles(wait), percentiles(mwait), percentiles(swait)
	r.FirstAud, r.Jitter, r.BargeIn.Latency = percentiles(ttfa), percentiles(jitter), percentiles(barge)
	r.FirstTok, r.SentToAud, r.Silence = percentiles(ttft), percentiles(s2a), percentiles(silence)
	r.Goodput.Deadline = Millis(cfg.Deadline)
	window := time.Duration(float64(cfg.Callers) / cfg.Rate * float64(time.Second))
	r.Goodput.Window = Millis(window)
	if window > 0 {
		r.Goodput.GoodPerSecond = float64(r.Goodput.Good) / window.Seconds()
	}
	if span := lastDone.Sub(firstSent); r.Goodput.Completed > 1 && span > 0 {
		r.Goodput.CompletedPerSecond = float64(r.Goodput.Completed) / span.Seconds()
	}
}

func (t *turnRec) stagesLast() string {
	if len(t.order) == 0 {
		return ""
	}
	return t.stages[t.order[len(t.order)-1]].last
}

func (r *Report) timeline(cfg Config, recs []*callerRec, start, ended time.Time) {
	total := ended.Sub(start)
	bin := max(100*time.Millisecond, (total / 60).Round(100*time.Millisecond))
	n := int(total/bin) + 1
	bins := make([]Bin, n)
	for i := range bins {
		bins[i].T = Millis(time.Duration(i) * bin)
	}
	at := func(t time.Time) *Bin {
		if t.IsZero() {
			return nil
		}
		return &bins[min(max(int(t.Sub(start)/bin), 0), n-1)]
	}
	for _, c := range recs {
		if b := at(c.started); b != nil {
			b.Arrived++
		}
		for _, t := range c.turns {
			if b := at(t.sent); b != nil {
				b.Offered++
			}
			if m := t.stages["model"]; m != nil {
				if b := at(m.admitted); b != nil {
					b.Admitted++
				}
			}
			if b := at(t.endAt); b != nil {
				switch {
				case t.end == dCompleted:
					b.Completed++
				case t.end == dExpired:
					b.Expired++
				case refusal(t.end):
					b.Refused++
				}
			}
			if b := at(t.firstAudio); b != nil {
				if t.firstAudio.Sub(t.sent) <= cfg.Deadline {
					b.Good++
				} else {
					b.Late++
				}
			}
		}
	}
	r.Timeline = Timeline{Bin: Millis(bin), Bins: bins}
}

// compareServer checks the server's ledgers against the callers' view.
func compareServer(r *Report, before *stagesView, beforeErr error, after *stagesView, afterErr error) ServerCheck {
	sc := ServerCheck{Matches: true}
	if beforeErr != nil || afterErr != nil {
		sc.Error = fmt.Sprintf("reading /v1/stages: before: %v, after: %v", beforeErr, afterErr)
		sc.Matches = false
		r.warn("%s", sc.Error)
		return sc
	}
	client := clientLedgers(r)
	for _, a := range after.Stages {
		var b Ledger
		for _, s := range before.Stages {
			if s.Name == a.Name {
				b = s.Ledger
			}
		}
		chk := StageCheck{Stage: a.Name, Delta: a.Ledger.sub(b), Leased: a.Leased, Queued: a.Queued}
		l := a.Ledger
		chk.Balanced = l.Offered == l.Refused.Total()+uint64(a.Queued)+uint64(a.Leased)+l.Terminal()
		cl, ok := client[a.Name]
		if ok {
			chk.Client = cl
			d := chk.Delta
			type count struct {
				name         string
				server, seen uint64
			}
			counts := []count{
				{"offered", d.Offered, cl.Offered},
				{"refused", d.Refused.Total(), cl.Refused.Total()},
				{"admitted", d.Admitted, cl.Admitted},
				{"expired", d.Expired, cl.Expired},
			}
			if cl.Refused.Unknown > 0 {
				// The callers heard refusals without their kind (Twilio): a
				// refusal at once and an expiry in the queue sound the same.
				counts = []count{counts[0], counts[2],
					{"refused or expired", d.Refused.Total() + d.Expired, cl.Refused.Total() + cl.Expired}}
			}
			for _, m := range counts {
				if m.server != m.seen {
					chk.Mismatch = append(chk.Mismatch, fmt.Sprintf("%s: server %d, callers saw %d", m.name, m.server, m.seen))
				}
			}
		}
		if !chk.Balanced {
			r.warn("server ledger of stage %s does not balance", a.Name)
		}
		if len(chk.Mismatch) > 0 || !chk.Balanced {
			sc.Matches = false
		}
		sc.Stages = append(sc.Stages, chk)
	}
	if !sc.Matches {
		r.warn("server ledgers and the callers' view differ (another client on the server, or callers cut off at the end of the run): see server.stages")
	}
	return sc
}

// clientLedgers counts, per stage, the transitions the callers saw.
func clientLedgers(r *Report) map[string]Ledger {
	out := map[string]Ledger{}
	for _, sc := range r.Stages {
		var l Ledger
		l.Offered = uint64(sc.Offered)
		l.Admitted = uint64(sc.Dispositions[dAdmitted])
		l.Expired = uint64(sc.ExpiredQueued)
		for d, n := range sc.RefusedAtOffer {
			switch d {
			case dExpired:
				l.Refused.Expired = uint64(n)
			case dOverloaded:
				l.Refused.Overloaded = uint64(n)
			case dClosed:
				l.Refused.Closed = uint64(n)
			case "stale":
				l.Refused.Stale = uint64(n)
			case "out-of-order":
				l.Refused.OutOfOrder = uint64(n)
			case dRefused:
				l.Refused.Unknown = uint64(n)
			}
		}
		out[sc.Stage] = l
	}
	return out
}
