package telephony

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The refusal prompt of these tests is long (orderPrompt: 150 frames of 20
// ms) and the menu short, so that the `offer`, which the engine writes
// ahead of queued audio, reaches the transport while most of the prompt is
// still queued behind it.
const (
	orderPrompt = 3 * time.Second
	orderMenu   = 300 * time.Millisecond
	orderLevel  = 6000 // the prompt's samples; the menu's are -orderLevel
)

// levelSynth renders every sentence as a constant level, so that a
// gateway can tell whose audio a frame is: the keypad menu's sentences are
// orderMenu at -orderLevel, every other sentence (the prompt table's)
// orderPrompt at +orderLevel.
type levelSynth struct{}

func (levelSynth) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	level, d := int16(orderLevel), orderPrompt
	if text == menuBoth || text == menuCallback || text == menuHandoff {
		level, d = -orderLevel, orderMenu
	}
	const rate = 8000
	frame := make([]int16, rate/50)
	for i := range frame {
		frame[i] = level
	}
	for range int(d / (20 * time.Millisecond)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(backend.Audio{Rate: rate, Samples: frame}); err != nil {
			return err
		}
	}
	return nil
}

// levels follows the audio a gateway received, in order: how many samples
// of the prompt's level and of the menu's arrived, and how many of the
// prompt's came after the menu's first.
type levels struct {
	prompt, menu int
	promptAfter  int // prompt samples after the menu's first
}

func (l *levels) add(pcm []int16) {
	for _, s := range pcm {
		switch {
		case s > orderLevel/2:
			l.prompt++
			if l.menu > 0 {
				l.promptAfter++
			}
		case s < -orderLevel/2:
			l.menu++
		}
	}
}

// check fails t unless the whole refusal prompt (at rate) came before the
// menu's first sample and the menu played.
func (l *levels) check(t *testing.T, rate int) {
	t.Helper()
	if l.promptAfter > 0 {
		t.Errorf("%v of the refusal prompt arrived after the menu began (prompt %v, menu %v)",
			samplesAt(l.promptAfter, rate), samplesAt(l.prompt, rate), samplesAt(l.menu, rate))
	}
	if got := samplesAt(l.prompt-l.promptAfter, rate); got < orderPrompt-20*time.Millisecond {
		t.Errorf("%v of the refusal prompt before the menu, want all %v of it", got, orderPrompt)
	}
	if got := samplesAt(l.menu, rate); got < orderMenu-20*time.Millisecond {
		t.Errorf("%v of the menu, want %v", got, orderMenu)
	}
}

func samplesAt(n, rate int) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(rate)
}

// marksInOrder fails t unless every mark of the prompt (prompt~n) comes
// before the menu's (menu~n), and there is one of each at least.
func marksInOrder(t *testing.T, what string, marks []string) {
	t.Helper()
	prompt, menu := -1, -1
	for i, m := range marks {
		switch {
		case strings.HasPrefix(m, "prompt~"):
			prompt = i
			if menu >= 0 {
				t.Errorf("%s: the prompt's mark %s after the menu's: %v", what, m, marks)
			}
		case strings.HasPrefix(m, "menu~") && menu < 0:
			menu = i
		}
	}
	if prompt < 0 || menu < 0 {
		t.Errorf("%s: want the prompt's marks, then the menu's: %v", what, marks)
	}
}

// orderKeypad is a keypad server whose prompts are levelSynth's and whose
// menu waits 300 ms for a key: a refused call hears the prompt and the
// menu, then closes.
func orderKeypad(t *testing.T) *keypad {
	k := newKeypad(t, keypadOptions{window: 10 * time.Second, keyWait: 300 * time.Millisecond, synth: levelSynth{}})
	k.logs.dumpOnFailure(t)
	return k
}

// TestTwilioMenuAfterPrompt: a refused Twilio caller hears the whole
// refusal prompt before the first frame of the keypad menu that follows
// it, though the engine hands the `offer` to the transport while most of
// the prompt is still queued; the marks come back prompt first, then the
// menu.
func TestTwilioMenuAfterPrompt(t *testing.T) {
	t.Parallel()
	k := orderKeypad(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.gateway(ctx, twiliotest.Options{Speed: -1, CustomParameters: map[string]string{"tenant": "acme", callerParam: "+15550142"}})
	s := closedAfter(ctx, t, g, "menu~")
	var l levels
	var marks []string
	var pcm []int16
	for _, o := range s.Log {
		switch o.Event {
		case twilio.EventMedia:
			pcm = g711.DecodeMulaw(pcm[:0], o.Payload)
			l.add(pcm)
		case twilio.EventMark:
			if l.menu > 0 && strings.HasPrefix(o.Mark, "prompt~") {
				t.Errorf("the prompt's mark %s was sent after the menu's first frame", o.Mark)
			}
			marks = append(marks, o.Mark)
		}
	}
	l.check(t, 8000)
	marksInOrder(t, "sent", marks)
	marksInOrder(t, "echoed", s.Echoed)
}

// TestGatewayMenuAfterPrompt: the same on gateway dialects, µ-law (Plivo)
// and 16 kHz linear (Vonage).
func TestGatewayMenuAfterPrompt(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		if d.name != "plivo" && d.name != "vonage" {
			continue
		}
		t.Run(d.test(), func(t *testing.T) {
			t.Parallel()
			k := orderKeypad(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g := k.gatewayFor(ctx, d, -1, map[string]string{"tenant": "acme", callerParam: "+15550142"})
			s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			if s.Err == nil {
				t.Fatalf("the refused call did not end (said %v)", k.saidOn(d.name))
			}
			f := d.format
			if f.SampleRate == 0 {
				f = d.caps().Formats[0]
			}
			pcm, err := gateway.DecodePCM(nil, f, g.Audio())
			if err != nil {
				t.Fatal(err)
			}
			var l levels
			l.add(pcm)
			l.check(t, f.SampleRate)
			var marks []string
			for _, c := range s.Log {
				if c.Kind == gateway.KindMark {
					marks = append(marks, c.Mark)
				}
			}
			marksInOrder(t, "sent", marks)
			marksInOrder(t, "echoed", s.Echoed)
		})
	}
}

// TestSIPMenuAfterPrompt: the same on a SIP call, where RTP has no marks:
// the caller's RTP holds all of the prompt, then the menu.
func TestSIPMenuAfterPrompt(t *testing.T) {
	t.Parallel()
	k := orderKeypad(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := sipServer(t, k.Engine, sip.Config{}, SIPConfig{Logger: slog.New(k.logs), KeyWait: k.keyWait})
	out, err := sip.Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), sip.DialConfig{From: "+15550100"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var l levels
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range out.Frames() {
			mu.Lock()
			l.add(f.PCM)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { out.Close(); <-done })
	select {
	case <-out.Done():
	case <-ctx.Done():
		t.Fatalf("the refused call was not hung up (said %v)", k.saidSIP())
	}
	out.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	l.check(t, 8000)
}

// seqLine is an orderLine that also keeps, in order, which utterance each
// piece of audio queued on it belongs to, and each end ("end "+utt).
type seqLine struct {
	*orderLine
	smu sync.Mutex
	seq []string
}

func (l *seqLine) sendAudio(utt string, _ []byte) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.seq = append(l.seq, utt)
	return nil
}

func (l *seqLine) endUtterance(utt string) {
	l.smu.Lock()
	l.seq = append(l.seq, "end "+utt)
	l.smu.Unlock()
	l.orderLine.endUtterance(utt)
}

func (l *seqLine) log() []string {
	l.smu.Lock()
	defer l.smu.Unlock()
	return append([]string(nil), l.seq...)
}

// voiceFallback is a KeypadFallback whose prompts render as a constant
// level once render is closed (nil: at once).
type voiceFallback struct {
	session.Prompts
	render chan struct{}
}

func (voiceFallback) EndOffer(string)             {}
func (voiceFallback) AnswerWindow() time.Duration { return time.Second }
func (voiceFallback) WithdrawHandoff(string) bool { return true }
func (f voiceFallback) RenderPrompt(ctx context.Context, _ string) (backend.Audio, error) {
	if f.render != nil {
		select {
		case <-f.render:
		case <-ctx.Done():
			return backend.Audio{}, ctx.Err()
		}
	}
	return backend.Audio{Rate: 8000, Samples: make([]int16, 1600)}, nil
}

// TestMenuLinesGoThroughTheWriter: the keypad menu's lines reach the line
// only through the call's writer (its Send and SendAudio, which name the
// utterance after the line's id), spoken for the premise of the message
// they follow: a line whose premise moved while it was rendered (a new
// prompt after the offer) never reaches the line, and the menu learns it
// was not said; one whose premise holds is heard whole, and its end is
// what tells the menu it was said.
func TestMenuLinesGoThroughTheWriter(t *testing.T) {
	t.Parallel()
	st := stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000}
	model, synth := stub.NewModel(st), stub.NewSynthesizer(st)
	defer model.Close()
	defer synth.Close()
	e, err := session.New(session.Config{Session: stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second},
		ModelBackend: model, Synthesizer: synth})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	l := &seqLine{orderLine: newOrderLine()}
	pc := newPhoneCall(e, l, lineStart{name: "twilio", protocol: "twilio", format: media.Telephony},
		newPromptCache(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	render := make(chan struct{})
	pc.menu.fb = voiceFallback{render: render}
	caps := pc.capabilities()
	voices := make(chan session.Voice, 1)
	give := caps.Voice
	caps.Voice = func(v session.Voice) { give(v); voices <- v }
	ended := make(chan struct{})
	if !e.Start(context.Background(), pc, caps, func() { close(ended) }) {
		t.Fatal("call not started")
	}
	out := (<-voices).(session.Sender)
	ctx := context.Background()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: line saw %v", what, l.log())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("admitted", func() bool { pc.menu.mu.Lock(); defer pc.menu.mu.Unlock(); return pc.menu.admitted })

	// The premise moves while the line renders: it is not said.
	if err := out.Send(ctx, &wire.PromptMsg{Type: "prompt", Stage: "model", Reason: "refused", Text: "Sorry."}); err != nil {
		t.Fatal(err)
	}
	offer := &wire.OfferMsg{Type: "offer", Kinds: []prompt.Kind{prompt.KindHandoff}}
	if err := out.Send(ctx, offer); err != nil {
		t.Fatal(err)
	}
	said := make(chan bool, 2)
	pc.say("menu", "Press 2 to hold for a person.", offer, func(ok bool) { said <- ok })
	if err := out.Send(ctx, &wire.PromptMsg{Type: "prompt", Stage: "model", Reason: "refused", Text: "Sorry."}); err != nil {
		t.Fatal(err)
	}
	close(render)
	if ok := <-said; ok {
		t.Fatal("a line whose premise moved was said")
	}

	// Its premise holds: heard whole, through the writer, then ended.
	offer = &wire.OfferMsg{Type: "offer", Kinds: []prompt.Kind{prompt.KindHandoff}}
	if err := out.Send(ctx, offer); err != nil {
		t.Fatal(err)
	}
	pc.say("menu", "Press 2 to hold for a person.", offer, func(ok bool) { said <- ok })
	if ok := <-said; !ok {
		t.Fatalf("a line whose premise holds was not said: line saw %v", l.log())
	}
	// Only the second line reached the line, as an utterance the writer
	// opened (its id, then the transport's number: menu~N~M), then its end.
	got := l.log()
	var menu []string
	for _, u := range got {
		if strings.HasPrefix(u, "menu~") || strings.HasPrefix(u, "end menu~") {
			menu = append(menu, u)
		}
	}
	if len(menu) < 2 || strings.Count(menu[0], "~") != 2 || menu[0] == "menu~1" || strings.HasPrefix(menu[0], "menu~1~") ||
		menu[len(menu)-1] != "end "+menu[0] || slices.ContainsFunc(menu[:len(menu)-1], func(u string) bool { return u != menu[0] }) {
		t.Fatalf("line saw %v: want one menu line's frames from the writer, then its end, and nothing of the cut one", got)
	}
	e.Close() // ends the call
	<-ended
	pc.wait()
}
