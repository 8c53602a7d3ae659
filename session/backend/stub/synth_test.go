package stub

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
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

// TestToneFramesOwned checks that each frame is the receiver's: writing to
// one changes no other.
func TestToneFramesOwned(t *testing.T) {
	w := newTone(16000)
	a := w.frame(0)
	for i := range a {
		a[i] = 0
	}
	if b := w.frame(0); b[1] == 0 {
		t.Fatal("frame shares the table")
	}
}

// TestClockShared checks that waiters on one clock are woken by its ticks
// (a frame period apart, never early) and that its goroutine ends once no
// one waits (goleak in TestMain).
func TestClockShared(t *testing.T) {
	const period = 5 * time.Millisecond
	k := newClock(period)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			slot := k.slot()
			start := time.Now()
			for range 4 {
				if err := k.wait(context.Background(), slot); err != nil {
					t.Error(err)
					return
				}
			}
			if d := time.Since(start); d < 3*period {
				t.Errorf("4 ticks in %v, want at least %v", d, 3*period)
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.wait(ctx, 0); err != context.Canceled {
		t.Fatalf("wait on an ended context: %v", err)
	}
	if err := newClock(0).wait(context.Background(), 0); err != nil {
		t.Fatal(err)
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
