package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/backend"
)

// A phone caller cannot send `callback` or `handoff` messages, so on
// /v1/twilio the `offer` that follows a session refusal becomes a spoken
// keypad menu (docs/TELEPHONY.md): 1 books a callback to the caller's own
// number (the `caller` custom parameter), 2 asks for a person. The key is
// turned into the native answer and goes through the same Fallback, so the
// offer's rules (room re-checked, durable booking, one ticket per call) are
// the native path's; only what the caller hears differs: the outcome is
// spoken, since there is no text channel.

// Menu sentences. They are said after the refusal prompt, which already
// names the fallbacks; the menu only says which key does what.
const (
	menuBoth     = "Press 1 to be called back at this number, or 2 to hold for a person."
	menuCallback = "Press 1 to be called back at this number."
	menuHandoff  = "Press 2 to hold for a person."
)

// Menu keys.
const (
	keyCallback = "1"
	keyHandoff  = "2"
)

// callerParam is the start custom parameter that carries the caller's own
// number (E.164), the number a keypad callback calls back.
const callerParam = "caller"

// twilioKeyWait is how long the menu waits for a key once it has played
// (a variable so that tests can shorten it). The offer window of the
// Fallback bounds the whole wait as well.
var twilioKeyWait atomic.Int64

func init() { twilioKeyWait.Store(int64(10 * time.Second)) }

// keypadFallback is a Fallback that a keypad menu can drive: Offers.
type keypadFallback interface {
	// endOffer ends a refused call's wait for an answer, as the end of
	// the offer window would.
	endOffer(call string)
	// renderPrompt returns a prompt's speech, rendered outside the
	// synthesis stage.
	renderPrompt(ctx context.Context, text string) (backend.Audio, error)
}

func (o *Offers) endOffer(call string) {
	o.mu.Lock()
	st := o.calls[call]
	o.mu.Unlock()
	if st != nil {
		st.done()
	}
}

func (o *Offers) renderPrompt(ctx context.Context, text string) (backend.Audio, error) {
	return o.svc.PromptAudio(ctx, text)
}

type menuState int

const (
	menuIdle     menuState = iota // no offer to answer
	menuOpen                      // the menu was said; a key is awaited
	menuAnswered                  // a key was taken; its outcome is awaited
	menuHolding                   // a handoff waits for an agent
	menuDone                      // over: an outcome was said, or the caller declined
)

// twilioMenu is the keypad menu's state for one stream.
type twilioMenu struct {
	fb      keypadFallback // nil: no menu (the Fallback cannot take answers)
	number  string         // the caller's E.164 number; "" without a valid one
	keyWait time.Duration

	mu       sync.Mutex
	call     string // the call's id, from its `session` message
	stage    string // the stage of the latest prompt
	state    menuState
	callback bool // key 1 is on offer
	handoff  bool // key 2 is on offer
	chosen   fallback.Kind
	timer    *time.Timer
	cut      uint64        // bumped when a key clears what was playing
	speech   chan struct{} // closed when the latest spoken line was queued
}

func newTwilioMenu(fb Fallback, params map[string]string) *twilioMenu {
	m := &twilioMenu{keyWait: time.Duration(twilioKeyWait.Load())}
	if k, ok := fb.(keypadFallback); ok {
		m.fb = k
	}
	if n, err := fallback.NormalizeNumber(params[callerParam]); err == nil {
		m.number = n
	}
	return m
}

// noteSent follows the call's messages that the menu depends on.
func (t *twilioTransport) noteSent(msg any) {
	m := t.menu
	m.mu.Lock()
	defer m.mu.Unlock()
	switch v := msg.(type) {
	case *SessionMsg:
		m.call = v.Session
	case *PromptMsg:
		m.stage = v.Stage
	}
}

// offered opens the menu for an `offer` after a session refusal: only the
// keys the caller can use (a callback needs the caller's number). With no
// usable key the call ends as it would have without an offer.
func (t *twilioTransport) offered(o *OfferMsg) {
	m := t.menu
	m.mu.Lock()
	if m.fb == nil || m.state != menuIdle || m.stage != StageSession || m.call == "" {
		m.mu.Unlock()
		t.log.Debug("twilio: offer not on the keypad", "kinds", o.Kinds)
		return
	}
	for _, k := range o.Kinds {
		switch k {
		case fallback.KindCallback:
			m.callback = m.number != ""
		case fallback.KindHandoff:
			m.handoff = true
		}
	}
	var text string
	switch {
	case m.callback && m.handoff:
		text = menuBoth
	case m.callback:
		text = menuCallback
	case m.handoff:
		text = menuHandoff
	}
	if text == "" {
		m.state = menuDone
		call := m.call
		m.mu.Unlock()
		t.log.Info("twilio: no keypad option", "kinds", o.Kinds, "has_number", m.number != "")
		m.fb.endOffer(call)
		return
	}
	m.state = menuOpen
	callback, handoff := m.callback, m.handoff
	m.mu.Unlock()
	t.log.Info("twilio: keypad menu", "callback", callback, "handoff", handoff)
	t.say("menu", text, func(ok bool) {
		if !ok { // the menu could not be said: no key was offered
			t.decline("menu not rendered")
			return
		}
		t.armMenu(t.conn.Buffered() + m.keyWait)
	})
}

// armMenu starts the wait for a key, if the menu is still open.
func (t *twilioTransport) armMenu(d time.Duration) {
	m := t.menu
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != menuOpen {
		return
	}
	m.timer = time.AfterFunc(d, func() { t.decline("no key") })
}

// decline ends an open menu: the caller pressed another key or none in
// time. The refused call then closes after what is playing, as without an
// offer.
func (t *twilioTransport) decline(why string) {
	m := t.menu
	m.mu.Lock()
	if m.state != menuOpen {
		m.mu.Unlock()
		return
	}
	m.state = menuDone
	if m.timer != nil {
		m.timer.Stop()
	}
	call := m.call
	m.mu.Unlock()
	t.log.Info("twilio: keypad menu declined", "why", why)
	m.fb.endOffer(call)
}

// pressed handles a keypress. A key on offer becomes the native answer (a
// `callback` with consent and the caller's number, or a `handoff`), which
// the call hands to its Fallback; any other key while the menu is open
// declines it. Keys at other times are ignored.
func (t *twilioTransport) pressed(ctx context.Context, digit string) (ClientEvent, bool) {
	m := t.menu
	m.mu.Lock()
	if m.state != menuOpen {
		m.mu.Unlock()
		return ClientEvent{}, false
	}
	var ev ClientEvent
	switch {
	case digit == keyCallback && m.callback:
		m.chosen = fallback.KindCallback
		data, _ := json.Marshal(map[string]any{"type": "callback", "consent": true, "number": m.number})
		ev = ClientEvent{Kind: EventOther, Type: string(fallback.KindCallback), Data: data}
	case digit == keyHandoff && m.handoff:
		m.chosen = fallback.KindHandoff
		ev = ClientEvent{Kind: EventOther, Type: string(fallback.KindHandoff), Data: []byte(`{"type":"handoff"}`)}
	default:
		m.mu.Unlock()
		t.decline("other key")
		return ClientEvent{}, false
	}
	m.state = menuAnswered
	if m.timer != nil {
		m.timer.Stop()
	}
	m.cut++ // the rest of the menu is not said
	m.mu.Unlock()
	t.log.Info("twilio: keypad answer", "kind", ev.Type)
	if _, err := t.conn.Clear(ctx); err != nil {
		t.log.Debug("twilio: clear", "err", err)
	}
	return ev, true
}

// answered speaks the outcome of the caller's answer: the sentence of the
// prompt table for it (for a callback, "booked" only once it was durably
// queued). A handoff in the queue is held until its outcome.
func (t *twilioTransport) answered(f *FallbackMsg) {
	m := t.menu
	m.mu.Lock()
	if (m.state != menuAnswered && m.state != menuHolding) || string(m.chosen) != f.Type {
		m.mu.Unlock()
		return
	}
	stage := fallback.StageCallback
	if m.chosen == fallback.KindHandoff {
		stage = fallback.StageHandoff
	}
	if m.chosen == fallback.KindHandoff && f.Disposition == stages.Queued {
		m.state = menuHolding
	} else {
		m.state = menuDone
	}
	m.mu.Unlock()
	p := fallback.PromptFor(stage, f.Disposition, nil)
	t.log.Info("twilio: keypad outcome", "kind", f.Type, "disposition", f.Disposition, "ticket", f.Ticket, "agent", f.Agent)
	t.say(stage+"-"+f.Disposition.String(), p.Text, nil)
}

// answerFailed handles an error the Fallback gave the caller's answer
// (the handoff queue could not be asked, say): nothing was established,
// the caller hears so and the call ends. Errors about the stream itself are
// not the answer's.
func (t *twilioTransport) answerFailed(e *ErrorMsg) {
	if (e.Code != CodeBadField && e.Code != CodeOutOfOrder) ||
		strings.HasPrefix(e.Message, "twilio:") || strings.HasPrefix(e.Message, "caller audio:") {
		return
	}
	m := t.menu
	m.mu.Lock()
	if m.state != menuAnswered {
		m.mu.Unlock()
		return
	}
	m.state = menuDone
	kind, call := m.chosen, m.call
	m.mu.Unlock()
	t.log.Warn("twilio: keypad answer not established", "kind", kind, "code", e.Code, "err", e.Message)
	t.say(string(kind)+"-failed", fallback.PromptFailed(string(kind), nil).Text, nil)
	m.fb.endOffer(call)
}

// menuClosing runs as the stream closes: the menu's timer stops, and a
// caller still holding for a person when a refused call ends (the offer
// window ran out; the handoff is withdrawn with the call) hears that the
// search stopped.
func (t *twilioTransport) menuClosing(status CloseStatus) {
	m := t.menu
	m.mu.Lock()
	holding := m.state == menuHolding
	if m.timer != nil {
		m.timer.Stop()
	}
	m.state = menuDone
	m.mu.Unlock()
	if holding && status == CloseTryLater {
		p := fallback.PromptFor(fallback.StageHandoff, stages.Expired, nil)
		t.log.Info("twilio: handoff hold ended with the call")
		t.say("handoff-expired", p.Text, nil)
	}
}

// say renders text as a prompt (outside the synthesis stage) and queues it
// as an utterance of its own, after any line said before it. queued, when
// set, learns whether it was queued. A line started before a key cleared
// the playback is dropped.
func (t *twilioTransport) say(name, text string, queued func(ok bool)) {
	m := t.menu
	t.mu.Lock()
	t.n++
	utt := fmt.Sprintf("%s~%d", name, t.n)
	t.prompts.Add(1)
	t.mu.Unlock()
	m.mu.Lock()
	prev, done, cut := m.speech, make(chan struct{}), m.cut
	m.speech = done
	m.mu.Unlock()
	t.log.Info("twilio: say", "utterance", utt, "text", text)
	go func() {
		defer t.prompts.Done()
		ok := false
		defer func() {
			close(done)
			if queued != nil {
				queued(ok)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		a, err := m.fb.renderPrompt(ctx, text)
		var b []byte
		if err == nil {
			b, err = mulaw8k(a)
		}
		if prev != nil {
			<-prev // bounded: the line before renders within its own timeout
		}
		if err != nil || len(b) == 0 {
			t.log.Warn("twilio: prompt audio", "utterance", utt, "err", err)
			return
		}
		// Checked and queued under the lock: a key that cuts the playback
		// either comes first (the line is dropped) or clears it.
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.cut != cut {
			return
		}
		if err := t.conn.SendAudio(utt, b); err != nil {
			return
		}
		t.endUtterance(utt)
		ok = true
	}()
}

// mulaw8k converts prompt audio to 8 kHz µ-law, at most maxPrompt of it.
func mulaw8k(a backend.Audio) ([]byte, error) {
	s := a.Samples
	if len(s) == 0 {
		return nil, nil
	}
	if a.Rate != 8000 {
		var err error
		if s, err = pcm.Resample(s, a.Rate, 8000); err != nil {
			return nil, err
		}
	}
	if n := media.Telephony.BytesPer(maxPrompt); len(s) > n {
		s = s[:n]
	}
	return g711.EncodeMulaw(nil, s), nil
}
