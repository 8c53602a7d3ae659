package webrtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	pion "github.com/pion/webrtc/v4"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/g711"
	mediartc "github.com/frontdoorhq/frontdoor/media/webrtc"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
)

// rtcInbox bounds caller events waiting for the call's reader: 2.5 s of
// 20 ms audio packets. Audio beyond it is dropped (counted); a reader that
// far behind has lost real time anyway.
const rtcInbox = 128

// errGone is what Recv returns once signalling or the connection ended.
var errGone = errors.New("webrtc: caller disconnected")

// Name is the transport's name, its calls' in the engine's counts
// (session.Capabilities.Name).
const Name = "webrtc"

// Config configures GET /v1/webrtc, the browser endpoint.
type Config struct {
	// LoopbackOnly gathers only 127.0.0.1 candidates (tests, single host).
	LoopbackOnly bool
	// ExcludeLoopback leaves out the 127.0.0.1 candidates offered by
	// default beside the host's others (they make single-host use work).
	ExcludeLoopback bool
	// ICEServers are STUN/TURN servers (none by default).
	ICEServers []pion.ICEServer
	// ConnectTimeout bounds signalling until the media connection is up
	// (0: 15s).
	ConnectTimeout time.Duration
	// OriginPatterns are the cross-origin hosts allowed to open the
	// signalling WebSocket (coder/websocket AcceptOptions); same-origin
	// always is.
	OriginPatterns []string
	// Logger (nil: discard).
	Logger *slog.Logger
}

// Handler returns the handler of GET /v1/webrtc: WebRTC signalling on the
// WebSocket (offer, answer, trickled candidates), PCMU audio both ways, and
// the session's JSON events on the "events" data channel. The call starts
// on e once that channel is open, and ends on hangup, when the signalling
// socket closes, or when the peer connection fails; the handler returns
// when it has ended (session.Engine.Run).
func Handler(e *session.Engine, rc Config) http.Handler {
	log := rc.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(e, rc, log, w, r)
	})
}

func serve(s *session.Engine, rc Config, log *slog.Logger, w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: rc.OriginPatterns})
	if err != nil {
		log.Debug("webrtc: accept", "err", err)
		return
	}
	ws.SetReadLimit(mediartc.MaxSignalSize)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	t := &rtcTransport{s: s, ws: ws, log: log.With("transport", "webrtc"),
		in: make(chan rtcItem, rtcInbox), gone: make(chan struct{})}
	peer, err := mediartc.NewPeer(mediartc.Config{
		LoopbackOnly:    rc.LoopbackOnly,
		IncludeLoopback: !rc.ExcludeLoopback,
		ICEServers:      rc.ICEServers,
		Logger:          log,
		OnAudio:         t.onAudio,
		OnEvent:         t.onEvent,
		OnState:         t.onState,
	}, mediartc.WebSocketTransport{Conn: ws})
	if err != nil {
		log.Error("webrtc: peer", "err", err)
		_ = ws.Close(websocket.StatusInternalError, "peer")
		return
	}
	t.peer = peer
	var wg sync.WaitGroup
	wg.Go(func() { t.signals(ctx) })
	stopPings := s.StartHeartbeat(ws, func() { _ = ws.CloseNow() }, t.log)
	defer stopPings()
	wg.Go(func() { _ = peer.Run(ctx) })
	defer func() {
		cancel()
		_ = peer.Close()
		ws.CloseNow()
		wg.Wait()
	}()

	wait := rc.ConnectTimeout
	if wait <= 0 {
		wait = 15 * time.Second
	}
	timer := clock.NewTimer(s.Clock(), wait)
	defer timer.Stop()
	select {
	case <-peer.Open():
	case <-t.gone:
		return
	case <-timer.C:
		t.log.Info("webrtc: not connected in time")
		_ = ws.Close(websocket.StatusPolicyViolation, "no connection")
		return
	}
	s.Run(ctx, t, session.Capabilities{Name: Name, Interrupt: t.Interrupt})
}

type rtcItem struct {
	ev  session.ClientEvent
	err error
}

// rtcTransport carries a Call over a pion peer: events on the data channel,
// caller audio from the PCMU track, reply audio paced onto the PCMU track.
type rtcTransport struct {
	s    *session.Engine
	ws   *websocket.Conn
	peer *mediartc.Peer
	log  *slog.Logger

	in       chan rtcItem
	gone     chan struct{} // closed when signalling or the connection ended
	goneOnce sync.Once
	hello    bool // the reader's

	mu     sync.Mutex
	turn   string        // the turn whose audio is being queued
	queued time.Duration // of that turn's audio
	conv   *pcmu.Converter
	once   sync.Once
}

func (t *rtcTransport) end() { t.goneOnce.Do(func() { close(t.gone) }) }

// signals applies the browser's signalling until the socket closes.
func (t *rtcTransport) signals(ctx context.Context) {
	defer t.end()
	for {
		sig, err := mediartc.ReadSignal(ctx, t.ws)
		if err != nil {
			if errors.Is(err, mediartc.ErrSignal) {
				t.signalError(ctx, err)
				continue
			}
			return
		}
		if err := t.peer.HandleSignal(ctx, sig); err != nil {
			t.signalError(ctx, err)
		}
	}
}

func (t *rtcTransport) signalError(ctx context.Context, err error) {
	t.s.CountProtocolError("webrtc_signal")
	b, _ := json.Marshal(&session.ErrorMsg{Type: "error", Code: session.CodeBadField, Message: err.Error()})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = t.ws.Write(wctx, websocket.MessageText, b)
}

func (t *rtcTransport) push(it rtcItem) {
	select {
	case t.in <- it:
	default:
		t.s.CountProtocolError("webrtc_overrun")
	}
}

// onAudio runs on pion's track reader: the packet goes to the call's reader
// as µ-law, the format its hello declared.
func (t *rtcTransport) onAudio(pcm []int16) {
	t.push(rtcItem{ev: session.ClientEvent{Kind: session.EventAudio, Type: "audio", Data: g711.EncodeMulaw(nil, pcm)}})
}

func (t *rtcTransport) onEvent(data []byte) {
	ev, err := session.DecodeText(data)
	if err == nil && ev.Kind == session.EventHello {
		return // the format is the track's, declared by the transport
	}
	t.push(rtcItem{ev: ev, err: err})
}

func (t *rtcTransport) onState(st pion.PeerConnectionState) {
	t.log.Debug("webrtc: state", "state", st)
	// Disconnected: ICE consent checks went unanswered (pion: 5 s), the
	// usual sign of a peer that vanished; waiting for Failed (25 s more)
	// would hold the call's leases that long.
	if st == pion.PeerConnectionStateFailed || st == pion.PeerConnectionStateClosed ||
		st == pion.PeerConnectionStateDisconnected {
		t.end()
	}
}

// Recv implements session.Transport. The first event is a hello declaring 8 kHz
// µ-law (PCMU) both ways.
func (t *rtcTransport) Recv(ctx context.Context) (session.ClientEvent, error) {
	if !t.hello {
		t.hello = true
		return session.ClientEvent{Kind: session.EventHello, Type: "hello", Audio: media.Telephony}, nil
	}
	select {
	case it := <-t.in:
		return it.ev, it.err
	case <-t.gone:
		return session.ClientEvent{}, errGone
	case <-ctx.Done():
		return session.ClientEvent{}, ctx.Err()
	}
}

// Send implements session.Transport: every event goes on the data channel; audio
// brackets also frame the track's utterances.
func (t *rtcTransport) Send(ctx context.Context, msg any) error {
	switch m := msg.(type) {
	case *session.AudioStartMsg:
		conv, err := pcmu.NewConverter(m.Encoding, m.Rate)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.turn, t.queued, t.conv = m.Turn, 0, conv
		t.mu.Unlock()
		m2 := *m
		m2.Encoding, m2.Rate = string(media.Mulaw), 8000 // what the track carries
		msg = &m2
	case *session.AudioEndMsg:
		t.mu.Lock()
		conv := t.conv
		t.conv = nil
		t.mu.Unlock()
		if conv != nil {
			if rest := conv.Flush(); len(rest) > 0 {
				if err := t.peer.SendAudio(rest); err != nil {
					return err
				}
			}
			t.peer.EndUtterance(m.Turn)
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("webrtc: encode %T: %w", msg, err)
	}
	if err := t.peer.SendEvent(b); err != nil {
		select {
		case <-t.gone:
			return err
		default:
			return nil // a closing channel: the call ends through Recv
		}
	}
	return nil
}

// SendAudio implements session.Transport.
func (t *rtcTransport) SendAudio(ctx context.Context, b []byte) error {
	t.mu.Lock()
	conv := t.conv
	t.mu.Unlock()
	if conv == nil {
		return nil
	}
	ulaw, err := conv.Convert(b)
	if err != nil {
		return err
	}
	if err := t.peer.SendAudio(ulaw); err != nil {
		return err
	}
	t.mu.Lock()
	t.queued += media.Telephony.Duration(len(ulaw))
	t.mu.Unlock()
	return pcmu.WaitBuffered(ctx, t.s.Clock(), t.peer.Buffered, pcmu.Lead)
}

// Interrupt is the transport's Capabilities.Interrupt: the queued audio is dropped, and the
// turn was heard up to what had left for the track.
func (t *rtcTransport) Interrupt(_ context.Context, turn string) (time.Duration, bool) {
	dropped := t.peer.ClearAudio()
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, queued := t.turn, t.queued
	t.conv = nil
	if turn == "" || turn != cur {
		return 0, false
	}
	return max(queued-dropped, 0), true
}

// Close implements session.Transport. A refused caller's prompt audio, if any, is
// let play out (bounded) before the peer closes.
func (t *rtcTransport) Close(status session.CloseStatus, reason string) {
	t.once.Do(func() {
		if status == session.CloseTryLater {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = pcmu.WaitBuffered(ctx, t.s.Clock(), t.peer.Buffered, 0)
			cancel()
		}
		_ = t.peer.Close()
		_ = t.ws.Close(websocket.StatusCode(status), reason)
		t.end()
	})
}
