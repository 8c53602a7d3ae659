package session

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/pace"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// countingClock counts the timers armed on it.
type countingClock struct {
	*stagestest.Clock
	armed atomic.Int64
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.armed.Add(1)
	return c.Clock.AfterFunc(d, f)
}

// gateTransport is chanTransport whose audio writes can be held up (a
// caller whose connection stalls) and counted.
type gateTransport struct {
	*chanTransport
	mu     sync.Mutex
	hold   chan struct{} // non-nil: SendAudio waits for it to close
	frames atomic.Int64
	held   atomic.Int64 // writes waiting on hold now
}

func (g *gateTransport) SendAudio(ctx context.Context, b []byte) error {
	g.mu.Lock()
	hold := g.hold
	g.mu.Unlock()
	if hold != nil {
		g.held.Add(1)
		<-hold
		g.held.Add(-1)
	}
	g.frames.Add(1)
	return nil
}

// Send counts nothing and keeps the messages for the test.
func (g *gateTransport) Send(ctx context.Context, msg wire.Message) error {
	select {
	case g.out <- msg:
	default: // a test that reads no messages does not hold the writer
	}
	return nil
}

// pacedCalls starts n calls on r's engine over gateTransports and returns
// them once admitted.
func pacedCalls(t testing.TB, r *rig, n int) ([]*Call, []*gateTransport) {
	t.Helper()
	var wg sync.WaitGroup
	trs := make([]*gateTransport, n)
	calls := make([]*Call, n)
	for i := range trs {
		tr := &gateTransport{chanTransport: newChanTransport()}
		trs[i] = tr
		wg.Go(func() { r.Engine.Run(context.Background(), tr, Capabilities{}) })
		for m := range tr.out {
			if s, ok := m.(*wire.SessionMsg); ok && s.Disposition == stages.Admitted {
				break
			}
		}
		r.Engine.mu.Lock()
		for c := range r.Engine.calls {
			if c.t == Transport(tr) {
				calls[i] = c
			}
		}
		r.Engine.mu.Unlock()
	}
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.mu.Lock()
			if tr.hold != nil {
				close(tr.hold)
				tr.hold = nil
			}
			tr.mu.Unlock()
			close(tr.in)
		}
		wg.Wait()
	})
	return calls, trs
}

// speak has c speak a of prompt audio, as a Fallback does.
func speak(t testing.TB, c *Call, a backend.Audio) *wire.PromptMsg {
	t.Helper()
	pm := &wire.PromptMsg{Type: "prompt", Text: "busy"}
	if err := c.Send(context.Background(), pm); err != nil {
		t.Fatal(err)
	}
	if err := c.SendAudio(context.Background(), "p", pm, a); err != nil {
		t.Fatal(err)
	}
	return pm
}

// settle waits until the shared pacer has no writer to run and no worker.
func settle(t testing.TB, p *pace.Pacer) {
	t.Helper()
	sessiontest.WaitFor(t, "the pacer's workers done", func() bool { _, q, w := p.Pending(); return q == 0 && w == 0 })
}

// TestSharedPacerOneTimer: 40 calls speak a 1 s prompt at once on the
// manual clock. With the shared pacer every call has exactly the frames
// due (PaceLead ahead of the clock) after each 20 ms step, and the clock
// armed about one timer per step for all of them together (plus one
// stall check per call at most, stallWatch); with a writer per call on
// timers of its own (perCallPacing, as before) it arms one per call per
// frame.
func TestSharedPacerOneTimer(t *testing.T) {
	const n, frames = 40, 50
	for _, shared := range []bool{true, false} {
		name := "shared"
		if !shared {
			name = "per-call"
		}
		t.Run(name, func(t *testing.T) {
			clock := &countingClock{Clock: stagestest.NewClock(time.Unix(1_700_000_000, 0))}
			r := newRig(t, func(c *Config, _ *stub.Settings) {
				c.Clock, c.Pace, c.perCallPacing = clock, true, !shared
				c.Session = stages.Limits{Slots: n, Waiting: 1, MaxAge: time.Minute}
			})
			calls, trs := pacedCalls(t, r, n)
			a := promptTone(16000, time.Second)
			for _, c := range calls {
				speak(t, c, a)
			}
			lead := r.Engine.cfg.PaceLead
			step := 20 * time.Millisecond
			armed := clock.armed.Load()
			for i := 0; ; i++ {
				want := min(int64((time.Duration(i)*step+lead)/step)+1, frames)
				for j, tr := range trs {
					sessiontest.WaitFor(t, "the frames due", func() bool { return tr.frames.Load() >= want })
					if shared {
						settle(t, r.Engine.pacer)
					}
					if got := tr.frames.Load(); got != want {
						t.Fatalf("call %d at %v: %d frames, want %d", j, time.Duration(i)*step, got, want)
					}
				}
				if want == frames {
					break
				}
				clock.Advance(step)
			}
			steps := int64(frames - lead/step)
			per := clock.armed.Load() - armed
			t.Logf("%s: %d timers armed for %d calls x %d frames", name, per, n, frames)
			if shared && per > 2*steps+n {
				t.Fatalf("shared pacer: %d timers armed, want at most %d (about one a step, one stall check a call)", per, 2*steps+n)
			}
			if !shared && per < n*steps/2 {
				t.Fatalf("per-call pacing: %d timers armed, want one per call per frame (%d)", per, n*steps)
			}
			if shared {
				if p, q, w := r.Engine.pacer.Pending(); p != 0 || q != 0 || w != 0 {
					t.Fatalf("after the prompts: %d parked, %d queued, %d workers", p, q, w)
				}
			}
		})
	}
}

// TestSharedPacerSlowCaller: one caller's write stalls. With a single
// worker, the others' frames still go out: the tick after the run queue
// stopped moving starts another worker, so the stall costs the others at
// most one period; the stalled writer keeps its one worker and is never
// queued twice, and it catches up once its write returns.
func TestSharedPacerSlowCaller(t *testing.T) {
	const n, frames = 8, 50
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Clock, c.Pace = clock, true
		c.Session = stages.Limits{Slots: n, Waiting: 1, MaxAge: time.Minute}
	})
	p := r.Engine.pacer
	p.SetMaxWorkers(1)
	calls, trs := pacedCalls(t, r, n)
	a := promptTone(16000, time.Second)
	for _, c := range calls {
		speak(t, c, a)
	}
	step := 20 * time.Millisecond
	lead := r.Engine.cfg.PaceLead
	first := int64(lead/step) + 1 // written at once, by the calls' own writers
	for _, tr := range trs {
		sessiontest.WaitFor(t, "the first frames", func() bool { return tr.frames.Load() == first })
	}
	settle(t, p)
	// From now on the slow caller's writes stall, on the pacer's worker.
	hold := make(chan struct{})
	trs[0].mu.Lock()
	trs[0].hold = hold
	trs[0].mu.Unlock()
	quiet := func() {
		sessiontest.WaitFor(t, "the pacer quiet", func() bool {
			_, q, w := p.Pending()
			return q == 0 || trs[0].held.Load() == 1 && w == 1
		})
	}
	for i := 1; i <= 10; i++ {
		clock.Advance(step)
		quiet()
		want := int64((time.Duration(i)*step+lead)/step) + 1
		for j, tr := range trs[1:] {
			// At most one period late, once: the tick after the worker
			// stalled starts another.
			sessiontest.WaitFor(t, "the others' frames due", func() bool { return tr.frames.Load() >= want-1 })
			if got := tr.frames.Load(); got > want {
				t.Fatalf("step %d, call %d: %d frames, want at most %d", i, j+1, got, want)
			}
		}
	}
	for _, tr := range trs[1:] {
		sessiontest.WaitFor(t, "the others' frames due", func() bool { return tr.frames.Load() == first+10 })
	}
	if trs[0].frames.Load() != first || trs[0].held.Load() != 1 {
		t.Fatalf("the slow caller: %d frames written, %d writes held", trs[0].frames.Load(), trs[0].held.Load())
	}
	if p.Extra() == 0 {
		t.Fatal("no worker was started for a stalled run queue")
	}
	close(hold)
	trs[0].mu.Lock()
	trs[0].hold = nil
	trs[0].mu.Unlock()
	for range frames {
		clock.Advance(step)
		settle(t, p)
	}
	for _, tr := range trs {
		sessiontest.WaitFor(t, "every frame", func() bool { return tr.frames.Load() == frames })
	}
	settle(t, p)
}

// TestSharedPacerKick: a parked writer writes a control message at once,
// without the clock moving, and a message that changes the call's state
// cuts the parked prompt there and then: its audio_end, marked cut,
// follows the message and no more of its frames do.
func TestSharedPacerKick(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, _ *stub.Settings) { c.Clock, c.Pace = clock, true })
	calls, trs := pacedCalls(t, r, 1)
	c, tr := calls[0], trs[0]
	speak(t, c, promptTone(16000, time.Second))
	clock.Advance(20 * time.Millisecond)
	settle(t, r.Engine.pacer)
	sessiontest.WaitFor(t, "the writer parked", func() bool { p, _, _ := r.Engine.pacer.Pending(); return p == 1 })
	before := tr.frames.Load()

	drain := func() []any {
		var ms []any
		for {
			select {
			case m := <-tr.out:
				ms = append(ms, m)
			default:
				return ms
			}
		}
	}
	drain()
	if err := c.Send(context.Background(), &wire.ErrorMsg{Type: "error", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, "the error written while parked", func() bool {
		select {
		case m := <-tr.out:
			return m.(*wire.ErrorMsg).Code == "x"
		default:
			return false
		}
	})
	if err := c.Send(context.Background(), &wire.FallbackMsg{Type: "fallback"}); err != nil {
		t.Fatal(err)
	}
	var got []any
	sessiontest.WaitFor(t, "the prompt cut", func() bool {
		got = append(got, drain()...)
		return len(got) == 2
	})
	if _, ok := got[0].(*wire.FallbackMsg); !ok {
		t.Fatalf("first %T, want the fallback message", got[0])
	}
	if e, ok := got[1].(*wire.AudioEndMsg); !ok || !e.Cut {
		t.Fatalf("then %#v, want audio_end cut", got[1])
	}
	for range 60 {
		clock.Advance(20 * time.Millisecond)
	}
	settle(t, r.Engine.pacer)
	if after := tr.frames.Load(); after != before {
		t.Fatalf("%d frames after the cut", after-before)
	}
}
