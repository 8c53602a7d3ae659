package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// chanTransport is a Transport over channels: what another wire protocol
// (Twilio, WebRTC) looks like to a Call.
type chanTransport struct {
	in     chan wire.ClientEvent
	out    chan any
	closed chan wire.CloseStatus
	done   chan struct{}
	once   sync.Once
}

func newChanTransport() *chanTransport {
	return &chanTransport{in: make(chan wire.ClientEvent, 8), out: make(chan any, 1024), closed: make(chan wire.CloseStatus, 1), done: make(chan struct{})}
}

func (c *chanTransport) Recv(ctx context.Context) (wire.ClientEvent, error) {
	select {
	case ev, ok := <-c.in:
		if !ok {
			return wire.ClientEvent{}, context.Canceled
		}
		return ev, nil
	case <-ctx.Done():
		return wire.ClientEvent{}, ctx.Err()
	case <-c.done:
		return wire.ClientEvent{}, context.Canceled
	}
}

func (c *chanTransport) Send(ctx context.Context, msg wire.Message) error {
	c.out <- msg
	return nil
}

func (c *chanTransport) SendAudio(ctx context.Context, b []byte) error {
	c.out <- b
	return nil
}

func (c *chanTransport) Close(s wire.CloseStatus, _ string) {
	c.once.Do(func() { close(c.done) })
	select {
	case c.closed <- s:
	default:
	}
}

// TestSpeechTurnOverTransport drives a Call through the Transport seam with
// a speech event: the recognition stage runs before the model, and the
// model's job keeps the speech's Born.
func TestSpeechTurnOverTransport(t *testing.T) {
	rec := stub.NewRecognizer(stub.Settings{})
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Recognizer = rec
		c.Recognize = stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	})
	tr := newChanTransport()
	done := make(chan struct{})
	go func() { r.Engine.Run(context.Background(), tr, Capabilities{}); close(done) }()
	next := func() any {
		select {
		case m := <-tr.out:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no message")
			return nil
		}
	}
	if m, ok := next().(*wire.SessionMsg); !ok || m.Disposition != stages.Admitted {
		t.Fatalf("session %#v", m)
	}
	tr.in <- wire.ClientEvent{Kind: wire.EventSpeech, Speech: backend.Audio{Rate: 8000, Samples: make([]int16, 8000)},
		SpeechEnd: time.Now()}
	var transcript string
	var audio int
	for {
		switch m := next().(type) {
		case *wire.TranscriptMsg:
			transcript = m.Text
		case []byte:
			audio += len(m)
		case *wire.TurnEndMsg:
			if m.Disposition != "completed" || transcript != "heard 1000 ms" || audio == 0 {
				t.Fatalf("turn_end %+v transcript %q audio %d", m, transcript, audio)
			}
			tr.in <- wire.ClientEvent{Kind: wire.EventHangup}
			<-done
			if s := <-tr.closed; s != wire.CloseNormal {
				t.Fatalf("closed with %d", s)
			}
			if v := r.stage(StageRecognize); v.Ledger.Completed != 1 {
				t.Fatalf("recognize ledger %+v", v.Ledger)
			}
			return
		}
	}
}
