package outbound

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// testLinger is a writer's idle wait that the test fires.
type testLinger struct {
	c        chan time.Time
	released bool
	once     bool // atOnce
}

func (l *testLinger) wait() <-chan time.Time { return l.c }
func (l *testLinger) idleFor() bool          { return true }
func (l *testLinger) release() bool          { l.released = true; return true }
func (l *testLinger) atOnce() bool           { return l.once }

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

// A writer that stops as soon as the queue is empty (a brisk or shared
// one) stops without a wait on an open queue; on a closed queue whose
// transport's line is still to come it waits for the line instead, and
// ends once the line is released.
func TestOutboundAtOnceWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gen atomic.Uint64
		gen.Store(1)
		o := New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
		ctx := context.Background()
		l := &testLinger{once: true}
		claim := func() { o.mu.Lock(); o.writing = true; o.mu.Unlock() } // as a running writer
		claim()
		if _, r := o.take(ctx, l, 0); r != popIdle || o.writing {
			t.Fatalf("take on an empty open queue = %d (writing %v), want idle", r, o.writing)
		}

		release, ok := o.HoldVoice()
		if !ok {
			t.Fatal("Keep refused on an open queue")
		}
		claim()
		o.Close()
		got := make(chan int, 1)
		go func() { _, r := o.take(ctx, l, 0); got <- r }()
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("take = %d while the line is to come, want a wait", r)
		default:
		}
		if err := o.Push(ctx, Frame{Voice: true, Audio: []byte{1}}); err != nil {
			t.Fatal(err)
		}
		if r := <-got; r != popFrame {
			t.Fatalf("take = %d, want the line's frame", r)
		}
		release()
		if _, r := o.take(ctx, l, 0); r != popEnd {
			t.Fatalf("take after the release = %d, want the end", r)
		}
	})
}
