package pocketsphinx

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
)

var _ backend.Recognizer = (*Recognizer)(nil)

// speak returns espeak-ng's rendering of text at its native rate.
func speak(t testing.TB, text string) backend.Audio {
	t.Helper()
	s, err := espeak.New(espeak.Options{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	a := backend.Audio{Rate: espeak.Rate}
	err = s.Synthesize(context.Background(), text, func(c backend.Audio) error {
		a.Samples = append(a.Samples, c.Samples...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// phone is a as a telephone caller sends it: 8 kHz µ-law, decoded.
func phone(t testing.TB, a backend.Audio) backend.Audio {
	t.Helper()
	s, err := pcm.Resample(a.Samples, a.Rate, 8000)
	if err != nil {
		t.Fatal(err)
	}
	return backend.Audio{Rate: 8000, Samples: g711.DecodeMulaw(nil, g711.EncodeMulaw(nil, s))}
}

func newRecognizer(t testing.TB, o Options) *Recognizer {
	t.Helper()
	if !Available() {
		t.Fatal("pocketsphinx not installed: apt-get install pocketsphinx pocketsphinx-en-us")
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Sentences are the test sentences with the key words each transcript should
// contain (docs/BENCHMARKS.md reports how the whole sentences fare).
// contain (docs/BENCHMARKS.md reports how the whole sentences fare). Always
// marks the sentences that must be heard whole every time.
var Sentences = []struct {
	Text, Keys string
	Always     bool
}{
	{"Please call me back tomorrow morning.", "call back", true},
	{"I would like to speak to a person.", "speak person", false},
	{"What are your opening hours?", "opening hours", true},
	{"Are you open on Saturday?", "open saturday", false},
	{"Can I talk to someone about my order?", "talk order", false},
	{"All of our lines are busy, so you are waiting in line.", "lines busy", false},
}

// missing returns the words of keys that transcript lacks.
func missing(transcript, keys string) []string {
	got := Words(transcript)
	var out []string
	for _, k := range Words(keys) {
		if !slices.Contains(got, k) {
			out = append(out, k)
		}
	}
	return out
}

// TestRecognizeSpokenSentences speaks each test sentence with espeak-ng and
// recognizes it as a browser sends it (22 kHz) and as a phone does (8 kHz
// µ-law). The answers to an offer must always be heard; of all the key
// words, at least two thirds (the figures are in docs/BENCHMARKS.md).
func TestRecognizeSpokenSentences(t *testing.T) {
	r := newRecognizer(t, Options{})
	keys, heard := 0, 0
	for _, s := range Sentences {
		speech := speak(t, s.Text)
		for _, c := range []struct {
			name string
			a    backend.Audio
		}{{"22kHz", speech}, {"8kHz-ulaw", phone(t, speech)}} {
			got, err := r.Recognize(context.Background(), c.a)
			if err != nil {
				t.Fatalf("%s %q: %v", c.name, s.Text, err)
			}
			m := missing(got, s.Keys)
			t.Logf("%s %q -> %q (missing %v)", c.name, s.Text, got, m)
			keys += len(Words(s.Keys))
			heard += len(Words(s.Keys)) - len(m)
			if s.Always && len(m) > 0 {
				t.Errorf("%s %q: transcript %q lacks %v", c.name, s.Text, got, m)
			}
		}
	}
	t.Logf("%d of %d key words heard", heard, keys)
	if 3*heard < 2*keys {
		t.Errorf("only %d of %d key words heard", heard, keys)
	}
}

func TestGeneralModel(t *testing.T) {
	r := newRecognizer(t, Options{LM: LMGeneral})
	got, err := r.Recognize(context.Background(), speak(t, "What are your opening hours?"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("general model: %q", got)
	if m := missing(got, "opening"); len(m) > 0 {
		t.Errorf("transcript %q lacks %v", got, m)
	}
}

func TestCorpusExtends(t *testing.T) {
	r := newRecognizer(t, Options{Corpus: []string{"the zebra crossing is closed"}})
	got, err := r.Recognize(context.Background(), speak(t, "The zebra crossing is closed."))
	if err != nil {
		t.Fatal(err)
	}
	if m := missing(got, "zebra"); len(m) > 0 {
		t.Errorf("transcript %q lacks %v", got, m)
	}
}

func TestSilenceAndEmpty(t *testing.T) {
	r := newRecognizer(t, Options{})
	for _, a := range []backend.Audio{{}, {Rate: 16000, Samples: make([]int16, 16000)}} {
		got, err := r.Recognize(context.Background(), a)
		if err != nil || got != "" {
			t.Errorf("%v of silence: %q, %v", a.Duration(), got, err)
		}
	}
}

func TestTooLongRejected(t *testing.T) {
	r := newRecognizer(t, Options{MaxAudio: time.Second})
	_, err := r.Recognize(context.Background(), backend.Audio{Rate: 8000, Samples: make([]int16, 16000)})
	var be *backend.Error
	if !errors.As(err, &be) || be.Kind != backend.KindRejected {
		t.Fatalf("got %v, want a rejected backend error", err)
	}
}

func TestMissingExecutable(t *testing.T) {
	r := newRecognizer(t, Options{Path: "/nonexistent/pocketsphinx_continuous"})
	_, err := r.Recognize(context.Background(), speak(t, "hello"))
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

// TestCancelKillsDecoder cancels while the decoder runs: Recognize returns
// the context's error only after the process was killed and waited for.
func TestCancelKillsDecoder(t *testing.T) {
	r := newRecognizer(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pid int
	r.started = func(p int) { pid = p; cancel() }
	long := speak(t, strings.Repeat("Please call me back tomorrow morning. ", 8))
	_, err := r.Recognize(ctx, long)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if pid == 0 {
		t.Fatal("decoder never started")
	}
	// Reaped: no process (not even a zombie) has its pid.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("decoder %d still exists after Recognize returned: %v", pid, err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !os.IsNotExist(err) {
		t.Fatalf("/proc/%d: %v", pid, err)
	}
}

// TestProbe: pocketsphinx_continuous runs (its usage error counts) and
// the model is installed; a missing binary or model is reported.
func TestProbe(t *testing.T) {
	var _ backend.Prober = (*Recognizer)(nil)
	ctx := context.Background()
	if err := newRecognizer(t, Options{LM: LMGeneral}).Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if err := newRecognizer(t, Options{LM: LMGeneral, Path: "/nonexistent/pocketsphinx_continuous"}).Probe(ctx); err == nil {
		t.Error("missing binary: probe passed")
	}
	r := newRecognizer(t, Options{LM: LMGeneral})
	r.mdef = "/nonexistent/mdef"
	if err := r.Probe(ctx); err == nil || !strings.Contains(err.Error(), "acoustic model") {
		t.Errorf("missing model: %v", err)
	}
}
