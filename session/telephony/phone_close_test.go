package telephony

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// orderLine is a line that keeps the order in which utterance ends were
// queued on it, as a gateway's FIFO pacer would play them, and lets a
// test decide what has played. afterEnd, when set for an utterance, runs
// once inside the first tracker() call that follows that utterance's end:
// in phoneCall.endUtterance, between the line's end and the bookkeeping of
// which utterance Close waits for.
type orderLine struct {
	mu       sync.Mutex
	ends     []string
	heard    map[string]bool
	armed    func()
	afterEnd map[string]func()
	queried  map[string]chan struct{} // closed on the first played(utt)
	hung     chan []string            // what had played at the hang-up
	track    *gateway.Tracker
}

func newOrderLine() *orderLine {
	return &orderLine{heard: map[string]bool{}, afterEnd: map[string]func(){},
		queried: map[string]chan struct{}{}, hung: make(chan []string, 1), track: gateway.NewTracker(nil)}
}

func (l *orderLine) read(ctx context.Context) (lineEvent, error) {
	<-ctx.Done()
	return lineEvent{}, ctx.Err()
}
func (l *orderLine) sendAudio(string, []byte) error { return nil }
func (l *orderLine) endUtterance(utt string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends = append(l.ends, utt)
	if f := l.afterEnd[utt]; f != nil {
		delete(l.afterEnd, utt)
		l.armed = f
	}
}
func (l *orderLine) clear(context.Context) ([]gateway.Progress, error) { return nil, nil }
func (l *orderLine) tracker() *gateway.Tracker {
	l.mu.Lock()
	f := l.armed
	l.armed = nil
	l.mu.Unlock()
	if f != nil {
		f()
	}
	return l.track
}
func (l *orderLine) played(utt string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.queried[utt]; c != nil {
		close(c)
		l.queried[utt] = nil
	}
	return l.heard[utt]
}
func (l *orderLine) buffered() time.Duration { return 0 }
func (l *orderLine) lead() time.Duration     { return 0 }
func (l *orderLine) hangup(wire.CloseStatus, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var heard []string
	for _, u := range l.ends {
		if l.heard[u] {
			heard = append(heard, u)
		}
	}
	l.hung <- heard
}

// play marks utt as played, as its final mark's echo would.
func (l *orderLine) play(utt string) {
	l.mu.Lock()
	l.heard[utt] = true
	l.mu.Unlock()
}

// asked returns a channel closed once played(utt) is first asked.
func (l *orderLine) asked(utt string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := make(chan struct{})
	l.queried[utt] = c
	return c
}

// TestKeypadConfirmationEndedConcurrently: the keypad menu queues its
// lines from a goroutine of its own (say) while the call's writer ends the
// prompt audio it streams; the refusal's Close must wait for the line
// queued last on the line, whichever of the two recorded its end last.
// The order is forced with a line hook: the writer's end of the refusal
// prompt (prompt~3) is queued on the line, and before the writer has
// noted it, the confirmation (callback-queued~4) is queued and ended
// behind it. The line then plays prompt~3 and not yet callback-queued~4:
// the hang-up has to wait for the confirmation (on the engine's manual
// clock), not take prompt~3's echo as the end of what was said.
func TestKeypadConfirmationEndedConcurrently(t *testing.T) {
	t.Parallel()
	clk := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	st := stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000}
	model, synth := stub.NewModel(st), stub.NewSynthesizer(st)
	defer model.Close()
	defer synth.Close()
	e, err := session.New(session.Config{
		Session:      stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second},
		Clock:        clk,
		ModelBackend: model,
		Synthesizer:  synth,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	l := newOrderLine()
	pc := newPhoneCall(e, l, lineStart{name: "twilio", protocol: "twilio", format: media.Telephony},
		newPromptCache(), slog.New(slog.NewTextHandler(io.Discard, nil)))

	const prompt, confirm = "prompt~3", "callback-queued~4"
	l.afterEnd[prompt] = func() { pc.endUtterance(confirm) } // the menu's say, in the window
	pc.endUtterance(prompt)                                  // the writer's audio_end of the cut prompt
	l.mu.Lock()
	order := append([]string(nil), l.ends...)
	l.mu.Unlock()
	if len(order) != 2 || order[0] != prompt || order[1] != confirm {
		t.Fatalf("line order %v, want [%s %s]", order, prompt, confirm)
	}
	l.play(prompt)

	asked := l.asked(confirm)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		pc.Close(wire.CloseTryLater, "try again later")
	}()
	select {
	case heard := <-l.hung:
		t.Fatalf("hung up when only %v had played: %s, queued last, was never waited for", heard, confirm)
	case <-asked: // Close waits for the confirmation
	}
	l.play(confirm)
	var heard []string
	for hung := false; !hung; {
		select {
		case heard = <-l.hung:
			hung = true
		default:
			clk.Advance(10 * time.Millisecond) // Close's poll, on the engine's clock
			runtime.Gosched()
		}
	}
	<-closed
	if len(heard) != 2 || heard[1] != confirm {
		t.Fatalf("hung up after %v, want %s played too", heard, confirm)
	}
}
