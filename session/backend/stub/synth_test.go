package stub

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
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
// A chunk of k frames is the same wave, k frames long.
func TestToneMatchesSine(t *testing.T) {
	for _, rate := range []int{8000, 16000, 22050, 24000, 44100, 48000} {
		for _, k := range []int{1, 3, 10} {
			checkTone(t, rate, k)
		}
	}
}

func checkTone(t *testing.T, rate, k int) {
	t.Helper()
	w := newTone(rate, k)
	for i := range 500 {
		got, want := w.frames(i, k), sine(i*w.n, k*w.n, rate)
		if len(got) != len(want) {
			t.Fatalf("rate %d chunk %d frame %d: %d samples, want %d", rate, k, i, len(got), len(want))
		}
		for j := range got {
			if d := int(got[j]) - int(want[j]); d < -1 || d > 1 {
				t.Fatalf("rate %d chunk %d frame %d sample %d: %d, want %d", rate, k, i, j, got[j], want[j])
			}
		}
	}
}

// TestToneFramesCapped checks that a frame is a view that an append
// cannot write through: appending to one changes no other frame.
func TestToneFramesCapped(t *testing.T) {
	w := newTone(16000, 1)
	a := w.frame(0)
	next := w.frame(1)[0]
	_ = append(a, 0)
	if w.frame(1)[0] != next || cap(a) != len(a) {
		t.Fatal("an append to a frame wrote into the table")
	}
}

// TestClockShared checks that every job on one clock costs the same single
// timer, that a turn of the wheel steps them all, and that its ticks stop
// once a full turn finds no job.
func TestClockShared(t *testing.T) {
	const period = 20 * time.Millisecond
	clk := stagestest.NewClock(time.Unix(0, 0))
	k := newClock(period, clk)
	var wg sync.WaitGroup
	var steps atomic.Int32
	for range 50 {
		wg.Go(func() {
			if err := k.run(context.Background(), k.slot(), func() (bool, error) { steps.Add(1); return false, nil }); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.waiters == 50 })
	if n := clk.Pending(); n != 1 {
		t.Fatalf("50 jobs: %d timers, want 1", n)
	}
	clk.Advance(period)
	wg.Wait()
	if n := steps.Load(); n != 50 {
		t.Fatalf("a turn of the wheel made %d steps, want 50", n)
	}
	clk.Advance(period) // a turn with no job
	if n := clk.Pending(); n != 0 {
		t.Fatalf("idle clock: %d timers, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.run(ctx, 0, func() (bool, error) { return true, nil }); err != context.Canceled {
		t.Fatalf("run on an ended context: %v", err)
	}
	n := 0
	if err := newClock(0, nil).run(context.Background(), 0, func() (bool, error) { n++; return n < 3, nil }); err != nil || n != 3 {
		t.Fatalf("a clock of period 0: %d steps, %v; want 3 at once", n, err)
	}
}

// TestSynthesizerPacing drives the stub synthesizer on a manual clock: the
// first emit after SynthDelay, the second at its slot's next tick (within
// a period), every later one exactly a period after the one before, where
// a period is FrameChunk·FrameDelay; each emit carries FrameChunk frames,
// the last what is left.
func TestSynthesizerPacing(t *testing.T) {
	const delay, frame = 10 * time.Millisecond, 20 * time.Millisecond
	tests := []struct {
		frames, chunk int
		sizes         []int // frames per emit
	}{
		{4, 0, []int{1, 1, 1, 1}},
		{7, 3, []int{3, 3, 1}},
		{10, 5, []int{5, 5}},
	}
	for _, tt := range tests {
		period := frame * time.Duration(max(tt.chunk, 1))
		clk := stagestest.NewClock(time.Unix(0, 0))
		sy := NewSynthesizer(Settings{SynthDelay: delay, FrameDelay: frame, FrameCount: tt.frames, FrameChunk: tt.chunk, Clock: clk})
		start := clk.Now()
		type emitted struct {
			at time.Time
			n  int
		}
		got := make(chan emitted, len(tt.sizes)) // (emit runs on the clock's tick, inside Advance)
		done := make(chan error, 1)
		go func() {
			done <- sy.Synthesize(context.Background(), "x", func(a backend.Audio) error {
				got <- emitted{clk.Now(), len(a.Samples)}
				return nil
			})
		}()
		waitFor(t, func() bool { return clk.Pending() == 1 }) // the synthesis delay
		clk.Advance(delay)
		at := []emitted{<-got}
		k := sy.clock
		waitFor(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.waiters == 1 })
		for len(at) < len(tt.sizes) {
			// A tick at a time: a step runs inside Advance, on its tick.
			clk.Advance(period / clockSlots)
			select {
			case e := <-got:
				at = append(at, e)
			default:
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		sy.Close()
		for i, e := range at {
			if want := tt.sizes[i] * 320; e.n != want {
				t.Errorf("chunk %d: emit %d carries %d samples, want %d", tt.chunk, i, e.n, want)
			}
		}
		if d := at[0].at.Sub(start); d != delay {
			t.Errorf("chunk %d: first emit after %v, want %v", tt.chunk, d, delay)
		}
		if len(at) > 1 {
			if d := at[1].at.Sub(at[0].at); d <= 0 || d > period {
				t.Errorf("chunk %d: second emit %v after the first, want (0, %v]", tt.chunk, d, period)
			}
		}
		for i := 2; i < len(at); i++ {
			if d := at[i].at.Sub(at[i-1].at); d != period {
				t.Errorf("chunk %d: emit %d %v after the one before, want %v", tt.chunk, i, d, period)
			}
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
		w := newTone(16000, 1)
		b.ReportAllocs()
		for i := range b.N {
			_ = w.frame(i)
		}
	})
}
