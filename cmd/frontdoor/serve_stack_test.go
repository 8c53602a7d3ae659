package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestServeStackConformance runs the stage contract (stagestest.RunGate) on
// exactly the gates frontdoor serve submits work to: built by serve's own
// wiring (fleet.newGate) for each -store, inside a server.Server that wraps
// them in its decorators (drain and quarantine guards) as it does for
// callers, with quarantine off and on.
func TestServeStackConformance(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	redis := redistest.Start(t)
	stores := []struct {
		name string
		open func(t *testing.T) *fleet
	}{
		{"in-process", func(*testing.T) *fleet { return nil }},
		{"redis", func(t *testing.T) *fleet {
			// A fresh stage per gate: the contract's cases share no keys.
			if err := redis.Client(t).FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			fl, err := openFleet(&storeSettings{url: redis.URL(0), leaseTTL: 300 * time.Millisecond, timeout: time.Second}, productPolicy, log)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fl.Close)
			return fl
		}},
	}
	for _, store := range stores {
		for _, quarantine := range []int{0, 2, -1} { // -1: no quarantine, -model-slots auto
			name := store.name
			auto := &adaptSettings{auto: map[string]*adaptive.Config{}}
			switch {
			case quarantine > 0:
				name += "/quarantine"
			case quarantine < 0:
				name += "/auto"
				quarantine = 0
				auto.auto[session.StageModel] = &adaptive.Config{Min: 1, Max: 64}
			}
			t.Run(name, func(t *testing.T) {
				stagestest.RunGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.Gate {
					fl := store.open(t)
					srv, err := server.New(server.Config{Config: session.Config{
						Model: l, Clock: clock, Logger: log, QuarantineAfter: quarantine,
						NewGate:      auto.newGate(fl.newGate(productPolicy, log), log),
						ModelBackend: stub.NewModel(stub.Settings{}), Synthesizer: stub.NewSynthesizer(stub.Settings{}),
					}})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(srv.Close)
					g := srv.Gate(session.StageModel)
					if fl != nil { // a fresh Redis warms up for one lease TTL before it admits
						deadline := time.Now().Add(5 * time.Second)
						for g.Ready(context.Background()) != nil {
							if time.Now().After(deadline) {
								t.Fatal("the fleet stage never became ready")
							}
							time.Sleep(20 * time.Millisecond)
						}
					}
					return g
				})
			})
		}
	}
}
