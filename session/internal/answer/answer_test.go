package answer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recognizer answers each utterance with the text its first sample
// indexes, once let go (gate nil: at once).
type recognizer struct {
	texts []string
	gate  chan struct{}
	err   error
}

func (r *recognizer) Recognize(ctx context.Context, u backend.Audio) (string, error) {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if r.err != nil {
		return "", r.err
	}
	return r.texts[u.Samples[0]], nil
}

// call records what its answer recognition hands it; "yes" is its one
// answer.
type call struct {
	ctx      context.Context
	mu       sync.Mutex
	heard    []string // what Answer was given
	answered []string
	turns    int
}

func (c *call) Context() context.Context { return c.ctx }

func (c *call) Answer(_ context.Context, text string) (wire.ClientEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heard = append(c.heard, text)
	return wire.ClientEvent{Type: text}, text == "yes"
}

func (c *call) Answered(ev wire.ClientEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered = append(c.answered, ev.Type)
}

func (c *call) AsTurn(backend.Audio, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns++
}

func (c *call) got() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered, c.turns
}

func utterance(i int16) backend.Audio {
	return backend.Audio{Rate: 8000, Samples: append([]int16{i}, make([]int16, 7999)...)} // 1 s
}

// An answer goes to Answered; an utterance that answers nothing, or that
// the recognizer could not decode, becomes a turn in a conversation; in a
// refused call words not caught are given to Answer as "" (it asks again),
// never dropped in silence.
func TestAnswerOrTurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		text     int16
		err      error
		admitted bool
		answered int
		turns    int
		heard    []string
	}{
		{"answer in a refused call", 0, nil, false, 1, 0, []string{"yes"}},
		{"answer in a conversation", 0, nil, true, 1, 0, []string{"yes"}},
		{"no answer in a conversation", 1, nil, true, 0, 1, []string{"the weather"}},
		{"no answer in a refused call", 1, nil, false, 0, 0, []string{"the weather"}},
		{"recognizer failed in a conversation", 0, errors.New("down"), true, 0, 1, nil},
		{"recognizer failed in a refused call", 0, errors.New("down"), false, 0, 0, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(&recognizer{texts: []string{"yes", "the weather"}, err: tc.err}, 0)
			c := &call{ctx: t.Context()}
			l := g.Listen(c, slog.New(slog.DiscardHandler))
			if !l.Take(utterance(tc.text), tc.admitted, time.Time{}) {
				t.Fatal("not taken")
			}
			l.Stop()
			l.Wait()
			answered, turns := c.got()
			if len(answered) != tc.answered || turns != tc.turns || !slices.Equal(c.heard, tc.heard) {
				t.Fatalf("answered %v, turns %d, heard %q; want %d, %d, %q", answered, turns, c.heard, tc.answered, tc.turns, tc.heard)
			}
		})
	}
}

// Recognitions are bounded: the gate's slots across calls, one at a time
// per call, MaxAudio of speech; a stopped listener takes nothing. An
// utterance left out is not heard as an answer (Take false), but for a
// refused caller's that finds every slot taken: without a recognition, it
// is given to Answer as words not caught ("").
func TestAnswerBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recognizer{texts: []string{"yes"}, gate: make(chan struct{})}
		g := NewGate(rec, 1)
		log := slog.New(slog.DiscardHandler)
		a, b, r := &call{ctx: t.Context()}, &call{ctx: t.Context()}, &call{ctx: t.Context()}
		la, lb, lr := g.Listen(a, log), g.Listen(b, log), g.Listen(r, log)
		if !la.Take(utterance(0), false, time.Time{}) {
			t.Fatal("the first utterance was not taken")
		}
		if la.Take(utterance(0), false, time.Time{}) {
			t.Fatal("a second utterance of the same call was taken while its first is recognized")
		}
		if lb.Take(utterance(0), true, time.Time{}) {
			t.Fatal("a conversation's utterance was taken as an answer with every slot busy")
		}
		if !lr.Take(utterance(0), false, time.Time{}) {
			t.Fatal("a refused caller's utterance was dropped with every slot busy")
		}
		lr.Wait()
		if !slices.Equal(r.heard, []string{""}) {
			t.Fatalf("a refused caller's utterance with every slot busy was heard as %q, want words not caught", r.heard)
		}
		close(rec.gate)
		la.Wait()
		synctest.Wait()
		long := backend.Audio{Rate: 8000, Samples: make([]int16, 8000*int(MaxAudio/time.Second)+1)}
		if lb.Take(long, false, time.Time{}) {
			t.Fatal("an utterance longer than MaxAudio was taken")
		}
		if !lb.Take(utterance(0), false, time.Time{}) {
			t.Fatal("a slot freed was not taken")
		}
		lb.Wait()
		lb.Stop()
		if lb.Take(utterance(0), false, time.Time{}) {
			t.Fatal("a stopped listener took an utterance")
		}
		if ans, _ := a.got(); len(ans) != 1 {
			t.Fatalf("a answered %v", ans)
		}
		if ans, _ := b.got(); len(ans) != 1 {
			t.Fatalf("b answered %v", ans)
		}
	})
}

// A recognition that does not return is cut at Timeout, on the recognizer's
// context; the call's end cuts it at once.
func TestAnswerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recognizer{gate: make(chan struct{})} // never let go
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := &call{ctx: ctx}
		l := NewGate(rec, 1).Listen(c, slog.New(slog.DiscardHandler))
		start := time.Now()
		l.Take(utterance(0), true, time.Time{})
		l.Wait()
		if d := time.Since(start); d != Timeout {
			t.Fatalf("recognition cut after %v, want %v", d, Timeout)
		}
		if _, turns := c.got(); turns != 1 {
			t.Fatal("an admitted call's undecoded utterance did not go on as a turn")
		}
		l.Take(utterance(0), false, time.Time{})
		cancel()
		l.Wait()
		if d := time.Since(start); d != Timeout {
			t.Fatalf("the call's end did not cut the recognition: %v", d)
		}
	})
}

// Without a recognizer nothing is heard as an answer.
func TestNoRecognizer(t *testing.T) {
	g := NewGate(nil, 4)
	if g.Hears() {
		t.Fatal("a gate without a recognizer hears")
	}
	l := g.Listen(&call{ctx: t.Context()}, nil)
	if l.Take(utterance(0), true, time.Time{}) {
		t.Fatal("taken without a recognizer")
	}
	l.Stop()
	l.Wait()
}
