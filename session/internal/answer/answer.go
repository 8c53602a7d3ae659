// Package answer hears a caller's spoken answers to an offer ("call me
// back", "a person", "no thanks") outside the recognition stage: a small
// recognizer of the offer's few answers, bounded by its own slots, whose
// transcript the call hands to whoever takes answers.
//
// While a call's offer waits for its answer, each utterance the caller
// ends goes first to the answer recognizer. It is not a stage and takes no
// lease: a refused caller answering an offer needs no slot of the
// recognition stage that may be what refused it, and an answer is a second
// or two of speech that a small grammar decodes in a fraction of a second.
// What bounds it instead:
//
//   - the Gate's slots: recognitions at once across the engine (default
//     DefaultSlots); an utterance that finds none free is not heard as an
//     answer (in a conversation it goes on as a turn; a refused caller is
//     told it was not caught, as when recognition fails);
//   - one at a time per call (Listener): an utterance ended while the
//     call's previous answer is being recognized is left out the same way;
//   - MaxAudio of speech: a longer utterance is no answer;
//   - Timeout for the recognition itself, on the wall clock (the
//     recognizer is a process).
//
// In a conversation an utterance that answers nothing, or that was not
// caught (the recognizer failed, timed out or had no slot), goes on as a
// speech turn (Call.AsTurn); a refused call has no conversation, and there
// the call's Answer is given the transcript, "" for words not caught, and
// is expected to return an answer even for a miss, so that the offer asks
// again once and then ends the call: a refused caller who spoke is never
// left in silence until the offer's wait ends.
package answer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// DefaultSlots is how many answers are recognized at once when NewGate is
// given 0.
const DefaultSlots = 2

// MaxAudio bounds the speech of one answer: an offer's answers are a few
// words.
const MaxAudio = 5 * time.Second

// Timeout bounds one answer's recognition.
const Timeout = 3 * time.Second

// Gate is the engine's bound on answer recognitions.
type Gate struct {
	rec   backend.Recognizer
	slots chan struct{}
}

// NewGate returns the bound on rec's recognitions, slots at once (0:
// DefaultSlots), or nil for a nil rec: answers are then heard only in a
// conversation's turns.
func NewGate(rec backend.Recognizer, slots int) *Gate {
	if rec == nil {
		return nil
	}
	if slots <= 0 {
		slots = DefaultSlots
	}
	return &Gate{rec: rec, slots: make(chan struct{}, slots)}
}

// Hears reports whether there is an answer recognizer.
func (g *Gate) Hears() bool { return g != nil }

// Call is what answer recognition needs of the call it hears.
type Call interface {
	// Context is the call's: its end stops a recognition.
	Context() context.Context
	// Answer decodes text as an answer to the call's open offer; false:
	// it answers nothing.
	Answer(ctx context.Context, text string) (wire.ClientEvent, bool)
	// Answered hands an answer on (to the Fallback, as a key would be).
	Answered(ev wire.ClientEvent)
	// AsTurn makes u, an utterance of an admitted call that answered
	// nothing, the speech turn it would have been without an offer.
	AsTurn(u backend.Audio, spoke time.Time)
}

// Listener is one call's answer recognition: one at a time, each on a
// goroutine that Wait waits for.
type Listener struct {
	g   *Gate
	c   Call
	log *slog.Logger

	busy    atomic.Bool // an answer is being recognized
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// Listen returns c's listener on g, nil (which takes nothing) for a nil g.
func (g *Gate) Listen(c Call, log *slog.Logger) *Listener {
	if g == nil {
		return nil
	}
	return &Listener{g: g, c: c, log: log}
}

// ErrSlots: every answer slot of the engine was taken.
var ErrSlots = errors.New("session: answer recognizer busy (AnswerSlots taken)")

// Take starts recognizing u as an answer to the call's open offer and
// reports whether it did. An utterance it does not take goes on as a turn
// in a conversation and is dropped in a refused call, but for one that
// finds every slot taken: a refused caller is then told the answer was not
// caught, as when the recognizer fails. admitted says the call is in a
// conversation; spoke is when u began.
func (l *Listener) Take(u backend.Audio, admitted bool, spoke time.Time) bool {
	if l == nil || u.Duration() > MaxAudio || !l.busy.CompareAndSwap(false, true) {
		return false
	}
	slot := true
	select {
	case l.g.slots <- struct{}{}:
	default:
		l.log.Debug("answer recognizer busy: utterance not heard as an answer")
		if admitted {
			l.busy.Store(false)
			return false
		}
		slot = false
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		if slot {
			<-l.g.slots
		}
		l.busy.Store(false)
		return false
	}
	l.wg.Add(1)
	l.mu.Unlock()
	// u's samples are the caller's listener's own until the next
	// utterance: the goroutine works on a copy.
	u.Samples = append([]int16(nil), u.Samples...)
	go func() {
		defer l.wg.Done()
		l.hear(u, admitted, spoke, slot)
	}()
	return true
}

// hear recognizes u (with a slot) and hands the transcript on: an answer
// to Answered; in a conversation, anything else (words not caught too) as
// a turn; in a refused call, words not caught as "".
func (l *Listener) hear(u backend.Audio, admitted bool, spoke time.Time, slot bool) {
	ctx := l.c.Context()
	text, err := "", ErrSlots
	if slot {
		rctx, cancel := context.WithTimeout(ctx, Timeout)
		text, err = l.g.rec.Recognize(rctx, u)
		cancel()
		<-l.g.slots
	}
	l.busy.Store(false)
	if err != nil {
		if ctx.Err() != nil {
			return // the call has ended
		}
		l.log.Warn("answer recognizer", "err", err)
		if admitted {
			l.c.AsTurn(u, spoke)
			return
		}
		text = "" // not caught: the refused caller is told so and asked again
	}
	ev, ok := l.c.Answer(ctx, text)
	switch {
	case ok:
		l.log.Debug("spoken answer", "type", ev.Type)
		l.c.Answered(ev)
	case admitted:
		l.c.AsTurn(u, spoke)
	}
}

// Stop takes no more utterances (the call has ended).
func (l *Listener) Stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// Wait waits for the recognitions under way (each ends with the call's
// context).
func (l *Listener) Wait() {
	if l != nil {
		l.wg.Wait()
	}
}
