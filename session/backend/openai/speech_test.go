package openai

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var (
	_ backend.Synthesizer = (*Synthesizer)(nil)
	_ backend.Recognizer  = (*Recognizer)(nil)
)

// pcm returns n samples counting up from start, little-endian.
func pcm(start, n int) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(start+i))
	}
	return b
}

func newSpeech(t *testing.T, url string, stall time.Duration) (*Synthesizer, *tracker) {
	t.Helper()
	return newSpeechOn(t, url, stall, nil)
}

// newSpeechOn is newSpeech with its watchdog on clock.
func newSpeechOn(t *testing.T, url string, stall time.Duration, clock backend.Clock) (*Synthesizer, *tracker) {
	t.Helper()
	hc, tr := newClient(t)
	s, err := NewSynthesizer(SpeechConfig{
		Endpoint: Endpoint{BaseURL: url + "/v1", StallTimeout: stall, HTTPClient: hc, Clock: clock},
		Model:    "tts-1", Voice: "alloy", ChunkBytes: 960,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, tr
}

func TestSpeechStreams(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/speech" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "audio/pcm")
		b := pcm(0, 1000)
		// Odd-sized writes: samples split across reads must survive.
		for len(b) > 0 {
			n := min(len(b), 333)
			w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	})
	s, tr := newSpeech(t, f.URL, 5*time.Second)
	var got []int16
	err := s.Synthesize(context.Background(), "Hello there.", func(a backend.Audio) error {
		if a.Rate != SpeechRate {
			t.Errorf("rate %d", a.Rate)
		}
		got = append(got, a.Samples...)
		return nil
	})
	tr.allClosed(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1000 {
		t.Fatalf("%d samples", len(got))
	}
	for i, v := range got {
		if int(v) != i {
			t.Fatalf("sample %d = %d", i, v)
		}
	}
	body := f.lastBody()
	if body["input"] != "Hello there." || body["response_format"] != "pcm" || body["voice"] != "alloy" || body["model"] != "tts-1" {
		t.Fatalf("request %v", body)
	}
}

func TestSpeechFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(f *fake) http.HandlerFunc
		want    error
	}{
		{"429", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }
		}, backend.ErrOverloaded},
		{"503", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }
		}, backend.ErrOverloaded},
		{"json instead of audio", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"status":"ok"}`))
			}
		}, backend.ErrMalformed},
		{"stall mid-stream", func(f *fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "audio/pcm")
				w.Write(pcm(0, 480))
				w.(http.Flusher).Flush()
				f.hold(r)
			}
		}, backend.ErrStalled},
		{"cut off", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "10000")
				w.Write(pcm(0, 100))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
		}, backend.ErrUnavailable},
		{"hung up before the status", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }
		}, backend.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fake
			f = newFake(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(f)(w, r) })
			f.Config.ErrorLog = quietLog()
			// The watchdog fires only once the server holds the request.
			const stall = time.Second
			clk := stagestest.NewClock(time.Unix(0, 0))
			s, tr := newSpeechOn(t, f.URL, stall, clk)
			stop := f.stallOn(clk, stall, func() bool { return true })
			err := s.Synthesize(context.Background(), "hi", func(backend.Audio) error { return nil })
			stop()
			tr.allClosed(t)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == backend.ErrStalled {
				f.waitGone()
			}
		})
	}
}

func TestSpeechBargeIn(t *testing.T) {
	var f *fake
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		for {
			select {
			case <-r.Context().Done():
				return
			case <-f.done:
				return
			case <-time.After(2 * time.Millisecond):
				w.Write(pcm(0, 480))
				w.(http.Flusher).Flush()
			}
		}
	})
	s, tr := newSpeech(t, f.URL, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err := s.Synthesize(ctx, "a long answer", func(backend.Audio) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	returned := time.Now()
	tr.allClosed(t)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	t.Logf("server saw the disconnect %v after Synthesize returned", f.waitGone().Sub(returned))
}

func newRecognizer(t *testing.T, url string, stall time.Duration) (*Recognizer, *tracker) {
	t.Helper()
	return newRecognizerOn(t, url, stall, nil)
}

// newRecognizerOn is newRecognizer with its watchdog on clock.
func newRecognizerOn(t *testing.T, url string, stall time.Duration, clock backend.Clock) (*Recognizer, *tracker) {
	t.Helper()
	hc, tr := newClient(t)
	r, err := NewRecognizer(TranscribeConfig{
		Endpoint: Endpoint{BaseURL: url + "/v1", StallTimeout: stall, HTTPClient: hc, Clock: clock},
		Model:    "whisper-1", Language: "en",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, tr
}

func TestTranscribe(t *testing.T) {
	speech := backend.Audio{Rate: 16000, Samples: []int16{1, -2, 300, -32768, 32767}}
	var upload []byte
	var fields = map[string]string{}
	f := newFake(t, nil)
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" {
			http.NotFound(w, r)
			return
		}
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			t.Error(err)
			return
		}
		f.mu.Lock()
		body := f.bodies[len(f.bodies)-1]
		f.mu.Unlock()
		mr := multipart.NewReader(strings.NewReader(string(body)), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "file" {
				upload = b
			} else {
				fields[p.FormName()] = string(b)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"text":"  I'd like to book a table.  "}`))
	}
	r, tr := newRecognizer(t, f.URL, 5*time.Second)
	got, err := r.Recognize(context.Background(), speech)
	tr.allClosed(t)
	if err != nil || got != "I'd like to book a table." {
		t.Fatalf("got %q, %v", got, err)
	}
	if string(upload) != string(WAV(speech)) {
		t.Fatalf("upload differs from the WAV of the speech")
	}
	if fields["model"] != "whisper-1" || fields["language"] != "en" || fields["response_format"] != "json" {
		t.Fatalf("fields %v", fields)
	}
}

func TestTranscribeFailures(t *testing.T) {
	speech := backend.Audio{Rate: 16000, Samples: make([]int16, 1600)}
	for _, tc := range []struct {
		name    string
		handler func(f *fake) http.HandlerFunc
		want    error
	}{
		{"429", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
			}
		}, backend.ErrOverloaded},
		{"503", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }
		}, backend.ErrOverloaded},
		{"502", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }
		}, backend.ErrUnavailable},
		{"bad json", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"text":`))
			}
		}, backend.ErrMalformed},
		{"text/plain", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }
		}, backend.ErrMalformed},
		{"huge response", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"text":"`))
				w.Write([]byte(strings.Repeat("a", 2<<20)))
				w.Write([]byte(`"}`))
			}
		}, backend.ErrMalformed},
		{"stall", func(f *fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { f.hold(r) }
		}, backend.ErrStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fake
			f = newFake(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(f)(w, r) })
			// The watchdog fires only once the server holds the request.
			const stall = time.Second
			clk := stagestest.NewClock(time.Unix(0, 0))
			r, tr := newRecognizerOn(t, f.URL, stall, clk)
			stop := f.stallOn(clk, stall, func() bool { return true })
			_, err := r.Recognize(context.Background(), speech)
			stop()
			tr.allClosed(t)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == backend.ErrStalled {
				f.waitGone()
			}
		})
	}
	r, _ := newRecognizer(t, "http://127.0.0.1:1", time.Second)
	if _, err := r.Recognize(context.Background(), backend.Audio{Rate: 16000, Samples: make([]int16, 16000*200)}); !errors.Is(err, backend.ErrRejected) {
		t.Fatalf("over-long speech: %v", err)
	}
	if got, err := r.Recognize(context.Background(), backend.Audio{Rate: 16000}); got != "" || err != nil {
		t.Fatalf("no speech: %q %v", got, err)
	}
}

func TestTranscribeCancel(t *testing.T) {
	var f *fake
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) { f.hold(r) })
	r, _ := newRecognizer(t, f.URL, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.requests() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := r.Recognize(ctx, backend.Audio{Rate: 8000, Samples: make([]int16, 800)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	f.waitGone()
}
