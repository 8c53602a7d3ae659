package session

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

func TestBadInput(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 2, MaxAge: 5 * time.Second}
	})
	a := r.Admitted()
	for _, tc := range []struct{ in, code string }{
		{`{`, wire.CodeBadJSON},
		{`[1,2]`, wire.CodeBadJSON},
		{`{"id":"x"}`, wire.CodeBadField},
		{`{"type":"dance"}`, wire.CodeUnknownType},
		{`{"type":"turn"}`, wire.CodeBadField},
		{`{"type":"turn","id":"x","text":7}`, wire.CodeBadField},
		{`{"type":"turn","id":"x","age_ms":-5}`, wire.CodeBadField},
		{`{"type":"turn","id":"x","age_ms":99999999999}`, wire.CodeBadField},
		{`{"type":"turn","id":"x","text":"` + strings.Repeat("a", wire.MaxTurnText+1) + `"}`, wire.CodeTooLarge},
		{`{"type":"hello","audio":{"encoding":"mp3","rate":8000}}`, wire.CodeBadField},
		{`{"type":"hello","audio":{"encoding":"pcm16","rate":8000}}`, wire.CodeOutOfOrder},
	} {
		a.SendRaw(tc.in)
		if m := a.Expect("error"); m.Code != tc.code {
			t.Errorf("%.40s: error %q, want %q", tc.in, m.Code, tc.code)
		}
	}
	// The call goes on after bad input.
	a.Send(map[string]any{"type": "turn", "id": "ok", "text": "still here"})
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn after bad input %+v", end)
	}
	// A turn before admission.
	b := r.Dial()
	b.Expect("prompt")
	b.Send(map[string]any{"type": "turn", "id": "early", "text": "x"})
	if m := b.Expect("error"); m.Code != wire.CodeNotAdmitted {
		t.Fatalf("early turn %+v", m)
	}
	// A message over the read limit closes the connection (1009).
	big := strings.Repeat("x", wire.MaxMessageBytes+1)
	_ = a.Conn.Write(a.Ctx, websocket.MessageText, []byte(big))
	for {
		if _, err := a.Read(); err != nil {
			if s := websocket.CloseStatus(err); s != websocket.StatusMessageTooBig && s != -1 {
				t.Fatalf("close %v", err)
			}
			break
		}
	}
	if got := r.Counter("frontdoor_protocol_errors_total"); got < 11 {
		t.Fatalf("protocol errors counted %v", got)
	}
}

func TestHelloFormat(t *testing.T) {
	r := newRig(t)
	c := r.Dial()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "mulaw", "rate": 8000}})
	c.Expect("session")
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	all := c.Until(sessiontest.IsType("turn_end"))
	st := sessiontest.LastOf(all, "audio_start")
	if st.Encoding != "mulaw" || st.Rate != 8000 {
		t.Fatalf("audio_start %+v", st)
	}
	var bytes int
	for _, m := range all {
		bytes += m.Bytes
	}
	if bytes != 5*160 { // 5 frames of 20 ms at 8 kHz, one byte a sample
		t.Fatalf("%d bytes of mulaw", bytes)
	}
}

// smallBuffers shrinks socket buffers so a caller that stops reading is
// noticed after kilobytes, not megabytes.
type smallListener struct{ net.Listener }

func (l smallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowReader: a caller that stops reading is closed (1008) and the
// outbound queue never grows past its bound.
func TestSlowReader(t *testing.T) {
	const limit = 32 << 10
	r := newRig(t, sessiontest.Listener(func(l net.Listener) net.Listener { return smallListener{l} }),
		func(c *Config, s *stub.Settings) {
			c.Outbound = OutboundLimits{Frames: 64, Bytes: limit, Timeout: 100 * time.Millisecond}
			s.FrameCount, s.Tokens = 5000, 2
		})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, n, a)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096)
		}
		return c, err
	}}}
	defer hc.CloseIdleConnections()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.HTTP.URL, "http")+"/v1/session", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	c := &sessiontest.Client{T: t, Conn: conn, Ctx: ctx}
	c.Expect("session")
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "flood"})
	// Stop reading: 5000 frames of 640 bytes are far more than the queue
	// and the socket buffers hold.
	sessiontest.WaitFor(t, "slow reader closed", func() bool { return r.Counter("frontdoor_slow_readers_closed_total") == 1 })
	for {
		if _, err := c.Read(); err != nil {
			if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation && s != -1 {
				t.Fatalf("close %v, want 1008", err)
			}
			break
		}
	}
	sessiontest.WaitFor(t, "call end", func() bool { return r.Engine.Calls() == 0 })
	if got := r.Counter("frontdoor_outbound_queue_high_water_bytes"); got <= 0 || got > limit {
		t.Fatalf("outbound queue high water %v bytes, limit %d", got, limit)
	}
	if s := r.stage(StageSynthesis); s.Leased != 0 {
		t.Fatalf("synthesis lease left: %+v", s)
	}
}
