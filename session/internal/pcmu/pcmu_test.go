package pcmu

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConverter: 8 kHz µ-law passes through unchanged; 8 kHz PCM16 is
// encoded sample for sample; 16 kHz PCM16 comes out at half the samples,
// counting what Flush returns at the end of the utterance.
func TestConverter(t *testing.T) {
	ulaw := []byte{0x00, 0x7f, 0x80, 0xff}
	c, err := NewConverter(string(media.Mulaw), 8000)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Convert(ulaw); err != nil || !bytes.Equal(got, ulaw) {
		t.Fatalf("µ-law 8 kHz: %x %v, want it unchanged", got, err)
	}
	if rest := c.Flush(); rest != nil {
		t.Fatalf("µ-law 8 kHz flush %x, want nothing", rest)
	}

	s := []int16{0, 1000, -1000, 32000, -32000}
	c, err = NewConverter("", 8000) // PCM16
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Convert(pcm.Encode(nil, s)); err != nil || !bytes.Equal(got, g711.EncodeMulaw(nil, s)) {
		t.Fatalf("PCM16 8 kHz: %x %v", got, err)
	}

	c, err = NewConverter(string(media.PCM16), 16000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range 10 { // 10 × 20 ms
		b, err := c.Convert(pcm.Encode(nil, make([]int16, 320)))
		if err != nil {
			t.Fatal(err)
		}
		n += len(b)
	}
	n += len(c.Flush())
	if n != 1600 {
		t.Fatalf("200 ms at 16 kHz became %d µ-law bytes, want 1600", n)
	}
}

// TestWaitBuffered: it returns at once when no more than lead is
// buffered, once the buffer drains below lead (the waits are on the
// given clock, a manual one here), and with the context's error when that
// ends first.
func TestWaitBuffered(t *testing.T) {
	ctx := context.Background()
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	if err := WaitBuffered(ctx, clock, func() time.Duration { return Lead }, Lead); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	left := 5
	drain := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		left--
		return time.Duration(left) * 20 * time.Millisecond
	}
	done := make(chan error, 1)
	go func() { done <- WaitBuffered(ctx, clock, drain, 20*time.Millisecond) }()
	for polls := 0; ; {
		select {
		case err := <-done:
			mu.Lock()
			defer mu.Unlock()
			if err != nil || left != 1 || polls != 3 {
				t.Fatalf("drained: %v with %d frames left after %d polls", err, left, polls)
			}
			return
		default:
		}
		if clock.Pending() == 0 {
			runtime.Gosched() // the waiter has not armed its timer yet
			continue
		}
		clock.Advance(20 * time.Millisecond)
		polls++
	}
}

// TestWaitBufferedCancelled: a context that ends first ends the wait.
func TestWaitBufferedCancelled(t *testing.T) {
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	if err := WaitBuffered(cctx, clock, func() time.Duration { return time.Second }, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
