package telephony

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/pcm"
)

// converter converts reply audio announced by audio_start to a line's
// format. Replies normally arrive in it already (the transport declares
// it in hello) and pass through untouched; prompt audio queued before
// hello took effect may not.
type converter struct {
	from media.Format
	to   media.Format
	rs   *pcm.Resampler
	same bool
}

// newConverter returns the converter of audio in encoding (a
// media.Encoding; "": PCM16) at rate to the format to.
func newConverter(encoding string, rate int, to media.Format) (*converter, error) {
	from := media.Format{Encoding: media.Encoding(encoding), SampleRate: rate, Channels: 1}
	if from.Encoding == "" {
		from.Encoding = media.PCM16
	}
	c := &converter{from: from, to: to, same: from == to}
	if rate != to.SampleRate {
		rs, err := pcm.NewResampler(rate, to.SampleRate)
		if err != nil {
			return nil, fmt.Errorf("telephony: reply audio: %w", err)
		}
		c.rs = rs
	}
	return c, nil
}

// convert returns b in the line's format.
func (c *converter) convert(b []byte) ([]byte, error) {
	if c.same {
		return b, nil
	}
	s, err := gateway.DecodePCM(nil, c.from, b)
	if err != nil {
		return nil, fmt.Errorf("telephony: reply audio: %w", err)
	}
	if c.rs != nil {
		s = c.rs.Resample(nil, s)
	}
	return gateway.AppendPCM(nil, c.to, s), nil
}

// flush returns what the resampler still holds, at the end of an
// utterance.
func (c *converter) flush() []byte {
	if c.rs == nil {
		return nil
	}
	return gateway.AppendPCM(nil, c.to, c.rs.Flush(nil))
}
