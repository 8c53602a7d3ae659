package webrtc

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	mediartc "github.com/frontdoorhq/frontdoor/media/webrtc"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// browser is the caller's side of a /v1/webrtc call: a second pion peer,
// signalling over a real WebSocket.
type browser struct {
	t      *testing.T
	ws     *websocket.Conn
	peer   *mediartc.Peer
	voiced atomic.Int64 // 20 ms packets of reply audio with speech energy

	mu     sync.Mutex
	events []sessiontest.Msg
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

func (r *rig) browser(ctx context.Context) *browser {
	r.T.Helper()
	return r.browserAt(ctx, "/v1/webrtc")
}

// browserAt calls the WebRTC endpoint at path.
func (r *rig) browserAt(ctx context.Context, path string) *browser {
	r.T.Helper()
	ws, _, err := websocket.Dial(ctx, r.WSURL(path), nil)
	if err != nil {
		r.T.Fatal(err)
	}
	b := &browser{t: r.T.(*testing.T), ws: ws}
	peer, err := mediartc.NewPeer(mediartc.Config{
		LoopbackOnly: true,
		OnAudio: func(s []int16) {
			if pcm.RMS(s) > 300 {
				b.voiced.Add(1)
			}
		},
		OnEvent: func(data []byte) {
			var m sessiontest.Msg
			if json.Unmarshal(data, &m) == nil {
				m.At = time.Now()
				b.mu.Lock()
				b.events = append(b.events, m)
				b.mu.Unlock()
			}
		},
	}, mediartc.WebSocketTransport{Conn: ws})
	if err != nil {
		r.T.Fatal(err)
	}
	b.peer = peer
	bctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Go(func() {
		for {
			sig, err := mediartc.ReadSignal(bctx, ws)
			if err != nil {
				return
			}
			_ = peer.HandleSignal(bctx, sig)
		}
	})
	b.wg.Go(func() { _ = peer.Run(bctx) })
	r.T.Cleanup(b.close)
	if err := peer.Offer(ctx); err != nil {
		r.T.Fatal(err)
	}
	return b
}

func (b *browser) close() {
	b.cancel()
	_ = b.peer.Close()
	b.ws.CloseNow()
	b.wg.Wait()
}

func (b *browser) send(v any) {
	data, _ := json.Marshal(v)
	if err := b.peer.SendEvent(data); err != nil {
		b.t.Fatal(err)
	}
}

// speak queues caller audio (8 kHz) and waits while it plays out.
func (b *browser) speak(ctx context.Context, s []int16) {
	s = s[:len(s)/160*160] // whole frames: a partial one waits for more
	if err := b.peer.SendPCM(s); err != nil {
		b.t.Fatal(err)
	}
	for b.peer.Buffered() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *browser) wait(what string, cond func([]sessiontest.Msg) bool) []sessiontest.Msg {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		ev := append([]sessiontest.Msg(nil), b.events...)
		b.mu.Unlock()
		if cond(ev) {
			return ev
		}
		if time.Now().After(deadline) {
			for _, m := range ev {
				b.t.Logf("%s %s %s %v", m.At.Format("05.000"), m.Type, m.Stage, m.Disposition)
			}
			b.t.Fatalf("timed out waiting for %s at %s (voiced %d); events %v", what, time.Now().Format("05.000"), b.voiced.Load(), sessiontest.Types(ev))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func has(typ string) func([]sessiontest.Msg) bool {
	return func(ms []sessiontest.Msg) bool {
		for _, m := range ms {
			if m.Type == typ {
				return true
			}
		}
		return false
	}
}

// TestWebRTCCall: a pion peer in the browser's role calls /v1/webrtc over a
// real WebSocket on loopback. Its speech (espeak "hello", PCMU) becomes a
// recognized turn whose reply comes back as PCMU audio with the session's
// events on the data channel; speech over the reply barges in: `interrupted`
// arrives, the reply's audio stops, and nothing of the old generation
// follows; hangup on the data channel ends the call.
func TestWebRTCCall(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *session.Config, s *stub.Settings) {
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
		s.FrameCount = 200 // a 4 s reply
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := r.browser(ctx)
	select {
	case <-b.peer.Open():
	case <-ctx.Done():
		t.Fatal("events channel never opened")
	}
	b.wait("session", has("session"))
	if by := r.Engine.CallsByTransport(); len(by) != 1 || by[Name] != 1 {
		t.Fatalf("calls by transport %v, want one %s", by, Name)
	}

	hello := sessiontest.Speech(t, "hello-8k.wav", 8000)
	b.speak(ctx, hello[:len(hello)-2400]) // up to the end of the speech
	b.speak(ctx, make([]int16, 8*700))
	b.wait("transcript", has("transcript"))
	b.wait("audio_start", has("audio_start"))
	sessiontest.WaitFor(t, "reply audio on the track", func() bool { return b.voiced.Load() >= 25 })

	stop := sessiontest.Speech(t, "stop-8k.wav", 8000)
	if err := b.peer.SendPCM(stop[:(len(stop)-5600)/160*160]); err != nil { // speech without its ending silence
		t.Fatal(err)
	}
	ev := b.wait("interrupted", has("interrupted"))
	in := sessiontest.LastOf(ev, "interrupted")
	if in.Generation != 2 || len(in.Cancelled) != 1 || in.Heard == nil || in.Heard.AudioMS < 300 {
		t.Fatalf("interrupted %+v heard %+v", in, in.Heard)
	}
	// The reply's audio stops: at most the packets already in flight.
	time.Sleep(100 * time.Millisecond)
	after := b.voiced.Load()
	for b.peer.Buffered() > 0 && ctx.Err() == nil { // the caller is still speaking
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.voiced.Load() - after; n > 2 {
		t.Fatalf("%d voiced reply packets after interrupted while the caller spoke", n)
	}
	b.mu.Lock()
	for _, m := range b.events {
		if m.At.After(in.At) && m.Generation == 1 && m.Type != "turn_end" && m.Type != "disposition" {
			t.Errorf("old generation event after interrupted: %+v", m)
		}
	}
	b.mu.Unlock()

	// The caller's second utterance is answered too.
	b.speak(ctx, make([]int16, 8*700))
	b.wait("second reply", func(ms []sessiontest.Msg) bool {
		n := 0
		for _, m := range ms {
			if m.Type == "audio_start" {
				n++
			}
		}
		return n >= 2
	})
	b.send(map[string]any{"type": "hangup"})
	sessiontest.WaitFor(t, "call ended", func() bool { return r.Engine.Calls() == 0 && len(r.Engine.CallsByTransport()) == 0 })
}
