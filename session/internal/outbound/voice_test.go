package outbound

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// A transport's line kept (Voice.Keep) before its call's queue closed is
// still taken, and the closed queue's writer does not finish until it is
// released: a refused call's keypad outcome is heard before the hang-up.
// Other frames are refused once the queue closes, and nothing is kept
// once it is discarded.
func TestOutboundKeepsAClosingQueueForALine(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
	ctx := context.Background()
	release, ok := o.HoldVoice()
	if !ok {
		t.Fatal("Keep refused on an open queue")
	}
	o.Close()
	if err := o.Push(ctx, Frame{Gen: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("push of a reply frame after close = %v, want ErrClosed", err)
	}
	if err := o.Push(ctx, Frame{Voice: true, Audio: []byte{1}}); err != nil {
		t.Fatalf("push of the kept line after close = %v", err)
	}
	if _, r := o.take(ctx, nil, 0); r != popFrame {
		t.Fatalf("take = %d, want the line's frame", r)
	}
	done := make(chan int)
	go func() { _, r := o.take(ctx, nil, 0); done <- r }()
	select {
	case r := <-done:
		t.Fatalf("take = %d while the line is kept, want a wait", r)
	default:
	}
	release()
	if r := <-done; r != popEnd {
		t.Fatalf("take = %d after release, want the end", r)
	}
	if _, ok := o.HoldVoice(); ok {
		t.Fatal("Keep taken on a closed queue with no writer")
	}

	o = New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
	release, _ = o.HoldVoice()
	defer release()
	o.Discard()
	if err := o.Push(ctx, Frame{Voice: true, Audio: []byte{1}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("push of a line after discard = %v, want ErrClosed", err)
	}
	if _, r := o.take(ctx, nil, 0); r != popEnd {
		t.Fatalf("take after discard = %d, want the end", r)
	}
}

// A line is spoken for the premise of the message it follows; the
// outcome's own prompt (the prompt of the callback or handoff the last
// FallbackMsg reported) does not move the premise, any other message
// that changes the call's state does.
func TestStampsFollowTheOutcome(t *testing.T) {
	var gen, premise, spoken atomic.Uint64
	gen.Store(1)
	premise.Store(1)
	spoken.Store(1)
	o := New(Config{Clock: clock.System, Gen: &gen, Premise: &premise, Spoken: &spoken, Stamps: true})
	ctx := context.Background()
	send := func(m wire.Message) { // (each changes the call's state)
		t.Helper()
		if err := o.Push(ctx, Frame{Msg: m, Bump: true}); err != nil {
			t.Fatal(err)
		}
	}
	fm := &wire.FallbackMsg{Type: "handoff", Disposition: stages.Cancelled}
	send(fm)
	p, ok := o.stamps.of(fm)
	if !ok || p != 2 || premise.Load() != 2 {
		t.Fatalf("outcome stamped %d (%v), premise %d: want 2", p, ok, premise.Load())
	}
	send(&wire.PromptMsg{Type: "prompt", Stage: "handoff", Reason: "cancelled"})
	if premise.Load() != 2 {
		t.Fatalf("the outcome's own prompt moved the premise to %d", premise.Load())
	}
	send(&wire.PromptMsg{Type: "prompt", Stage: "model", Reason: "refused"})
	if premise.Load() != 3 {
		t.Fatalf("another prompt left the premise at %d, want 3", premise.Load())
	}
	if _, ok := o.stamps.of(&wire.FallbackMsg{}); ok {
		t.Fatal("a message never queued has a stamp")
	}
}

// A line said after a prompt (a phone's rendering of a text-only prompt)
// is spoken for the premise the prompt was queued under: said while it
// holds, refused once the call's state moved on, and refused for a
// prompt never queued.
func TestSaysForPrompt(t *testing.T) {
	var gen, premise atomic.Uint64
	gen.Store(1)
	premise.Store(5)
	o := New(Config{Clock: clock.System, Gen: &gen, Premise: &premise})
	queued := &wire.PromptMsg{Type: "prompt"}
	queued.SetPremise(5)
	if p, err := o.SaysFor(queued); err != nil || p != 5 {
		t.Fatalf("SaysFor(a prompt of this premise) = %d, %v", p, err)
	}
	premise.Store(6)
	if _, err := o.SaysFor(queued); !errors.Is(err, ErrPremiseGone) {
		t.Fatalf("SaysFor(a prompt of a premise gone) = %v, want ErrPremiseGone", err)
	}
	if _, err := o.SaysFor(&wire.PromptMsg{Type: "prompt"}); !errors.Is(err, ErrPremiseGone) {
		t.Fatalf("SaysFor(a prompt never queued) = %v, want ErrPremiseGone", err)
	}
}
