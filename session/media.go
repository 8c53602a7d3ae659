package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	pion "github.com/pion/webrtc/v4"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// TwilioConfig configures GET /v1/twilio, the Twilio Media Streams endpoint.
type TwilioConfig struct {
	// AuthToken, when set, makes the endpoint require a valid
	// X-Twilio-Signature on the upgrade, computed over PublicURL.
	AuthToken string
	// PublicURL is the stream URL exactly as written in the TwiML
	// (wss://host/v1/twilio): behind a proxy the server cannot rebuild it.
	// A stream URL carrying a call token (/v1/twilio/<token>, see
	// session/guard) is signed with the token: PublicURL + "/" + token.
	PublicURL string
	// StartTimeout bounds the wait for `start` after the upgrade (0: 10s).
	StartTimeout time.Duration
}

// WebRTCConfig configures GET /v1/webrtc, the browser endpoint.
type WebRTCConfig struct {
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
}

// mediaLead is how far ahead of playback a media transport lets reply audio
// run: enough to keep the pacer fed, little enough that a barge-in cuts the
// reply within a frame or two and turns end when their audio has played.
const mediaLead = 60 * time.Millisecond

// interruptPlayback stops the caller's playback on transports that
// declare Capabilities.Interrupt (the writer calls it before it sends
// `interrupted`), and reports what of speaking's reply was heard; nil
// leaves the estimate from the audio sent.
func (c *Call) interruptPlayback(ctx context.Context, speaking *turn) *Heard {
	if c.caps.Interrupt == nil {
		return nil
	}
	id := ""
	if speaking != nil {
		id = speaking.id
	}
	played, ok := c.caps.Interrupt(ctx, id)
	if !ok || speaking == nil {
		return nil
	}
	return speaking.heardUpTo(played)
}

// heardUpTo is heard with the playback position a transport reported in
// place of the audio written: the words are cut at the same share of the
// synthesized audio.
func (t *turn) heardUpTo(played time.Duration) *Heard {
	us := min(played.Microseconds(), t.sentUS.Load())
	made := t.synthUS.Load()
	h := &Heard{Turn: t.id, AudioMS: us / 1000}
	if us <= 0 || made <= 0 {
		return h
	}
	words := strings.Fields(t.replyText())
	n := int((int64(len(words))*us + made - 1) / made)
	h.Text = strings.Join(words[:min(n, len(words))], " ")
	return h
}

// SpeaksPrompts implements Fallback: Offers renders prompt audio.
func (o *Offers) SpeaksPrompts() bool { return true }

// maxPrompt bounds the prompt audio a transport renders itself.
const maxPrompt = 30 * time.Second

// promptAudio renders text with the synthesizer, outside the synthesis
// stage (prompts are short and must be heard even when it is full), as
// 8 kHz µ-law.
func (s *Engine) promptAudio(ctx context.Context, text string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out []byte
	var rs *pcm.Resampler
	rate := 0
	err := s.cfg.Synthesizer.Synthesize(ctx, text, func(a backend.Audio) error {
		if rate == 0 {
			rate = a.Rate
			if a.Rate != 8000 {
				var err error
				if rs, err = pcm.NewResampler(a.Rate, 8000); err != nil {
					return err
				}
			}
		}
		if a.Rate != rate {
			return fmt.Errorf("session: prompt audio changed rate: %w", backend.ErrMalformed)
		}
		samples := a.Samples
		if rs != nil {
			samples = rs.Resample(nil, samples)
		}
		if media.Telephony.Duration(len(out)+len(samples)) > maxPrompt {
			return nil
		}
		out = g711.EncodeMulaw(out, samples)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rs != nil {
		out = g711.EncodeMulaw(out, rs.Flush(nil))
	}
	return out, nil
}

// toMulaw converts reply audio announced by audio_start to the 8 kHz µ-law
// that telephone and WebRTC (PCMU) callers take. Replies normally arrive in
// it already (the transports declare it in hello); prompt audio queued
// before hello took effect may not.
type toMulaw struct {
	enc  media.Encoding
	rate int
	rs   *pcm.Resampler
}

func newToMulaw(encoding string, rate int) (*toMulaw, error) {
	c := &toMulaw{enc: media.Encoding(encoding), rate: rate}
	if c.enc == "" {
		c.enc = media.PCM16
	}
	if rate != 8000 {
		rs, err := pcm.NewResampler(rate, 8000)
		if err != nil {
			return nil, err
		}
		c.rs = rs
	}
	return c, nil
}

func (c *toMulaw) convert(b []byte) ([]byte, error) {
	if c.enc == media.Mulaw && c.rs == nil {
		return b, nil
	}
	var s []int16
	switch c.enc {
	case media.Mulaw:
		s = g711.DecodeMulaw(nil, b)
	case media.Alaw:
		s = g711.DecodeAlaw(nil, b)
	default:
		var err error
		if s, err = pcm.Decode(nil, b); err != nil {
			return nil, err
		}
	}
	if c.rs != nil {
		s = c.rs.Resample(nil, s)
	}
	return g711.EncodeMulaw(nil, s), nil
}

// flush returns what the resampler still holds, at the end of an utterance.
func (c *toMulaw) flush() []byte {
	if c.rs == nil {
		return nil
	}
	return g711.EncodeMulaw(nil, c.rs.Flush(nil))
}

// waitBuffered blocks while more than lead of audio waits in a transport's
// pacer, so that the call's writer (and with it the turn) moves at the pace
// of playback.
func waitBuffered(ctx context.Context, buffered func() time.Duration, lead time.Duration) error {
	for {
		over := buffered() - lead
		if over <= 0 {
			return nil
		}
		t := time.NewTimer(min(over, 20*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
