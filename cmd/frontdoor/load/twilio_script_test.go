package load_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/vad"
)

// scriptLog is what the scripted Twilio endpoint saw of the caller.
type scriptLog struct {
	mu         sync.Mutex
	events     []string // inbound events in order (media collapsed)
	decodeErrs []error
	params     map[string]string
	speech     []vad.Kind // what an energy VAD heard in the caller's audio
	markSent   time.Time
	echoed     string
	echoAt     time.Time
}

func (l *scriptLog) add(f func(l *scriptLog)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// toneFrames is n 20 ms frames of a 440 Hz tone as µ-law.
func toneFrames(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		pcm := make([]int16, 160)
		for j := range pcm {
			pcm[j] = int16(8000 * math.Sin(2*math.Pi*440*float64(i*160+j)/8000))
		}
		out[i] = g711.EncodeMulaw(nil, pcm)
	}
	return out
}

// twilioEndpoint serves a Twilio media stream by script: play is
// frontdoor's side of each stream.
func twilioEndpoint(play func(p *twilioPeer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		play(&twilioPeer{ws: ws, ctx: r.Context()})
	}
}

// errPeerGone: the caller's connection ended.
var errPeerGone = errors.New("the caller hung up")

// twilioPeer is a scripted endpoint's end of one stream.
type twilioPeer struct {
	ws  *websocket.Conn
	ctx context.Context
	sid string // from the caller's start: the stream what is sent belongs to
}

// next reads and decodes the caller's next message with the server's
// strict decoder; errPeerGone once the connection ended.
func (p *twilioPeer) next() (*twilio.Message, error) {
	_, data, err := p.ws.Read(p.ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPeerGone, err)
	}
	m, err := twilio.Decode(twilio.Twilio, data)
	if err == nil && m.Event == twilio.EventStart {
		p.sid = m.Start.StreamSID
	}
	return m, err
}

func (p *twilioPeer) send(o twilio.Outbound) {
	o.StreamSID = p.sid
	_ = p.ws.Write(p.ctx, websocket.MessageText, twilio.EncodeOutbound(twilio.Twilio, o))
}

// media sends frames as media messages.
func (p *twilioPeer) media(frames [][]byte) {
	for _, f := range frames {
		p.send(twilio.Outbound{Event: twilio.EventMedia, Payload: f})
	}
}

// close ends the stream with a normal closure.
func (p *twilioPeer) close() { _ = p.ws.Close(websocket.StatusNormalClosure, "") }

// twilioScript plays frontdoor's side of a call by script, decoding the
// caller's messages with the server's strict decoder: it answers the first
// utterance with 0.5 s of audio and no mark, and when the caller speaks
// over it sends clear followed by three frames of the old reply (the fault
// the load generator must count as stale); it answers the second utterance
// with 100 ms of audio and a mark, and closes on stop.
func twilioScript(log *scriptLog) http.HandlerFunc {
	return twilioEndpoint(func(p *twilioPeer) {
		det, _ := vad.New(vad.Config{SampleRate: 8000})
		utterances := 0
		for {
			m, err := p.next()
			if errors.Is(err, errPeerGone) {
				return
			}
			if err != nil {
				log.add(func(l *scriptLog) { l.decodeErrs = append(l.decodeErrs, err) })
				continue
			}
			log.add(func(l *scriptLog) {
				if n := len(l.events); m.Event != twilio.EventMedia || n == 0 || l.events[n-1] != twilio.EventMedia {
					l.events = append(l.events, m.Event)
				}
			})
			switch m.Event {
			case twilio.EventStart:
				log.add(func(l *scriptLog) { l.params = m.Start.CustomParameters })
			case twilio.EventMark:
				log.add(func(l *scriptLog) { l.echoed, l.echoAt = m.Mark.Name, time.Now() })
			case twilio.EventStop:
				p.close()
				return
			case twilio.EventMedia:
				for _, ev := range det.Process(nil, g711.DecodeMulaw(nil, m.Media.Payload)) {
					log.add(func(l *scriptLog) { l.speech = append(l.speech, ev.Kind) })
					switch {
					case ev.Kind == vad.SpeechEnd && utterances == 0:
						utterances++
						p.media(toneFrames(25))
					case ev.Kind == vad.SpeechStart && utterances == 1: // a barge-in
						p.send(twilio.Outbound{Event: twilio.EventClear})
						p.media(toneFrames(3)) // stale
					case ev.Kind == vad.SpeechEnd && utterances == 1:
						utterances++
						p.media(toneFrames(5))
						log.add(func(l *scriptLog) { l.markSent = time.Now() })
						p.send(twilio.Outbound{Event: twilio.EventMark, Mark: "reply-2"})
					}
				}
			}
		}
	})
}

// TestTwilioCallerByScript checks the Twilio caller against a scripted
// endpoint, where the outcome is exact: its messages pass the server's
// strict decoder, an energy VAD hears each turn as one utterance, media
// after a clear is counted as stale, and a mark is echoed only once the
// audio before it has played.
func TestTwilioCallerByScript(t *testing.T) {
	t.Parallel()
	log := &scriptLog{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/twilio", twilioScript(log))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Dialect: load.Twilio,
		Callers: 1, Rate: 1, Turns: 2, BargeIn: 1, BargeAfter: 50 * time.Millisecond,
		Utterance: 300 * time.Millisecond, Settle: 200 * time.Millisecond, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.decodeErrs) > 0 {
		t.Errorf("the server's decoder refused the caller's messages: %v", log.decodeErrs)
	}
	if got := strings.Join(log.events, " "); !strings.HasPrefix(got, "connected start media mark") || !strings.HasSuffix(got, " stop") {
		t.Errorf("caller sent %q", got)
	}
	if p := log.params["caller"]; !strings.HasPrefix(p, "+155501") || len(p) != len("+15550100") {
		t.Errorf("custom parameters %v: want a fictional caller number", log.params)
	}
	want := []vad.Kind{vad.SpeechStart, vad.SpeechEnd, vad.SpeechStart, vad.SpeechEnd}
	if len(log.speech) != len(want) || log.speech[0] != want[0] || log.speech[3] != want[3] {
		t.Errorf("VAD heard %v, want two utterances", log.speech)
	}
	if log.echoed != "reply-2" {
		t.Errorf("mark echoed %q", log.echoed)
	} else if d := log.echoAt.Sub(log.markSent); d < 80*time.Millisecond {
		t.Errorf("mark echoed %v after it was sent, behind 100 ms of audio: before it played", d)
	}
	if b := r.BargeIn; b.Sent != 1 || b.Interrupted != 1 || b.StaleAfter != 3 {
		t.Errorf("barge-in %+v: want 1 cleared and 3 stale frames", b)
	}
	if r.Turns.ByEnd["cancelled"] != 1 || r.Turns.ByEnd["completed"] != 1 || r.FirstAud.N != 2 {
		t.Errorf("turns %+v, first audio %v", r.Turns, r.FirstAud)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || strings.Contains(w, "3 media frames of an interrupted reply arrived after `clear`")
	}
	if !found {
		t.Errorf("no stale warning in %q", r.Warnings)
	}
	if r.Callers.ByEnd[load.EndServed] != 1 || r.Stages[0].Dispositions["admitted"] != 1 {
		t.Errorf("callers %+v, session %+v", r.Callers, r.Stages[0])
	}
}

// queueScript plays a call that waits in the queue: the queue prompt (with
// its mark) at start, the caller's first utterance ignored (not admitted
// yet), the next one answered.
func queueScript(heard *atomic.Int32) http.HandlerFunc {
	return twilioEndpoint(func(p *twilioPeer) {
		det, _ := vad.New(vad.Config{SampleRate: 8000})
		utterances := 0
		for {
			m, err := p.next()
			if err != nil {
				return
			}
			switch m.Event {
			case twilio.EventStart:
				p.media(toneFrames(5))
				p.send(twilio.Outbound{Event: twilio.EventMark, Mark: "queued"})
			case twilio.EventStop:
				heard.Store(int32(utterances))
				p.close()
				return
			case twilio.EventMedia:
				for _, ev := range det.Process(nil, g711.DecodeMulaw(nil, m.Media.Payload)) {
					if ev.Kind != vad.SpeechEnd {
						continue
					}
					if utterances++; utterances == 2 {
						p.media(toneFrames(5))
						p.send(twilio.Outbound{Event: twilio.EventMark, Mark: "reply"})
					}
				}
			}
		}
	})
}

// A caller that hears a prompt before it speaks takes itself as queued;
// when its turn gets no answer it says it again, and the answer to the
// repeat admits it. The ignored attempt is not a turn.
func TestTwilioCallerQueued(t *testing.T) {
	t.Parallel()
	var heard atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/twilio", queueScript(&heard))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Dialect: load.Twilio,
		Callers: 1, Rate: 1, Turns: 1, Deadline: 300 * time.Millisecond,
		Utterance: 300 * time.Millisecond, Settle: 200 * time.Millisecond, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	if n := heard.Load(); n != 2 {
		t.Errorf("the caller spoke %d times, want the ignored turn and its repeat", n)
	}
	sess := r.Stages[0]
	if r.Callers.ByEnd[load.EndServed] != 1 || sess.Dispositions["queued"] != 1 || sess.Dispositions["admitted"] != 1 {
		t.Errorf("callers %+v, session %+v: want queued, then admitted and served", r.Callers, sess)
	}
	if r.Turns.Offered != 1 || r.Turns.ByEnd["completed"] != 1 || r.Fallback.Prompts["spoken"] != 1 || r.Fallback.PromptFrames != 5 {
		t.Errorf("turns %+v, fallback %+v: want one turn after one prompt of 5 frames", r.Turns, r.Fallback)
	}
}
