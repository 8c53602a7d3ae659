package telephony

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// asPeer is Asterisk's side of an AudioSocket call written from the
// protocol definition on Asterisk's AudioSocket page alone: a kind byte, a
// 16-bit big-endian length, the payload. It sends the page's UUID message
// (audiosocket/testdata/uuid.bin) and 8 kHz slin (kind 0x10) in 20 ms
// messages, and reads what frontdoor sends.
type asPeer struct {
	c      net.Conn
	audio  chan int  // bytes of each 0x10 message received
	hangup chan byte // a hang-up (0x00) received
	done   chan struct{}
}

func dialAudioSocketDocumented(t *testing.T, r *rig) *asPeer {
	t.Helper()
	p := &asPeer{c: r.dialAudioSocket(), audio: make(chan int, 4096), hangup: make(chan byte, 1), done: make(chan struct{})}
	uuid, err := os.ReadFile(filepath.Join("..", "..", "media", "gateway", "audiosocket", "testdata", "uuid.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Write(uuid); err != nil {
		t.Fatal(err)
	}
	go p.read()
	t.Cleanup(func() { p.c.Close(); <-p.done })
	return p
}

func (p *asPeer) read() {
	defer close(p.done)
	h := make([]byte, 3)
	for {
		if _, err := io.ReadFull(p.c, h); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(h[1:]))
		if _, err := io.CopyN(io.Discard, p.c, int64(n)); err != nil {
			return
		}
		switch h[0] {
		case 0x10:
			select {
			case p.audio <- n:
			default:
			}
		case 0x00:
			select {
			case p.hangup <- h[0]:
			default:
			}
		}
	}
}

func (p *asPeer) speak(t *testing.T, samples []int16) {
	t.Helper()
	pcm := gateway.AppendPCM(nil, gateway.L16(8000), samples)
	for len(pcm) > 0 {
		k := min(320, len(pcm))
		msg := append([]byte{0x10, 0, 0}, pcm[:k]...)
		binary.BigEndian.PutUint16(msg[1:], uint16(k))
		if _, err := p.c.Write(msg); err != nil {
			t.Fatal(err)
		}
		pcm = pcm[k:]
	}
}

// TestDocumentedAudioSocket: an AudioSocket peer written from Asterisk's
// protocol definition alone is answered with 8 kHz slin in messages of
// kind 0x10, ends its call with the page's hang-up message (0x00 0x00
// 0x00), and, refused, hears the prompt and gets the hang-up message.
func TestDocumentedAudioSocket(t *testing.T) {
	t.Parallel()
	t.Run("call", func(t *testing.T) {
		logs := &logRecords{}
		logs.dumpOnFailure(t)
		r := newRig(t, func(c *session.Config, s *stub.Settings) {
			c.Recognizer = stub.NewRecognizer(stub.Settings{})
			s.FrameCount = 50
		}, rigGateway(func(gc *GatewayConfig) { gc.Logger = slog.New(logs) }))
		p := dialAudioSocketDocumented(t, r)
		// Asterisk sends audio every 20 ms from the moment it connects;
		// this peer writes its words at once, so it waits for its
		// admission first: a caller's audio before it is not listened to
		// (a flake under load when it was not waited for).
		sessiontest.WaitFor(t, "the call admitted", func() bool {
			for _, m := range logs.find("audiosocket: session") {
				if fmt.Sprint(m["disposition"]) == "admitted" {
					return true
				}
			}
			return false
		})
		p.speak(t, sessiontest.Speech(t, "hello-8k.wav", 8000))
		p.speak(t, silence(600*time.Millisecond, 8000))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for got := 0; got < 8000; { // half a second of reply
			select {
			case n := <-p.audio:
				if n != 320 {
					t.Fatalf("a %d-byte audio message, want 20 ms (320 bytes)", n)
				}
				got += n
			case <-ctx.Done():
				t.Fatalf("no reply: %v", ctx.Err())
			}
		}
		hangup, err := os.ReadFile(filepath.Join("..", "..", "media", "gateway", "audiosocket", "testdata", "hangup.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.c.Write(hangup); err != nil {
			t.Fatal(err)
		}
		sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
		if n := r.Counter("frontdoor_protocol_errors_total"); n != 0 {
			t.Fatalf("%v protocol errors on Asterisk's own messages", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r := newRig(t, func(c *session.Config, _ *stub.Settings) {
			c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 100 * time.Millisecond}
		})
		holder := r.Admitted()
		defer holder.Send(map[string]any{"type": "hangup"})
		p := dialAudioSocketDocumented(t, r)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		select {
		case <-p.hangup:
		case <-ctx.Done():
			t.Fatalf("the refused call was not hung up: %v", ctx.Err())
		}
		if len(p.audio) == 0 {
			t.Fatal("the refused caller heard no prompt before the hang-up")
		}
	})
}
