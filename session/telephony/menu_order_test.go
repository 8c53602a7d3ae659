package telephony

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	for _, d := range dialects {
		if d.name != "plivo" && d.name != "vonage" {
			continue
		}
		t.Run(d.test(), func(t *testing.T) {
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
	k := orderKeypad(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := sipServer(t, k.Engine, sip.Config{}, SIPConfig{Logger: slog.New(k.logs)})
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

// TestSayAfterTheWritersUtterance: a keypad line asked for while the
// call's writer hands an utterance to the line frame by frame (a reply
// the conversation went on with, a hold that ends while one plays) is
// queued after that utterance's end, not between its frames; one asked
// for after a barrier (an offer's AudioBefore) waits for it too. The
// writer is driven by hand: its frames are Send and SendAudio calls.
func TestSayAfterTheWritersUtterance(t *testing.T) {
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
	prompts := newPromptCache()
	const text = "Your callback is booked."
	// The sentence is rendered already, as the shared cache has it after
	// the first caller: the Fallback (which this engine has not) is not
	// asked.
	ready := make(chan struct{})
	close(ready)
	prompts.m[promptKey{src: fromFallback, text: text, format: media.Telephony}] = &promptEntry{done: ready, audio: make([]byte, 800)}
	pc := newPhoneCall(e, l, lineStart{name: "twilio", protocol: "twilio", format: media.Telephony},
		prompts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	frame := make([]byte, 160)

	barrier := make(chan struct{})
	queued := make(chan bool, 1)
	pc.say("callback-queued", text, barrier, func(ok bool) { queued <- ok })
	if err := pc.Send(ctx, &wire.AudioStartMsg{Type: "audio_start", Turn: "t1", Encoding: string(media.Mulaw), Rate: 8000}); err != nil {
		t.Fatal(err)
	}
	if err := pc.SendAudio(ctx, frame); err != nil {
		t.Fatal(err)
	}
	close(barrier) // the line may go now, but for the writer's utterance
	// Give the line every chance to be queued in the middle of the
	// utterance: it must not be, however long it is given.
	for range 50 {
		if err := pc.SendAudio(ctx, frame); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if err := pc.Send(ctx, &wire.AudioEndMsg{Type: "audio_end", Turn: "t1"}); err != nil {
		t.Fatal(err)
	}
	if ok := <-queued; !ok {
		t.Fatal("the line was not queued")
	}
	got := l.log()
	end := slices.Index(got, "end t1~2")
	say := slices.Index(got, "callback-queued~1")
	if end < 0 || say < 0 || say < end {
		t.Fatalf("line order %v: want all of t1~2 and its end, then callback-queued~1", got)
	}
	pc.Close(wire.CloseNormal, "")
	pc.wait()
}
