package load

import (
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/vad"
)

// The synthetic voice is one utterance to the server's energy VAD (its
// defaults: -40 dBFS, 60 ms to start, 500 ms of quiet to end), however
// long it lasts, and silence ends it.
func TestVoiceIsOneUtterance(t *testing.T) {
	for _, d := range []time.Duration{100 * time.Millisecond, 800 * time.Millisecond, 5 * time.Second} {
		det, err := vad.New(vad.Config{SampleRate: telephonyRate})
		if err != nil {
			t.Fatal(err)
		}
		var v voice
		var pcm [frameSamples]int16
		var evs []vad.Event
		n := int(d / frame)
		for i := range n + 40 {
			f := silenceFrame[:]
			if i < n {
				f = v.frame(nil, &pcm)
			}
			evs = det.Process(evs, g711.DecodeMulaw(nil, f))
		}
		want := fmt.Sprintf("[{speech_start 0s} {speech_end %v}]", d)
		if got := fmt.Sprint(kinds(evs)); got != want {
			t.Errorf("%v of voice: VAD heard %s, want %s", d, got, want)
		}
	}
}

type kindAt struct {
	Kind vad.Kind
	At   time.Duration
}

func kinds(evs []vad.Event) []kindAt {
	out := make([]kindAt, len(evs))
	for i, e := range evs {
		out[i] = kindAt{e.Kind, e.At}
	}
	return out
}

// The playback clock: audio plays from its arrival behind what is
// buffered, a mark is due when the audio before it has played, and clear
// makes every pending mark due at once.
func TestPlayback(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var p playback
	p.media(ms(0), 100*time.Millisecond)
	p.media(ms(10), 100*time.Millisecond) // queued behind the first: plays until 200
	p.mark(ms(20), "a")
	if _, ok := p.pop(ms(199)); ok || !p.next().Equal(ms(200)) {
		t.Fatalf("mark due at %v, want 200ms", p.next().Sub(t0))
	}
	if name, ok := p.pop(ms(200)); !ok || name != "a" || p.pending() {
		t.Fatalf("pop at 200ms: %q %v", name, ok)
	}
	p.media(ms(500), 100*time.Millisecond) // after a gap: plays from its arrival
	p.mark(ms(500), "b")
	p.media(ms(500), 100*time.Millisecond)
	p.mark(ms(500), "c")
	if !p.next().Equal(ms(600)) {
		t.Fatalf("b due at %v, want 600ms", p.next().Sub(t0))
	}
	p.clear(ms(520))
	for _, want := range []string{"b", "c"} {
		if name, ok := p.pop(ms(520)); !ok || name != want {
			t.Fatalf("after clear: %q %v, want %q at once", name, ok, want)
		}
	}
	p.media(ms(530), 20*time.Millisecond)
	if !p.end.Equal(ms(550)) {
		t.Fatalf("audio after clear plays until %v, want 550ms", p.end.Sub(t0))
	}
}

// A server that sends marks without end cannot grow the caller's queue:
// past maxPending, what is pending falls due at once, in order.
func TestPlaybackOverrun(t *testing.T) {
	now := time.Unix(1000, 0)
	var p playback
	p.media(now, time.Minute)
	for i := range 3 * maxPending {
		p.mark(now, fmt.Sprint(i))
		for {
			if _, ok := p.pop(now); !ok {
				break
			}
		}
	}
	if len(p.marks) > maxPending {
		t.Fatalf("%d marks pending", len(p.marks))
	}
}
