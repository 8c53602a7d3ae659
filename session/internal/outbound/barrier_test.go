package outbound

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// A control message a transport may follow with audio of its own (offer,
// callback or handoff outcome, error) overtakes the audio queued before
// it; its AudioBefore is closed once the writer is done with the last of
// that audio, and not before: not for the frames queued after it, and at
// once when nothing was queued. A discarded queue passes every barrier, so
// that nobody waits for audio that will never be written.
func TestOutboundAudioBefore(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := New(Config{Limits: Limits{}, Clock: clock.System, Gen: &gen})
	ctx := context.Background()
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	audio := func(n int) {
		t.Helper()
		for range n {
			if err := o.Push(ctx, Frame{Gen: 1, Audio: make([]byte, 160)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	early := &wire.OfferMsg{Type: "offer"}
	if err := o.Push(ctx, Frame{Msg: early}); err != nil {
		t.Fatal(err)
	}
	if !isClosed(early.AudioBefore()) {
		t.Fatal("an offer queued behind no audio waits for some")
	}
	if !isClosed((&wire.FallbackMsg{}).AudioBefore()) {
		t.Fatal("a message no call queued waits for audio")
	}

	audio(3)
	offer := &wire.OfferMsg{Type: "offer"}
	if err := o.Push(ctx, Frame{Msg: offer}); err != nil {
		t.Fatal(err)
	}
	audio(2)
	answer := &wire.FallbackMsg{Type: "callback"}
	if err := o.Push(ctx, Frame{Msg: answer}); err != nil {
		t.Fatal(err)
	}
	// The writer takes the control messages first, then the audio.
	for range 3 {
		f, ok := o.pop(ctx)
		if !ok || f.Msg == nil || f.seq != 0 {
			t.Fatalf("took %+v, want a control message first", f)
		}
	}
	for i := 1; i <= 5; i++ {
		f, ok := o.pop(ctx)
		if !ok || f.Audio == nil || f.seq != uint64(i) {
			t.Fatalf("took %+v, want audio frame %d", f, i)
		}
		if i <= 3 && isClosed(offer.AudioBefore()) {
			t.Fatalf("the offer's audio before passed with frame %d taken, not yet written", i)
		}
		o.wrote(f.seq)
		if got, want := isClosed(offer.AudioBefore()), i >= 3; got != want {
			t.Fatalf("after frame %d: offer's audio before passed %v, want %v", i, got, want)
		}
		if got, want := isClosed(answer.AudioBefore()), i >= 5; got != want {
			t.Fatalf("after frame %d: answer's audio before passed %v, want %v", i, got, want)
		}
	}

	audio(2)
	failed := &wire.ErrorMsg{Type: "error"}
	if err := o.Push(ctx, Frame{Msg: failed}); err != nil {
		t.Fatal(err)
	}
	if isClosed(failed.AudioBefore()) {
		t.Fatal("an error queued behind audio passed at once")
	}
	o.Discard()
	if !isClosed(failed.AudioBefore()) {
		t.Fatal("a discarded queue left a barrier waiting")
	}
	if len(o.barriers) != 0 {
		t.Fatalf("%d barriers kept", len(o.barriers))
	}
}
