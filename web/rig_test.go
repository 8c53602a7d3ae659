package web_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/backend/stub"
	"github.com/frontdoorhq/frontdoor/web"
)

// rig is the real session server with stub backends and the page mounted
// as frontdoor serve mounts it, on a loopback httptest listener.
type rig struct {
	t     *testing.T
	srv   *session.Server
	page  *web.Page
	http  *httptest.Server
	model *stub.Model
	synth *stub.Synthesizer
	fb    *offerFallback
}

type rigConfig struct {
	cfg      session.Config
	stub     stub.Settings
	handlers map[string]http.Handler // extra routes (a test double of /v1/webrtc)
	fallback bool                    // package fallback's queues, offers and /v1/agents
}

func newRig(t *testing.T, opts ...func(*rigConfig)) *rig {
	t.Helper()
	rc := rigConfig{
		cfg: session.Config{
			Session:        stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second},
			Model:          stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
			Synthesis:      stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
			CleanupTimeout: time.Second,
			QueueUpdate:    100 * time.Millisecond,
		},
		stub: stub.Settings{ModelDelay: 50 * time.Millisecond, TokenDelay: 20 * time.Millisecond, Tokens: 6,
			SynthDelay: 30 * time.Millisecond, FrameCount: 25, FrameDelay: 20 * time.Millisecond, Rate: 16000,
			CleanupDelay: 30 * time.Millisecond},
	}
	for _, o := range opts {
		o(&rc)
	}
	r := &rig{t: t, model: stub.NewModel(rc.stub), synth: stub.NewSynthesizer(rc.stub)}
	burster := &dialBurster{}
	r.page = web.Handler(web.Options{Burster: burster})
	cfg := rc.cfg
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth
	cfg.Root = r.page
	cfg.Handlers = r.page.Routes()
	maps.Copy(cfg.Handlers, rc.handlers)
	if rc.fallback {
		fc := fallback.DefaultConfig()
		fc.DataDir = t.TempDir()
		svc, err := fallback.New(context.Background(), fc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.fb = newOfferFallback(svc)
		cfg.Fallback = r.fb
		cfg.Handlers["GET /v1/agents"] = svc.AgentHandler(nil)
	}
	srv, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	if r.fb != nil {
		srv.AddController("callback", r.fb.svc.CallbackStage())
		srv.AddController("handoff", r.fb.svc.HandoffStage())
	}
	r.http = httptest.NewServer(srv.Handler())
	burster.url = "ws" + strings.TrimPrefix(r.http.URL, "http") + "/v1/session"
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	r.page.Close() // stops a running burst first: its callers are clients of srv
	r.model.Close()
	r.synth.Close()
	r.srv.Close()
	if r.fb != nil {
		_ = r.fb.svc.Close() // closes agents; live handoffs resolve
		r.fb.wait()
	}
	r.http.CloseClientConnections()
	r.http.Close()
}

func (r *rig) stage(name string) session.StageView {
	v, _ := r.srv.Stages().Stage(name)
	return v
}

// thinkTime is the synthetic callers' pause between turns.
const thinkTime = 300 * time.Millisecond

// dialBurster stands in for the load generator (session/load) until cmd
// wires it: each synthetic caller dials /v1/session, says its turns one
// after another, and hangs up. Its report counts the outcomes.
type dialBurster struct{ url string }

func (d *dialBurster) Burst(ctx context.Context, b web.Burst) (any, error) {
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
	)
	every := time.Duration(float64(time.Second) / b.Rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
loop:
	for i := range b.Callers {
		if i > 0 {
			select {
			case <-ctx.Done():
				break loop
			case <-tick.C:
			}
		}
		wg.Go(func() {
			got := d.caller(ctx, b.Turns)
			mu.Lock()
			for k, v := range got {
				counts[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts, ctx.Err()
}

func (d *dialBurster) caller(ctx context.Context, turns int) map[string]int {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out := map[string]int{}
	c, _, err := websocket.Dial(ctx, d.url, nil)
	if err != nil {
		out["dial_error"]++
		return out
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	said, ended := 0, 0
	say := func() {
		said++
		b, _ := json.Marshal(map[string]any{"type": "turn", "id": "b" + string(rune('0'+said)), "text": "burst caller"})
		_ = c.Write(ctx, websocket.MessageText, b)
	}
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return out
		}
		if typ != websocket.MessageText {
			continue
		}
		var m struct{ Type, Disposition string }
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case "session":
			if m.Disposition != "queued" {
				out["session "+m.Disposition]++
			}
			if m.Disposition == "admitted" {
				say()
			}
		case "turn_end":
			out["turn "+m.Disposition]++
			if ended++; ended == turns {
				_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"hangup"}`))
				c.Close(websocket.StatusNormalClosure, "")
				return out
			}
			select { // a caller pauses between turns, holding its session
			case <-ctx.Done():
				return out
			case <-time.After(thinkTime):
			}
			say()
		}
	}
}

// holdModel has a caller say a turn and returns once the model stage has
// answered it (queued or admitted): with a slow stub model, its turn keeps
// a model slot or waiting place for the rest of the test.
func (r *rig) holdModel(ctx context.Context) {
	r.t.Helper()
	url := "ws" + strings.TrimPrefix(r.http.URL, "http") + "/v1/session"
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.CloseNow() })
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			r.t.Fatalf("holding caller: %v", err)
		}
		var m struct{ Type, Disposition, Stage string }
		_ = json.Unmarshal(b, &m)
		switch {
		case m.Type == "session" && m.Disposition == "admitted":
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"hold","text":"hold the model"}`))
		case m.Type == "disposition" && m.Stage == "model" && (m.Disposition == "queued" || m.Disposition == "admitted"):
			go func() { // keep reading so the server's writer is never stuck
				for {
					if _, _, err := c.Read(context.Background()); err != nil {
						return
					}
				}
			}()
			return
		}
	}
}
