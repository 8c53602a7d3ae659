package telephony

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The spoken tests run a whole server with real speech on both sides:
// espeak-ng speaks for the caller and for frontdoor, pocketsphinx listens
// for frontdoor and for the test (CI installs both: .ci/test).

// spokenServer is a server with the espeak-ng synthesizer, the pocketsphinx
// recognizer and a stub model that records its turns.
type spokenServer struct {
	srv   *session.Engine
	http  *httptest.Server
	model *historyModel
	rec   *pocketsphinx.Recognizer
}

func newSpokenServer(t *testing.T, sessionLimits stages.Limits) *spokenServer {
	t.Helper()
	if !espeak.Available() || !pocketsphinx.Available() {
		t.Fatal("apt-get install espeak-ng pocketsphinx pocketsphinx-en-us (bash .ci/test does)")
	}
	// The voice frontdoor serve uses (backends.DefaultConfig's -synth-voice).
	synth, err := espeak.New(espeak.Options{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := pocketsphinx.New(pocketsphinx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := stub.NewModel(stub.Settings{Tokens: 4})
	s := &spokenServer{model: &historyModel{Model: m}, rec: rec}
	lim := stages.Limits{Slots: 2, Waiting: 2, MaxAge: 10 * time.Second}
	s.srv, err = session.New(session.Config{
		Session: sessionLimits, Recognize: lim, Model: lim, Synthesis: lim,
		ModelBackend: s.model, Synthesizer: synth, Recognizer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.http = httptest.NewServer(testHandler(t, s.srv, Config{}, GatewayConfig{}, nil))
	t.Cleanup(func() {
		s.http.CloseClientConnections()
		s.http.Close()
		s.srv.Close()
		m.Close()
		rec.Close()
	})
	return s
}

func (s *spokenServer) url(path string) string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + path
}

// say returns espeak-ng's en-us voice saying text, at rate.
func say(t *testing.T, text string, rate int) []int16 {
	t.Helper()
	return espeakAt(t, "en-us", text, rate)
}

// espeakAt is text said by espeak-ng's voice, resampled to rate.
func espeakAt(t testing.TB, voice, text string, rate int) []int16 {
	t.Helper()
	sy, err := espeak.New(espeak.Options{Voice: voice})
	if err != nil {
		t.Fatal(err)
	}
	var out []int16
	if err := sy.Synthesize(context.Background(), text, func(a backend.Audio) error {
		out = append(out, a.Samples...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if out, err = pcm.Resample(out, espeak.Rate, rate); err != nil {
		t.Fatal(err)
	}
	return out
}

// lacks returns the words of keys missing from text.
func lacks(text string, keys ...string) []string {
	got := pocketsphinx.Words(text)
	var out []string
	for _, k := range keys {
		if !slices.Contains(got, k) {
			out = append(out, k)
		}
	}
	return out
}

const spokenSentence = "Please call me back tomorrow morning."

var spokenKeys = []string{"call", "back", "tomorrow"}

// TestSpokenNative: a caller on /v1/session says a sentence in native
// PCM16 frames; the transcript event carries its words.
func TestSpokenNative(t *testing.T) {
	t.Parallel()
	s := newSpokenServer(t, stages.Limits{Slots: 2, Waiting: 2, MaxAge: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, s.url("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	c := &sessiontest.Client{T: t, Conn: conn, Ctx: ctx}
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	c.Expect("session")
	speech := append(say(t, spokenSentence, 16000), make([]int16, 16000)...) // and a second of silence
	for len(speech) > 0 {
		n := min(640, len(speech))
		if err := conn.Write(ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
			t.Fatal(err)
		}
		speech = speech[n:]
	}
	tr := c.Expect("transcript")
	t.Logf("transcript %q", tr.Text)
	if m := lacks(tr.Text, spokenKeys...); len(m) > 0 {
		t.Fatalf("transcript %q lacks %v", tr.Text, m)
	}
	c.Send(map[string]any{"type": "hangup"})
}

// TestSpokenTwilio: a phone caller on /v1/twilio says the sentence in 8 kHz
// µ-law; the turn the model gets is its words.
func TestSpokenTwilio(t *testing.T) {
	t.Parallel()
	s := newSpokenServer(t, stages.Limits{Slots: 2, Waiting: 2, MaxAge: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := twiliotest.Dial(ctx, s.url("/v1/twilio"), twiliotest.Options{Speed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.SendPCM(ctx, say(t, spokenSentence, 8000)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendSilence(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, "a recognized turn", func() bool { return len(s.model.seen()) > 0 })
	text := s.model.seen()[0].Text
	t.Logf("transcript %q", text)
	if m := lacks(text, spokenKeys...); len(m) > 0 {
		t.Fatalf("transcript %q lacks %v", text, m)
	}
	if err := g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSpokenPrompt: a phone caller who waits for a line and is turned away
// hears frontdoor's spoken prompts (espeak-ng) through the call's writer:
// what it receives as µ-law, transcribed, says the expired prompt's words
// in full, while the queued prompt, no longer true once the wait expired
// (300 ms in), is cut there, as prompt audio is on every transport.
func TestSpokenPrompt(t *testing.T) {
	t.Parallel()
	s := newSpokenServer(t, stages.Limits{Slots: 1, Waiting: 1, MaxAge: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, _, err := websocket.Dial(ctx, s.url("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.CloseNow()
	hc := &sessiontest.Client{T: t, Conn: holder, Ctx: ctx}
	hc.Until(func(m sessiontest.Msg) bool { return m.Type == "session" && m.Disposition == "admitted" })

	g, err := twiliotest.Dial(ctx, s.url("/v1/twilio"), twiliotest.Options{Speed: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	snap, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
	if err != nil && snap.Err == nil {
		t.Fatal(err)
	}
	var ulaw []byte
	for _, o := range snap.Log {
		if o.Event == twilio.EventMedia {
			ulaw = append(ulaw, o.Payload...)
		}
	}
	heard, err := s.rec.Recognize(ctx, backend.Audio{Rate: 8000, Samples: g711.DecodeMulaw(nil, ulaw)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v of prompts heard as %q", time.Duration(len(ulaw))*time.Second/8000, heard)
	expired := prompt.For(prompt.StageSession, stages.Expired, nil).Text
	if keys := []string{"sorry", "call"}; len(lacks(expired, keys...)) > 0 {
		t.Fatalf("the key words %v are not in the expired prompt %q", keys, expired)
	} else if m := lacks(heard, keys...); len(m) > 0 {
		t.Errorf("the expired prompt %q was heard as %q: lacks %v", expired, heard, m)
	}
	// Both prompts in full would be their two lengths; the queued one is
	// cut as the wait expires.
	queued := prompt.For(prompt.StageSession, stages.Queued, nil).Text
	full := time.Duration(len(say(t, queued, 8000))+len(say(t, expired, 8000))) * time.Second / 8000
	cutAt := time.Duration(len(say(t, queued, 8000))) * time.Second / 8000 / 2
	if got := time.Duration(len(ulaw)) * time.Second / 8000; got > full-cutAt {
		t.Errorf("%v of prompts heard, of %v for both in full: the queued prompt was not cut when the wait expired", got, full)
	}
}
