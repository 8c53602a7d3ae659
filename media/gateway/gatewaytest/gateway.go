// Package gatewaytest plays the gateway's side of any gateway.Codec, for
// tests and load generators, like media/twilio/twiliotest does for Twilio:
// it sends the dialect's start, streams caller audio paced in real time from
// PCM, sends keys, and records what the server sends back, playing it on a
// real-time clock. Marks are echoed the way the dialect's gateway does: once
// the audio before them has played, or, on a clear, at once where the
// dialect echoes pending marks (ClearEchoesMarks) and never where it drops
// them. A clear drops the buffered audio. Package suite, below this one,
// has the tests every dialect runs with it.
package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxRecorded bounds the outbound audio a Gateway keeps, in time.
const MaxRecorded = time.Minute

// MaxLog bounds the commands a Gateway keeps in its log (an hour of 20 ms
// frames); later ones are counted in Received but not logged.
const MaxLog = 180_000

// maxInbound bounds one message from the server.
const maxInbound = 1 << 20

// Options configure a Gateway. Zero values take the defaults noted.
type Options struct {
	Start  gateway.Start          // StreamID defaults to "stream-1"; Format to the codec's first
	Header http.Header            // sent with a WebSocket upgrade
	Dial   *websocket.DialOptions // overrides Header when set (subprotocols, say)
	Chunk  time.Duration          // caller audio per media message; default 20 ms
	// Speed scales the pace of caller audio: 1 (default) is real time;
	// negative sends without pausing.
	Speed float64
}

// Gateway is a scripted gateway-side connection.
type Gateway struct {
	codec  gateway.Codec
	caps   gateway.Capabilities
	opts   Options
	link   gateway.Link
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	sendMu sync.Mutex // orders what the gateway sends
	seq    int64
	out    []byte

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	log        []gateway.Command
	pending    []pendingMark
	playEnd    time.Time
	received   time.Duration
	afterClear time.Duration
	cleared    time.Duration
	audio      []byte
	echoed     []string
	hungUp     bool
	readErr    error
}

type pendingMark struct {
	name string
	at   time.Time
}

// Dial connects to a WebSocket url and starts the stream (see New).
func Dial(ctx context.Context, url string, codec gateway.Codec, opts Options) (*Gateway, error) {
	do := opts.Dial
	if do == nil {
		do = &websocket.DialOptions{HTTPHeader: opts.Header}
	}
	ws, _, err := websocket.Dial(ctx, url, do)
	if err != nil {
		return nil, fmt.Errorf("gatewaytest: dial: %w", err)
	}
	g, err := New(ctx, gateway.NewWebSocketLink(ws, maxInbound), codec, opts)
	if err != nil {
		ws.CloseNow()
		return nil, err
	}
	return g, nil
}

// New plays the gateway over link: it sends the dialect's connected message
// where it has one and start, then reads and plays what comes back until
// Close.
func New(ctx context.Context, link gateway.Link, codec gateway.Codec, opts Options) (*Gateway, error) {
	caps := codec.Capabilities()
	if opts.Start.StreamID == "" {
		opts.Start.StreamID = "stream-1"
	}
	if opts.Start.Format == (media.Format{}) && len(caps.Formats) > 0 {
		opts.Start.Format = caps.Formats[0]
	}
	if opts.Chunk <= 0 {
		opts.Chunk = media.FrameDuration
	}
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	g := &Gateway{codec: codec, caps: caps, opts: opts, link: link, kick: make(chan struct{}, 1), changed: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	for _, e := range []gateway.Event{{Kind: gateway.KindInfo, Info: gateway.InfoConnected}, {Kind: gateway.KindStart}} {
		if err := g.Send(ctx, e); err != nil && !errors.Is(err, gateway.ErrUnsupported) {
			g.cancel()
			return nil, err
		}
	}
	g.wg.Add(2)
	go g.readLoop()
	go g.playLoop()
	return g, nil
}

// Start returns the start the gateway sent.
func (g *Gateway) Start() gateway.Start { return g.opts.Start }

// Send encodes and sends one event; e.Start is filled in with the stream's
// start and e.Seq with the next sequence number.
func (g *Gateway) Send(ctx context.Context, e gateway.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	g.seq++
	start := g.opts.Start
	e.Start, e.Seq = &start, g.seq
	f, err := g.codec.EncodeEvent(g.out[:0], e)
	if err != nil {
		g.seq--
		return err
	}
	g.out = f.Data
	return g.write(f)
}

// write sends f with the gateway's own context: in coder/websocket a write
// whose context ends closes the connection, and a test that stops talking
// must not hang up.
func (g *Gateway) write(f gateway.Frame) error {
	ctx, cancel := context.WithTimeout(g.ctx, 5*time.Second)
	defer cancel()
	return g.link.WriteFrame(ctx, f)
}

// SendRaw sends a frame as is (for tests of bad input).
func (g *Gateway) SendRaw(ctx context.Context, f gateway.Frame) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	return g.write(f)
}

// SendAudio streams audio in the stream's format in Options.Chunk pieces, at
// Options.Speed.
func (g *Gateway) SendAudio(ctx context.Context, audio []byte) error {
	f := g.opts.Start.Format
	n := max(f.BytesPer(g.opts.Chunk), 1)
	begin := time.Now()
	var sent time.Duration
	for len(audio) > 0 {
		k := min(n, len(audio))
		if err := g.Send(ctx, gateway.Event{Kind: gateway.KindMedia, Audio: audio[:k]}); err != nil {
			return err
		}
		sent += f.Duration(k)
		audio = audio[k:]
		if g.opts.Speed > 0 {
			t := time.NewTimer(time.Until(begin.Add(time.Duration(float64(sent) / g.opts.Speed))))
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

// SendPCM encodes PCM16 samples at the stream's rate in its format and
// streams them like SendAudio.
func (g *Gateway) SendPCM(ctx context.Context, samples []int16) error {
	return g.SendAudio(ctx, gateway.AppendPCM(nil, g.opts.Start.Format, samples))
}

// SendDTMF sends a key press.
func (g *Gateway) SendDTMF(ctx context.Context, digit string) error {
	return g.Send(ctx, gateway.Event{Kind: gateway.KindDTMF, Digit: digit})
}

// SendStop ends the stream the way the dialect does; ErrUnsupported for a
// dialect whose gateway just closes the socket (use Close).
func (g *Gateway) SendStop(ctx context.Context) error {
	return g.Send(ctx, gateway.Event{Kind: gateway.KindStop})
}

// Close closes the link and waits for the gateway's goroutines.
func (g *Gateway) Close() {
	_ = g.link.Close()
	g.cancel()
	g.wg.Wait()
}
