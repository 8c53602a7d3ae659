package webrtc

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/wav"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// rig is an engine with stub backends behind Handler (loopback candidates
// only) on an httptest listener.
type rig struct {
	t     testing.TB
	srv   *session.Engine
	http  *httptest.Server
	model *stub.Model
	synth *stub.Synthesizer
}

func newRig(t testing.TB, opts ...func(*session.Config, *stub.Settings)) *rig {
	t.Helper()
	cfg := session.Config{
		Session:        stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second},
		Model:          stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		Synthesis:      stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		CleanupTimeout: time.Second,
		QueueUpdate:    20 * time.Millisecond,
	}
	st := stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000}
	for _, o := range opts {
		o(&cfg, &st)
	}
	r := &rig{t: t, model: stub.NewModel(st), synth: stub.NewSynthesizer(st)}
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth
	e, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = e
	mux := http.NewServeMux()
	mux.Handle("GET /v1/webrtc", Handler(e, Config{LoopbackOnly: true}))
	r.http = httptest.NewServer(mux)
	t.Cleanup(func() {
		r.model.Close()
		r.synth.Close()
		r.srv.Close()
		r.http.CloseClientConnections()
		r.http.Close()
	})
	return r
}

func (r *rig) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(r.http.URL, "http") + path
}

// msg is a decoded server message.
type msg struct {
	Type        string         `json:"type"`
	Disposition string         `json:"disposition"`
	Stage       string         `json:"stage"`
	Generation  uint64         `json:"generation"`
	Cancelled   []string       `json:"cancelled"`
	Heard       *session.Heard `json:"heard"`
	At          time.Time
}

func lastOf(ms []msg, typ string) msg {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == typ {
			return ms[i]
		}
	}
	return msg{}
}

func types(ms []msg) []string {
	var out []string
	for _, m := range ms {
		s := m.Type
		if m.Stage != "" && m.Type == "disposition" {
			s += ":" + m.Stage
		}
		if m.Disposition != "" {
			s += ":" + m.Disposition
		}
		out = append(out, s)
	}
	return out
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// speech reads an espeak-ng fixture from media/testdata at rate.
func speech(t testing.TB, name string, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../../media/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate == rate {
		return a.Samples
	}
	s, err := pcm.Resample(a.Samples, a.SampleRate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
