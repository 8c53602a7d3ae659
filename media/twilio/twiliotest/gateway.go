// Package twiliotest plays the gateway's side of a Twilio Media Streams call
// for tests and load generators: it connects to a frontdoor endpoint, sends
// connected and start, streams caller audio as µ-law media in real time, and
// collects outbound media, marks and clears, echoing marks the way Twilio
// does: once the audio queued before them has played, or at once on clear.
package twiliotest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/twilio"
)

// Options configure a Gateway. Zero values take the defaults noted.
type Options struct {
	Dialect          twilio.Dialect
	StreamSID        string // default "MZ" + 32 zeros
	CallSID          string // default "CA" + 32 zeros
	AccountSID       string // default "AC" + 32 zeros
	CustomParameters map[string]string
	Header           http.Header   // sent with the upgrade, e.g. X-Twilio-Signature
	Chunk            time.Duration // caller audio per media message; default 20 ms
	// Speed scales the pace of caller audio: 1 (default) is real time, 0 <
	// Speed < 1 is slower, larger is faster. Negative sends without pausing.
	Speed float64
}

// Gateway is a scripted Twilio-side connection.
type Gateway struct {
	opts   Options
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	sendMu sync.Mutex // orders our inbound-to-frontdoor messages
	seq    int64
	chunk  int64
	sent   time.Duration // caller audio sent, for media timestamps

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	log      []twilio.Outbound
	pending  []pendingMark
	playEnd  time.Time
	received time.Duration // outbound audio received
	cleared  time.Duration // outbound audio dropped unplayed by clear
	echoed   []string
	readErr  error
}

type pendingMark struct {
	name string
	at   time.Time
}

// Dial connects to url (ws:// or wss://) and sends connected and start.
func Dial(ctx context.Context, url string, opts Options) (*Gateway, error) {
	if opts.StreamSID == "" {
		opts.StreamSID = "MZ00000000000000000000000000000000"
	}
	if opts.CallSID == "" {
		opts.CallSID = "CA00000000000000000000000000000000"
	}
	if opts.AccountSID == "" {
		opts.AccountSID = "AC00000000000000000000000000000000"
	}
	if opts.Chunk <= 0 {
		opts.Chunk = media.FrameDuration
	}
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: opts.Header})
	if err != nil {
		return nil, fmt.Errorf("twiliotest: dial: %w", err)
	}
	ws.SetReadLimit(twilio.MaxMessageSize)
	g := &Gateway{opts: opts, ws: ws, kick: make(chan struct{}, 1), changed: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	connected := &twilio.Message{Event: twilio.EventConnected, Connected: &twilio.Connected{Protocol: "Call", Version: "1.0.0"}}
	start := &twilio.Message{Event: twilio.EventStart, StreamSID: opts.StreamSID, Start: &twilio.Start{
		StreamSID: opts.StreamSID, AccountSID: opts.AccountSID, CallSID: opts.CallSID,
		Tracks: []string{"inbound"}, CustomParameters: opts.CustomParameters,
		MediaFormat: twilio.MediaFormat{Encoding: "audio/x-mulaw", SampleRate: 8000, Channels: 1},
	}}
	if opts.Dialect == twilio.Telnyx {
		start.Start.MediaFormat.Encoding = "PCMU"
	}
	for _, m := range []*twilio.Message{connected, start} {
		if err := g.send(ctx, m); err != nil {
			ws.CloseNow()
			g.cancel()
			return nil, err
		}
	}
	g.wg.Add(2)
	go g.readLoop()
	go g.playLoop()
	return g, nil
}

// send writes m. ctx is checked first but not handed to the write: in
// coder/websocket a write whose context ends closes the whole connection, and
// a test that stops talking must not hang up.
func (g *Gateway) send(ctx context.Context, m *twilio.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	if m.Event != twilio.EventConnected {
		g.seq++
		m.SequenceNumber = g.seq
	}
	b, err := twilio.Encode(g.opts.Dialect, m)
	if err != nil {
		return err
	}
	return g.write(b)
}

func (g *Gateway) write(b []byte) error {
	ctx, cancel := context.WithTimeout(g.ctx, 5*time.Second)
	defer cancel()
	return g.ws.Write(ctx, websocket.MessageText, b)
}

// SendMulaw streams µ-law caller audio in Options.Chunk pieces, at Options.Speed.
func (g *Gateway) SendMulaw(ctx context.Context, ulaw []byte) error {
	n := media.Telephony.BytesPer(g.opts.Chunk)
	start := time.Now()
	var sent time.Duration
	for len(ulaw) > 0 {
		k := min(n, len(ulaw))
		g.chunk++
		m := &twilio.Message{Event: twilio.EventMedia, StreamSID: g.opts.StreamSID, Media: &twilio.Media{
			Track: "inbound", Chunk: g.chunk, Timestamp: g.sent, Payload: ulaw[:k],
		}}
		if err := g.send(ctx, m); err != nil {
			return err
		}
		d := media.Telephony.Duration(k)
		g.sent += d
		sent += d
		ulaw = ulaw[k:]
		if g.opts.Speed > 0 {
			due := start.Add(time.Duration(float64(sent) / g.opts.Speed))
			t := time.NewTimer(time.Until(due))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	return nil
}

// SendPCM encodes 8 kHz PCM16 to µ-law and streams it like SendMulaw.
func (g *Gateway) SendPCM(ctx context.Context, pcm []int16) error {
	return g.SendMulaw(ctx, g711.EncodeMulaw(nil, pcm))
}

// SendSilence streams d of µ-law silence.
func (g *Gateway) SendSilence(ctx context.Context, d time.Duration) error {
	b := make([]byte, media.Telephony.BytesPer(d))
	for i := range b {
		b[i] = g711.MulawSilence
	}
	return g.SendMulaw(ctx, b)
}

// SendDTMF sends a keypress.
func (g *Gateway) SendDTMF(ctx context.Context, digit string) error {
	return g.send(ctx, &twilio.Message{Event: twilio.EventDTMF, StreamSID: g.opts.StreamSID, DTMF: &twilio.DTMF{Track: "inbound_track", Digit: digit}})
}

// SendStop sends stop, as Twilio does when the call hangs up.
func (g *Gateway) SendStop(ctx context.Context) error {
	return g.send(ctx, &twilio.Message{Event: twilio.EventStop, StreamSID: g.opts.StreamSID, Stop: &twilio.Stop{AccountSID: g.opts.AccountSID, CallSID: g.opts.CallSID}})
}

// Close closes the connection (if frontdoor has not) and waits for the
// gateway's goroutines.
func (g *Gateway) Close() {
	_ = g.ws.Close(websocket.StatusNormalClosure, "bye")
	g.cancel()
	g.wg.Wait()
}

var errBinary = errors.New("twiliotest: binary frame from frontdoor (Twilio accepts text only)")
