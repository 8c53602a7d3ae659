package outbound

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// The ring grows on demand: an idle call holds no frames, frames come out
// in order across every growth and wrap-around, the frame bound holds, and
// a ring grown for a burst is given back once drained (but not right after
// it grew).
func TestOutboundGrowsOnDemand(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{Frames: 100, Bytes: 1 << 20}, Clock: clock.System, Gen: &gen})
	if o.q != nil {
		t.Fatalf("idle queue holds a ring of %d frames", len(o.q))
	}
	ctx := context.Background()
	next, want := 0, 0
	pushN := func(n int) {
		t.Helper()
		for range n {
			if err := o.Push(ctx, Frame{Gen: 1, US: int64(next)}); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	popN := func(n int) {
		t.Helper()
		for range n {
			f, ok := o.pop(ctx)
			if !ok || f.US != int64(want) {
				t.Fatalf("pop = %d, %v; want frame %d", f.US, ok, want)
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
	if err := o.Push(short, Frame{Gen: 1}); !errors.Is(err, context.DeadlineExceeded) {
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
	o.Discard()
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
	o := New(Config{Clock: clock.System, Gen: &gen, Premise: &premise, Spoken: &spoken})
	ctx := context.Background()
	offer := func() error { return o.Push(ctx, Frame{Msg: &wire.OfferMsg{Type: "offer"}}) }
	pm := &wire.PromptMsg{Type: "prompt"}
	if err := o.Push(ctx, Frame{Msg: pm, Bump: true}); err != nil {
		t.Fatal(err)
	}
	if pm.Premise() != 2 || spoken.Load() != 2 {
		t.Fatalf("prompt queued with premise %d, spoken %d; want 2", pm.Premise(), spoken.Load())
	}
	if err := offer(); err != nil {
		t.Fatalf("offer after its prompt: %v", err)
	}
	if f := o.ctl[len(o.ctl)-1]; f.Premise != 2 {
		t.Fatalf("offer queued with premise %d, want its prompt's 2", f.Premise)
	}
	// The call's state changes (an answer, a session outcome): an offer
	// of the prompt before is not made.
	if err := o.Push(ctx, Frame{Msg: &wire.FallbackMsg{Type: "callback"}, Bump: true}); err != nil {
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
		if got := frameUnits(&Frame{US: tc.ms}); got != tc.units {
			t.Errorf("frameUnits of %d µs = %d, want %d", tc.ms, got, tc.units)
		}
	}

	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{Frames: 9}, Clock: clock.System, Gen: &gen})
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	push := func(ctx context.Context, ms int64) error {
		return o.Push(ctx, Frame{Gen: 1, Audio: make([]byte, 8), US: ms})
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
	if f, ok := o.pop(ctx); !ok || f.US != 60000 || o.units != 6 {
		t.Fatalf("pop: %v %v, %d units left", f.US, ok, o.units)
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
	o = New(Config{Limits: Limits{Frames: 2}, Clock: clock.System, Gen: &gen})
	if err := push(ended, 120000); err != nil {
		t.Fatalf("a 120 ms frame into an empty lane of 2 units: %v", err)
	}
	if err := push(ended, 20000); !errors.Is(err, context.Canceled) {
		t.Fatalf("a frame behind an oversized one: %v, want it to wait", err)
	}
	o.Discard()
	if o.units != 0 {
		t.Fatalf("%d units after discard", o.units)
	}
}
