package session

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// BenchmarkGateCycle is one Submit (admitted at once) and its Release
// through a stage's gate: in process, and on Redis as frontdoor serve
// -store wires it.
func BenchmarkGateCycle(b *testing.B) {
	lim := stages.Limits{Slots: 4, Waiting: 4, MaxAge: time.Minute}
	b.Run("in-process", func(b *testing.B) {
		a, err := LocalGate(lim, clock.System, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		defer a.Stop()
		admitterCycles(b, a)
	})
	b.Run("redis", func(b *testing.B) {
		srv := redistest.Start(b)
		a, err := fleetGates(b, srv, nil)(StageModel, lim, clock.System)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Stop()
		admitterCycles(b, a)
	})
}

func admitterCycles(b *testing.B, a stages.Gate) {
	ctx := context.Background()
	if err := a.Rotate(ctx, "bench", 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := strconv.Itoa(i)
		i++
		tk, d, err := a.Submit(ctx, stages.Job{ID: id, Owner: "bench", Generation: 1, Born: time.Now()})
		if err != nil || d != stages.Queued {
			b.Fatalf("submit %v %v", d, err)
		}
		<-tk.Done()
		if d, _ := tk.Result(); d != stages.Admitted {
			b.Fatalf("result %v", d)
		}
		if _, err := a.Release(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
