package stages_test

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// One synthesis slot, two calls: the second call's request waits; when its
// caller barges in (a new generation) it leaves the queue at once, and the
// first call's lease is returned only when its backend is done.
func ExampleNewGate() {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	g, err := stages.NewGate(stages.Limits{Slots: 1, Waiting: 8, MaxAge: 2 * time.Second}, clk, nil)
	if err != nil {
		panic(err)
	}
	defer g.Stop()

	for _, call := range []string{"call-1", "call-2"} {
		_ = g.Rotate(ctx, call, 1) // each call's conversation at generation 1
	}
	p1, d, _ := g.Submit(ctx, stages.Job{ID: "tts-1", Owner: "call-1", Generation: 1, Born: clk.Now()})
	fmt.Println("call-1:", d)
	d, _ = p1.Wait(ctx)
	fmt.Println("call-1 waits for:", d)

	p2, d, _ := g.Submit(ctx, stages.Job{ID: "tts-2", Owner: "call-2", Generation: 1, Born: clk.Now()})
	pos, _, _ := p2.Position(ctx)
	fmt.Println("call-2:", d, "at", pos)

	_ = g.Rotate(ctx, "call-2", 2) // call-2's caller barged in
	d, _ = p2.Wait(ctx)
	fmt.Println("call-2 waits for:", d)

	d, _ = g.Release(ctx, "tts-1") // call-1's synthesis finished
	fmt.Println("call-1 release:", d)

	s, _ := g.Snapshot(ctx)
	fmt.Println("ledger: completed", s.Ledger.Completed, "cancelled", s.Ledger.Cancelled())
	// Output:
	// call-1: queued
	// call-1 waits for: admitted
	// call-2: queued at 1
	// call-2 waits for: cancelled
	// call-1 release: completed
	// ledger: completed 1 cancelled 1
}
