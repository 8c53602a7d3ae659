package webrtc

import (
	"context"
	"strings"
	"time"

	pionmedia "github.com/pion/webrtc/v4/pkg/media"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pace"
)

const endPrefix = "\x00end:"

// SendAudio queues 8 kHz µ-law audio; Run writes it to the track as 20 ms
// samples in real time.
func (p *Peer) SendAudio(ulaw []byte) error { return p.pacer.Write(ulaw) }

// SendPCM encodes 8 kHz PCM16 to µ-law and queues it.
func (p *Peer) SendPCM(pcm []int16) error { return p.SendAudio(g711.EncodeMulaw(nil, pcm)) }

// EndUtterance pads the queued audio to a whole frame and arranges for
// Config.OnUtteranceSent(utterance) once it has all been sent.
func (p *Peer) EndUtterance(utterance string) { p.pacer.Mark(endPrefix + utterance) }

// ClearAudio drops all queued audio (a barge-in) and returns how much was
// dropped. No sample queued before the call is written after it.
func (p *Peer) ClearAudio() time.Duration {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	n, _ := p.pacer.Clear()
	return media.Telephony.Duration(n)
}

// Buffered returns how much audio waits to be sent.
func (p *Peer) Buffered() time.Duration { return media.Telephony.Duration(p.pacer.Buffered()) }

// PacingStats returns the outbound pacing jitter so far.
func (p *Peer) PacingStats() pace.Stats { return p.pacer.Stats() }

// Run waits for the connection, then writes queued audio to the track until
// ctx ends or the peer closes. (pion drops samples written before the
// connection is up, so nothing is paced before then.)
func (p *Peer) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.connected:
	}
	return p.pacer.Run(ctx, func(ev pace.Event) error {
		sent, err := p.write(ev)
		if sent != "" && p.cfg.OnUtteranceSent != nil {
			p.cfg.OnUtteranceSent(sent) // outside sendMu: it may call ClearAudio
		}
		return err
	})
}

// write sends a frame, or returns the utterance an end mark closes.
func (p *Peer) write(ev pace.Event) (ended string, err error) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if ev.Gen != p.pacer.Generation() {
		return "", nil // taken off the queue before a clear
	}
	if ev.Frame == nil {
		u, _ := strings.CutPrefix(ev.Mark, endPrefix)
		return u, nil
	}
	data := append([]byte(nil), ev.Frame...)
	return "", p.track.WriteSample(pionmedia.Sample{Data: data, Duration: media.FrameDuration})
}

// Close closes the peer connection and waits for its goroutines.
func (p *Peer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.pc.Close()
	p.wg.Wait()
	return err
}
