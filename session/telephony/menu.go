package telephony

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// A phone caller cannot send `callback` or `handoff` messages, so on
// /v1/twilio the `offer` that follows a refusal becomes a spoken keypad menu
// (docs/TELEPHONY.md): 1 books a callback to the caller's own number (the
// `caller` custom parameter), 2 asks for a person. The key is turned into
// the native answer and goes through the same Fallback, so the offer's rules
// (room re-checked, durable booking, one ticket per call) are the native
// path's; only what the caller hears differs: the outcome is spoken, since
// there is no text channel.
//
// The menu follows a refusal of the call (the session stage), after which
// the call ends, and a refusal of a turn in an admitted conversation, after
// which the conversation goes on: a callback is booked and the caller keeps
// talking; a person who takes the call ends the stream (1013) so that the
// TwiML after <Connect> transfers it; a hold that runs out, or no key, and
// the conversation simply continues. A caller is only ever offered what its
// keypad can take right now (keypadOffer): one menu at a time, and no
// callback without the caller's number. With nothing to take, the prompt
// has no offer sentence at all.

// Menu sentences. They are said after the refusal prompt, which already
// names the fallbacks; the menu only says which key does what.
const (
	menuBoth     = "Press 1 to be called back at this number, or 2 to hold for a person."
	menuCallback = "Press 1 to be called back at this number."
	menuHandoff  = "Press 2 to hold for a person."
)

// Spoken menu sentences, for a line that cannot carry keys: the words
// fallback.SpokenAnswer takes.
const (
	spokenBoth     = "Say call me back to be called back at this number, or say a person to hold for a person."
	spokenCallback = "Say call me back to be called back at this number."
	spokenHandoff  = "Say a person to hold for a person."
)

// Menu keys.
const (
	keyCallback = "1"
	keyHandoff  = "2"
)

// callerParam is the start custom parameter that carries the caller's own
// number (E.164), the number a keypad callback calls back.
const callerParam = "caller"

// DefaultKeyWait is how long a keypad menu waits for a key once it has
// played, unless the endpoint's KeyWait says otherwise. After a session
// refusal the offer window of the Fallback bounds the whole wait as well.
const DefaultKeyWait = 10 * time.Second

// KeypadFallback is a Fallback that a keypad menu can drive
// (session/offer.Offers): the menu opens for the offers it makes, and the
// caller's key becomes its answer.
type KeypadFallback interface {
	session.Fallback
	// EndOffer ends a refused call's wait for an answer, as the end of
	// the offer window would.
	EndOffer(call string)
	// RenderPrompt returns a prompt's speech, rendered outside the
	// synthesis stage.
	RenderPrompt(ctx context.Context, text string) (backend.Audio, error)
	// AnswerWindow bounds a hold for a person: from the offer, as long as
	// a refused call waits for an answer.
	AnswerWindow() time.Duration
	// WithdrawHandoff cancels the call's handoff. It reports false when
	// the handoff had already resolved otherwise (an agent took it): its
	// outcome is then on its way to the call.
	WithdrawHandoff(call string) bool
}

// keypad is the transport's Capabilities.Keypad: the menu takes what it
// can of the offered kinds.
func (t *phoneCall) keypad(offered []string) []string {
	kinds := make([]prompt.Kind, len(offered))
	for i, k := range offered {
		kinds[i] = prompt.Kind(k)
	}
	var keys []string
	for _, k := range t.menu.reserve(kinds) {
		keys = append(keys, string(k))
	}
	return keys
}

type menuState int

const (
	menuIdle     menuState = iota // no offer to answer
	menuOffering                  // an offer of keys is on its way (reserve)
	menuOpen                      // the menu was said; a key is awaited
	menuAnswered                  // a key was taken; its outcome is awaited
	menuHolding                   // a handoff waits for an agent
	menuDone                      // over: an outcome was said, or the caller declined
)

// phoneMenu is the keypad menu's state for one stream.
type phoneMenu struct {
	fb      KeypadFallback // nil: no menu (the Fallback cannot take answers)
	number  string         // the caller's E.164 number; "" without a valid one
	keyWait time.Duration
	spoken  bool // the line carries no keys: answers come in words only (lineStart.noKeys)
	hears   bool // the engine hears a refused call's answers in words (Engine.HearsAnswers)

	mu       sync.Mutex
	call     string // the call's id, from its `session` message
	admitted bool   // the call was admitted: a menu is part of a conversation
	state    menuState
	midcall  bool // the menu was offered in a conversation, which goes on after it
	offerAt  time.Time
	replied  bool // audio other than the menu's was queued since it opened
	callback bool // key 1 is on offer
	handoff  bool // key 2 is on offer
	chosen   prompt.Kind
	misses   int                  // answers in words not understood in a refused call (spokenAnswer)
	timer    clock.Timer          // the key wait
	hold     clock.Timer          // a mid-call hold's end
	cut      uint64               // bumped when a key clears what was playing
	speech   chan struct{}        // closed when the latest spoken line was queued
	lines    map[string]*menuLine // lines said through the call's writer, until their end
	// withdrawing: the hold ended and its handoff is withdrawn; the
	// cancelled outcome to come is followed by the line that says so.
	withdrawing bool
}

func newPhoneMenu(fb session.Fallback, st lineStart, hears bool) *phoneMenu {
	m := &phoneMenu{keyWait: cmp.Or(st.keyWait, DefaultKeyWait), spoken: st.noKeys, hears: hears, lines: map[string]*menuLine{}}
	if k, ok := fb.(KeypadFallback); ok {
		m.fb = k
	}
	if n, err := fallback.NormalizeNumber(st.params[callerParam]); err == nil {
		m.number = n
	}
	return m
}

// reserve returns the kinds of an offer that the menu can take now, and
// keeps the menu for them until their `offer` arrives. Only one menu is
// open at a time: while one is open or its answer is under way, nothing
// more can be offered. A callback needs the caller's number.
func (m *phoneMenu) reserve(kinds []prompt.Kind) []prompt.Kind {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fb == nil || (m.state != menuIdle && m.state != menuDone) {
		return nil
	}
	if m.spoken && !m.admitted && !m.hears {
		// Without an answer recognizer words are heard only in a
		// conversation's turns; a refused call has none, so a keyless
		// caller is offered nothing it cannot take.
		return nil
	}
	var keys []prompt.Kind
	for _, k := range kinds {
		if k == prompt.KindCallback && m.number == "" {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		m.state = menuOffering
	}
	return keys
}

// noteSent follows the call's messages that the menu depends on.
func (t *phoneCall) noteSent(msg wire.Message) {
	m := t.menu
	m.mu.Lock()
	defer m.mu.Unlock()
	switch v := msg.(type) {
	case *wire.SessionMsg:
		m.call = v.Session
		m.admitted = m.admitted || v.Disposition == stages.Admitted
	case *wire.AudioStartMsg:
		if m.lines[v.Turn] == nil { // the menu's own lines are no reply
			m.replied = true
		}
	case *wire.PromptMsg:
		// A callback the store failed to take is answered with this
		// prompt alone (its audio is the Fallback's): the answer is over.
		if m.state == menuAnswered && v.Reason == prompt.ReasonFailed && v.Stage == string(m.chosen) {
			m.state = menuDone
		}
	}
}

// offered opens the menu for an `offer` of the keys reserved for it: only
// those the caller can use. With no usable key a refused call ends as it
// would have without an offer.
func (t *phoneCall) offered(o *wire.OfferMsg) {
	m := t.menu
	m.mu.Lock()
	if m.fb == nil || m.state != menuOffering || m.call == "" {
		m.mu.Unlock()
		t.log.Debug(t.msg("offer not on the keypad"), "kinds", o.Kinds)
		return
	}
	m.callback, m.handoff = false, false
	for _, k := range o.Kinds {
		switch k {
		case prompt.KindCallback:
			m.callback = m.number != ""
		case prompt.KindHandoff:
			m.handoff = true
		}
	}
	text := m.sentence()
	if text == "" {
		m.state = menuDone
		call := m.call
		m.mu.Unlock()
		t.log.Info(t.msg("no keypad option"), "kinds", o.Kinds, "has_number", m.number != "")
		m.fb.EndOffer(call)
		return
	}
	m.state = menuOpen
	m.midcall, m.offerAt, m.replied = m.admitted, t.e.Clock().Now(), false
	callback, handoff, midcall := m.callback, m.handoff, m.midcall
	m.mu.Unlock()
	t.log.Info(t.msg("keypad menu"), "callback", callback, "handoff", handoff, "midcall", midcall)
	// The offer overtook the prompt it follows (the engine writes it ahead
	// of queued audio, so that a key counts while the prompt plays); the
	// menu joins the call's audio behind that prompt, spoken for the
	// offer's premise, and the wait for a key starts at its end.
	t.say("menu", text, o, t.menuSaid)
}

// sentence is what the open menu says: which key, or on a line without
// keys which words, does what. "" when nothing is on offer.
func (m *phoneMenu) sentence() string {
	both, callback, handoff := menuBoth, menuCallback, menuHandoff
	if m.spoken {
		both, callback, handoff = spokenBoth, spokenCallback, spokenHandoff
	}
	switch {
	case m.callback && m.handoff:
		return both
	case m.callback:
		return callback
	case m.handoff:
		return handoff
	}
	return ""
}

// menuSaid follows the menu's line: once its end is on the line, the wait
// for a key starts; a menu that could not be said, or was cut, offered
// no key.
func (t *phoneCall) menuSaid(ok bool) {
	if !ok {
		t.bg.Go(func() { t.decline("menu not said") })
		return
	}
	t.armMenu(t.line.buffered() + t.menu.keyWait)
}

// armMenu starts the wait for a key, if the menu is still open.
func (t *phoneCall) armMenu(d time.Duration) {
	m := t.menu
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != menuOpen {
		return
	}
	m.timer = t.e.Clock().AfterFunc(d, func() { t.decline("no key") })
}

// decline ends an open menu: the caller pressed another key or none in
// time. A refused call then closes after what is playing, as without an
// offer; a conversation simply goes on.
func (t *phoneCall) decline(why string) {
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
	t.log.Info(t.msg("keypad menu declined"), "why", why)
	m.fb.EndOffer(call)
}

// pressed handles a keypress. A key on offer becomes the native answer (a
// `callback` with consent and the caller's number, or a `handoff`), which
// the call hands to its Fallback; any other key while the menu is open
// declines it. Keys at other times are ignored. A key stops the rest of
// the menu: a clear, unless other audio (a reply the conversation went on
// with) was queued after the menu, which a clear would cut as well.
func (t *phoneCall) pressed(ctx context.Context, digit string) (wire.ClientEvent, bool) {
	m := t.menu
	m.mu.Lock()
	if m.state != menuOpen {
		m.mu.Unlock()
		return wire.ClientEvent{}, false
	}
	var ev wire.ClientEvent
	switch {
	case digit == keyCallback && m.callback:
		m.chosen = prompt.KindCallback
		data, _ := json.Marshal(map[string]any{"type": "callback", "consent": true, "number": m.number})
		ev = wire.ClientEvent{Kind: wire.EventOther, Type: string(prompt.KindCallback), Data: data}
	case digit == keyHandoff && m.handoff:
		m.chosen = prompt.KindHandoff
		ev = wire.ClientEvent{Kind: wire.EventOther, Type: string(prompt.KindHandoff), Data: []byte(`{"type":"handoff"}`)}
	default:
		m.mu.Unlock()
		t.decline("other key")
		return wire.ClientEvent{}, false
	}
	m.state = menuAnswered
	if m.timer != nil {
		m.timer.Stop()
	}
	m.cut++ // the rest of the menu is not said
	clear := !m.replied
	m.mu.Unlock()
	t.log.Info(t.msg("keypad answer"), "kind", ev.Type)
	t.mu.Lock()
	if t.cur != "" { // the rest of the menu's line being said is dropped
		t.utt, t.conv = "", nil
	}
	t.mu.Unlock()
	if clear {
		if _, err := t.line.clear(ctx); err != nil {
			t.log.Debug(t.msg("clear"), "err", err)
		}
	}
	return ev, true
}

// spokenAnswer is the transport's Capabilities.Answer: a caller who cannot
// press keys (or would rather not) answers the open menu in words. "Call me
// back" is key 1 and "a person" key 2, each only while that key is on
// offer; "no thanks" declines the menu, as another key would, and the
// caller hears that nothing was arranged. Anything else is not an answer:
// in a conversation the menu stays open and the utterance goes on to the
// model as usual; in a refused call (no conversation) the menu is said
// again once, and a second miss ends the call with the prompt that says
// nothing was arranged (missed).
func (t *phoneCall) spokenAnswer(ctx context.Context, transcript string) (wire.ClientEvent, bool) {
	kind := fallback.SpokenAnswer(transcript)
	declines := fallback.Declines(transcript)
	m := t.menu
	m.mu.Lock()
	open := m.state == menuOpen
	offered := open && (kind == prompt.KindCallback && m.callback || kind == prompt.KindHandoff && m.handoff)
	admitted := m.admitted
	m.mu.Unlock()
	switch {
	case open && declines:
		t.log.Info(t.msg("spoken answer"), "kind", typeDecline)
		t.say("offer-declined", prompt.Of(prompt.Outcome{Stage: prompt.StageOffer, Reason: prompt.ReasonDeclined}, nil).Text, nil, nil)
		t.decline("said no thanks")
		return wire.ClientEvent{}, false
	case open && !offered && !admitted:
		t.missed()
		return wire.ClientEvent{}, false
	case !offered:
		return wire.ClientEvent{}, false
	}
	key := keyCallback
	if kind == prompt.KindHandoff {
		key = keyHandoff
	}
	t.log.Info(t.msg("spoken answer"), "kind", string(kind))
	return t.pressed(ctx, key)
}

// typeDecline names a declined menu in the log.
const typeDecline = "decline"

// listening is the transport's Capabilities.Listening: the menu is open,
// so an utterance may answer it.
func (t *phoneCall) listening() bool {
	m := t.menu
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == menuOpen
}

// missed handles a refused caller's answer in words that answered nothing
// on offer: the first time the menu is said again, after a sentence that
// says the answer was not understood, and its wait starts again; the
// second time the caller hears that nothing was arranged and the menu is
// declined, which ends the call.
func (t *phoneCall) missed() {
	m := t.menu
	m.mu.Lock()
	if m.state != menuOpen {
		m.mu.Unlock()
		return
	}
	m.misses++
	misses := m.misses
	if m.timer != nil {
		m.timer.Stop()
	}
	menu := m.sentence()
	m.mu.Unlock()
	t.log.Info(t.msg("spoken answer not understood"), "misses", misses)
	if misses >= maxMisses {
		t.say("offer-unanswered", prompt.Of(prompt.Outcome{Stage: prompt.StageOffer, Reason: prompt.ReasonUnanswered}, nil).Text, nil, nil)
		t.decline("answer not understood")
		return
	}
	again := prompt.Of(prompt.Outcome{Stage: prompt.StageOffer, Reason: prompt.ReasonUnheard}, nil).Text
	t.say("menu", again+" "+menu, nil, t.menuSaid)
}

// maxMisses is how many answers in words a refused call's menu takes that
// answer nothing on offer: the first is asked again, the second ends it.
const maxMisses = 2

// answered speaks the outcome of the caller's answer: the sentence of the
// prompt table for it (for a callback, "booked" only once it was durably
// queued). A handoff in the queue is held until its outcome; in a
// conversation the hold ends with the offer window (holdEnded). A handoff
// an agent took mid-call ends the stream once that was said, as after a
// session refusal, so that the TwiML after <Connect> transfers the call.
// A cancelled handoff was withdrawn here (the hold ended: its line is said
// after the cancellation, under its premise) or with the call, and whoever
// withdrew it speaks.
func (t *phoneCall) answered(f *wire.FallbackMsg) {
	m := t.menu
	m.mu.Lock()
	if f.Disposition == stages.Cancelled && f.Type == string(prompt.KindHandoff) && m.withdrawing {
		m.withdrawing = false
		m.state = menuDone
		m.hold = nil
		m.mu.Unlock()
		t.log.Info(t.msg("handoff hold ended: the conversation goes on"))
		t.say("handoff-expired", prompt.For(prompt.StageHandoff, stages.Expired, nil).Text, f, nil)
		return
	}
	if (m.state != menuAnswered && m.state != menuHolding) || string(m.chosen) != f.Type ||
		f.Disposition == stages.Cancelled {
		m.mu.Unlock()
		return
	}
	stage := prompt.StageCallback
	if m.chosen == prompt.KindHandoff {
		stage = prompt.StageHandoff
	}
	if m.chosen == prompt.KindHandoff && f.Disposition == stages.Queued {
		m.state = menuHolding
		if m.midcall && m.hold == nil {
			m.hold = clock.AfterFuncAt(t.e.Clock(), m.offerAt.Add(m.fb.AnswerWindow()), t.holdEnded)
		}
	} else {
		m.state = menuDone
		if m.hold != nil {
			m.hold.Stop()
			m.hold = nil
		}
	}
	transfer := m.midcall && stage == prompt.StageHandoff && f.Disposition == stages.Completed
	m.mu.Unlock()
	p := prompt.For(stage, f.Disposition, nil)
	t.log.Info(t.msg("keypad outcome"), "kind", f.Type, "disposition", f.Disposition, "ticket", f.Ref, "agent", f.Agent)
	var then func(bool)
	if transfer {
		t.handedOff.Store(true)
		// Said or not, the person has the call: the stream ends.
		then = func(bool) {
			t.bg.Go(func() {
				t.log.Info(t.msg("handed to a person: closing for the transfer"))
				t.Close(wire.CloseTryLater, "transferred to a person")
			})
		}
	}
	t.say(stage+"-"+f.Disposition.String(), p.Text, f, then)
}

// holdEnded ends a mid-call hold for a person at the end of the offer
// window: the handoff is withdrawn, and the conversation goes on. The
// caller hears that the search stopped once the withdrawal's outcome (a
// cancelled handoff) is sent (answered), spoken for its premise: said
// now, the Fallback's outcome would cut it. A handoff an agent took just
// before is left to its outcome.
func (t *phoneCall) holdEnded() {
	m := t.menu
	m.mu.Lock()
	if m.state != menuHolding {
		m.mu.Unlock()
		return
	}
	call := m.call
	m.withdrawing = true
	m.mu.Unlock()
	if !m.fb.WithdrawHandoff(call) {
		m.mu.Lock()
		m.withdrawing = false
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	if m.state == menuHolding { // its outcome is still to come
		m.state = menuDone
		m.hold = nil
	}
	m.mu.Unlock()
}

// answerFailed handles an error the Fallback gave the caller's answer
// (the handoff queue could not be asked, say): nothing was established,
// the caller hears so, and a refused call ends (a conversation goes on).
// Errors about the stream itself are not the answer's.
func (t *phoneCall) answerFailed(e *wire.ErrorMsg) {
	if (e.Code != wire.CodeBadField && e.Code != wire.CodeOutOfOrder) ||
		strings.HasPrefix(e.Message, t.start.protocol+":") || strings.HasPrefix(e.Message, "caller audio:") {
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
	t.log.Warn(t.msg("keypad answer not established"), "kind", kind, "code", e.Code, "err", e.Message)
	t.say(string(kind)+"-failed", prompt.Failed(string(kind), nil).Text, e, nil)
	m.fb.EndOffer(call)
}

// menuEnding runs as a refused call ends, before its writer's queue
// closes (Capabilities.Closing): a caller still holding for a person (the
// offer window ran out; the handoff is withdrawn with the call) hears that
// the search stopped, through the call's writer like every other line.
// The menu itself stays as it is: what the writer still drains (an
// outcome's line) is said as before.
func (t *phoneCall) menuEnding(status wire.CloseStatus) {
	m := t.menu
	m.mu.Lock()
	holding := m.state == menuHolding && !m.midcall
	m.mu.Unlock()
	if holding && status == wire.CloseTryLater {
		p := prompt.For(prompt.StageHandoff, stages.Expired, nil)
		t.log.Info(t.msg("handoff hold ended with the call"))
		t.say("handoff-expired", p.Text, nil, nil)
	}
}

// menuClosing runs as the stream closes: the menu's timers stop.
func (t *phoneCall) menuClosing() {
	m := t.menu
	m.mu.Lock()
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.hold != nil {
		m.hold.Stop()
	}
	m.state = menuDone
	m.mu.Unlock()
}

// say renders text as a prompt (outside the synthesis stage) and queues it
// on the call through its writer (session.Voice), as an utterance of its
// own after any line said before it, spoken for the premise of after (the
// message it follows; nil: the call's state now): once the call's state
// changes, the writer cuts it like the Fallback's prompt audio. ended,
// when set, is called once: true as the line's end is on the line, false
// when it was not rendered, not queued, cut, or dropped because a key
// stopped the menu. A line asked for once the stream closes is not said.
func (t *phoneCall) say(name, text string, after wire.Message, ended func(ok bool)) {
	if ended == nil {
		ended = func(bool) {}
	}
	m := t.menu
	t.mu.Lock()
	if t.closing || t.voice == nil {
		t.mu.Unlock()
		ended(false)
		return
	}
	t.n++
	utt := fmt.Sprintf("%s~%d", name, t.n)
	t.mu.Unlock()
	release, ok := t.voice.Keep()
	if !ok {
		ended(false)
		return
	}
	t.rendering.Add(1)
	m.mu.Lock()
	prev, done := m.speech, make(chan struct{})
	m.speech = done
	if len(m.lines) >= maxLines {
		clear(m.lines) // lines the writer cut unseen: their ends will not come
	}
	l := &menuLine{cut: m.cut, ended: ended}
	m.lines[utt] = l
	m.mu.Unlock()
	t.log.Info(t.msg("say"), "utterance", utt, "text", text)
	go func() {
		defer t.rendering.Done()
		defer close(done)
		defer release()
		rctx, cancel := context.WithTimeout(context.Background(), promptRender)
		a, err := m.fb.RenderPrompt(rctx, text)
		cancel()
		if prev != nil {
			<-prev // bounded: the line before renders within its own timeout
		}
		if err == nil {
			err = t.voice.Say(context.Background(), utt, after, a)
		}
		if err != nil {
			t.log.Debug(t.msg("line not said"), "utterance", utt, "err", err)
			t.lineEnded(utt, false)
		}
	}()
}

// maxLines bounds the lines a menu follows at once.
const maxLines = 16

// menuLine is a line of the menu's (say) on its way through the writer.
type menuLine struct {
	cut   uint64 // the menu's cut when it was asked for
	ended func(ok bool)
}

// lineOf returns the menu's line that utterance id is, or nil.
func (m *phoneMenu) lineOf(id string) *menuLine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lines[id]
}

// lineCut reports whether a key stopped the menu since line was asked for.
func (m *phoneMenu) lineCut(l *menuLine) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return l.cut != m.cut
}

// lineEnded calls the ended of the menu's line id once.
func (t *phoneCall) lineEnded(id string, ok bool) {
	m := t.menu
	m.mu.Lock()
	l := m.lines[id]
	delete(m.lines, id)
	m.mu.Unlock()
	if l != nil {
		l.ended(ok)
	}
}
