package session

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// BenchmarkTurn is one whole turn over a loopback WebSocket with stub
// backends that answer at once: admission in both stages, 4 text deltas,
// 5 audio frames, every disposition.
func BenchmarkTurn(b *testing.B) {
	r := newRig(b)
	c := r.Admitted()
	b.ResetTimer()
	for i := range b.N {
		c.Send(map[string]any{"type": "turn", "id": "t" + itoa(i), "text": "good morning"})
		c.Until(sessiontest.IsType("turn_end"))
	}
}

// BenchmarkBargeIn measures, in process over the Transport seam, the time
// from a barge_in event received to `interrupted` handed to the transport
// (p50, p99; this includes draining the test transport's own buffer of
// earlier frames), and the server's histogram of barge-in to the last
// write of the old generation (mean), while a reply streams at full speed.
func BenchmarkBargeIn(b *testing.B) {
	r := newRig(b, func(c *Config, s *stub.Settings) {
		c.Synthesis = stages.Limits{Slots: 4, Waiting: 4, MaxAge: time.Minute}
		s.FrameCount, s.FrameDelay = 100000, 0
	})
	tr := newChanTransport()
	done := make(chan struct{})
	go func() { r.Engine.Run(context.Background(), tr, Capabilities{}); close(done) }()
	<-tr.out // session admitted
	var sent atomic.Int64
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		tr.in <- wire.ClientEvent{Kind: wire.EventTurn, Type: "turn", Turn: wire.TurnRequest{ID: "t" + itoa(i), Text: "x"}}
		for audio := 0; audio < 3; {
			if _, ok := (<-tr.out).([]byte); ok {
				audio++
			}
		}
		sent.Store(time.Now().UnixNano())
		tr.in <- wire.ClientEvent{Kind: wire.EventBargeIn, Type: "barge_in"}
		for {
			if _, ok := (<-tr.out).(*wire.InterruptedMsg); ok {
				lat = append(lat, time.Duration(time.Now().UnixNano()-sent.Load()))
				break
			}
		}
	}
	b.StopTimer()
	tr.in <- wire.ClientEvent{Kind: wire.EventHangup}
	go func() {
		for range tr.out {
		}
	}()
	<-done
	close(tr.out)
	mfs, _ := r.Engine.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "frontdoor_barge_in_last_old_write_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			b.ReportMetric(h.GetSampleSum()/float64(max(h.GetSampleCount(), 1))*1e6, "last-old-write-mean-µs")
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func itoa(i int) string { return time.Duration(i).String() }
