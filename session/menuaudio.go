package session

import (
	"context"
	"errors"
	"sync"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// A transport that speaks lines of its own (a phone's keypad menu and the
// outcome of its answer, package session/telephony) says them through the
// call's writer like any prompt audio, not beside it: they are frames of
// the outbound queue, under the premise check (premise.go), so that one
// writer hands the line everything the caller hears and a line spoken for
// a state of the call that is over is cut like the Fallback's prompts.

// ErrNoVoice: Voice.Say was given no audio to say.
var ErrNoVoice = errors.New("session: no audio to say")

// Voice is the call's writer as a transport's own lines reach it
// (Capabilities.Voice).
type Voice interface {
	// Keep keeps the call's outbound queue open for a line about to be
	// said (rendered, then Say): a call that ends meanwhile drains the
	// line before its transport is closed. It reports false once the
	// queue is finished (the line would not be heard). release must be
	// called, after Say returns, whatever Say did.
	Keep() (release func(), ok bool)
	// Say queues a as the prompt utterance id (audio_start, frames,
	// audio_end through Transport.Send and SendAudio), spoken for the
	// premise of after, a message with a barrier (an *wire.OfferMsg,
	// *wire.FallbackMsg or *wire.ErrorMsg) already sent, or for the
	// call's present state when after is nil. It returns ErrPremiseGone
	// when that state ended before the line was all queued: the writer
	// cuts what was queued of it.
	Say(ctx context.Context, id string, after wire.Message, a backend.Audio) error
}

// Keep implements Voice.
func (c *Call) Keep() (func(), bool) { return c.out.holdVoice() }

// Say implements Voice.
func (c *Call) Say(ctx context.Context, id string, after wire.Message, au backend.Audio) error {
	premise := c.premise.Load()
	if after != nil {
		p, ok := c.out.stamps.of(after)
		if !ok || p != premise {
			c.out.cut.Add(1)
			return ErrPremiseGone
		}
	}
	if au.Rate <= 0 || len(au.Samples) == 0 {
		return ErrNoVoice
	}
	c.mu.Lock()
	f, span := c.format, c.span
	c.mu.Unlock()
	p, err := promptaudio.Shared.Get(au, f)
	if err != nil {
		return err
	}
	start := &wire.AudioStartMsg{Type: "audio_start", Turn: id, Generation: c.gen.Load(), Encoding: string(p.Enc), Rate: p.Rate}
	if err := c.push(ctx, frame{premise: premise, voice: true, msg: start}); err != nil {
		return err
	}
	for i := range p.Frames(span) {
		b, us := p.At(i, span)
		if err := c.push(ctx, frame{premise: premise, voice: true, audio: b, ms: us}); err != nil {
			return err
		}
	}
	end := &wire.AudioEndMsg{Type: "audio_end", Turn: id, Generation: c.gen.Load(), AudioMS: p.SynthUS / 1000}
	if err := c.push(ctx, frame{premise: premise, voice: true, end: true, msg: end}); err != nil {
		return err
	}
	if c.premise.Load() != premise {
		return ErrPremiseGone
	}
	return nil
}

// stamps remembers the premise of the last few messages with a barrier
// queued (wire.Barrier: the messages a transport follows with a line of
// its own), for Say. A handful is plenty: a transport says a line right
// after the message it follows.
type stamps struct {
	mu   sync.Mutex
	ring [8]stamp
	next int
}

type stamp struct {
	msg     wire.Message
	premise uint64
}

// note records msg, queued while the call's premise was p, if it has a
// barrier.
func (s *stamps) note(msg wire.Message, p uint64) {
	if s == nil || barrierOf(msg) == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring[s.next] = stamp{msg: msg, premise: p}
	s.next = (s.next + 1) % len(s.ring)
}

// continues reports whether msg, a message that changes the call's
// state, is the sentence of the offer's outcome just queued (the prompt
// of the callback or handoff that the last FallbackMsg reported, with
// nothing queued between): it says the same state, so it does not move
// the premise, and a line a transport says after the outcome is not cut
// by the outcome's own prompt, whichever of the two is queued first.
// premise is the call's premise now.
func (s *stamps) continues(msg wire.Message, premise uint64) bool {
	pm, ok := msg.(*wire.PromptMsg)
	if s == nil || !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.ring[(s.next+len(s.ring)-1)%len(s.ring)]
	fm, ok := last.msg.(*wire.FallbackMsg)
	return ok && fm.Type == pm.Stage && last.premise == premise
}

// of returns the premise msg was queued under, if it is remembered.
func (s *stamps) of(msg wire.Message) (uint64, bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.ring {
		if st.msg == msg {
			return st.premise, true
		}
	}
	return 0, false
}

// holdVoice counts a transport's line about to be queued (Voice.Keep):
// while any is, a closed queue takes its frames and its writer does not
// finish. Refused once nothing would write them: the queue was discarded,
// or closed with no writer left to drain it.
func (o *outbound) holdVoice() (func(), bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped.Load() || (o.closed && !o.writing) {
		return func() {}, false
	}
	o.voices++
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			o.voices--
			o.mu.Unlock()
			signal(o.ready)
		})
	}, true
}

// finished reports, under mu, whether a closed queue is done with: no
// line a transport holds is still to come, or it was discarded.
func (o *outbound) finishedLocked() bool {
	return o.closed && (o.voices == 0 || o.dropped.Load())
}
