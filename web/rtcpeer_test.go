package web_test

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/frontdoorhq/frontdoor/media/g711"
)

// rtcPeer is a test double of the server's /v1/webrtc endpoint, speaking
// the signalling the page speaks (see the package doc): it answers the
// page's offer with PCMU only, on loopback, listens to the microphone
// track, and once it has heard speech it replies on the "events" data
// channel and with a tone on its own audio track. It proves the page's half
// of a microphone call; the session's own endpoint replaces it once wired.
type rtcPeer struct {
	voiced  atomic.Int64 // 20 ms packets of the browser's audio with speech energy
	packets atomic.Int64 // packets of the browser's audio received
	replied atomic.Bool
	wg      sync.WaitGroup // per-connection goroutines
}

const speechRMS = 300 // µ-law decoded RMS above which a packet counts as speech

func (p *rtcPeer) api() *webrtc.API {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000, Channels: 1},
		PayloadType:        0,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		panic(err)
	}
	var se webrtc.SettingEngine
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithSettingEngine(se))
}

type signal struct {
	Type      string                   `json:"type"`
	SDP       string                   `json:"sdp,omitempty"`
	Candidate *webrtc.ICECandidateInit `json:"candidate,omitempty"`
}

func (p *rtcPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	pc, err := p.api().NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return
	}
	defer func() {
		cancel()
		_ = pc.Close()
		p.wg.Wait()
	}()

	send := func(v any) {
		b, _ := json.Marshal(v)
		_ = c.Write(ctx, websocket.MessageText, b)
	}
	var dcMu sync.Mutex
	var dc *webrtc.DataChannel
	event := func(v any) {
		dcMu.Lock()
		defer dcMu.Unlock()
		if dc != nil {
			b, _ := json.Marshal(v)
			_ = dc.SendText(string(b))
		}
	}
	pc.OnICECandidate(func(cand *webrtc.ICECandidate) {
		if cand == nil {
			send(map[string]any{"type": "candidate", "candidate": nil})
			return
		}
		ci := cand.ToJSON()
		send(signal{Type: "candidate", Candidate: &ci})
	})
	pc.OnDataChannel(func(d *webrtc.DataChannel) {
		d.OnOpen(func() {
			dcMu.Lock()
			dc = d
			dcMu.Unlock()
			event(map[string]any{"type": "session", "disposition": "admitted", "session": "rtc-test"})
		})
	})
	out, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000}, "reply", "frontdoor")
	if err != nil {
		return
	}
	reply := make(chan struct{}, 1)
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		p.wg.Go(func() { p.listen(tr, reply) })
	})

	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m signal
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case "offer":
			if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: m.SDP}); err != nil {
				send(map[string]string{"type": "error", "code": "bad_offer", "message": err.Error()})
				return
			}
			sender, err := pc.AddTrack(out)
			if err != nil {
				return
			}
			p.wg.Go(func() { drainRTCP(sender) })
			p.wg.Go(func() { p.speak(ctx, out, reply, event) })
			answer, err := pc.CreateAnswer(nil)
			if err != nil {
				return
			}
			if err := pc.SetLocalDescription(answer); err != nil {
				return
			}
			send(signal{Type: "answer", SDP: answer.SDP})
		case "candidate":
			if m.Candidate != nil {
				_ = pc.AddICECandidate(*m.Candidate)
			}
		}
	}
}

// listen reads the microphone track until the connection closes, and asks
// for the reply once 200 ms of speech has arrived.
func (p *rtcPeer) listen(tr *webrtc.TrackRemote, reply chan<- struct{}) {
	pcm := make([]int16, 0, 320)
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		p.packets.Add(1)
		pcm = g711.DecodeMulaw(pcm[:0], pkt.Payload)
		var sum float64
		for _, s := range pcm {
			sum += float64(s) * float64(s)
		}
		if len(pcm) > 0 && math.Sqrt(sum/float64(len(pcm))) > speechRMS {
			if p.voiced.Add(1) == 10 {
				select {
				case reply <- struct{}{}:
				default:
				}
			}
		}
	}
}

// speak answers the first utterance with text events and one second of a
// 440 Hz tone in 20 ms PCMU samples.
func (p *rtcPeer) speak(ctx context.Context, out *webrtc.TrackLocalStaticSample, reply <-chan struct{}, event func(any)) {
	select {
	case <-ctx.Done():
		return
	case <-reply:
	}
	p.replied.Store(true)
	event(map[string]any{"type": "text", "turn": "rtc-1", "generation": 1, "delta": "I heard you. "})
	event(map[string]any{"type": "audio_start", "turn": "rtc-1", "generation": 1, "encoding": "mulaw", "rate": 8000})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frame := make([]int16, 160)
	n := 0
	for i := 0; i < 50; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for j := range frame {
			frame[j] = int16(8000 * math.Sin(2*math.Pi*440*float64(n)/8000))
			n++
		}
		if err := out.WriteSample(media.Sample{Data: g711.EncodeMulaw(nil, frame), Duration: 20 * time.Millisecond}); err != nil {
			return
		}
	}
	event(map[string]any{"type": "audio_end", "turn": "rtc-1", "generation": 1})
	event(map[string]any{"type": "turn_end", "turn": "rtc-1", "generation": 1, "disposition": "completed"})
}

func drainRTCP(s *webrtc.RTPSender) {
	buf := make([]byte, 1500)
	for {
		if _, _, err := s.Read(buf); err != nil {
			return
		}
	}
}
