package session

import (
	"github.com/frontdoorhq/frontdoor/session/audiolimit"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// audioAllowed checks one frame of caller audio against the call's
// audio limits. A frame too large is refused (too_large, the call goes on);
// audio over the rate ends the call (audio_rate, close 1008).
func (c *Call) audioAllowed(b []byte) bool {
	l := c.s.cfg.Audio
	maxFrame := l.Frame()
	if len(b) > maxFrame {
		c.badInput(wire.Errorf(wire.CodeTooLarge, "audio frame of %d bytes over the %d-byte limit", len(b), maxFrame))
		return false
	}
	if c.audio == nil {
		c.audio = l.NewLimiter(c.replyFormat().Format)
	}
	if c.audio.AllowN(c.s.cfg.Clock.Now(), len(b)) {
		return true
	}
	c.s.m.ProtocolErrs.WithLabelValues(audiolimit.Code).Inc()
	_ = c.Send(c.ctx, &wire.ErrorMsg{Type: "error", Code: audiolimit.Code,
		Message: "caller audio faster than its limit: send it in real time"})
	c.stop(audiolimit.ErrRate)
	return false
}
