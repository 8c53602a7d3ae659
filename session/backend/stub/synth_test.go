package stub

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// sine is the tone as it was computed per sample before the table: frame i
// starts at sample i·n.
func sine(off, n, rate int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(off+i)/float64(rate)))
	}
	return out
}

// TestToneMatchesSine checks the table against the per-sample sine over
// several periods, at the rates the backends use: at most one step apart
// (the sine of a large argument rounds differently).
func TestToneMatchesSine(t *testing.T) {
	for _, rate := range []int{8000, 16000, 22050, 24000, 44100, 48000} {
		w := newTone(rate)
		for i := range 500 {
			got, want := w.frame(i), sine(i*w.n, w.n, rate)
			if len(got) != len(want) {
				t.Fatalf("rate %d frame %d: %d samples, want %d", rate, i, len(got), len(want))
			}
			for j := range got {
				if d := int(got[j]) - int(want[j]); d < -1 || d > 1 {
					t.Fatalf("rate %d frame %d sample %d: %d, want %d", rate, i, j, got[j], want[j])
				}
			}
		}
	}
}

// TestToneFramesCapped checks that a frame is a view that an append
// cannot write through: appending to one changes no other frame.
func TestToneFramesCapped(t *testing.T) {
	w := newTone(16000)
	a := w.frame(0)
	next := w.frame(1)[0]
	_ = append(a, 0)
	if w.frame(1)[0] != next || cap(a) != len(a) {
		t.Fatal("an append to a frame wrote into the table")
	}
}

// TestClockShared checks that every waiter on one clock costs the same
// single timer, that a turn of the wheel wakes them all, and that its ticks
// stop once a full turn finds no one waiting.
func TestClockShared(t *testing.T) {
	const period = 20 * time.Millisecond
	clk := stagestest.NewClock(time.Unix(0, 0))
	k := newClock(period, clk)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := k.wait(context.Background(), k.slot()); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.waiters == 50 })
	if n := clk.Pending(); n != 1 {
		t.Fatalf("50 waiters: %d timers, want 1", n)
	}
	clk.Advance(period)
	wg.Wait()
	clk.Advance(period) // a turn with no waiter
	if n := clk.Pending(); n != 0 {
		t.Fatalf("idle clock: %d timers, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.wait(ctx, 0); err != context.Canceled {
		t.Fatalf("wait on an ended context: %v", err)
	}
	if err := newClock(0, nil).wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// TestSynthesizerPacing drives the stub synthesizer on a manual clock: the
// first frame after SynthDelay, the second at its slot's next tick (within
// a period), every later one exactly a period after the one before.
func TestSynthesizerPacing(t *testing.T) {
	const delay, period, frames = 10 * time.Millisecond, 20 * time.Millisecond, 4
	clk := stagestest.NewClock(time.Unix(0, 0))
	sy := NewSynthesizer(Settings{SynthDelay: delay, FrameDelay: period, FrameCount: frames, Clock: clk})
	defer sy.Close()
	start := clk.Now()
	got := make(chan time.Time)
	done := make(chan error, 1)
	go func() {
		done <- sy.Synthesize(context.Background(), "x", func(backend.Audio) error { got <- clk.Now(); return nil })
	}()
	waitFor(t, func() bool { return clk.Pending() == 1 }) // the synthesis delay
	clk.Advance(delay)
	at := []time.Time{<-got}
	k := sy.clock
	slot := int(k.next.Load() % clockSlots)
	for len(at) < frames {
		// Advance a tick at a time, and only while the call waits, so
		// that no tick of its slot passes unseen.
		waitFor(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.waiters == 1 })
		k.mu.Lock()
		ch := k.tick[slot]
		k.mu.Unlock()
		clk.Advance(period / clockSlots)
		k.mu.Lock()
		fired := k.tick[slot] != ch
		k.mu.Unlock()
		if fired {
			at = append(at, <-got)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := at[0].Sub(start); d != delay {
		t.Errorf("first frame after %v, want %v", d, delay)
	}
	if d := at[1].Sub(at[0]); d <= 0 || d > period {
		t.Errorf("second frame %v after the first, want (0, %v]", d, period)
	}
	for i := 2; i < frames; i++ {
		if d := at[i].Sub(at[i-1]); d != period {
			t.Errorf("frame %d %v after the one before, want %v", i, d, period)
		}
	}
}

// BenchmarkToneFrame is one 20 ms frame at 16 kHz: the per-sample sine it
// was, and the copy from the table it is.
func BenchmarkToneFrame(b *testing.B) {
	b.Run("sine", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			_ = sine(i*320, 320, 16000)
		}
	})
	b.Run("table", func(b *testing.B) {
		w := newTone(16000)
		b.ReportAllocs()
		for i := range b.N {
			_ = w.frame(i)
		}
	})
}
