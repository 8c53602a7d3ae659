package outbound

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// The writer's contract, in memory: a Queue served to a Line that records
// what it is given, on the bubble's fake time (testing/synctest), so that
// pacing, the stall watch and the idle linger run on time that moves only
// when every goroutine of the test is blocked.

// fakeLine records the writes, one string each (describe).
type fakeLine struct {
	mu     sync.Mutex
	got    []string
	block  chan struct{} // not nil: SendAudio waits for it to close, then fails
	barges []lastOld
	stale  int
}

type lastOld struct {
	speaking Turn
	d        time.Duration
}

func (l *fakeLine) add(s string) {
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

func (l *fakeLine) writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func (l *fakeLine) Send(_ context.Context, msg wire.Message) error {
	l.add(describe(msg))
	return nil
}

func (l *fakeLine) SendAudio(_ context.Context, audio []byte) error {
	if l.block != nil {
		<-l.block
		return errors.New("connection dropped")
	}
	l.add(string(audio))
	return nil
}

func (l *fakeLine) Interrupting(_ context.Context, b *Barge, d time.Duration) {
	l.mu.Lock()
	l.barges = append(l.barges, lastOld{b.Speaking, d})
	l.mu.Unlock()
}

func (l *fakeLine) Stale() {
	l.mu.Lock()
	l.stale++
	l.mu.Unlock()
}

func describe(msg wire.Message) string {
	switch m := msg.(type) {
	case *wire.AudioStartMsg:
		return "start:" + m.Turn
	case *wire.AudioEndMsg:
		if m.Cut {
			return fmt.Sprintf("end:%s cut %dms", m.Turn, m.AudioMS)
		}
		return "end:" + m.Turn
	case *wire.TextMsg:
		return "text:" + m.Delta
	case *wire.InterruptedMsg:
		return "interrupted"
	case *wire.PromptMsg:
		return "prompt"
	case *wire.OfferMsg:
		return "offer"
	case *wire.FallbackMsg:
		return "fallback"
	}
	return fmt.Sprintf("%T", msg)
}

// fakeTurn is a reply as the writer sees it.
type fakeTurn struct {
	silenced atomic.Bool
	sentUS   atomic.Int64
	played   atomic.Bool
}

func (t *fakeTurn) Silenced() bool { return t.silenced.Load() }
func (t *fakeTurn) Sent(us int64, end bool) {
	t.sentUS.Add(us)
	if end {
		t.played.Store(true)
	}
}

// harness is one queue, served to a fakeLine.
type harness struct {
	t                    *testing.T
	o                    *Queue
	line                 *fakeLine
	gen, premise, spoken atomic.Uint64
	ctx                  context.Context
	cancel               context.CancelFunc

	mu    sync.Mutex
	ends  []error // what the writer ended the call with
	drops int     // connections dropped by the stall watch
}

func newHarness(t *testing.T, pace bool, lim Limits) *harness {
	h := &harness{t: t, line: &fakeLine{}}
	h.gen.Store(1)
	h.premise.Store(1)
	h.spoken.Store(1)
	h.ctx, h.cancel = context.WithCancel(t.Context())
	h.o = New(Config{Limits: lim, Clock: clock.System, Gen: &h.gen, Premise: &h.premise, Spoken: &h.spoken,
		Pace: pace, PaceLead: 60 * time.Millisecond})
	return h
}

func (h *harness) serve() {
	h.o.Serve(h.ctx, h.line, func(err error) {
		h.mu.Lock()
		h.ends = append(h.ends, err)
		h.mu.Unlock()
	}, func() {
		h.mu.Lock()
		h.drops++
		h.mu.Unlock()
		close(h.line.block)
	})
}

func (h *harness) push(f Frame) {
	h.t.Helper()
	if err := h.o.Push(h.ctx, f); err != nil {
		h.t.Fatalf("push %+v: %v", f, err)
	}
}

// reply queues a reply of n 20 ms frames of generation gen, as a turn's
// audio: audio_start, frames id.0 ... id.n-1, audio_end.
func (h *harness) reply(gen uint64, id string, n int, turn Turn) {
	h.push(Frame{Gen: gen, Turn: turn, Msg: &wire.AudioStartMsg{Turn: id, Generation: gen}})
	for i := range n {
		h.push(Frame{Gen: gen, Turn: turn, Audio: fmt.Appendf(nil, "%s.%d", id, i), US: 20_000})
	}
	h.push(Frame{Gen: gen, Turn: turn, End: true, Msg: &wire.AudioEndMsg{Turn: id, Generation: gen}})
}

// prompt queues n 20 ms frames of prompt audio for the call's premise now.
func (h *harness) prompt(id string, n int) {
	p := h.premise.Load()
	h.push(Frame{Premise: p, Msg: &wire.AudioStartMsg{Turn: id}})
	for i := range n {
		h.push(Frame{Premise: p, Audio: fmt.Appendf(nil, "%s.%d", id, i), US: 20_000})
	}
	h.push(Frame{Premise: p, End: true, Msg: &wire.AudioEndMsg{Turn: id}})
}

// barge moves the generation and queues its `interrupted`.
func (h *harness) barge(speaking Turn) {
	gen := h.gen.Add(1)
	msg := &wire.InterruptedMsg{Type: "interrupted", Generation: gen}
	h.push(Frame{Msg: msg, Barge: &Barge{Msg: msg, Speaking: speaking, At: time.Now()}})
}

// sleep lets d of the bubble's time pass, then waits for the writer to
// be idle.
func (h *harness) sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// TestWriterContract drives a queue and its writer through each rule of
// the contract and checks what the line was given, in order.
func TestWriterContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		pace bool
		run  func(h *harness)
		want []string
	}{{
		// Control messages go ahead of the audio queued before them;
		// each lane keeps its order.
		name: "control lane first",
		run: func(h *harness) {
			h.reply(1, "r", 2, nil)
			h.push(Frame{Msg: &wire.TextMsg{Delta: "a"}})
			h.push(Frame{Msg: &wire.TextMsg{Delta: "b"}})
			h.serve()
			h.sleep(time.Millisecond)
		},
		want: []string{"text:a", "text:b", "start:r", "r.0", "r.1", "end:r"},
	}, {
		// A barge-in: no frame of the old generation after
		// `interrupted`, though most of the reply was still queued.
		name: "no stale frame after interrupted",
		pace: true,
		run: func(h *harness) {
			h.reply(1, "r", 10, nil)
			h.serve()
			h.sleep(30 * time.Millisecond)
			h.barge(nil)
			h.reply(2, "s", 1, nil)
			h.sleep(time.Second)
			if h.line.stale < 5 {
				h.t.Errorf("%d stale frames counted, want the rest of the reply", h.line.stale)
			}
		},
		want: []string{"start:r", "r.0", "r.1", "r.2", "r.3", "r.4", "interrupted", "start:s", "s.0", "end:s"},
	}, {
		// A frame queued after its generation ended is not queued at all.
		name: "stale at push",
		run: func(h *harness) {
			h.gen.Store(2)
			h.reply(1, "r", 2, nil)
			h.push(Frame{Gen: 2, Msg: &wire.TextMsg{Delta: "now"}})
			h.serve()
			h.sleep(time.Millisecond)
		},
		want: []string{"text:now"},
	}, {
		// A turn that lost a lease says nothing more, and each frame
		// dropped counts as stale.
		name: "silenced turn",
		run: func(h *harness) {
			tr := &fakeTurn{}
			tr.silenced.Store(true)
			h.reply(1, "r", 3, tr)
			h.push(Frame{Msg: &wire.TextMsg{Delta: "after"}})
			h.serve()
			h.sleep(time.Millisecond)
			if h.line.stale != 5 || tr.sentUS.Load() != 0 {
				h.t.Errorf("stale %d, sent %d µs; want 5 frames dropped, none sent", h.line.stale, tr.sentUS.Load())
			}
		},
		want: []string{"text:after"},
	}, {
		// The call's state moves mid-prompt: the message that moved it
		// goes first, the rest of the prompt is cut and its audio_end
		// says how much was sent.
		name: "prompt cut by a new premise",
		pace: true,
		run: func(h *harness) {
			h.prompt("p", 10)
			h.serve()
			h.sleep(30 * time.Millisecond)
			h.push(Frame{Msg: &wire.PromptMsg{Type: "prompt"}, Bump: true})
			h.sleep(time.Second)
		},
		want: []string{"start:p", "p.0", "p.1", "p.2", "p.3", "p.4", "prompt", "end:p cut 100ms"},
	}, {
		// An offer is written only while the premise of its prompt
		// holds.
		name: "offer of a gone premise dropped",
		run: func(h *harness) {
			h.push(Frame{Msg: &wire.PromptMsg{Type: "prompt"}, Bump: true})
			h.push(Frame{Msg: &wire.OfferMsg{Type: "offer"}})
			h.push(Frame{Msg: &wire.FallbackMsg{Type: "callback"}, Bump: true})
			h.serve()
			h.sleep(time.Millisecond)
		},
		want: []string{"prompt", "fallback"},
	}, {
		// Paced audio: a frame is written no earlier than its time less
		// the lead.
		name: "paced",
		pace: true,
		run: func(h *harness) {
			h.reply(1, "r", 8, nil)
			h.serve()
			h.sleep(time.Millisecond)
			if got := h.line.writes(); len(got) != 5 { // audio_start and 60 ms of lead + the frame due now
				h.t.Errorf("at once: %v, want audio_start and 4 frames", got)
			}
			h.sleep(time.Second)
		},
		want: []string{"start:r", "r.0", "r.1", "r.2", "r.3", "r.4", "r.5", "r.6", "r.7", "end:r"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.pace, Limits{})
				tc.run(h)
				h.o.Close()
				h.o.Wait()
				if got := h.line.writes(); !slices.Equal(got, tc.want) {
					t.Errorf("written:\n  %s\nwant:\n  %s", strings.Join(got, " "), strings.Join(tc.want, " "))
				}
				h.mu.Lock()
				defer h.mu.Unlock()
				if len(h.ends) != 0 {
					t.Errorf("the call ended with %v", h.ends)
				}
			})
		})
	}
}

// The barge-in reaches the call before its `interrupted` is written, with
// the turn that was speaking; the turn learns what of it was sent.
func TestWriterBargeIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, true, Limits{})
		tr := &fakeTurn{}
		h.reply(1, "r", 10, tr)
		h.serve()
		h.sleep(30 * time.Millisecond)
		h.barge(tr)
		h.sleep(time.Second)
		h.o.Close()
		h.o.Wait()
		if len(h.line.barges) != 1 || h.line.barges[0].speaking != tr || h.line.barges[0].d != 0 {
			t.Fatalf("Interrupting calls: %+v, want one for the turn speaking, nothing old written after it", h.line.barges)
		}
		if got := tr.sentUS.Load(); got != 5*20_000 || tr.played.Load() {
			t.Fatalf("turn sent %d µs (played %v), want the 5 frames written and no end", got, tr.played.Load())
		}
	})
}

// A message with a barrier overtakes the audio queued before it; its
// AudioBefore closes once the writer has handed over that audio, its
// audio_end included, and not before.
func TestWriterBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, true, Limits{})
		h.reply(1, "r", 8, nil)
		offer := &wire.OfferMsg{Type: "offer"}
		h.push(Frame{Msg: offer})
		var at []string
		go func() {
			<-offer.AudioBefore()
			at = h.line.writes()
		}()
		h.serve()
		h.sleep(time.Second)
		h.o.Close()
		h.o.Wait()
		want := []string{"offer", "start:r", "r.0", "r.1", "r.2", "r.3", "r.4", "r.5", "r.6", "r.7", "end:r"}
		if !slices.Equal(at, want) {
			t.Fatalf("the offer's barrier passed after %v, want after %v", at, want)
		}
	})
}

// A caller who stops reading: at Timeout the call ends as a slow reader,
// at twice that the connection is dropped, and the queue takes nothing
// more.
func TestWriterSlowReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, false, Limits{Timeout: 100 * time.Millisecond})
		h.line.block = make(chan struct{})
		h.serve()
		h.reply(1, "r", 3, nil)
		h.sleep(100 * time.Millisecond)
		h.mu.Lock()
		ends, drops := slices.Clone(h.ends), h.drops
		h.mu.Unlock()
		if len(ends) != 1 || !errors.Is(ends[0], ErrSlowReader) || drops != 0 {
			t.Fatalf("at the timeout: ended %v, %d drops; want a slow reader, no drop yet", ends, drops)
		}
		h.sleep(100 * time.Millisecond)
		h.o.Wait()
		h.mu.Lock()
		ends, drops = slices.Clone(h.ends), h.drops
		h.mu.Unlock()
		if drops != 1 || len(ends) != 2 || !errors.Is(ends[1], ErrSlowReader) {
			t.Fatalf("at twice the timeout: ended %v, %d drops; want the write failed as a slow reader", ends, drops)
		}
		if err := h.o.Push(h.ctx, Frame{Msg: &wire.TextMsg{}}); !errors.Is(err, ErrClosed) {
			t.Fatalf("push after a stalled write: %v, want ErrClosed", err)
		}
	})
}

// An idle writer's goroutine ends after Linger; the next frame starts
// another.
func TestWriterStopsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, false, Limits{})
		h.serve()
		running := func() bool {
			h.o.mu.Lock()
			defer h.o.mu.Unlock()
			return h.o.writing
		}
		h.push(Frame{Msg: &wire.TextMsg{Delta: "a"}})
		h.sleep(Linger - time.Millisecond)
		if !running() {
			t.Fatal("the writer stopped before its linger")
		}
		h.sleep(time.Millisecond)
		if running() {
			t.Fatal("the writer runs after a linger with nothing to write")
		}
		h.push(Frame{Msg: &wire.TextMsg{Delta: "b"}})
		h.sleep(time.Millisecond)
		h.o.Close()
		h.o.Wait()
		if got := h.line.writes(); !slices.Equal(got, []string{"text:a", "text:b"}) {
			t.Fatalf("written %v", got)
		}
	})
}
