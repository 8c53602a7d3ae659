package telephony

import (
	"context"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/asterisk"
	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
	"github.com/frontdoorhq/frontdoor/media/gateway/exotel"
	"github.com/frontdoorhq/frontdoor/media/gateway/freeswitch"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/media/gateway/jambonz"
	"github.com/frontdoorhq/frontdoor/media/gateway/plivo"
	"github.com/frontdoorhq/frontdoor/media/gateway/vonage"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// dialect is one gateway endpoint as its tests dial it.
type dialect struct {
	name   string // the transport's name, its log prefix
	path   string // the stream URL's path and query
	codec  gateway.Codec
	format media.Format // what the simulated gateway streams (zero: the codec's first)
	dial   *websocket.DialOptions
	tcp    bool // AudioSocket: a TCP connection to the rig's AudioSocket handler
	// noParams: the dialect's start carries no custom parameters (Asterisk's
	// plain-text control), so no caller number for a callback.
	noParams bool
	// malformed is a frame after the start that the dialect's decoder
	// refuses as malformed (closed 1007).
	malformed gateway.Frame
}

// dialects are the gateway endpoints, each as a gateway configured as
// docs/TELEPHONY.md says would connect.
var dialects = []dialect{
	{name: "plivo", path: "/v1/plivo", codec: plivo.Codec{}, malformed: gateway.Frame{Data: []byte(`{"event":"media","media":{"payload":7}}`)}},
	{name: "exotel", path: "/v1/exotel", codec: exotel.Codec{}, malformed: gateway.Frame{Data: []byte(`{"event":"media","media":{"payload":7}}`)}},
	{name: "vonage", path: "/v1/vonage", codec: vonage.Codec{}, malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}},
	{name: "asterisk", path: "/v1/asterisk", codec: asterisk.Codec{Control: asterisk.PlainText}, noParams: true, malformed: gateway.Frame{Data: []byte("DTMF_END")}},
	{name: "asterisk", path: "/v1/asterisk?control=json", codec: asterisk.Codec{Control: asterisk.JSON},
		format: gateway.L16(16000), malformed: gateway.Frame{Data: []byte(`{"event":"DTMF_END"}`)}},
	{name: "freeswitch", path: "/v1/freeswitch?rate=16000", codec: freeswitch.Codec{SampleRate: 16000}, malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}},
	{name: "freeswitch", path: "/v1/freeswitch", codec: freeswitch.Codec{Fork: true}, dial: &websocket.DialOptions{Subprotocols: []string{freeswitch.Subprotocol}},
		malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}},
	{name: "jambonz", path: "/v1/jambonz", codec: jambonz.Codec{}, dial: &websocket.DialOptions{Subprotocols: []string{jambonz.Subprotocol}},
		malformed: gateway.Frame{Data: []byte(`{"type":"mark"}`)}},
	{name: "audiosocket", path: "audiosocket_tcp", codec: audiosocket.Codec{}, tcp: true, noParams: true,
		malformed: gateway.Frame{Binary: true, Data: []byte("\x03\x00\x01x")}},
}

func (d dialect) caps() gateway.Capabilities { return d.codec.Capabilities() }

func (d dialect) test() string {
	name := strings.TrimPrefix(strings.ReplaceAll(d.path, "?", "_"), "/v1/")
	if d.dial != nil && len(d.dial.Subprotocols) > 0 {
		name += "_" + d.dial.Subprotocols[0]
	}
	return name
}

// gatewayFor dials d's endpoint on the rig as the gateway, with the
// stream's custom parameters params.
func (r *rig) gatewayFor(ctx context.Context, d dialect, speed float64, params map[string]string) *gatewaytest.Gateway {
	r.T.Helper()
	opts := gatewaytest.Options{
		Start: gateway.Start{StreamID: "stream-1", CallID: "call-1", Params: params, Format: d.format},
		Dial:  d.dial, Speed: speed,
	}
	var g *gatewaytest.Gateway
	var err error
	if d.tcp {
		opts.Start.StreamID = "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c" // AudioSocket's id is a UUID
		g, err = gatewaytest.New(ctx, audiosocket.NewLink(r.dialAudioSocket()), d.codec, opts)
	} else {
		g, err = gatewaytest.Dial(ctx, r.WSURL(d.path), d.codec, opts)
	}
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(g.Close)
	return g
}

// dialAudioSocket connects to a loopback listener whose one connection
// the rig's AudioSocket handler serves, as -audiosocket-listen does.
func (r *rig) dialAudioSocket() net.Conn {
	r.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r.audio.ServeAudioSocket(ctx, c, 8000)
	})
	r.T.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		r.T.Fatal(err)
	}
	return c
}

// silence returns d of silence at rate.
func silence(d time.Duration, rate int) []int16 { return make([]int16, int(d.Seconds()*float64(rate))) }

// rms is the loudness of audio in format f.
func rms(t testing.TB, f media.Format, audio []byte) float64 {
	s, err := gateway.DecodePCM(nil, f, audio)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(len(s), 1)))
}

// TestGatewayCall: on every dialect, a gateway speaks (espeak "hello"),
// hears a reply (audio, not silence, paced), speaks over it ("stop"):
// frontdoor clears where the dialect can, sends nothing of the interrupted
// reply after that while the caller speaks, and reports what was heard;
// the second utterance gets its own reply; the gateway's end ends the call
// and frees its session lease.
func TestGatewayCall(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.test(), func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			logs.dumpOnFailure(t)
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Recognizer = stub.NewRecognizer(stub.Settings{})
				c.Logger = slog.New(logs)
				s.FrameCount = 150 // a 3 s reply
				s.Tokens = 12
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			g := r.gatewayFor(ctx, d, 2, nil)
			logs.waitAdmitted(t, 1)
			f := g.Start().Format
			if err := g.SendPCM(ctx, sessiontest.Speech(t, "hello-8k.wav", f.SampleRate)); err != nil {
				t.Fatal(err)
			}
			if err := g.SendPCM(ctx, silence(600*time.Millisecond, f.SampleRate)); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Received >= time.Second }); err != nil {
				t.Fatal(err)
			}
			if s := g.Snapshot(); s.Received > 1500*time.Millisecond {
				t.Fatalf("reply not paced: %v received after 1 s of playback", s.Received)
			}
			if lvl := rms(t, f, g.Audio()); lvl < 100 {
				t.Fatalf("the reply is silence (rms %.0f)", lvl)
			}
			stop := sessiontest.Speech(t, "stop-8k.wav", f.SampleRate)
			half := len(stop) * 2 / 3
			if err := g.SendPCM(ctx, stop[:half]); err != nil {
				t.Fatal(err)
			}
			sessiontest.WaitFor(t, "interrupted", func() bool { return len(logs.find(d.name+": interrupted")) > 0 })
			at := g.Snapshot()
			if d.caps().Clear && at.Count(gateway.KindClear) != 1 {
				t.Fatalf("%d clears at the barge-in", at.Count(gateway.KindClear))
			}
			// The rest of the speech, without the trailing silence that
			// would end it: no new reply can start, so audio now would be
			// the interrupted one's.
			if err := g.SendPCM(ctx, stop[half:len(stop)-len(stop)/6]); err != nil {
				t.Fatal(err)
			}
			after := g.Snapshot()
			if d.caps().Clear && after.AfterClear != 0 {
				t.Fatalf("%v of audio after the clear while the caller spoke", after.AfterClear)
			}
			if grew := after.Received - at.Received; !d.caps().Clear && grew > 2*media.FrameDuration {
				t.Fatalf("%v of the interrupted reply after the barge-in", grew) // only frames already on the wire
			}
			in := logs.find(d.name + ": interrupted")
			if heard := in[0]["heard_ms"].(int64); heard < 500 || heard > 3000 {
				t.Fatalf("heard %d ms of a 3 s reply interrupted after >1 s", heard)
			}
			if err := g.SendPCM(ctx, silence(600*time.Millisecond, f.SampleRate)); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Received > after.Received }); err != nil {
				t.Fatalf("no second reply: %v", err)
			}
			endCall(ctx, t, d, g)
			sessiontest.WaitFor(t, "the session lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
		})
	}
}

// endCall ends the call as the dialect's gateway does: its stop, or
// closing the socket.
func endCall(ctx context.Context, t *testing.T, d dialect, g *gatewaytest.Gateway) {
	t.Helper()
	if err := g.SendStop(ctx); err != nil {
		g.Close()
		return
	}
	if s, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil }); s.Err == nil {
		t.Fatalf("%s: the stream did not end after stop: %v", d.name, err)
	}
}

// TestGatewayRefused: on every dialect, with the session stage full, the
// call waits, expires, hears the prompt as audio (played to its mark where
// the dialect has marks) and is then hung up: the dialect's hang-up where
// it has one, else a close with 1013.
func TestGatewayRefused(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.test(), func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			logs.dumpOnFailure(t)
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 100 * time.Millisecond}
				c.Logger = slog.New(logs)
				s.FrameCount = 25
			})
			holder := r.Admitted()
			defer holder.Send(map[string]any{"type": "hangup"})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g := r.gatewayFor(ctx, d, -1, nil)
			s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			switch {
			case d.caps().Hangup && !s.HungUp:
				t.Fatalf("not hung up: %v", s.Err)
			case !d.caps().Hangup && websocket.CloseStatus(s.Err) != websocket.StatusTryAgainLater:
				t.Fatalf("closed with %v, want 1013", s.Err)
			}
			if s.Received < 500*time.Millisecond {
				t.Fatalf("refused call heard %v of prompt", s.Received)
			}
			if d.caps().Marks && !echoedPrefix(s.Echoed, "prompt~") {
				t.Fatalf("hung up before the prompt played: echoed %v", s.Echoed)
			}
			if p := logs.find(d.name + ": prompt"); len(p) != 2 || p[1]["reason"] != "expired" {
				t.Fatalf("prompts %v", p)
			}
		})
	}
}

// echoedPrefix reports whether a mark of the utterance named prefix came
// back.
func echoedPrefix(echoed []string, prefix string) bool {
	return slices.ContainsFunc(echoed, func(m string) bool { return strings.HasPrefix(m, prefix) })
}
