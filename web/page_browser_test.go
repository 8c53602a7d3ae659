package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// failedReply checks that the reply at sel is drawn as a failure: its
// state, its mark, and not the green of a reply that succeeded.
func failedReply(t *testing.T, tb *tab, sel string) {
	t.Helper()
	got := eval[[]string](tb, `(() => {
		const li = document.querySelector('`+sel+`');
		if (!li) return ['', '', ''];
		const ok = document.createElement('li'); ok.className = 'reply'; ok.dataset.state = 'done';
		li.parentElement.append(ok);
		const green = getComputedStyle(ok).backgroundColor; ok.remove();
		return [li.dataset.state, getComputedStyle(li).backgroundColor + ' vs ' + green,
			getComputedStyle(li.querySelector('.text'), '::after').content];
	})()`)
	if got[0] != "failed" {
		t.Errorf("reply %s drawn as %q, want failed", sel, got[0])
	}
	if bg := strings.Split(got[1], " vs "); len(bg) != 2 || bg[0] == bg[1] {
		t.Errorf("failed reply has the background of a successful one: %s", got[1])
	}
	if !strings.Contains(got[2], "failed") {
		t.Errorf("failed reply's mark %s", got[2])
	}
}

// TestBrowser drives the page in one headless Chromium (a tab per case)
// against the real session server with stub backends.
func TestBrowser(t *testing.T) {
	bctx := browser(t)

	t.Run("PageLoads", func(t *testing.T) {
		r := newRig(t)
		tb := newTab(t, bctx, 20*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.waitJS("every stage on the dashboard",
			`['session','model','synthesis'].every(n => document.querySelector('[data-stage="'+n+'"] [data-count=offered]'))`, 5*time.Second)
		tb.waitJS("server ready", `document.getElementById('server').dataset.state === 'ready'`, 5*time.Second)
		tb.waitJS("burst control enabled", `document.getElementById('burst-status').dataset.state === 'idle'`, 5*time.Second)
		foreign := eval[[]string](tb, `performance.getEntriesByType('resource').map(e => e.name).filter(u => new URL(u).origin !== location.origin)`)
		if len(foreign) > 0 {
			t.Errorf("page fetched from other hosts: %v", foreign)
		}
		tb.screenshot("page-loaded")
		tb.noErrors()
	})

	t.Run("SyntheticCall", func(t *testing.T) {
		r := newRig(t)
		tb := newTab(t, bctx, 20*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#call-connect")
		tb.waitJS("session admitted", `document.getElementById('call-session').dataset.disposition === 'admitted'`, 5*time.Second)
		tb.do(chromedp.SetValue(chromedp.CSS("#call-text"), "What are your opening hours?"), chromedp.Click(chromedp.CSS("#call-send")))
		tb.waitJS("the reply completed", `(() => {
			const li = document.querySelector('#call-log .reply[data-turn=t1]');
			const text = li && li.querySelector('.text').textContent;
			return li && li.dataset.state === 'done' && text.length > 0 && !text.startsWith('(');
		})()`, 10*time.Second)
		audio := eval[string](tb, `document.getElementById('call-audio-ms').textContent`)
		if audio == "0 ms" {
			t.Errorf("no reply audio counted")
		}
		tb.screenshot("synthetic-call")
		tb.click("#call-hangup")
		tb.waitJS("call ended", `document.getElementById('call-connect').disabled === false`, 5*time.Second)
		tb.noErrors()
	})

	t.Run("BargeIn", func(t *testing.T) {
		r := newRig(t, func(c *rigConfig) {
			c.stub.Tokens, c.stub.TokenDelay = 60, 50*time.Millisecond // a 3 s reply
			c.stub.FrameCount = 150
		})
		tb := newTab(t, bctx, 20*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#call-connect")
		tb.waitJS("session admitted", `document.getElementById('call-session').dataset.disposition === 'admitted'`, 5*time.Second)
		tb.click("#call-send")
		tb.waitJS("the reply streaming", `(() => {
			const li = document.querySelector('#call-log .reply[data-turn=t1]');
			return li && li.dataset.state === 'streaming' && li.querySelector('.text').textContent.length > 8;
		})()`, 5*time.Second)
		tb.click("#call-barge")
		tb.waitJS("interrupted", `document.querySelector('#call-log .reply[data-turn=t1]').dataset.state === 'interrupted'
			&& document.getElementById('call-gen').textContent === '2'`, 5*time.Second)
		const replyText = `document.querySelector('#call-log .reply[data-turn=t1] .text').textContent`
		before := eval[string](tb, replyText)
		tb.do(chromedp.Sleep(600 * time.Millisecond)) // the stub would have sent ~12 more deltas
		after := eval[string](tb, replyText)
		if after != before {
			t.Errorf("reply text changed after interrupted:\nbefore %q\nafter  %q", before, after)
		}
		playing := eval[string](tb, `document.getElementById('call-audio').dataset.playing`)
		if playing != "false" {
			t.Errorf("audio indicator = %s after barge-in, want false", playing)
		}
		tb.screenshot("barge-in")
		if got := r.stage("model").Ledger.CancelledActive + r.stage("synthesis").Ledger.CancelledActive +
			r.stage("model").Ledger.CancelledQueued + r.stage("synthesis").Ledger.CancelledQueued; got == 0 {
			t.Errorf("server ledger shows no cancelled work after barge-in")
		}
		tb.noErrors()
	})

	t.Run("Burst", func(t *testing.T) {
		r := newRig(t, func(c *rigConfig) {
			c.cfg.Session = stages.Limits{Slots: 4, Waiting: 2, MaxAge: time.Second}
			c.cfg.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 300 * time.Millisecond}
			c.stub.ModelDelay, c.stub.Tokens = 100*time.Millisecond, 5
			c.offers = true             // refused callers are offered callbacks, as by frontdoor serve
			c.offerWindow = time.Second // those who do not answer are closed soon
		})
		before, err := r.svc.ListCallbacks(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		tb := newTab(t, bctx, 30*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.waitJS("burst control enabled", `document.getElementById('burst-status').dataset.state === 'idle'`, 5*time.Second)
		tb.do(
			chromedp.SetValue(chromedp.CSS("#burst-callers"), "40"),
			chromedp.SetValue(chromedp.CSS("#burst-rate"), "200"),
			chromedp.SetValue(chromedp.CSS("#burst-turns"), "2"),
			chromedp.Click(chromedp.CSS("#burst-start")),
		)
		count := func(stage, name string) string {
			return `+(document.querySelector('[data-stage=` + stage + `] [data-count=` + name + `]') || {dataset: {}}).dataset.n > 0`
		}
		tb.waitJS("overloaded sessions and model turns on the dashboard", count("session", "overloaded")+" && "+count("model", "overloaded"), 10*time.Second)
		tb.waitJS("the chart's overloaded series", `+(document.querySelector('#chart-svg polyline[data-series=overloaded]') || {dataset: {}}).dataset.max > 0`, 5*time.Second)
		tb.screenshot("burst-running")
		tb.waitJS("the burst ended with a report", `document.getElementById('burst-status').dataset.state === 'ended'
			&& !document.getElementById('burst-report').hidden`, 20*time.Second)
		// The outcome in words, a reason for every refused or expired
		// class, one chart of the turns' ends, and the raw JSON folded.
		tb.waitJS("the outcome in words with a chart", `(() => {
			const items = [...document.querySelectorAll('#burst-outcome li')].map(li => li.textContent);
			const refusals = items.filter(l => /^\d+ (overloaded|expired|stale|closed|out-of-order) at /.test(l));
			const bars = document.querySelectorAll('#burst-chart rect[data-end]').length;
			const raw = document.querySelector('#burst-report details');
			return items.length >= 3 && /^\d+ callers: /.test(items[0]) && refusals.length > 0
				&& refusals.every(l => /: [a-z].+\.$/.test(l)) && bars > 0 && raw && !raw.open;
		})()`, 5*time.Second)
		tb.screenshot("burst-ended")
		// The burst's callers took callbacks; the server refused them as
		// synthetic, and the operators' queue is as it was.
		tb.waitJS("callbacks refused as synthetic", `(JSON.parse(document.getElementById('burst-raw').textContent).fallback.callback_replies || {})['refused: synthetic'] > 0`, 5*time.Second)
		after, err := r.svc.ListCallbacks(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("the burst left %d callbacks in the operators' queue (had %d): %+v", len(after), len(before), after)
		}
		tb.noErrors()
	})

	t.Run("Microphone", func(t *testing.T) {
		// The server's /v1/webrtc is not wired into session yet; rtcPeer
		// stands in for it (see rtcpeer_test.go).
		peer := &rtcPeer{}
		r := newRig(t, func(c *rigConfig) {
			c.handlers = map[string]http.Handler{"GET /v1/webrtc": peer}
		})
		tb := newTab(t, bctx, 30*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#rtc-start")
		tb.waitJS("connected", `document.getElementById('rtc-media').dataset.state === 'connected'
			&& document.getElementById('rtc-state').dataset.state === 'in-call'`, 10*time.Second)
		tb.waitJS("the reply's text", `[...document.querySelectorAll('#rtc-log .reply')].some(li => li.textContent.includes('I heard you'))`, 15*time.Second)
		tb.waitJS("the reply's audio", `+document.getElementById('rtc-recv').dataset.packets > 25`, 5*time.Second)
		if peer.voiced.Load() == 0 {
			t.Errorf("the server heard no speech in %d packets of microphone audio", peer.packets.Load())
		}
		tb.screenshot("microphone-call")
		tb.click("#rtc-stop")
		tb.waitJS("ended", `document.getElementById('rtc-state').dataset.state === 'ended'`, 5*time.Second)
		tb.noErrors()
	})

	t.Run("MicrophoneServerEndpoint", func(t *testing.T) {
		// The same call against the session server's own /v1/webrtc: speech
		// through VAD, recognition, model and synthesis, and the reply back
		// as PCMU.
		// The local recognizer, as frontdoor serve uses by default: the
		// page shows what it understood of the microphone's sentence
		// ("Hello, I would like to book a table for two tonight.").
		rec, err := pocketsphinx.New(pocketsphinx.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rec.Close() })
		r := newRig(t, func(c *rigConfig) {
			c.cfg.Recognizer = rec
			c.stub.FrameCount = 50 // a 1 s reply: more than the 25 packets the check waits for
			// A turn is born when the caller stops speaking, and pocketsphinx
			// under -race on a loaded machine can take longer than the rig's
			// 2 s wait to recognize it: the turn then (truthfully) expires at
			// the model, and no reply is heard. This test is about the media
			// path, so its turn may wait.
			c.cfg.Model.MaxAge, c.cfg.Synthesis.MaxAge = 20*time.Second, 20*time.Second
		})
		tb := newTab(t, bctx, 30*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#rtc-start")
		tb.waitJS("connected", `document.getElementById('rtc-media').dataset.state === 'connected'`, 10*time.Second)
		tb.waitJS("the reply's text", `[...document.querySelectorAll('#rtc-log .reply .text')].some(t => t.textContent.length > 0)`, 15*time.Second)
		tb.waitJS("the reply's audio", `+document.getElementById('rtc-recv').dataset.packets > 25 && +document.getElementById('rtc-recv').dataset.energy > 0`, 10*time.Second)
		if got := r.stage("model").Ledger.Offered; got == 0 {
			t.Errorf("the model stage saw no turn from the microphone call")
		}
		tb.waitJS("what was understood", `[...document.querySelectorAll('#rtc-log .you')].some(li => /\b(like|book|table)\b/.test(li.textContent))`, 5*time.Second)
		t.Logf("understood: %q", eval[[]string](tb, `[...document.querySelectorAll('#rtc-log .you')].map(li => li.textContent)`))
		tb.screenshot("microphone-call-server")
		tb.click("#rtc-stop")
		tb.noErrors()
	})

	t.Run("OfferAndAgent", func(t *testing.T) {
		r := newRig(t, func(c *rigConfig) {
			c.fallback = true
			c.cfg.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 10 * time.Second}
			c.stub.ModelDelay = 20 * time.Second // the holding callers' turns never finish
		})
		tb := newTab(t, bctx, 30*time.Second)
		r.holdModel(tb.ctx) // the slot
		r.holdModel(tb.ctx) // the waiting place
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#agent-connect")
		tb.waitJS("agent connected", `document.getElementById('agent-state').dataset.state === 'connected'`, 5*time.Second)
		tb.click("#call-connect")
		tb.waitJS("session admitted", `document.getElementById('call-session').dataset.disposition === 'admitted'`, 5*time.Second)

		// A refused turn: a prompt, then the offer; accept a callback.
		tb.click("#call-send")
		tb.waitJS("the offer", `!document.getElementById('call-offer').hidden && document.getElementById('call-offer').dataset.state === 'open'
			&& document.querySelector('#call-log .reply[data-turn=t1]').dataset.state === 'refused'
			&& document.querySelector('#call-log .prompt')`, 5*time.Second)
		tb.click("#call-callback")
		tb.waitJS("callback queued with a ticket", `[...document.querySelectorAll('#call-log .prompt')].some(li => /^callback: queued, ticket \S+/.test(li.textContent))`, 5*time.Second)
		t.Logf("understood: %q", eval[[]string](tb, `[...document.querySelectorAll('#rtc-log .you')].map(li => li.textContent)`))

		// Refused again: ask for a person, and take the call in the console.
		tb.click("#call-send")
		tb.waitJS("the second offer", `!document.getElementById('call-offer').hidden && document.getElementById('call-offer').dataset.state === 'open'`, 5*time.Second)
		tb.click("#call-handoff")
		tb.waitJS("handoff queued", `[...document.querySelectorAll('#call-log .prompt')].some(li => li.textContent.startsWith('handoff: queued'))`, 5*time.Second)
		tb.waitJS("the handoff in the agent console", `document.querySelector('#agent-list li[data-ticket][data-mine=false] button')`, 5*time.Second)
		tb.click("#agent-list li[data-ticket][data-mine=false] button")
		tb.waitJS("claimed", `document.querySelector('#agent-list li[data-mine=true] button')`, 5*time.Second)
		tb.screenshot("handoff-claimed")
		tb.click("#agent-list li[data-mine=true] button")
		tb.waitJS("the caller told the handoff completed", `[...document.querySelectorAll('#call-log .prompt')].some(li => li.textContent.startsWith('handoff: completed'))`, 5*time.Second)
		tb.waitJS("the fallback stages on the dashboard", `document.querySelector('[data-stage=callback]') && document.querySelector('[data-stage=handoff] [data-count=completed]').dataset.n > 0`, 5*time.Second)
		tb.screenshot("offer-and-agent")
		tb.noErrors()
	})

	t.Run("OfferWithPromptText", func(t *testing.T) {
		// The synthetic call against offer.Offers, as frontdoor serve
		// wires it: the model fails, the page draws the reply as failed,
		// shows the offer's buttons while the prompt's 6 s of paced audio
		// is still arriving, and books a callback.
		r := newRig(t, func(c *rigConfig) {
			c.offers, c.promptFrames = true, 300
			c.cfg.Pace = true
			c.stub.FailRate = 1
		})
		tb := newTab(t, bctx, 30*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#call-connect")
		tb.waitJS("in call", `document.getElementById('call-state').dataset.state === 'in-call'`, 5*time.Second)
		tb.click("#call-send")
		tb.waitJS("the offer's buttons while the prompt's audio arrives", `(() => {
			const o = document.getElementById('call-offer'), cb = document.getElementById('call-callback');
			const heard = +document.getElementById('call-audio-ms').dataset.ms || 0;
			return !o.hidden && o.dataset.state === 'open' && cb.offsetParent !== null && heard < 3000
				&& [...document.querySelectorAll('#call-log .prompt')].some(li => li.textContent.includes('went wrong'));
		})()`, 5*time.Second)
		// The turn's turn_end follows its prompt and offer (the fallback
		// speaks first), so the card may still say "in call" for a moment.
		tb.waitJS("the call's state failed", `document.getElementById('call-state').dataset.state === 'failed'`, 10*time.Second)
		state := eval[[]string](tb, `(() => { const s = document.getElementById('call-state'); return [s.dataset.state, s.dataset.offer, s.textContent]; })()`)
		if state[0] != "failed" || state[1] != "open" || !strings.Contains(state[2], "offer open") {
			t.Errorf("call state %q after the failed turn, want failed · offer open", state)
		}
		failedReply(t, tb, "#call-log .reply[data-turn=t1]")
		tb.screenshot("offer-with-prompt")
		tb.click("#call-callback")
		tb.waitJS("the callback booked", `document.getElementById('call-state').dataset.offer === 'callback-booked'
			&& /callback booked · ticket \S+/.test(document.getElementById('call-outcome').textContent)`, 5*time.Second)
		if got := eval[string](tb, `document.getElementById('call-state').textContent`); !strings.HasPrefix(got, "callback booked") {
			t.Errorf("call state %q after the callback, want callback booked", got)
		}
		if n := r.svc.Snapshot(prompt.KindCallback).Queued; n != 1 {
			t.Errorf("callback queue holds %d, want the booked callback", n)
		}
		tb.screenshot("offer-callback-booked")
		tb.click("#call-hangup")
		tb.waitJS("ended", `document.getElementById('call-state').dataset.state === 'ended'`, 5*time.Second)
		tb.noErrors()
	})

	t.Run("MicrophoneOffer", func(t *testing.T) {
		// The microphone call against the server's own /v1/webrtc and
		// offer.Offers: speech from the fake microphone, recognized (a
		// stub), a model that fails; the card draws the turn as failed,
		// says the call is failed with an offer open (not "connected"),
		// shows the offer while the prompt's audio plays, books a
		// callback and says so, and ends.
		r := newRig(t, func(c *rigConfig) {
			c.offers, c.promptFrames = true, 300
			c.cfg.Pace = true
			c.cfg.Recognizer = stub.NewRecognizer(stub.Settings{})
			c.stub.FailRate = 1
		})
		tb := newTab(t, bctx, 40*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		tb.click("#rtc-start")
		tb.waitJS("in call", `document.getElementById('rtc-state').dataset.state === 'in-call'`, 10*time.Second)
		tb.waitJS("the offer's buttons before the prompt's audio ends", `(() => {
			const o = document.getElementById('rtc-offer'), cb = document.getElementById('rtc-callback');
			const log = [...document.querySelectorAll('#rtc-log li')].map(li => li.textContent);
			const started = log.some(t => t.startsWith('audio_start')), ended = log.some(t => t.startsWith('audio_end'));
			return !o.hidden && o.dataset.state === 'open' && cb.offsetParent !== null && started && !ended
				&& [...document.querySelectorAll('#rtc-log .prompt')].some(li => li.textContent.includes('went wrong'));
		})()`, 15*time.Second)
		// The turn's turn_end follows its prompt and offer (the fallback
		// speaks first), so the card may still say "in call" for a moment.
		tb.waitJS("the call's state failed", `document.getElementById('rtc-state').dataset.state === 'failed'`, 10*time.Second)
		state := eval[[]string](tb, `(() => { const s = document.getElementById('rtc-state'); return [s.dataset.state, s.dataset.offer, s.textContent]; })()`)
		if state[0] != "failed" || state[1] != "open" || state[2] != "failed · offer open" {
			t.Errorf("call state %q after the failed turn, want failed · offer open", state)
		}
		if card := eval[string](tb, `document.getElementById('rtc').innerText`); strings.Contains(card, "connected") {
			t.Errorf("the microphone card still says connected after the refusal:\n%s", card)
		}
		failedReply(t, tb, "#rtc-log .reply")
		tb.screenshot("microphone-offer")
		tb.do(chromedp.SetValue(chromedp.CSS("#rtc-number"), "+15550199"))
		tb.click("#rtc-callback")
		tb.waitJS("the callback booked", `document.getElementById('rtc-state').dataset.offer === 'callback-booked'
			&& /callback booked · ticket \S+/.test(document.getElementById('rtc-outcome').textContent)`, 5*time.Second)
		if got := eval[string](tb, `document.getElementById('rtc-state').textContent`); !strings.HasPrefix(got, "callback booked") {
			t.Errorf("call state %q after the callback, want callback booked", got)
		}
		cbs, err := r.svc.ListCallbacks(tb.ctx, 0)
		if err != nil || len(cbs) != 1 || cbs[0].Number != "+15550199" {
			t.Errorf("callbacks %+v, %v: want one to +15550199", cbs, err)
		}
		tb.screenshot("microphone-callback-booked")
		tb.click("#rtc-stop")
		tb.waitJS("ended", `document.getElementById('rtc-state').dataset.state === 'ended'`, 5*time.Second)
		tb.noErrors()
	})

	t.Run("CallsByTransport", func(t *testing.T) {
		// A synthetic call (/v1/session), a microphone call (the server's
		// own /v1/webrtc) and a caller of this test's on /v1/session: the
		// table beside the stages counts each transport's calls in
		// progress, and a transport's row goes once its calls have ended.
		r := newRig(t, func(c *rigConfig) {
			c.cfg.Recognizer = stub.NewRecognizer(stub.Settings{})
		})
		tb := newTab(t, bctx, 40*time.Second)
		tb.do(chromedp.Navigate(r.http.URL + "/"))
		// rows is the table's rows, "name=n" each, then the total.
		const rows = `[...document.querySelectorAll('#transport-rows tr')].map(tr => tr.dataset.transport + '=' + tr.dataset.n)
			.concat(['all=' + document.getElementById('transport-total').dataset.n]).join(' ')`
		table := func(what, want string) {
			t.Helper()
			tb.waitJS(what+": "+want, rows+` === '`+want+`'`, 10*time.Second)
		}
		tb.waitJS("server ready", `document.getElementById('server').dataset.state === 'ready'`, 5*time.Second)
		table("no calls", "all=0")
		if empty := eval[bool](tb, `!document.getElementById('transport-empty').hidden`); !empty {
			t.Errorf("the table does not say that no call is in progress")
		}

		tb.click("#call-connect")
		tb.waitJS("session admitted", `document.getElementById('call-session').dataset.disposition === 'admitted'`, 5*time.Second)
		table("the synthetic call", "native=1 all=1")
		tb.click("#rtc-start")
		tb.waitJS("in call", `document.getElementById('rtc-state').dataset.state === 'in-call'`, 10*time.Second)
		table("the synthetic and the microphone call", "native=1 webrtc=1 all=2")

		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.http.URL, "http")+"/v1/session", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		table("a caller of the test's beside the page's", "native=2 webrtc=1 all=3")
		if empty := eval[bool](tb, `!document.getElementById('transport-empty').hidden`); empty {
			t.Errorf("the table says no call is in progress beside its rows")
		}
		beside := eval[bool](tb, `(() => {
			const a = document.getElementById('transports').getBoundingClientRect();
			const b = document.getElementById('stage-list').getBoundingClientRect();
			return a.right <= b.left && a.top < b.bottom && b.top < a.bottom;
		})()`)
		if !beside {
			t.Errorf("the calls table is not beside the stages on a 1280 px window")
		}
		tb.screenshot("calls-by-transport")
		if got := r.srv.CallsByTransport(); len(got) != 2 || got["native"] != 2 || got["webrtc"] != 1 {
			t.Errorf("server counts %v, want native 2, webrtc 1", got)
		}

		_ = c.Close(websocket.StatusNormalClosure, "bye")
		table("the test's caller gone", "native=1 webrtc=1 all=2")
		tb.click("#call-hangup")
		tb.waitJS("call ended", `document.getElementById('call-connect').disabled === false`, 5*time.Second)
		table("the synthetic call gone", "webrtc=1 all=1")
		tb.click("#rtc-stop")
		tb.waitJS("ended", `document.getElementById('rtc-state').dataset.state === 'ended'`, 5*time.Second)
		table("every call gone", "all=0")
		if empty := eval[bool](tb, `!document.getElementById('transport-empty').hidden`); !empty {
			t.Errorf("the table does not say that no call is in progress once all ended")
		}
		tb.noErrors()
	})

	t.Run("Phone", func(t *testing.T) {
		r := newRig(t)
		tb := newTab(t, bctx, 20*time.Second)
		tb.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(r.http.URL+"/"))
		tb.waitJS("stages rendered", `document.querySelectorAll('.stage').length >= 3`, 5*time.Second)
		overflow := eval[bool](tb, `document.documentElement.scrollWidth > window.innerWidth + 1`)
		if overflow {
			t.Errorf("page scrolls sideways on a 390 px screen")
		}
		tb.screenshot("phone")
		tb.noErrors()
	})
}
