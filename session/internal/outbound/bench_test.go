package outbound

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// BenchmarkOutbound is the writer's cost per frame: push, generation
// check, write to a transport that discards.
func BenchmarkOutbound(b *testing.B) {
	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, ok := o.pop(ctx)
			if !ok {
				return
			}
			if f.Gen != gen.Load() {
				o.nStale.Add(1)
			}
		}
	}()
	payload := make([]byte, 640)
	b.ResetTimer()
	for range b.N {
		if err := o.Push(ctx, Frame{Gen: 1, Audio: payload}); err != nil {
			b.Fatal(err)
		}
	}
	o.Close()
	<-done
}
