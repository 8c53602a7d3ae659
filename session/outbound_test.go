package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// The ring grows on demand: an idle call holds no frames, frames come out
// in order across every growth and wrap-around, the frame bound holds, and
// a ring grown for a burst is given back once drained (but not right after
// it grew).
func TestOutboundGrowsOnDemand(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := newOutbound(OutboundLimits{Frames: 100, Bytes: 1 << 20}, &gen, clock.System)
	if o.q != nil {
		t.Fatalf("idle queue holds a ring of %d frames", len(o.q))
	}
	ctx := context.Background()
	next, want := 0, 0
	pushN := func(n int) {
		t.Helper()
		for range n {
			if err := o.push(ctx, frame{gen: 1, ms: int64(next)}); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	popN := func(n int) {
		t.Helper()
		for range n {
			f, ok := o.pop(ctx)
			if !ok || f.ms != int64(want) {
				t.Fatalf("pop = %d, %v; want frame %d", f.ms, ok, want)
			}
			want++
		}
	}
	// Wrap the small ring, then grow it while its head is in the middle.
	pushN(6)
	popN(4)
	pushN(30)
	if len(o.q) > 64 {
		t.Errorf("ring of %d frames for 32 queued", len(o.q))
	}
	popN(10)
	pushN(78) // 100 queued: the bound
	if o.n != 100 || len(o.q) != 100 {
		t.Errorf("queued %d in a ring of %d, want 100 in 100", o.n, len(o.q))
	}
	// Full: a further push waits for room.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := o.push(short, frame{gen: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("push on a full queue: %v, want it to wait", err)
	}
	popN(99)
	o.grown = o.grown.Add(-2 * shrinkAfter)
	popN(1)
	if o.q != nil {
		t.Errorf("drained queue keeps a ring of %d frames", len(o.q))
	}
	// A ring that just grew stays through a drain: bursts do not regrow it.
	pushN(70)
	popN(70)
	if len(o.q) < 70 {
		t.Errorf("ring released right after it grew: %d frames", len(o.q))
	}
	pushN(3)
	o.discard()
	if o.q != nil || o.n != 0 || o.bytes != 0 {
		t.Errorf("after discard: ring %d, %d frames, %d bytes", len(o.q), o.n, o.bytes)
	}
}

// An offer belongs to the prompt before it: it is queued only while no
// other change of the call's state came since that prompt, and carries
// that premise for the writer's check.
func TestOutboundOfferNeedsItsPrompt(t *testing.T) {
	var gen, premise, spoken atomic.Uint64
	gen.Store(1)
	premise.Store(1)
	spoken.Store(1)
	o := newOutbound(OutboundLimits{}, &gen, clock.System)
	o.premise, o.spoken = &premise, &spoken
	ctx := context.Background()
	offer := func() error { return o.push(ctx, frame{msg: &OfferMsg{Type: "offer"}}) }
	pm := &PromptMsg{Type: "prompt"}
	if err := o.push(ctx, frame{msg: pm, bump: true}); err != nil {
		t.Fatal(err)
	}
	if pm.premise != 2 || spoken.Load() != 2 {
		t.Fatalf("prompt queued with premise %d, spoken %d; want 2", pm.premise, spoken.Load())
	}
	if err := offer(); err != nil {
		t.Fatalf("offer after its prompt: %v", err)
	}
	if f := o.ctl[len(o.ctl)-1]; f.premise != 2 {
		t.Fatalf("offer queued with premise %d, want its prompt's 2", f.premise)
	}
	// The call's state changes (an answer, a session outcome): an offer
	// of the prompt before is not made.
	if err := o.push(ctx, frame{msg: &FallbackMsg{Type: "callback"}, bump: true}); err != nil {
		t.Fatal(err)
	}
	if err := offer(); !errors.Is(err, ErrPremiseGone) {
		t.Fatalf("offer after the state changed: %v, want ErrPremiseGone", err)
	}
}

// The stream lane's bound is audio time: a frame counts one per 20 ms it
// carries (a part counting whole), anything else one, and a frame larger
// than the whole bound still goes into an empty lane. A push that finds
// no room waits; with its context already ended it returns at once.
func TestOutboundCountsAudioTime(t *testing.T) {
	for _, tc := range []struct {
		ms    int64 // µs
		units int
	}{
		{0, 1}, {1, 1}, {19954, 1}, {20000, 1}, {20001, 2}, {40000, 2}, {59954, 3}, {60000, 3}, {120000, 6},
	} {
		if got := frameUnits(&frame{ms: tc.ms}); got != tc.units {
			t.Errorf("frameUnits of %d µs = %d, want %d", tc.ms, got, tc.units)
		}
	}

	var gen atomic.Uint64
	gen.Store(1)
	o := newOutbound(OutboundLimits{Frames: 9}, &gen, clock.System)
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	push := func(ctx context.Context, ms int64) error {
		return o.push(ctx, frame{gen: 1, audio: make([]byte, 8), ms: ms})
	}
	for range 3 {
		if err := push(ended, 60000); err != nil { // room: pushed without a wait
			t.Fatal(err)
		}
	}
	if o.n != 3 || o.units != 9 {
		t.Fatalf("%d frames, %d units; want 3 frames of 60 ms, 9 units", o.n, o.units)
	}
	if err := push(ended, 20000); !errors.Is(err, context.Canceled) {
		t.Fatalf("a 20 ms frame past 9 units of 60 ms frames: %v, want it to wait", err)
	}
	if f, ok := o.pop(ctx); !ok || f.ms != 60000 || o.units != 6 {
		t.Fatalf("pop: %v %v, %d units left", f.ms, ok, o.units)
	}
	if err := push(ended, 40000); err != nil {
		t.Fatal(err)
	}
	if err := push(ended, 20000); err != nil {
		t.Fatal(err)
	}
	if err := push(ended, 1); !errors.Is(err, context.Canceled) || o.units != 9 {
		t.Fatalf("push on 9 units: %v (%d units), want it to wait", err, o.units)
	}
	for o.n > 0 {
		o.pop(ctx)
	}
	if o.units != 0 {
		t.Fatalf("%d units in an empty lane", o.units)
	}

	// A frame of more units than the bound goes alone.
	o = newOutbound(OutboundLimits{Frames: 2}, &gen, clock.System)
	if err := push(ended, 120000); err != nil {
		t.Fatalf("a 120 ms frame into an empty lane of 2 units: %v", err)
	}
	if err := push(ended, 20000); !errors.Is(err, context.Canceled) {
		t.Fatalf("a frame behind an oversized one: %v, want it to wait", err)
	}
	o.discard()
	if o.units != 0 {
		t.Fatalf("%d units after discard", o.units)
	}
}
