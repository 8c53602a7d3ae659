package session

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// offerFallback refuses as package session/offer's Offers does for the
// session stage: a prompt, an offer, then a wait for the answer of at
// most window: held (Sender.Hold), or, as before, blocking in Refused on a
// timer of its own.
type offerFallback struct {
	Prompts
	clock    clock.Clock
	window   time.Duration
	blocking bool

	mu       sync.Mutex
	releases map[string]func()
}

func (f *offerFallback) Refused(ctx context.Context, r Refusal, out Sender) {
	_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: r.Outcome().Reason, Stage: r.Stage, Text: PromptText(r)})
	_ = out.Send(ctx, &wire.OfferMsg{Type: "offer", Kinds: []prompt.Kind{prompt.KindCallback}})
	if r.Stage != StageSession || r.Disposition == stages.Queued {
		return
	}
	if f.blocking {
		t := clock.NewTimer(f.clock, f.window)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return
	}
	release := out.Hold(f.window)
	f.mu.Lock()
	f.releases[r.Call] = release
	f.mu.Unlock()
}

// TestRefusalHeldParked: 200 callers refused at the session stage wait for
// an answer to their offer. Held, each holds one goroutine (its reader,
// as any open line does), no session slot and no slot of its tenant (whose
// cap is one call: another call of the tenant is admitted while they
// wait), and one timer on the engine's clock; blocking in Refused, as
// before, each held two goroutines. The window's end closes every held
// call (1013) at once on the manual clock; an answer closes its call at
// once.
func TestRefusalHeldParked(t *testing.T) {
	const n, window = 200, 30 * time.Second
	for _, blocking := range []bool{false, true} {
		name := "held"
		if blocking {
			name = "blocking"
		}
		t.Run(name, func(t *testing.T) {
			clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
			fb := &offerFallback{clock: clock, window: window, blocking: blocking, releases: map[string]func(){}}
			r := newRig(t, func(c *Config, _ *stub.Settings) {
				c.Clock, c.Fallback = clock, fb
				c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Minute}
				c.Tenants = tenant.NewLocal(tenant.Caps{Sessions: 1}, 0, clock)
			})
			acme := tenant.WithCaller(context.Background(), tenant.Caller{Tenant: "acme"})
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait)
			dial := func(ctx context.Context) *chanTransport {
				tr := newChanTransport()
				wg.Add(1)
				r.Engine.Start(ctx, tr, Capabilities{}, wg.Done) // as the native WebSocket starts its calls
				return tr
			}
			first := dial(context.Background()) // takes the one session slot
			defer close(first.in)
			for m := range first.out {
				if s, ok := m.(*wire.SessionMsg); ok && s.Disposition == stages.Admitted {
					break
				}
			}
			queued := dial(context.Background()) // and the one place in its queue
			defer close(queued.in)
			for m := range queued.out {
				if s, ok := m.(*wire.SessionMsg); ok && s.Disposition == stages.Queued {
					break
				}
			}
			runtime.GC()
			base := runtime.NumGoroutine()
			trs := make([]*chanTransport, n)
			for i := range trs {
				trs[i] = dial(acme)
				for m := range trs[i].out {
					if _, ok := m.(*wire.OfferMsg); ok {
						break
					}
				}
			}
			sessiontest.WaitFor(t, "the refused calls waiting", func() bool {
				return r.Engine.Calls() == n+2 && (blocking || clock.Pending() >= n)
			})
			clock.Advance(outbound.Linger) // their writers, idle, end
			want := 1.0                    // the reader
			if blocking {
				want = 2 // the reader, and the admission goroutine blocked in Refused
			}
			sessiontest.WaitFor(t, "the idle writers ended", func() bool { return runtime.NumGoroutine()-base <= int(want*n)+n/20 })
			per := float64(runtime.NumGoroutine()-base) / n
			t.Logf("%s: %.2f goroutines per refused call waiting for its offer's answer", name, per)
			if per > want+0.05 {
				t.Fatalf("%.2f goroutines per waiting call, want %v", per, want)
			}
			if !blocking {
				// acme's slot was given back at each refusal: its next call
				// reaches the session stage (refused there, the stage is
				// full) instead of being refused for its tenant.
				next := dial(acme)
				m := <-next.out
				if s, ok := m.(*wire.SessionMsg); !ok || s.Disposition != stages.Overloaded {
					t.Fatalf("acme's next call got %#v, want session overloaded (the refused hold no tenant slot)", m)
				}
				trs = append(trs, next)

				// An answer ends its call's hold at once.
				fb.mu.Lock()
				for _, release := range fb.releases {
					release()
					break
				}
				fb.mu.Unlock()
				sessiontest.WaitFor(t, "the answered call closed", func() bool { return r.Engine.Calls() == n+2 })
			}
			clock.Advance(window)
			for _, tr := range trs {
				select {
				case s := <-tr.closed:
					if s != wire.CloseTryLater {
						t.Fatalf("closed %d, want 1013", s)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a refused call still open after the window")
				}
			}
			sessiontest.WaitFor(t, "the refused calls ended", func() bool { return r.Engine.Calls() == 2 })
		})
	}
}
