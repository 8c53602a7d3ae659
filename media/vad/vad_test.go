package vad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/wav"
)

const ms = time.Millisecond

// signal builds rate-Hz PCM from segments of (duration, dBFS) tones at 440 Hz
// over faint noise; dBFS <= -100 means noise only.
func signal(rate int, segs ...[2]float64) []int16 {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []int16
	for _, s := range segs {
		n := int(s[0] * float64(rate) / 1000)
		amp := 32768 * math.Pow(10, s[1]/20)
		for i := range n {
			v := rng.NormFloat64() * 10 // about -70 dBFS of noise
			if s[1] > -100 {
				v += amp * math.Sin(2*math.Pi*440*float64(len(out)+i)/float64(rate))
			}
			out = append(out, int16(v))
		}
	}
	return out
}

func run(t *testing.T, cfg Config, pcm []int16, chunk int) []Event {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for len(pcm) > 0 {
		k := min(chunk, len(pcm))
		evs = d.Process(evs, pcm[:k])
		pcm = pcm[k:]
	}
	return evs
}

func TestToneAndSilence(t *testing.T) {
	tests := []struct {
		name string
		segs [][2]float64
		want string
	}{
		{"silence", [][2]float64{{2000, -200}}, "[]"},
		{"quiet tone below threshold", [][2]float64{{500, -200}, {1000, -50}, {800, -200}}, "[]"},
		{"tone", [][2]float64{{500, -200}, {1000, -20}, {800, -200}},
			"[speech_start@500ms/560ms speech_end@1.5s/2s]"},
		{"blip shorter than min speech", [][2]float64{{500, -200}, {40, -10}, {800, -200}}, "[]"},
		{"gap shorter than hangover", [][2]float64{{200, -200}, {400, -20}, {300, -200}, {400, -20}, {700, -200}},
			"[speech_start@200ms/260ms speech_end@1.3s/1.8s]"},
		{"two utterances", [][2]float64{{200, -200}, {400, -20}, {600, -200}, {400, -20}, {600, -200}},
			"[speech_start@200ms/260ms speech_end@600ms/1.1s speech_start@1.2s/1.26s speech_end@1.6s/2.1s]"},
		{"speech to the end", [][2]float64{{100, -200}, {500, -20}}, "[speech_start@100ms/160ms]"},
	}
	for _, tt := range tests {
		for _, rate := range []int{8000, 16000} {
			for _, chunk := range []int{160, 37, 1000} {
				evs := run(t, Config{SampleRate: rate}, signal(rate, tt.segs...), chunk)
				if got := format(evs); got != tt.want {
					t.Errorf("%s at %d Hz, chunk %d: %s, want %s", tt.name, rate, chunk, got, tt.want)
				}
			}
		}
	}
}

func format(evs []Event) string {
	s := "["
	for i, e := range evs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%v@%v/%v", e.Kind, e.At, e.Detected)
	}
	return s + "]"
}

// TestSpeech runs the detector over espeak-ng speech (media/testdata,
// made by gen-speech.sh): 300 ms of silence, an utterance, 500 ms of silence.
func TestSpeech(t *testing.T) {
	for _, name := range []string{"hello-16k", "hello-8k", "stop-16k", "stop-8k"} {
		a, err := wav.ReadFile("../testdata/" + name + ".wav")
		if err != nil {
			t.Fatal(err)
		}
		evs := run(t, Config{SampleRate: a.SampleRate, Hangover: 400 * ms}, a.Samples, 320)
		if len(evs) != 2 || evs[0].Kind != SpeechStart || evs[1].Kind != SpeechEnd {
			t.Fatalf("%s: events %s, want one start and one end", name, format(evs))
		}
		if at := evs[0].At; at < 280*ms || at > 450*ms {
			t.Errorf("%s: speech starts at %v, want just after the 300 ms lead-in", name, at)
		}
		if end, total := evs[1].At, a.Duration(); end < total-900*ms || end > total-450*ms {
			t.Errorf("%s: speech ends at %v of %v, want just before the 500 ms tail", name, end, total)
		}
	}
}

// TestSpeechThroughMulaw checks the telephony path: speech encoded to µ-law
// and decoded again is detected the same way.
func TestSpeechThroughMulaw(t *testing.T) {
	a, err := wav.ReadFile("../testdata/hello-8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	pcm := g711.DecodeMulaw(nil, g711.EncodeMulaw(nil, a.Samples))
	direct := run(t, Config{SampleRate: 8000}, a.Samples, 160)
	viaMulaw := run(t, Config{SampleRate: 8000}, pcm, 160)
	if format(direct) != format(viaMulaw) {
		t.Errorf("µ-law changed the events: %s vs %s", format(viaMulaw), format(direct))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{}, {SampleRate: 8000, ThresholdDBFS: 3}, {SampleRate: 10, Frame: ms}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func ExampleDetector() {
	d, _ := New(Config{SampleRate: 8000, ThresholdDBFS: -40, MinSpeech: 60 * ms, Hangover: 300 * ms})
	var evs []Event
	evs = d.Process(evs, make([]int16, 1600)) // 200 ms of silence
	loud := make([]int16, 4000)               // 500 ms of a loud square wave
	for i := range loud {
		loud[i] = int16(8000 * (1 - 2*(i/8%2)))
	}
	evs = d.Process(evs, loud)
	evs = d.Process(evs, make([]int16, 4000))
	for _, e := range evs {
		fmt.Println(e.Kind, e.At, e.Detected)
	}
	// Output:
	// speech_start 200ms 260ms
	// speech_end 700ms 1s
}

func BenchmarkProcess(b *testing.B) {
	d, _ := New(Config{SampleRate: 16000})
	pcm := signal(16000, [2]float64{20, -20})
	b.SetBytes(int64(len(pcm) * 2))
	var evs []Event
	for b.Loop() {
		evs = d.Process(evs[:0], pcm)
	}
}

// sumSquares is the float64 sum of squares the detector compared before,
// exactly, for any frame length and at full scale.
func TestSumSquares(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 160, 320, 961, 2880} {
		for _, fill := range []func(i int) int16{
			func(int) int16 { return -32768 },
			func(int) int16 { return 32767 },
			func(i int) int16 { return int16(i*7919 - 30000) },
		} {
			f := make([]int16, n)
			var want float64
			for i := range f {
				f[i] = fill(i)
				want += float64(f[i]) * float64(f[i])
			}
			if got := sumSquares(f); float64(got) != want {
				t.Errorf("%d samples: sumSquares = %d, want %.0f", n, got, want)
			}
		}
	}
}
