package webrtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	pion "github.com/pion/webrtc/v4"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pace"
)

// Errors callers can branch on.
var (
	ErrNotOpen = errors.New("webrtc: data channel not open")
	ErrClosed  = errors.New("webrtc: peer closed")
)

// Transport carries signals to the remote peer. Send is called from pion's
// goroutines as candidates are gathered, so it must be safe for concurrent
// use (a coder/websocket connection's writes are).
type Transport interface {
	Send(ctx context.Context, s Signal) error
}

// Config configures a Peer. Zero values take the defaults noted.
type Config struct {
	// LoopbackOnly gathers only 127.0.0.1 host candidates over UDP4 with
	// mDNS off: for tests and single-host use.
	LoopbackOnly bool
	// NetworkTypes defaults to UDP4.
	NetworkTypes []pion.NetworkType
	// IncludeLoopback adds loopback candidates (pion excludes them by default).
	IncludeLoopback bool
	// EnableMDNS hides local addresses behind .local names; off by default.
	EnableMDNS bool
	// ICEServers are STUN/TURN servers; none by default.
	ICEServers []pion.ICEServer
	// DataChannel is the label of the events channel; default "events".
	DataChannel string

	// OnAudio receives inbound audio decoded to 8 kHz PCM16, one RTP packet
	// (normally 20 ms) per call, from one goroutine. It must not block long.
	OnAudio func(pcm []int16)
	// OnEvent receives each data channel message (the session's JSON).
	OnEvent func(data []byte)
	// OnState reports connection state changes.
	OnState func(pion.PeerConnectionState)
	// OnUtteranceSent is called when the last frame of an utterance passed
	// to EndUtterance has been written to the track.
	OnUtteranceSent func(utterance string)
	// Logger receives pion's own log lines (component "pion"); nil: pion's
	// default, plain text on stderr.
	Logger *slog.Logger
}

// Peer is one end of a PCMU WebRTC call. The server answers a browser's
// offer; tests use a second Peer as the browser, calling Offer.
type Peer struct {
	cfg   Config
	pc    *pion.PeerConnection
	t     Transport
	track *pion.TrackLocalStaticSample
	pacer *pace.Pacer

	connected chan struct{}
	open      chan struct{}
	openOnce  sync.Once
	connOnce  sync.Once

	sendMu sync.Mutex // orders samples with ClearAudio

	mu       sync.Mutex
	closed   bool
	dc       *pion.DataChannel
	remoteOK bool                    // remote description set
	early    []pion.ICECandidateInit // candidates that arrived before it
	wg       sync.WaitGroup
}

func newAPI(cfg Config) (*pion.API, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(pion.RTPCodecParameters{
		RTPCodecCapability: pion.RTPCodecCapability{MimeType: pion.MimeTypePCMU, ClockRate: 8000, Channels: 1},
		PayloadType:        0,
	}, pion.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	ir := &interceptor.Registry{}
	if err := pion.RegisterDefaultInterceptors(m, ir); err != nil {
		return nil, err
	}
	se := pion.SettingEngine{}
	if cfg.Logger != nil {
		se.LoggerFactory = slogFactory{cfg.Logger}
	}
	types := cfg.NetworkTypes
	if len(types) == 0 {
		types = []pion.NetworkType{pion.NetworkTypeUDP4}
	}
	se.SetNetworkTypes(types)
	se.SetIncludeLoopbackCandidate(cfg.IncludeLoopback || cfg.LoopbackOnly)
	if !cfg.EnableMDNS || cfg.LoopbackOnly {
		se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	}
	if cfg.LoopbackOnly {
		se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	}
	return pion.NewAPI(pion.WithMediaEngine(m), pion.WithSettingEngine(se), pion.WithInterceptorRegistry(ir)), nil
}

// NewPeer creates a peer with a PCMU track to send and receive, sending its
// signals through t. Call Close when done.
func NewPeer(cfg Config, t Transport) (*Peer, error) {
	if cfg.DataChannel == "" {
		cfg.DataChannel = "events"
	}
	api, err := newAPI(cfg)
	if err != nil {
		return nil, fmt.Errorf("webrtc: media engine: %w", err)
	}
	pc, err := api.NewPeerConnection(pion.Configuration{ICEServers: cfg.ICEServers})
	if err != nil {
		return nil, fmt.Errorf("webrtc: %w", err)
	}
	p := &Peer{
		cfg: cfg, pc: pc, t: t,
		connected: make(chan struct{}), open: make(chan struct{}),
		pacer: pace.New(pace.Config{
			FrameBytes: media.Telephony.BytesPer(media.FrameDuration), Period: media.FrameDuration,
			Fill: g711.MulawSilence, MaxBuffered: media.Telephony.BytesPer(time.Minute),
		}),
	}
	p.track, err = pion.NewTrackLocalStaticSample(
		pion.RTPCodecCapability{MimeType: pion.MimeTypePCMU, ClockRate: 8000, Channels: 1}, "audio", "frontdoor")
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("webrtc: track: %w", err)
	}
	sender, err := pc.AddTrack(p.track)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("webrtc: add track: %w", err)
	}
	// Reading RTCP lets the interceptors (NACK, reports) work; ends on Close.
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()
	pc.OnICECandidate(func(c *pion.ICECandidate) {
		if c == nil {
			return // gathering complete
		}
		init := c.ToJSON()
		_ = p.t.Send(context.Background(), Signal{Type: SignalCandidate, Candidate: &init})
	})
	pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		if s == pion.PeerConnectionStateConnected {
			p.connOnce.Do(func() { close(p.connected) })
		}
		if cfg.OnState != nil {
			cfg.OnState(s)
		}
	})
	pc.OnTrack(p.onTrack)
	pc.OnDataChannel(func(dc *pion.DataChannel) {
		if dc.Label() == cfg.DataChannel {
			p.adopt(dc)
		}
	})
	return p, nil
}

// onTrack runs in its own pion goroutine for each remote track: it decodes
// PCMU packets until the peer closes.
func (p *Peer) onTrack(tr *pion.TrackRemote, _ *pion.RTPReceiver) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	var pcm []int16
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		if pkt.PayloadType != 0 || p.cfg.OnAudio == nil {
			continue
		}
		pcm = g711.DecodeMulaw(pcm[:0], pkt.Payload)
		p.cfg.OnAudio(pcm)
	}
}

func (p *Peer) adopt(dc *pion.DataChannel) {
	p.mu.Lock()
	p.dc = dc
	p.mu.Unlock()
	dc.OnOpen(func() { p.openOnce.Do(func() { close(p.open) }) })
	dc.OnMessage(func(m pion.DataChannelMessage) {
		if p.cfg.OnEvent != nil {
			p.cfg.OnEvent(m.Data)
		}
	})
}

// Offer creates the events data channel and sends an offer: the browser's role.
func (p *Peer) Offer(ctx context.Context) error {
	dc, err := p.pc.CreateDataChannel(p.cfg.DataChannel, nil)
	if err != nil {
		return fmt.Errorf("webrtc: data channel: %w", err)
	}
	p.adopt(dc)
	offer, err := p.pc.CreateOffer(nil)
	if err != nil {
		return fmt.Errorf("webrtc: offer: %w", err)
	}
	if err := p.pc.SetLocalDescription(offer); err != nil {
		return fmt.Errorf("webrtc: offer: %w", err)
	}
	return p.t.Send(ctx, Signal{Type: SignalOffer, SDP: offer.SDP})
}

// HandleSignal applies a signal from the remote peer: an offer is answered
// through the Transport, an answer completes negotiation, and a candidate is
// added, or held until the remote description is set.
func (p *Peer) HandleSignal(ctx context.Context, s Signal) error {
	switch s.Type {
	case SignalOffer:
		if err := p.setRemote(pion.SessionDescription{Type: pion.SDPTypeOffer, SDP: s.SDP}); err != nil {
			return err
		}
		answer, err := p.pc.CreateAnswer(nil)
		if err != nil {
			return fmt.Errorf("webrtc: answer: %w", err)
		}
		if err := p.pc.SetLocalDescription(answer); err != nil {
			return fmt.Errorf("webrtc: answer: %w", err)
		}
		return p.t.Send(ctx, Signal{Type: SignalAnswer, SDP: answer.SDP})
	case SignalAnswer:
		return p.setRemote(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: s.SDP})
	case SignalCandidate:
		if s.Candidate == nil {
			return fmt.Errorf("%w: candidate without candidate", ErrSignal)
		}
		p.mu.Lock()
		if !p.remoteOK {
			if len(p.early) >= 64 {
				p.mu.Unlock()
				return fmt.Errorf("%w: too many early candidates", ErrSignal)
			}
			p.early = append(p.early, *s.Candidate)
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		if err := p.pc.AddICECandidate(*s.Candidate); err != nil {
			return fmt.Errorf("%w: %v", ErrSignal, err)
		}
		return nil
	}
	return fmt.Errorf("%w: type %q", ErrSignal, s.Type)
}

func (p *Peer) setRemote(d pion.SessionDescription) error {
	if err := p.pc.SetRemoteDescription(d); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSignal, d.Type, err)
	}
	p.mu.Lock()
	p.remoteOK = true
	early := p.early
	p.early = nil
	p.mu.Unlock()
	for _, c := range early {
		if err := p.pc.AddICECandidate(c); err != nil {
			return fmt.Errorf("%w: early candidate: %v", ErrSignal, err)
		}
	}
	return nil
}

// Connected is closed once ICE and DTLS are up.
func (p *Peer) Connected() <-chan struct{} { return p.connected }

// Open is closed once the events data channel is open.
func (p *Peer) Open() <-chan struct{} { return p.open }

// SendEvent sends one JSON message on the events data channel.
func (p *Peer) SendEvent(data []byte) error {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	select {
	case <-p.open:
	default:
		return ErrNotOpen
	}
	return dc.SendText(string(data))
}

// StopICE stops the peer's ICE agent without a word to the other side (no
// DTLS close_notify, no signal): the peer goes silent as a caller that
// vanished does, and the other side finds out only when its ICE consent
// checks go unanswered. For tests of that bound.
func (p *Peer) StopICE() error {
	sctp := p.pc.SCTP()
	if sctp == nil || sctp.Transport() == nil || sctp.Transport().ICETransport() == nil {
		return errors.New("webrtc: no ICE transport to stop")
	}
	return sctp.Transport().ICETransport().Stop()
}
