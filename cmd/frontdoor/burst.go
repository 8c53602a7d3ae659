package main

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/web"
)

// Settings of the synthetic callers a burst starts: they think between
// turns (holding their session, as people do), accept half the callbacks
// they are offered so the fallback queues fill, and sometimes barge in.
const (
	burstThink      = 300 * time.Millisecond
	burstCallback   = 0.5
	burstBargeIn    = 0.1
	burstPatience   = 15 * time.Second
	burstAfterArriv = 30 * time.Second // how long callers may stay after the last arrives
)

// loadBurster runs the demo page's bursts (package web) with the load
// generator (package load) against addr, the address the server listens
// on. It is wired here, in the binary, so that the page, which is part of
// the server, does not import a client. An unspecified host (":8080",
// "0.0.0.0:8080", "[::]:8080") becomes 127.0.0.1: the generator only dials
// loopback.
func loadBurster(addr string) web.Burster {
	target := "http://" + dialable(addr)
	return web.BurstFunc(func(ctx context.Context, b web.Burst, progress func(any)) (any, error) {
		window := time.Duration(float64(b.Callers) / b.Rate * float64(time.Second))
		r, err := load.Run(ctx, load.Config{
			Target:   target,
			Callers:  b.Callers,
			Rate:     b.Rate,
			Arrival:  load.Steady,
			Turns:    b.Turns,
			Think:    burstThink,
			Patience: burstPatience,
			BargeIn:  burstBargeIn,
			Callback: burstCallback,
			Duration: min(window+burstAfterArriv, load.MaxDuration),
			Seed:     uint64(time.Now().UnixNano()),
			Progress: func(p load.Progress) { progress(p) },
		})
		if r == nil {
			return nil, err
		}
		return burstSummary{Elapsed: r.Elapsed, Warnings: r.Warnings, Callers: r.Callers, Turns: r.Turns,
			Goodput: r.Goodput, Stages: r.Stages, Fallback: r.Fallback}, err
	})
}

// burstSummary is the part of a load report the page shows.
type burstSummary struct {
	Elapsed  load.Millis          `json:"elapsed_ms"`
	Warnings []string             `json:"warnings,omitempty"`
	Callers  load.CallerLedger    `json:"callers"`
	Turns    load.TurnLedger      `json:"turns"`
	Goodput  load.Goodput         `json:"goodput"`
	Stages   []load.StageCounts   `json:"stages"`
	Fallback load.FallbackResults `json:"fallback"`
}
