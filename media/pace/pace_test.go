package pace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type rec struct {
	at    time.Time
	frame []byte
	mark  string
	due   time.Time
}

// runUntil runs p until stop reports true for the events so far, or 5 s pass.
func runUntil(t *testing.T, p *Pacer, stop func([]rec) bool) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []rec
	done := errors.New("done")
	err := p.Run(ctx, func(e Event) error {
		got = append(got, rec{time.Now(), bytes.Clone(e.Frame), e.Mark, e.Due})
		if stop(got) {
			return done
		}
		return nil
	})
	if !errors.Is(err, done) {
		t.Fatalf("Run = %v after %d events", err, len(got))
	}
	return got
}

func TestFramesOnSchedule(t *testing.T) {
	p := New(Config{FrameBytes: 160, Period: 10 * time.Millisecond, Fill: 0xFF})
	audio := make([]byte, 160*10+40) // 10 whole frames and a partial one
	for i := range audio {
		audio[i] = byte(i / 160)
	}
	if err := p.Write(audio); err != nil {
		t.Fatal(err)
	}
	p.Mark("u1")
	got := runUntil(t, p, func(r []rec) bool { return r[len(r)-1].mark == "u1" })
	if len(got) != 12 {
		t.Fatalf("got %d events, want 11 frames and a mark", len(got))
	}
	for k, r := range got[:11] {
		if len(r.frame) != 160 || r.frame[0] != byte(k) {
			t.Fatalf("frame %d: len %d first byte %d", k, len(r.frame), r.frame[0])
		}
		// Never early, and due times step by exactly one period: no burst, no drift.
		if r.at.Before(r.due) {
			t.Errorf("frame %d left %v before its due time", k, r.due.Sub(r.at))
		}
		if k > 0 {
			if d := r.due.Sub(got[k-1].due); d != 10*time.Millisecond {
				t.Errorf("frame %d due %v after the previous one", k, d)
			}
		}
	}
	last := got[10].frame
	if last[39] != 10 || last[40] != 0xFF || last[159] != 0xFF {
		t.Errorf("final partial frame not padded with fill: % X", last[36:44])
	}
	if p.Buffered() != 0 {
		t.Errorf("Buffered = %d after drain", p.Buffered())
	}
	if st := p.Stats(); st.Frames != 11 || st.Max < st.P50 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestPartialFrameWaits(t *testing.T) {
	p := New(Config{FrameBytes: 4, Period: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var frames [][]byte
	done := make(chan error)
	go func() {
		done <- p.Run(ctx, func(e Event) error {
			mu.Lock()
			frames = append(frames, bytes.Clone(e.Frame))
			mu.Unlock()
			return nil
		})
	}()
	_ = p.Write([]byte{1, 2})
	_ = p.Write([]byte{3, 4, 5})
	time.Sleep(20 * time.Millisecond)
	p.Flush()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	want := [][]byte{{1, 2, 3, 4}, {5, 0, 0, 0}}
	if fmt.Sprint(frames) != fmt.Sprint(want) {
		t.Fatalf("frames = %v, want %v", frames, want)
	}
}

func TestClearStopsUnsentAudio(t *testing.T) {
	p := New(Config{FrameBytes: 160, Period: 5 * time.Millisecond})
	_ = p.Write(make([]byte, 160*50))
	p.Mark("u1")
	_ = p.Write(make([]byte, 160*5))
	p.Mark("u2")
	var dropped int
	var marks []string
	got := runUntil(t, p, func(r []rec) bool {
		if len(r) == 3 {
			dropped, marks = p.Clear()
			_ = p.Write(make([]byte, 160))
			p.Mark("after")
		}
		return r[len(r)-1].mark == "after"
	})
	if len(got) != 5 {
		t.Fatalf("got %d events after clear at 3, want 3 + 1 frame + mark", len(got))
	}
	if dropped != 160*52 || fmt.Sprint(marks) != "[u1 u2]" {
		t.Errorf("Clear = %d bytes, marks %v", dropped, marks)
	}
}

func TestWriteBounded(t *testing.T) {
	p := New(Config{FrameBytes: 160, MaxBuffered: 320})
	if err := p.Write(make([]byte, 320)); err != nil {
		t.Fatal(err)
	}
	if err := p.Write([]byte{1}); !errors.Is(err, ErrFull) {
		t.Fatalf("Write over the bound = %v, want ErrFull", err)
	}
}

// TestCatchUpBounded stalls the emitter and checks that the pacer catches up
// (due times keep their grid) but restarts the schedule after a long stall.
func TestCatchUpBounded(t *testing.T) {
	p := New(Config{FrameBytes: 1, Period: 5 * time.Millisecond, MaxLag: 100 * time.Millisecond})
	_ = p.Write(make([]byte, 6))
	got := runUntil(t, p, func(r []rec) bool {
		if len(r) == 2 {
			time.Sleep(12 * time.Millisecond) // short stall: caught up
		}
		if len(r) == 4 {
			time.Sleep(160 * time.Millisecond) // long stall: rescheduled
		}
		return len(r) == 6
	})
	if d := got[3].due.Sub(got[0].due); d != 15*time.Millisecond {
		t.Errorf("after a short stall frame 3 due %v after frame 0, want 15ms", d)
	}
	if d := got[4].due.Sub(got[3].due); d < 100*time.Millisecond {
		t.Errorf("after a long stall the schedule was kept (%v): would burst", d)
	}
}

func ExamplePacer() {
	p := New(Config{FrameBytes: 160, Period: 20 * time.Millisecond, Fill: 0xFF})
	_ = p.Write(make([]byte, 400)) // 50 ms of 8 kHz µ-law
	p.Mark("utterance-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = p.Run(ctx, func(e Event) error {
		if e.Frame == nil {
			fmt.Println("mark", e.Mark)
			cancel()
			return nil
		}
		fmt.Println("frame", len(e.Frame))
		return nil
	})
	// Output:
	// frame 160
	// frame 160
	// frame 160
	// mark utterance-1
}
