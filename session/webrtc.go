package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	pion "github.com/pion/webrtc/v4"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/webrtc"
	"github.com/frontdoorhq/frontdoor/stages"
)

// rtcInbox bounds caller events waiting for the call's reader: 2.5 s of
// 20 ms audio packets. Audio beyond it is dropped (counted); a reader that
// far behind has lost real time anyway.
const rtcInbox = 128

// ServeWebRTC is the handler of GET /v1/webrtc: WebRTC signalling on the
// WebSocket (offer, answer, trickled candidates), PCMU audio both ways, and the session's JSON
// events on the "events" data channel. The call starts once that channel is
// open, and ends on hangup, when the signalling socket closes, or when the
// peer connection fails.
func (s *Engine) ServeWebRTC(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns})
	if err != nil {
		s.log.Debug("webrtc: accept", "err", err)
		return
	}
	ws.SetReadLimit(webrtc.MaxSignalSize)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	t := &rtcTransport{s: s, ws: ws, log: s.log.With("transport", "webrtc"),
		in: make(chan rtcItem, rtcInbox), gone: make(chan struct{})}
	rc := s.cfg.WebRTC
	peer, err := webrtc.NewPeer(webrtc.Config{
		LoopbackOnly:    rc.LoopbackOnly,
		IncludeLoopback: !rc.ExcludeLoopback,
		ICEServers:      rc.ICEServers,
		OnAudio:         t.onAudio,
		OnEvent:         t.onEvent,
		OnState:         t.onState,
	}, webrtc.WebSocketTransport{Conn: ws})
	if err != nil {
		s.log.Error("webrtc: peer", "err", err)
		_ = ws.Close(websocket.StatusInternalError, "peer")
		return
	}
	t.peer = peer
	var wg sync.WaitGroup
	wg.Go(func() { t.signals(ctx) })
	stopPings := s.startHeartbeat(ws, func() { _ = ws.CloseNow() }, t.log)
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
	timer := stages.NewTimer(s.cfg.Clock, wait)
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
	s.Run(ctx, t, Capabilities{Interrupt: t.Interrupt})
}

type rtcItem struct {
	ev  ClientEvent
	err error
}

// rtcTransport carries a Call over a pion peer: events on the data channel,
// caller audio from the PCMU track, reply audio paced onto the PCMU track.
type rtcTransport struct {
	s    *Engine
	ws   *websocket.Conn
	peer *webrtc.Peer
	log  *slog.Logger

	in       chan rtcItem
	gone     chan struct{} // closed when signalling or the connection ended
	goneOnce sync.Once
	hello    bool // the reader's

	mu     sync.Mutex
	turn   string        // the turn whose audio is being queued
	queued time.Duration // of that turn's audio
	conv   *toMulaw
	once   sync.Once
}

func (t *rtcTransport) end() { t.goneOnce.Do(func() { close(t.gone) }) }

// signals applies the browser's signalling until the socket closes.
func (t *rtcTransport) signals(ctx context.Context) {
	defer t.end()
	for {
		sig, err := webrtc.ReadSignal(ctx, t.ws)
		if err != nil {
			if errors.Is(err, webrtc.ErrSignal) {
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
	t.s.m.protocolErrs.WithLabelValues("webrtc_signal").Inc()
	b, _ := json.Marshal(&ErrorMsg{Type: "error", Code: CodeBadField, Message: err.Error()})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = t.ws.Write(wctx, websocket.MessageText, b)
}

func (t *rtcTransport) push(it rtcItem) {
	select {
	case t.in <- it:
	default:
		t.s.m.protocolErrs.WithLabelValues("webrtc_overrun").Inc()
	}
}

// onAudio runs on pion's track reader: the packet goes to the call's reader
// as µ-law, the format its hello declared.
func (t *rtcTransport) onAudio(pcm []int16) {
	t.push(rtcItem{ev: ClientEvent{Kind: EventAudio, Type: "audio", Data: g711.EncodeMulaw(nil, pcm)}})
}

func (t *rtcTransport) onEvent(data []byte) {
	ev, err := DecodeText(data)
	if err == nil && ev.Kind == EventHello {
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

// Recv implements Transport. The first event is a hello declaring 8 kHz
// µ-law (PCMU) both ways.
func (t *rtcTransport) Recv(ctx context.Context) (ClientEvent, error) {
	if !t.hello {
		t.hello = true
		return ClientEvent{Kind: EventHello, Type: "hello", Audio: media.Telephony}, nil
	}
	select {
	case it := <-t.in:
		return it.ev, it.err
	case <-t.gone:
		return ClientEvent{}, errGone
	case <-ctx.Done():
		return ClientEvent{}, ctx.Err()
	}
}

// Send implements Transport: every event goes on the data channel; audio
// brackets also frame the track's utterances.
func (t *rtcTransport) Send(ctx context.Context, msg any) error {
	switch m := msg.(type) {
	case *AudioStartMsg:
		conv, err := newToMulaw(m.Encoding, m.Rate)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.turn, t.queued, t.conv = m.Turn, 0, conv
		t.mu.Unlock()
		m2 := *m
		m2.Encoding, m2.Rate = string(media.Mulaw), 8000 // what the track carries
		msg = &m2
	case *AudioEndMsg:
		t.mu.Lock()
		conv := t.conv
		t.conv = nil
		t.mu.Unlock()
		if conv != nil {
			if rest := conv.flush(); len(rest) > 0 {
				if err := t.peer.SendAudio(rest); err != nil {
					return err
				}
			}
			t.peer.EndUtterance(m.Turn)
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("session: encode %T: %w", msg, err)
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

// SendAudio implements Transport.
func (t *rtcTransport) SendAudio(ctx context.Context, b []byte) error {
	t.mu.Lock()
	conv := t.conv
	t.mu.Unlock()
	if conv == nil {
		return nil
	}
	ulaw, err := conv.convert(b)
	if err != nil {
		return err
	}
	if err := t.peer.SendAudio(ulaw); err != nil {
		return err
	}
	t.mu.Lock()
	t.queued += media.Telephony.Duration(len(ulaw))
	t.mu.Unlock()
	return waitBuffered(ctx, t.peer.Buffered, mediaLead)
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

// Close implements Transport. A refused caller's prompt audio, if any, is
// let play out (bounded) before the peer closes.
func (t *rtcTransport) Close(status CloseStatus, reason string) {
	t.once.Do(func() {
		if status == CloseTryLater {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = waitBuffered(ctx, t.peer.Buffered, 0)
			cancel()
		}
		_ = t.peer.Close()
		_ = t.ws.Close(websocket.StatusCode(status), reason)
		t.end()
	})
}
