package backends

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.Flags(fs)
	for _, name := range []string{"model", "synth", "recognize", "model-url", "model-name", "model-api-key-env",
		"system-prompt", "synth-url", "synth-voice", "recognize-url", "stub-model-delay", "stub-token-delay",
		"stub-tokens", "stub-synth-delay", "stub-frame-count", "stub-frame-delay", "stub-cleanup-delay", "stub-fail-rate", "stub-hang"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag -%s not registered", name)
		}
	}
	err := fs.Parse([]string{"-model=openai", "-synth=stub", "-recognize=openai", "-model-url=http://127.0.0.1:8000/v1",
		"-model-name=qwen", "-stub-tokens=3", "-stub-cleanup-delay=7ms", "-stub-fail-rate=0.25", "-stub-hang"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "openai" || c.Synth != "stub" || c.ModelURL != "http://127.0.0.1:8000/v1" || c.ModelName != "qwen" ||
		c.Stub.Tokens != 3 || c.Stub.CleanupDelay != 7*time.Millisecond || c.Stub.FailRate != 0.25 || !c.Stub.Hang ||
		c.Stub.ModelDelay != DefaultConfig().Stub.ModelDelay || c.SystemPrompt == "" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestDefaultSet(t *testing.T) {
	s, err := New(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := Stub
	if espeak.Available() {
		want = Espeak
	}
	wantRec := Stub
	if pocketsphinx.Available() {
		wantRec = Pocketsphinx
	}
	if s.ModelName != Demo || s.SynthName != want || s.RecognizeName != wantRec || s.StubModel == nil {
		t.Fatalf("set %s %s %s", s.ModelName, s.SynthName, s.RecognizeName)
	}
	if want == Stub && len(s.Notes) == 0 {
		t.Fatal("stub synthesizer chosen without a note")
	}
	if wantRec == Stub && !slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "recognition is a stub") }) {
		t.Fatalf("stub recognizer chosen without a note: %q", s.Notes)
	}
}

// TestPocketsphinxRecognizes builds -recognize=pocketsphinx (CI installs it,
// .ci/test) and has it hear espeak-ng.
func TestPocketsphinxRecognizes(t *testing.T) {
	if !pocketsphinx.Available() || !espeak.Available() {
		t.Fatal("apt-get install pocketsphinx pocketsphinx-en-us espeak-ng")
	}
	c := DefaultConfig()
	c.Recognize = Pocketsphinx
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sy, err := espeak.New(espeak.Options{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	a := backend.Audio{Rate: espeak.Rate}
	if err := sy.Synthesize(context.Background(), "Please call me back tomorrow morning.", func(c backend.Audio) error {
		a.Samples = append(a.Samples, c.Samples...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	text, err := s.Recognizer.Recognize(context.Background(), a)
	if err != nil || !strings.Contains(text, "call me back tomorrow") {
		t.Fatalf("heard %q, %v", text, err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []Config{
		{Model: "gpt"},
		{Synth: "festival"},
		{Recognize: "vosk"},
		{Model: OpenAI},                             // no URL
		{Synth: OpenAI, SynthURL: "not a url"},      // bad URL
		{Synth: Espeak, SynthVoice: "--help"},       // option injection
		{Recognize: OpenAI, RecognizeURL: "ftp://"}, // bad scheme
	} {
		if s, err := New(c, nil); err == nil {
			s.Close()
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestOpenAISet builds every stage on a fake OpenAI-compatible server and
// checks that calls and failures are counted per backend.
func TestOpenAISet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		case "/v1/audio/speech":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/v1/audio/transcriptions":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"text":"hello"}`)
		}
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	s, err := New(Config{
		Model: OpenAI, Synth: OpenAI, Recognize: OpenAI,
		ModelURL: srv.URL + "/v1", ModelName: "m", SynthURL: srv.URL + "/v1", RecognizeURL: srv.URL + "/v1",
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var reply strings.Builder
	if err := s.Model.Reply(context.Background(), backend.Turn{Text: "hi"}, func(d string) error {
		reply.WriteString(d)
		return nil
	}); err != nil || reply.String() != "Hi" {
		t.Fatalf("reply %q %v", reply.String(), err)
	}
	if err := s.Synthesizer.Synthesize(context.Background(), "hi", func(backend.Audio) error { return nil }); !errors.Is(err, backend.ErrOverloaded) {
		t.Fatalf("synth %v", err)
	}
	if text, err := s.Recognizer.Recognize(context.Background(), backend.Audio{Rate: 16000, Samples: make([]int16, 160)}); err != nil || text != "hello" {
		t.Fatalf("recognize %q %v", text, err)
	}
	for name, want := range map[string]float64{"model/openai": 1, "synth/openai": 1, "recognize/openai": 1} {
		if got := testutil.ToFloat64(s.Metrics.Requests(name)); got != want {
			t.Errorf("%s requests %v", name, got)
		}
	}
	if got := testutil.ToFloat64(s.Metrics.Failures("synth/openai", backend.KindOverloaded)); got != 1 {
		t.Errorf("synth overloaded %v", got)
	}
}

// TestStubHangReleasedByClose: a hung stub call ends when the Set closes.
func TestStubHangReleasedByClose(t *testing.T) {
	c := DefaultConfig()
	c.Synth = Stub
	c.Stub.ModelDelay = time.Hour
	c.Stub.Hang = true
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Model.Reply(ctx, backend.Turn{}, func(string) error { return nil }) }()
	for s.StubModel.Running() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	s.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

// TestClockReachesBackends: Config.Clock is the clock the stubs (capped
// or not) and the health probes run on.
func TestClockReachesBackends(t *testing.T) {
	for _, capacity := range []int{0, 2} {
		clk := stagestest.NewClock(time.Unix(0, 0))
		c := DefaultConfig()
		c.Model, c.Synth, c.Recognize = Stub, Stub, Stub
		c.Stub = stub.Settings{ModelDelay: time.Hour, Tokens: 1}
		c.StubCapacity = capacity
		c.Clock = clk
		s, err := New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Model.Reply(context.Background(), backend.Turn{}, func(string) error { return nil }) }()
		for clk.Pending() == 0 {
			time.Sleep(time.Millisecond)
		}
		clk.Advance(time.Hour)
		if err := <-done; err != nil {
			t.Fatalf("capacity %d: %v", capacity, err)
		}
		s.Close()
	}
	clk := stagestest.NewClock(time.Unix(0, 0))
	c := DefaultConfig()
	c.Model, c.Synth, c.Recognize, c.Clock = Stub, Stub, Stub, clk
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); s.NewHealth(nil).Run(ctx) }()
	for clk.Pending() == 0 { // the probe interval, on clk
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-ran
}

// TestAutoWithoutLocalEngines: with neither espeak-ng nor pocketsphinx in
// PATH, auto falls back to the stubs and says so for the startup log.
func TestAutoWithoutLocalEngines(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s, err := New(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.SynthName != Stub || s.RecognizeName != Stub || s.StubRecognizer == nil {
		t.Fatalf("set %s %s", s.SynthName, s.RecognizeName)
	}
	if !slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "recognition is a stub") }) {
		t.Fatalf("notes %q", s.Notes)
	}
	c := DefaultConfig()
	c.Recognize = Pocketsphinx
	if _, err := New(c, nil); err == nil || !strings.Contains(err.Error(), "apt-get install pocketsphinx") {
		t.Fatalf("-recognize=pocketsphinx without it: %v", err)
	}
}
