package outbound

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/wire"
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

// signalLine is a transport that discards what it is given and says so
// on written, one value per audio frame.
type signalLine struct{ written chan struct{} }

func (l signalLine) Send(context.Context, wire.Message) error { return nil }
func (l signalLine) SendAudio(context.Context, []byte) error {
	l.written <- struct{}{}
	return nil
}
func (signalLine) Interrupting(context.Context, *Barge, time.Duration) {}
func (signalLine) Stale()                                              {}

// benchTurn is a reply that is never silenced.
type benchTurn struct{}

func (benchTurn) Silenced() bool   { return false }
func (benchTurn) Sent(int64, bool) {}

// BenchmarkReplyFrame is one reply frame from its producer's push to the
// transport's write, the writer idle before it, as each frame of a
// synthesizer that emits in real time finds it: handed to the call's
// writer goroutine (a wake-up per frame), and written by the producer
// itself (Config.Inline). The producer waits for the write either way.
func BenchmarkReplyFrame(b *testing.B) {
	for _, inline := range []bool{false, true} {
		name := "handed"
		if inline {
			name = "inline"
		}
		b.Run(name, func(b *testing.B) {
			var gen atomic.Uint64
			gen.Store(1)
			o := New(Config{Clock: clock.System, Gen: &gen, Inline: inline})
			line := signalLine{written: make(chan struct{}, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			o.Serve(ctx, line, func(error) {}, func() {})
			payload := make([]byte, 640)
			b.ReportAllocs()
			for b.Loop() {
				if err := o.Push(ctx, Frame{Gen: 1, Audio: payload, US: 20_000, Turn: benchTurn{}}); err != nil {
					b.Fatal(err)
				}
				<-line.written
			}
			cancel()
			o.Close()
			o.Wait()
		})
	}
}
