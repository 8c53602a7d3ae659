package claim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// A caller waits for a human agent: the job is queued until an agent
// claims it, whatever slots are free, and the claimer holds its lease
// until the conversation ends.
func ExampleNew() {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	q, err := claim.New(stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}, clk, nil)
	if err != nil {
		panic(err)
	}
	defer q.Stop()

	_ = q.Rotate(ctx, "call-1", 0) // the caller's conversation, generation 0
	p, d, _ := q.Submit(ctx, stages.Job{ID: "handoff-1", Owner: "call-1", Born: clk.Now()})
	fmt.Println("submit:", d)

	d, id, _ := q.Claim(ctx, "") // an agent takes the longest waiting
	fmt.Println("claim:", d, id)
	d, _ = p.Wait(ctx)
	fmt.Println("caller's wait:", d)

	d, _, _ = q.Claim(ctx, "") // a second agent finds nobody waiting
	fmt.Println("second claim:", d)

	d, _ = q.Release(ctx, "handoff-1") // the conversation ended
	fmt.Println("release:", d)
	// Output:
	// submit: queued
	// claim: admitted handoff-1
	// caller's wait: admitted
	// second claim: empty
	// release: completed
}
