package web_test

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/offer"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/web"
)

// rig is the real session server with stub backends and the page mounted
// as frontdoor serve mounts it, on a loopback httptest listener.
type rig struct {
	t      *testing.T
	srv    *server.Server
	page   *web.Page
	http   *httptest.Server
	model  *stub.Model
	synth  *stub.Synthesizer
	fb     *offerFallback
	svc    *fallback.Service // the fallback service behind fb or offers
	offers *offer.Offers
}

type rigConfig struct {
	cfg      session.Config
	stub     stub.Settings
	handlers map[string]http.Handler // extra routes (a test double of /v1/webrtc)
	fallback bool                    // package fallback's queues, offers and /v1/agents
	// offers wires package fallback in as frontdoor serve does
	// (offer.Offers): prompts spoken with audio rendered by a stub
	// synthesizer of promptFrames 20 ms frames, and offers answered.
	offers       bool
	promptFrames int
	offerWindow  time.Duration // offer.Offers.OfferWindow (0: its default)
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
	// Listen first, as frontdoor serve does: the page's bursts run the real
	// load generator against this address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.page = web.Handler(web.Options{Burster: loadBurster("http://" + ln.Addr().String())})
	cfg := server.Config{Config: rc.cfg}
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth
	cfg.Root = r.page
	cfg.Handlers = r.page.Routes()
	maps.Copy(cfg.Handlers, rc.handlers)
	if rc.fallback || rc.offers {
		fc := fallback.DefaultConfig()
		fc.DataDir = t.TempDir()
		var synth *stub.Synthesizer
		if rc.offers {
			synth = stub.NewSynthesizer(stub.Settings{FrameCount: max(rc.promptFrames, 1), Rate: 8000})
			t.Cleanup(func() { _ = synth.Close() })
		}
		var ps backend.Synthesizer
		if synth != nil {
			ps = synth
		}
		svc, err := fallback.New(context.Background(), fc, offer.Synthesizer(ps), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.svc = svc
		if rc.offers {
			r.offers = offer.New(svc)
			r.offers.OfferWindow = rc.offerWindow
			cfg.Fallback = r.offers
		} else {
			r.fb = newOfferFallback(svc)
			cfg.Fallback = r.fb
		}
		cfg.Handlers["GET /v1/agents"] = svc.AgentHandler(nil)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	if r.svc != nil {
		srv.AddView("callback", r.svc.View(prompt.KindCallback))
		srv.AddView("handoff", r.svc.View(prompt.KindHandoff))
	}
	r.http = httptest.NewUnstartedServer(srv.Handler())
	r.http.Listener.Close()
	r.http.Listener = ln
	r.http.Start()
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	r.page.Close() // stops a running burst first: its callers are clients of srv
	r.model.Close()
	r.synth.Close()
	r.srv.Close()
	if r.svc != nil {
		_ = r.svc.Close() // closes agents; live handoffs resolve
	}
	if r.fb != nil {
		r.fb.wait()
	}
	if r.offers != nil {
		r.offers.Wait()
	}
	r.http.CloseClientConnections()
	r.http.Close()
}

func (r *rig) stage(name string) view.Stage {
	v, _ := r.srv.Stages().Stage(name)
	return v
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

// loadBurster runs the page's bursts with the load generator against
// target, as frontdoor serve does (cmd/frontdoor/burst.go); the page shows
// the whole report.
func loadBurster(target string) web.Burster {
	return web.BurstFunc(func(ctx context.Context, b web.Burst, progress func(any)) (any, error) {
		r, err := load.Run(ctx, load.Config{
			Target: target, Callers: b.Callers, Rate: b.Rate, Arrival: load.Steady, Turns: b.Turns,
			Think: 300 * time.Millisecond, Patience: 15 * time.Second, BargeIn: 0.1, Callback: 0.5,
			Duration: 30 * time.Second, Seed: 1,
			Progress: func(p load.Progress) { progress(p) },
		})
		if r == nil {
			return nil, err
		}
		return r, err
	})
}
