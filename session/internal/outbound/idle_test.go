package outbound

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
func (l *testLinger) release() bool          { l.released = true; return true }
func (l *testLinger) atOnce() bool           { return false }

// A writer that stops for idleness gives its ring (and its timer) back:
// an idle call holds neither; the next frame grows a ring again.
func TestOutboundIdleWriterGivesRingBack(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
	ctx := context.Background()
	l := &testLinger{c: make(chan time.Time, 1)}
	if err := o.Push(ctx, Frame{Gen: 1}); err != nil {
		t.Fatal(err)
	}
	if _, r := o.take(ctx, l, 0); r != popFrame {
		t.Fatalf("take = %d, want a frame", r)
	}
	if o.q == nil {
		t.Fatal("no ring while the writer runs")
	}
	l.c <- time.Now()
	if _, r := o.take(ctx, l, 0); r != popIdle {
		t.Fatalf("take = %d, want idle", r)
	}
	if o.q != nil || !l.released || o.writing {
		t.Fatalf("idle: ring %d frames, released %v, writing %v", len(o.q), l.released, o.writing)
	}
	if err := o.Push(ctx, Frame{Gen: 1}); err != nil || len(o.q) != firstFrames {
		t.Fatalf("push after idle: %v, ring %d", err, len(o.q))
	}
}
