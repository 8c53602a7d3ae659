package session

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// BenchmarkCallerAudio is the reader's work on one 20 ms frame of caller
// audio (PCM16, 16 kHz, silence: no speech starts) on an admitted call with
// a recognizer: its allowance and voice activity detection, which stay on
// the reader with no hand-over per frame (owner.go). The manual clock
// moves 20 ms a frame, so the allowance holds.
func BenchmarkCallerAudio(b *testing.B) {
	clk := clock.NewManual(time.Unix(1e9, 0))
	e, err := New(Config{ModelBackend: stub.NewModel(stub.Settings{}), Synthesizer: stub.NewSynthesizer(stub.Settings{}),
		Recognizer: stub.NewRecognizer(stub.Settings{}), Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c := newCall(e, "bench", nil, Capabilities{})
	benchAdmit(c)
	c.handle(wire.ClientEvent{Kind: wire.EventHello, Audio: media.Format{Encoding: media.PCM16, SampleRate: 16000, Channels: 1}})
	frame := make([]byte, 640) // silence
	ev := wire.ClientEvent{Kind: wire.EventAudio, Data: frame}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clk.Advance(20 * time.Millisecond)
		c.handle(ev)
	}
}

// benchAdmit marks c admitted, as its admission would.
func benchAdmit(c *Call) {
	c.admitted.Store(true)
	c.o.phase = phaseAdmitted
}
