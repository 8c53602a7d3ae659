package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// A model lease whose renewal stalls (Redis paused for longer than the
// lease TTL) is given up by its holder: the backend's work is cancelled
// while Redis is still paused, the turn fails "unavailable" (not as a
// barge-in), the late release is refused as fenced or times out quietly,
// and the fleet's ledger counts the lease as lost and balances.
func TestLostLeaseStopsWork(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const ttl = 500 * time.Millisecond
	var model *redisstage.Store
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			opt := redisstage.Options{LeaseTTL: 30 * time.Second, Warmup: -1}
			if name == StageModel {
				opt.LeaseTTL = ttl
			}
			st, err := redisstage.New(rdb, name, l, opt)
			if err != nil {
				return nil, err
			}
			if name == StageModel {
				model = st
			}
			d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: clk, Poll: 20 * time.Millisecond, Grace: 200 * time.Millisecond})
			return d, nil
		}
		s.ModelDelay = time.Hour // the work runs until its context ends
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == StageModel && m.Disposition == "admitted"
	})

	// Redis stops answering writes (every script, the lease's renewal
	// among them) until the test lets it go: the turn must end while it
	// is paused, whatever the time that takes.
	ctx := context.Background()
	pauseRedis(t, rdb)
	end := sessiontest.LastOf(a.Until(sessiontest.IsType("turn_end")), "turn_end")
	unpauseRedis(t, rdb)
	if end.Disposition != wire.TurnFailed || end.Stage != StageModel || end.Error != "unavailable" {
		t.Fatalf("turn_end after a lost lease: %+v", end)
	}

	// Redis back: the lease is gone from the fleet, counted lost, and the
	// ledger balances; the slot admits again.
	var fs redisstage.Snapshot
	sessiontest.WaitFor(t, "the lost lease counted", func() bool {
		var err error
		fs, err = model.FleetSnapshot(ctx, time.Now())
		return err == nil && fs.Leased == 0 && fs.Ledger.Lost == 1
	})
	if err := fs.Check(); err != nil {
		t.Fatalf("%v: %+v", err, fs.Ledger)
	}
	// Operators see it in /metrics too, as the model stage's "lost".
	sessiontest.WaitFor(t, "the lost lease in /metrics", func() bool {
		return strings.Contains(scrape(t, r), `frontdoor_stage_dispositions_total{disposition="lost",stage="model"} 1`)
	})
	a.Send(map[string]any{"type": "turn", "id": "t2", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == StageModel && m.Disposition == "admitted"
	})
}

// scrape is /metrics as text.
func scrape(t *testing.T, r *rig) string {
	t.Helper()
	h := promhttp.HandlerFor(r.Engine.Registry(), promhttp.HandlerOpts{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// A synthesis lease lost while the reply is being produced faster than it
// plays: the turn's output stops as a barge-in's does. After its turn_end
// (failed, unavailable) not one more frame of the reply reaches the caller,
// although seconds of it were queued.
func TestLostSynthesisLeaseSilencesReply(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const ttl = 500 * time.Millisecond
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Pace = true
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			opt := redisstage.Options{LeaseTTL: 30 * time.Second, Warmup: -1}
			if name == StageSynthesis {
				opt.LeaseTTL = ttl
			}
			st, err := redisstage.New(rdb, name, l, opt)
			if err != nil {
				return nil, err
			}
			d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: clk, Poll: 20 * time.Millisecond, Grace: 200 * time.Millisecond})
			return d, nil
		}
		s.FrameCount, s.FrameDelay = 1000, 5*time.Millisecond // 20 s of reply, made 4x faster than it plays
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	a.Expect("audio_start")
	if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", (3 * time.Second).Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != wire.TurnFailed || end.Stage != StageSynthesis || end.Error != "unavailable" {
		t.Fatalf("turn_end after a lost synthesis lease: %v", sessiontest.Types(all))
	}
	// Read on until the call closes after a hangup: no frame of t1 after
	// its turn_end (without the cut, the seconds queued kept coming).
	a.Send(map[string]any{"type": "hangup"})
	for {
		m, err := a.Read()
		if err != nil {
			break // closed after the hangup
		}
		if m.Type == "binary" {
			t.Fatal("reply audio after its lease was lost")
		}
		if m.Type == "audio_end" && m.Turn == "t1" {
			t.Fatal("t1's audio_end after its lease was lost")
		}
	}
}

// A call whose session lease is lost (Redis paused for longer than the
// session stage's TTL: its replica cannot renew it) may not go on talking,
// its line may be another caller's: it hears a short true prompt, which
// offers nothing, and is closed with 1013, while Redis is still paused.
func TestLostSessionLeaseEndsCall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const ttl = 500 * time.Millisecond
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			opt := redisstage.Options{LeaseTTL: 30 * time.Second, Warmup: -1}
			if name == StageSession {
				opt.LeaseTTL = ttl
			}
			st, err := redisstage.New(rdb, name, l, opt)
			if err != nil {
				return nil, err
			}
			d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: clk, Poll: 20 * time.Millisecond, Grace: 200 * time.Millisecond})
			return d, nil
		}
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
	pauseRedis(t, rdb) // until the call has ended
	p := a.Expect("prompt")
	want := PromptText(Refusal{Stage: StageSession, Reason: "unavailable"})
	if p.Stage != StageSession || p.Reason != wire.TurnFailed || p.Text != want {
		t.Fatalf("prompt %+v, want %q", p, want)
	}
	for {
		m, err := a.Read()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Fatalf("closed with %v, want 1013", err)
			}
			break
		}
		if m.Type == "offer" {
			t.Fatalf("an ending call offered %v", m.Kinds)
		}
	}
	sessiontest.WaitFor(t, "call end", func() bool { return r.Engine.Calls() == 0 })
	unpauseRedis(t, rdb)
}

// pauseRedis makes Redis hold every write and script (CLIENT PAUSE WRITE)
// until unpauseRedis, which it still answers, as it does reads: a pause
// that the test ends, so that what must happen while Redis is away is
// shown by order, not by a timed window. The pause is bounded (a minute)
// in case the test fails before it unpauses, and ended at cleanup.
func pauseRedis(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", time.Minute.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err() })
}

func unpauseRedis(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}
