package session

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// testLinger is a writer's idle wait that the test fires.
type testLinger struct {
	c        chan time.Time
	released bool
}

func (l *testLinger) wait() <-chan time.Time { return l.c }
func (l *testLinger) idleFor() bool          { return true }
func (l *testLinger) release()               { l.released = true }

// A writer that stops for idleness gives its ring (and its timer) back:
// an idle call holds neither; the next frame grows a ring again.
func TestOutboundIdleWriterGivesRingBack(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := newOutbound(OutboundLimits{}, &gen, clock.System)
	ctx := context.Background()
	l := &testLinger{c: make(chan time.Time, 1)}
	if err := o.push(ctx, frame{gen: 1}); err != nil {
		t.Fatal(err)
	}
	if _, r := o.take(ctx, l); r != popFrame {
		t.Fatalf("take = %d, want a frame", r)
	}
	if o.q == nil {
		t.Fatal("no ring while the writer runs")
	}
	l.c <- time.Now()
	if _, r := o.take(ctx, l); r != popIdle {
		t.Fatalf("take = %d, want idle", r)
	}
	if o.q != nil || !l.released || o.writing {
		t.Fatalf("idle: ring %d frames, released %v, writing %v", len(o.q), l.released, o.writing)
	}
	if err := o.push(ctx, frame{gen: 1}); err != nil || len(o.q) != firstFrames {
		t.Fatalf("push after idle: %v, ring %d", err, len(o.q))
	}
}

// The reader hands over to a fresh goroutine after every text message
// (readLoop): messages are still handled one at a time, in order.
func TestReaderHandOverKeepsOrder(t *testing.T) {
	r := newRig(t)
	c := r.Admitted()
	const n = 40
	for i := range n {
		c.SendRaw(`{"type":"x` + itoa(i) + `"}`)
	}
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	for i := range n {
		m := c.Expect("error")
		if want := `unknown message type "x` + itoa(i) + `"`; m.Code != CodeUnknownType || m.Message != want {
			t.Fatalf("error %d: %s %q, want %q", i, m.Code, m.Message, want)
		}
	}
	c.Expect("turn_end")
}
