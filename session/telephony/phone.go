package telephony

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// phoneCall carries a Call over a line. Session events have no place on a
// phone: audio_start and audio_end bracket an utterance (a mark follows it
// where the gateway has marks), `interrupted` becomes a clear, prompts are
// heard as audio, an `offer` becomes the keypad menu (menu.go), and
// everything is logged.
type phoneCall struct {
	e       *session.Engine
	line    line
	start   lineStart
	log     *slog.Logger
	prompts *promptCache
	speaks  bool // the Fallback sends prompt audio itself
	menu    *phoneMenu
	// voice is the call's writer for the menu's lines (menu.go's say),
	// given as the call is created (Capabilities.Voice); nil before.
	voice session.Voice

	hello bool // the reader's: hello was delivered
	// handedOff: a person took the call (menu.go). The
	// conversation is over on this stream while it closes for the
	// transfer: the caller's audio is not listened to, and no more audio
	// of the call's is sent after the line that says so.
	handedOff atomic.Bool

	mu        sync.Mutex
	n         int
	utt       string            // utterance being sent
	cur       string            // the menu's line (its id) the utterance being sent is; "" for others
	conv      *converter        // its conversion to the line's format
	byTurn    map[string]string // turn -> its latest utterance
	last      string            // the utterance queued last on the line (endUtterance)
	lastSeq   uint64            // last's place in endSeq
	closing   bool              // Close began: no more prompts are started
	rendering sync.WaitGroup    // prompt rendering
	bg        sync.WaitGroup    // a close the transport starts itself (a transfer)
	once      sync.Once

	// ends orders the utterances' ends: each is queued on the line and
	// numbered under it, so that endSeq follows the line's own order
	// (what plays last). Every utterance now reaches the line through the
	// call's one writer, so they come one at a time; the lock keeps the
	// order a promise of this type, not of its caller.
	ends   sync.Mutex
	endSeq uint64 // utterance ends queued on the line

}

// newPhoneCall returns the transport of one started stream.
func newPhoneCall(e *session.Engine, l line, st lineStart, prompts *promptCache, log *slog.Logger) *phoneCall {
	return &phoneCall{e: e, line: l, start: st, prompts: prompts, speaks: e.Fallback().SpeaksPrompts(),
		log: log, byTurn: map[string]string{}, menu: newPhoneMenu(e.Fallback(), st, e.HearsAnswers())}
}

// msg is a log message of the transport's, prefixed with its name
// ("twilio: keypad answer"), as operators grep for them.
func (t *phoneCall) msg(what string) string { return t.start.protocol + ": " + what }

// capabilities are what the transport declares to its call.
func (t *phoneCall) capabilities() session.Capabilities {
	return session.Capabilities{Name: t.start.name, Interrupt: t.Interrupt, Keypad: t.keypad, Answer: t.spokenAnswer, Listening: t.listening,
		Voice: func(v session.Voice) { t.voice = v }, Closing: t.menuEnding}
}

// wait waits for the goroutines the transport started: prompt rendering
// and a close for a transfer.
func (t *phoneCall) wait() {
	t.rendering.Wait()
	t.bg.Wait()
}

// Recv implements Transport. The first event is a hello declaring the
// line's format, the format of both directions.
func (t *phoneCall) Recv(ctx context.Context) (wire.ClientEvent, error) {
	if !t.hello {
		t.hello = true
		return wire.ClientEvent{Kind: wire.EventHello, Type: "hello", Audio: t.start.format}, nil
	}
	for {
		ev, err := t.line.read(ctx)
		if err != nil {
			var pe *wire.ProtocolError
			if errors.As(err, &pe) {
				return wire.ClientEvent{}, err
			}
			if t.handedOff.Load() { // the stream ends because a person took the call
				return wire.ClientEvent{}, fmt.Errorf("%w: %w", session.ErrTransferred, err)
			}
			return wire.ClientEvent{}, err
		}
		switch ev.kind {
		case lineMedia:
			if t.handedOff.Load() {
				continue // the call is a person's now
			}
			return wire.ClientEvent{Kind: wire.EventAudio, Type: "media", Data: ev.audio}, nil
		case lineStop:
			t.log.Info(t.msg("stop"))
			return wire.ClientEvent{Kind: wire.EventHangup, Type: "hangup"}, nil
		case lineDTMF:
			digit := ev.digit
			if len(digit) > 4 {
				digit = digit[:4] // a log line, not a place for the gateway's bytes
			}
			t.log.Info(t.msg("dtmf"), "caller_digit", digit)
			if ce, ok := t.pressed(ctx, ev.digit); ok {
				return ce, nil
			}
		case lineMark:
			if p := ev.progress; p != nil {
				t.log.Debug(t.msg("mark"), "utterance", p.Utterance, "played_ms", p.Played.Milliseconds(), "done", p.Done, "cleared", p.Cleared)
			}
		case lineError:
			t.log.Warn(t.msg("gateway error"), "code", ev.code, "title", ev.message)
		}
	}
}

// Send implements Transport.
func (t *phoneCall) Send(ctx context.Context, msg wire.Message) error {
	t.noteSent(msg)
	switch m := msg.(type) {
	case *wire.AudioStartMsg:
		l := t.menu.lineOf(m.Turn)
		if l != nil && t.menu.lineCut(l) {
			// A key stopped the menu since the line was asked for: it
			// is not said.
			t.mu.Lock()
			t.utt, t.conv, t.cur = "", nil, m.Turn
			t.mu.Unlock()
			return nil
		}
		if l == nil && t.handedOff.Load() {
			return nil // no utterance: its audio and end are dropped
		}
		conv, err := newConverter(m.Encoding, m.Rate, t.start.format)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.n++
		t.utt = fmt.Sprintf("%s~%d", m.Turn, t.n)
		t.conv = conv
		t.cur = ""
		if l != nil {
			t.cur = m.Turn
		}
		if len(t.byTurn) >= 64 {
			clear(t.byTurn)
		}
		t.byTurn[m.Turn] = t.utt
		t.mu.Unlock()
	case *wire.AudioEndMsg:
		t.mu.Lock()
		utt, conv, cur := t.utt, t.conv, t.cur
		t.utt, t.conv, t.cur = "", nil, ""
		t.mu.Unlock()
		if cur != "" { // a menu's line: what follows it may go on
			defer t.lineEnded(cur, !m.Cut)
		}
		if utt == "" {
			return nil
		}
		if rest := conv.flush(); len(rest) > 0 {
			if err := t.line.sendAudio(utt, rest); err != nil {
				return err
			}
		}
		t.endUtterance(utt)
	case *wire.PromptMsg:
		t.log.Info(t.msg("prompt"), "stage", m.Stage, "reason", m.Reason, "text", m.Text)
		if !t.speaks {
			t.speak(m)
		}
	case *wire.InterruptedMsg:
		heard := int64(-1)
		if m.Heard != nil {
			heard = m.Heard.AudioMS
		}
		t.log.Info(t.msg("interrupted"), "generation", m.Generation, "cancelled", m.Cancelled, "heard_ms", heard)
	case *wire.SessionMsg:
		t.log.Info(t.msg("session"), "disposition", m.Disposition, "position", m.Position)
	case *wire.OfferMsg:
		t.offered(m)
	case *wire.FallbackMsg:
		t.answered(m)
	case *wire.ErrorMsg:
		t.log.Debug(t.msg("error"), "code", m.Code, "message", m.Message)
		t.answerFailed(m)
	default:
		t.log.Debug(t.msg("event"), "msg", fmt.Sprintf("%T", msg))
	}
	return nil
}

func (t *phoneCall) endUtterance(utt string) {
	// The last utterance is the one Close waits to hear played: the line
	// plays in order, so once it has played, so has every line before it.
	// It is the last in the line's order, not the last to get here: the
	// call's writer (audio_end) and the keypad menu's goroutines (say,
	// speak) end utterances concurrently, and an end noted after a later
	// one was queued must not take its place (Close would hang up once
	// the earlier one played, before the later one, a callback's
	// confirmation say, was heard).
	t.ends.Lock()
	t.line.endUtterance(utt)
	t.endSeq++
	seq := t.endSeq
	t.ends.Unlock()
	// One that is done as it ends (a key cleared it while it was queued:
	// prompt audio whose premise ended, its end written late) adds nothing
	// to wait for, and must not hide a line queued after it was cleared.
	if t.line.tracker().Progress(utt).Done {
		return
	}
	t.mu.Lock()
	if seq > t.lastSeq {
		t.last, t.lastSeq = utt, seq
	}
	t.mu.Unlock()
}

// speak renders a prompt for a Fallback that sends only text, and says it
// through the call's writer (session.Voice) as an utterance of its own,
// for the premise m was sent under: once the call's state moves on (a
// queued caller's wait expired), what is left of it is not said.
func (t *phoneCall) speak(m *wire.PromptMsg) {
	t.mu.Lock()
	if t.closing || t.voice == nil {
		t.mu.Unlock()
		return
	}
	t.n++
	utt := fmt.Sprintf("prompt~%d", t.n)
	t.mu.Unlock()
	// A refusal's prompt is sent as the call ends: the writer's queue is
	// kept open for it until it is queued.
	release, ok := t.voice.Keep()
	if !ok {
		return
	}
	t.rendering.Add(1)
	go func() {
		defer t.rendering.Done()
		defer release()
		a, err := t.prompts.synthesized(context.Background(), t.e.Synthesizer(), m.Text)
		if err != nil || len(a.Samples) == 0 {
			t.log.Warn(t.msg("prompt audio"), "err", err)
			return
		}
		if err := t.voice.Say(context.Background(), utt, m, a); err != nil {
			t.log.Debug(t.msg("prompt not said"), "utterance", utt, "err", err)
		}
	}()
}

// SendAudio implements Transport: the frame joins the line's pacer, and
// the writer waits while more than the line's lead is ahead of playback.
func (t *phoneCall) SendAudio(ctx context.Context, b []byte) error {
	t.mu.Lock()
	utt, conv, cur := t.utt, t.conv, t.cur
	t.mu.Unlock()
	if conv == nil {
		return nil // audio without audio_start: nothing to say it belongs to
	}
	if t.handedOff.Load() && cur == "" {
		return nil // the rest of a reply begun before a person took the call
	}
	out, err := conv.convert(b)
	if err != nil {
		return err
	}
	if err := t.line.sendAudio(utt, out); err != nil {
		return err
	}
	return pcmu.WaitBuffered(ctx, t.e.Clock(), t.line.buffered, t.line.lead())
}

// Interrupt is the transport's Capabilities.Interrupt: clear, and what the
// caller heard of turn's utterance by the tracker (marks and playback
// clock).
func (t *phoneCall) Interrupt(ctx context.Context, turn string) (time.Duration, bool) {
	t.mu.Lock()
	utt := t.byTurn[turn]
	t.utt, t.conv = "", nil
	t.mu.Unlock()
	progress, err := t.line.clear(ctx)
	if err != nil {
		t.log.Debug(t.msg("clear"), "err", err)
	}
	// The rest of the utterance is dropped (its frames and end find no
	// converter).
	if utt == "" {
		return 0, false
	}
	for _, p := range progress {
		if p.Utterance == utt {
			return p.Played, true
		}
	}
	p := t.line.tracker().Progress(utt)
	return p.Played, p.Sent > 0
}

// Close implements Transport. A refused or expired call first hears its
// prompt (and the keypad menu's outcome, menu.go): Close waits
// (bounded) for the prompt to be rendered and played (its mark echoed
// where the gateway has marks), then hangs up (1013 on a WebSocket). The
// keypad menu also closes a conversation this way when a person took the
// call. Prompts asked for once Close began are not started: the rendering
// Close waits for is all there will be.
func (t *phoneCall) Close(status wire.CloseStatus, reason string) {
	t.once.Do(func() {
		t.menuClosing()
		t.mu.Lock()
		t.closing = true
		t.mu.Unlock()
		if status == wire.CloseTryLater {
			t.waitPlayed(5 * time.Second)
		}
		t.line.hangup(status, reason, t.handedOff.Load())
	})
}

// waitPlayed waits, on the engine's clock, for prompt rendering and then
// for the last utterance to have played (its final mark back, or, without
// marks, its audio sent), at most its buffered audio plus grace.
func (t *phoneCall) waitPlayed(grace time.Duration) {
	clk := t.e.Clock()
	rendered := make(chan struct{})
	go func() { t.rendering.Wait(); close(rendered) }() // ends with the rendering, bounded by its timeouts
	timer := clock.NewTimer(clk, grace)
	select {
	case <-rendered:
	case <-timer.C:
	}
	deadline := clk.Now().Add(t.line.buffered() + grace)
	for clk.Now().Before(deadline) {
		if t.played() {
			return
		}
		timer.Reset(10 * time.Millisecond)
		<-timer.C
	}
	timer.Stop()
}

// played reports whether the last utterance queued has played.
func (t *phoneCall) played() bool {
	t.mu.Lock()
	last := t.last
	t.mu.Unlock()
	return last == "" || t.line.played(last)
}
