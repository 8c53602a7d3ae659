// Package pcmu is what the telephone and WebRTC transports share of their
// reply audio: its conversion to 8 kHz µ-law (PCMU) and the wait that keeps
// a call's writer at the pace of playback.
package pcmu

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
)

// Lead is how far ahead of playback a media transport lets reply audio
// run: enough to keep the pacer fed, little enough that a barge-in cuts the
// reply within a frame or two and turns end when their audio has played.
const Lead = 60 * time.Millisecond

// Converter converts reply audio announced by audio_start to the 8 kHz
// µ-law that telephone and WebRTC (PCMU) callers take. Replies normally arrive in
// it already (the transports declare it in hello); prompt audio queued
// before hello took effect may not.
type Converter struct {
	enc  media.Encoding
	rate int
	rs   *pcm.Resampler
}

// NewConverter returns the Converter of audio in encoding (a
// media.Encoding; "": PCM16) at rate.
func NewConverter(encoding string, rate int) (*Converter, error) {
	c := &Converter{enc: media.Encoding(encoding), rate: rate}
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

// Convert returns b as 8 kHz µ-law.
func (c *Converter) Convert(b []byte) ([]byte, error) {
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

// Flush returns what the resampler still holds, at the end of an
// utterance.
func (c *Converter) Flush() []byte {
	if c.rs == nil {
		return nil
	}
	return g711.EncodeMulaw(nil, c.rs.Flush(nil))
}

// WaitBuffered blocks while more than lead of audio waits in a
// transport's pacer, so that the call's writer (and with it the turn)
// moves at the pace of playback. It looks again every 20 ms at most, on
// clock (the engine's).
func WaitBuffered(ctx context.Context, clk clock.Clock, buffered func() time.Duration, lead time.Duration) error {
	var t *clock.ChanTimer
	for {
		over := buffered() - lead
		if over <= 0 {
			if t != nil {
				t.Stop()
			}
			return nil
		}
		if t == nil {
			t = clock.NewTimer(clk, min(over, 20*time.Millisecond))
		} else {
			t.Reset(min(over, 20*time.Millisecond))
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
