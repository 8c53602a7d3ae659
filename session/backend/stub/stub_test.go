package stub

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

var (
	_ backend.Model       = (*Model)(nil)
	_ backend.Synthesizer = (*Synthesizer)(nil)
	_ backend.Recognizer  = (*Recognizer)(nil)
)

func TestModelReply(t *testing.T) {
	m := NewModel(Settings{Tokens: 4, TokenDelay: time.Millisecond})
	defer m.Close()
	var got []string
	err := m.Reply(context.Background(), backend.Turn{Text: "hello there"}, func(d string) error {
		got = append(got, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ""); s != "hello there hello there." {
		t.Fatalf("reply %q", s)
	}
	if strings.Join(m.Deltas("hello there"), "") != strings.Join(got, "") {
		t.Fatal("Deltas differs from Reply")
	}
	if m.Running() != 0 || m.MaxRunning() != 1 || m.Started() != 1 {
		t.Fatalf("counter running=%d max=%d started=%d", m.Running(), m.MaxRunning(), m.Started())
	}
}

// TestCleanupDelay checks the release evidence: after cancel, Reply and
// Synthesize return only once CleanupDelay has passed on their clock, and
// the call counts as running until then.
func TestCleanupDelay(t *testing.T) {
	const cleanup = 30 * time.Millisecond
	clk := newSpyClock()
	s := Settings{ModelDelay: time.Hour, SynthDelay: time.Hour, CleanupDelay: cleanup, Clock: clk}
	m, sy := NewModel(s), NewSynthesizer(s)
	defer m.Close()
	defer sy.Close()
	for _, tc := range []struct {
		name    string
		call    func(context.Context) error
		counter *Counter
	}{
		{"model", func(ctx context.Context) error {
			return m.Reply(ctx, backend.Turn{Text: "x"}, func(string) error { return nil })
		}, &m.Counter},
		{"synth", func(ctx context.Context) error {
			return sy.Synthesize(ctx, "x", func(backend.Audio) error { return nil })
		}, &sy.Counter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx) }()
			clk.await(t, time.Hour) // the first delay
			cancel()
			clk.await(t, cleanup)
			clk.Advance(cleanup - time.Nanosecond)
			select {
			case err := <-done:
				t.Fatalf("returned (%v) before the cleanup delay", err)
			default:
			}
			if tc.counter.Running() != 1 {
				t.Fatal("not counted as running during its cleanup")
			}
			clk.Advance(time.Nanosecond)
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if tc.counter.Running() != 0 {
				t.Fatal("still counted as running after return")
			}
		})
	}
}

func TestEmitErrorStops(t *testing.T) {
	sy := NewSynthesizer(Settings{FrameCount: 5, Rate: 8000})
	defer sy.Close()
	stop := errors.New("stale generation")
	frames := 0
	err := sy.Synthesize(context.Background(), "x", func(a backend.Audio) error {
		if a.Rate != 8000 || len(a.Samples) != 160 {
			t.Errorf("frame rate %d samples %d", a.Rate, len(a.Samples))
		}
		frames++
		if frames == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || backend.KindOf(err) != backend.KindEmit {
		t.Fatalf("err %v", err)
	}
	if frames != 2 {
		t.Fatalf("%d frames after stop", frames)
	}
}

func TestSynthesizeFrames(t *testing.T) {
	sy := NewSynthesizer(Settings{FrameCount: 3})
	defer sy.Close()
	var total int
	var loud bool
	err := sy.Synthesize(context.Background(), "x", func(a backend.Audio) error {
		total += len(a.Samples)
		for _, v := range a.Samples {
			loud = loud || v > 4000
		}
		return nil
	})
	if err != nil || total != 3*320 || !loud {
		t.Fatalf("err %v samples %d loud %v", err, total, loud)
	}
}

// TestHang checks that a hung call stays running after cancel until Close.
func TestHang(t *testing.T) {
	m := NewModel(Settings{ModelDelay: time.Hour, Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Reply(ctx, backend.Turn{}, func(string) error { return nil }) }()
	waitFor(t, func() bool { return m.Running() == 1 })
	cancel()
	select {
	case err := <-done:
		t.Fatalf("hung call returned %v before Close", err)
	case <-time.After(20 * time.Millisecond):
	}
	if m.Running() != 1 {
		t.Fatal("hung call not counted as running")
	}
	m.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestFailRate(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		min, max int
	}{{0, 0, 0}, {1, 100, 100}, {0.5, 30, 70}} {
		m := NewModel(Settings{FailRate: tc.rate, FailKind: backend.KindOverloaded, Tokens: 1})
		fails := 0
		for range 100 {
			err := m.Reply(context.Background(), backend.Turn{}, func(string) error { return nil })
			if err != nil {
				if !errors.Is(err, backend.ErrOverloaded) {
					t.Fatalf("err %v", err)
				}
				fails++
			}
		}
		if fails < tc.min || fails > tc.max {
			t.Errorf("rate %v: %d failures", tc.rate, fails)
		}
	}
}

func TestMaxRunning(t *testing.T) {
	clk := newSpyClock()
	m := NewModel(Settings{ModelDelay: 20 * time.Millisecond, Tokens: 1, Clock: clk})
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { _ = m.Reply(context.Background(), backend.Turn{}, func(string) error { return nil }) })
	}
	for range 5 {
		clk.await(t, 20*time.Millisecond)
	}
	clk.Advance(20 * time.Millisecond)
	wg.Wait()
	if m.MaxRunning() != 5 || m.Running() != 0 || m.Started() != 5 {
		t.Fatalf("max %d running %d started %d", m.MaxRunning(), m.Running(), m.Started())
	}
}

func TestRecognizer(t *testing.T) {
	r := NewRecognizer(Settings{})
	for _, tc := range []struct {
		a    backend.Audio
		want string
	}{
		{backend.Audio{Rate: 16000, Samples: make([]int16, 16000)}, "heard 1000 ms"},
		{backend.Audio{Rate: 8000, Samples: make([]int16, 400)}, "heard 50 ms"},
		{backend.Audio{Rate: 8000}, ""},
	} {
		got, err := r.Recognize(context.Background(), tc.a)
		if err != nil || got != tc.want {
			t.Errorf("got %q, %v; want %q", got, err, tc.want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
