package suite

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
)

// maxInbound bounds one message from the server to the simulated gateway.
const maxInbound = 1 << 20

// Pair returns the two ends of a link: the gateway's and the server's.
type Pair func(t testing.TB) (client, server gateway.Link)

// WebSocketPair returns a Pair over a loopback WebSocket (httptest), the
// server end accepted with accept (nil for the defaults) and the codec's
// read limit, the client dialled with dial (nil for the defaults).
func WebSocketPair(codec gateway.Codec, accept *websocket.AcceptOptions, dial *websocket.DialOptions) Pair {
	return func(t testing.TB) (gateway.Link, gateway.Link) {
		t.Helper()
		links := make(chan *websocket.Conn, 1)
		done := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := websocket.Accept(w, r, accept)
			if err != nil {
				return
			}
			links <- ws
			<-done // the handler lives as long as the test
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), dial)
		if err != nil {
			close(done)
			srv.Close()
			t.Fatal(err)
		}
		server := <-links
		t.Cleanup(func() {
			ws.CloseNow()
			server.CloseNow()
			close(done)
			srv.Close()
		})
		return gateway.NewWebSocketLink(ws, maxInbound), gateway.NewWebSocketLink(server, codec.Capabilities().MaxMessage)
	}
}

// Setup is what RunConn needs of a dialect.
type Setup struct {
	Codec gateway.Codec
	Start gateway.Start // what the gateway sends; its StreamID and Format default as in Options
	Pair  Pair          // default WebSocketPair(Codec, nil, nil)
	// Malformed is a frame the dialect's decoder must refuse.
	Malformed gateway.Frame
}

// Tone returns d of a 440 Hz tone at rate.
func Tone(d time.Duration, rate int) []int16 {
	s := make([]int16, int(d.Seconds()*float64(rate)))
	for i := range s {
		s[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return s
}

type served struct {
	conn   *gateway.Conn
	events chan gateway.Event
	errs   chan error
}

func serve(t testing.TB, ctx context.Context, link gateway.Link, codec gateway.Codec, wg *sync.WaitGroup) *served {
	s := &served{conn: gateway.NewConn(link, codec, gateway.Options{}), events: make(chan gateway.Event, 1024), errs: make(chan error, 64)}
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = s.conn.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		for {
			ev, err := s.conn.Read(ctx)
			var de *gateway.DecodeError
			switch {
			case errors.As(err, &de):
				s.errs <- err
			case err != nil:
				s.errs <- err
				return
			default:
				if ev.Audio != nil {
					ev.Audio = bytes.Clone(ev.Audio)
				}
				s.events <- ev
			}
		}
	}()
	return s
}

// next returns the next event of kind k, skipping media and info.
func (s *served) next(t testing.TB, ctx context.Context, k gateway.Kind) gateway.Event {
	t.Helper()
	for {
		select {
		case ev := <-s.events:
			if ev.Kind == k {
				return ev
			}
			if ev.Kind != gateway.KindMedia && ev.Kind != gateway.KindInfo {
				t.Fatalf("waiting for %s, got %s (%s)", k, ev.Kind, ev.Name)
			}
		case err := <-s.errs:
			t.Fatalf("waiting for %s: %v", k, err)
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", k, ctx.Err())
		}
	}
}

func (s *served) nextErr(t testing.TB, ctx context.Context) error {
	t.Helper()
	for {
		select {
		case <-s.events:
		case err := <-s.errs:
			return err
		case <-ctx.Done():
			t.Fatalf("waiting for an error: %v", ctx.Err())
		}
	}
}

// RunConn plays one exchange between a gateway.Conn and a Gateway of the
// dialect over a real link: start, caller audio and a key reach the server;
// an utterance is played and, where the dialect has marks, its mark comes
// back with the whole utterance heard; a clear in the middle of a second
// utterance reports a part of it heard and nothing queued before the clear
// reaches the gateway after it; a malformed frame and media before start are
// typed errors that leave the connection up; an oversize message is
// ErrTooLarge; hang-up and stop where the dialect has them.
func RunConn(t *testing.T, st Setup) {
	t.Helper()
	caps := st.Codec.Capabilities()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	srv, _, g := st.begin(t, ctx, &wg)
	defer g.Close()
	want := g.Start()
	rate := want.Format.SampleRate

	start := srv.next(t, ctx, gateway.KindStart)
	if start.Start.StreamID != want.StreamID || start.Start.Format != want.Format {
		t.Fatalf("start = %+v, want stream %q in %v", start.Start, want.StreamID, want.Format)
	}

	// Caller audio arrives decoded, with its energy.
	if err := g.SendPCM(ctx, Tone(100*time.Millisecond, rate)); err != nil {
		t.Fatal(err)
	}
	m := srv.next(t, ctx, gateway.KindMedia)
	if samples, err := gateway.DecodePCM(nil, want.Format, m.Audio); err != nil || len(samples) == 0 || maxAbs(samples) < 1000 {
		t.Fatalf("media: %d samples (peak %d), %v", len(samples), maxAbs(samples), err)
	}
	if caps.DTMF {
		if err := g.SendDTMF(ctx, "5"); err != nil {
			t.Fatal(err)
		}
		if d := srv.next(t, ctx, gateway.KindDTMF); d.Digit != "5" {
			t.Fatalf("dtmf digit %q", d.Digit)
		}
	}

	// An utterance plays; its mark returns once it has.
	c := srv.conn
	if err := c.SendPCM("u1", Tone(300*time.Millisecond, rate), rate); err != nil {
		t.Fatal(err)
	}
	c.EndUtterance("u1")
	frame := c.FrameDuration() // the stream's message: the dialect's, grown to its minimum size
	u1 := (300*time.Millisecond + frame - 1) / frame * frame
	if caps.Marks {
		ev := srv.next(t, ctx, gateway.KindMark)
		if p := ev.Progress; p == nil || p.Utterance != "u1" || !p.Done || p.Cleared || p.Sent != u1 || p.Played != u1 {
			t.Fatalf("mark %q progress %+v, want u1 done with %v heard", ev.Mark, p, u1)
		}
	}
	if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Received >= u1 }); err != nil {
		t.Fatal(err)
	}

	// A clear in the middle of a long utterance: part of it heard, nothing
	// of it after the clear.
	if err := c.SendPCM("u2", Tone(3*time.Second, rate), rate); err != nil {
		t.Fatal(err)
	}
	c.EndUtterance("u2")
	if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Received >= u1+200*time.Millisecond }); err != nil {
		t.Fatal(err)
	}
	progress, err := c.Clear(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without marks u1 is still open at the clear, and reported heard in full.
	var u2 *gateway.Progress
	for i, p := range progress {
		switch {
		case p.Utterance == "u2":
			u2 = &progress[i]
		case caps.Marks || p.Utterance != "u1" || p.Cleared || p.Played != p.Sent:
			t.Fatalf("clear progress %+v", progress)
		}
	}
	// Played may equal Sent: on a loaded machine the sender can fall behind
	// real time, and then all that went out has played when the clear comes
	// (the Tracker reports it so); the rest of u2 is still cut.
	if u2 == nil || !u2.Cleared || u2.Played <= 0 || u2.Played > u2.Sent || u2.Sent >= 3*time.Second {
		t.Fatalf("clear progress %+v", progress)
	}
	if caps.Clear {
		if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Count(gateway.KindClear) == 1 }); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SendPCM("u3", Tone(100*time.Millisecond, rate), rate); err != nil {
		t.Fatal(err)
	}
	c.EndUtterance("u3")
	u3 := (100*time.Millisecond + frame - 1) / frame * frame
	if caps.Marks {
		for {
			ev := srv.next(t, ctx, gateway.KindMark)
			if ev.Progress != nil && ev.Progress.Utterance == "u3" {
				if !ev.Progress.Done || ev.Progress.Played != u3 {
					t.Fatalf("u3 progress %+v", ev.Progress)
				}
				break
			}
		}
	}
	sent := u1 + c.Tracker().Progress("u2").Sent + u3
	snap, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Received >= sent })
	if err != nil {
		t.Fatal(err)
	}
	if snap.Received != sent {
		t.Fatalf("gateway received %v, server sent %v", snap.Received, sent)
	}
	if caps.Clear && snap.AfterClear != u3 {
		t.Fatalf("after the clear the gateway got %v of audio, want only u3's %v", snap.AfterClear, u3)
	}
	if caps.Marks && !caps.ClearEchoesMarks && len(snap.Echoed) != 2 {
		t.Fatalf("echoed %q: a clear must drop the pending mark", snap.Echoed)
	}

	// Bad input is a typed error and the connection stays up.
	if err := g.SendRaw(ctx, st.Malformed); err != nil {
		t.Fatal(err)
	}
	var de *gateway.DecodeError
	if err := srv.nextErr(t, ctx); !errors.As(err, &de) {
		t.Fatalf("malformed frame: %v, want a *gateway.DecodeError", err)
	}
	if err := g.SendPCM(ctx, Tone(20*time.Millisecond, rate)); err != nil {
		t.Fatal(err)
	}
	srv.next(t, ctx, gateway.KindMedia)
	big := gateway.Frame{Binary: st.Malformed.Binary, Data: make([]byte, caps.MaxMessage+1)}
	if _, err := st.Codec.Decode(big); !errors.Is(err, gateway.ErrTooLarge) {
		t.Fatalf("oversize message: %v", err)
	}

	if caps.Hangup {
		if err := c.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
		if s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.HungUp }); !s.HungUp {
			t.Fatal("no hang-up")
		}
	} else if err := c.Hangup(ctx); !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("Hangup: %v, want ErrUnsupported", err)
	}
	g.Close()
	_ = c.Close()
	cancel()
	wg.Wait()

	// Media before start is out of order.
	client, server := st.Pair(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	srv = serve(t, ctx2, server, st.Codec, &wg)
	f, err := st.Codec.EncodeEvent(nil, gateway.Event{Kind: gateway.KindMedia, Start: &want, Audio: gateway.AppendPCM(nil, want.Format, Tone(20*time.Millisecond, rate))})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.WriteFrame(ctx2, f); err != nil {
		t.Fatal(err)
	}
	if st.Codec.Capabilities().ImplicitStart {
		// The gateway may omit its start: the Conn starts the stream
		// itself, and the audio follows.
		if s := srv.next(t, ctx2, gateway.KindStart); s.Start == nil || s.Start.StreamID != gateway.ImplicitStreamID {
			t.Fatalf("media before start: %+v, want an implicit start", s)
		}
		if m := srv.next(t, ctx2, gateway.KindMedia); len(m.Audio) == 0 {
			t.Fatalf("the audio that started the stream was lost: %+v", m)
		}
	} else if err := srv.nextErr(t, ctx2); !errors.Is(err, gateway.ErrOrder) {
		t.Fatalf("media before start: %v, want ErrOrder", err)
	}
	_ = client.Close()
	_ = server.Close()
	cancel2()
	wg.Wait()
}

// begin links a served Conn and a Gateway; the Gateway has sent its start.
func (st *Setup) begin(t *testing.T, ctx context.Context, wg *sync.WaitGroup) (*served, gateway.Link, *gatewaytest.Gateway) {
	t.Helper()
	if st.Pair == nil {
		st.Pair = WebSocketPair(st.Codec, nil, nil)
	}
	client, server := st.Pair(t)
	srv := serve(t, ctx, server, st.Codec, wg)
	g, err := gatewaytest.New(ctx, client, st.Codec, gatewaytest.Options{Start: st.Start})
	if err != nil {
		t.Fatal(err)
	}
	return srv, server, g
}

// RunStop checks that the dialect's stop reaches the server as KindStop.
func RunStop(t *testing.T, st Setup) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	srv, server, g := st.begin(t, ctx, &wg)
	defer g.Close()
	srv.next(t, ctx, gateway.KindStart)
	if err := g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
	srv.next(t, ctx, gateway.KindStop)
	_ = server.Close()
}

func maxAbs(s []int16) int {
	m := 0
	for _, v := range s {
		m = max(m, abs(int(v)))
	}
	return m
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
