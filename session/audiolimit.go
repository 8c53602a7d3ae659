package session

import (
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/frontdoorhq/frontdoor/media"
)

// AudioLimits bound the caller audio of one call, on every transport
// (binary frames of /v1/session, Twilio media payloads, WebRTC packets).
type AudioLimits struct {
	// MaxFrame is the largest audio frame accepted (0: DefaultMaxAudioFrame).
	// A larger frame is dropped and answered `error` too_large; the call
	// goes on.
	MaxFrame int
	// MaxRate is the caller audio allowed, in bytes per second averaged
	// over Window (0: four times the real-time rate of the call's declared
	// format: 128000 B/s for the default 16 kHz PCM16, 32000 B/s for 8 kHz
	// µ-law). Over it the caller is told `error` audio_rate and the call
	// ends with close 1008.
	MaxRate int
	// Window is how long a burst may run ahead of MaxRate (0:
	// DefaultAudioWindow): the allowance is a token bucket of MaxRate ×
	// Window bytes. The default lets a client send a recording of some
	// 40 s at once (tests, uploads) and still cuts a flood within a second.
	Window time.Duration
}

// DefaultAudioWindow is the default AudioLimits.Window.
const DefaultAudioWindow = 10 * time.Second

// DefaultMaxAudioFrame is the default AudioLimits.MaxFrame: 32 KiB, about
// a third of a second of 48 kHz PCM16, a second at 16 kHz.
const DefaultMaxAudioFrame = 32 << 10

// CodeAudioRate is the ErrorMsg code sent before a call is closed (1008)
// for sending audio faster than AudioLimits.MaxRate.
const CodeAudioRate = "audio_rate"

// ErrAudioRate ends a call whose caller sends audio faster than its limit.
var ErrAudioRate = errors.New("session: caller audio over its rate")

// audioMeter is a call's allowance of caller audio; the reader's own.
type audioMeter struct {
	lim *rate.Limiter
}

// audioAllowed checks one frame of caller audio against the call's
// AudioLimits. A frame too large is refused (too_large, the call goes on);
// audio over the rate ends the call (audio_rate, close 1008).
func (c *Call) audioAllowed(b []byte) bool {
	l := c.s.cfg.Audio
	maxFrame := l.MaxFrame
	if maxFrame <= 0 {
		maxFrame = DefaultMaxAudioFrame
	}
	if len(b) > maxFrame {
		c.badInput(protoErr(CodeTooLarge, "audio frame of %d bytes over the %d-byte limit", len(b), maxFrame))
		return false
	}
	if c.audio.lim == nil {
		c.mu.Lock()
		f := c.format
		c.mu.Unlock()
		c.audio.lim = newAudioLimiter(l.MaxRate, l.Window, maxFrame, f)
	}
	if c.audio.lim.AllowN(c.s.cfg.Clock.Now(), len(b)) {
		return true
	}
	c.s.m.ProtocolErrs.WithLabelValues(CodeAudioRate).Inc()
	_ = c.Send(c.ctx, &ErrorMsg{Type: "error", Code: CodeAudioRate,
		Message: "caller audio faster than its limit: send it in real time"})
	c.stop(ErrAudioRate)
	return false
}

// newAudioLimiter is a token bucket of perSec bytes a second holding a
// window's worth (at least one frame of maxFrame).
func newAudioLimiter(perSec int, w time.Duration, maxFrame int, f media.Format) *rate.Limiter {
	if perSec <= 0 {
		perSec = 4 * realTimeBytes(f)
	}
	if w <= 0 {
		w = DefaultAudioWindow
	}
	burst := max(int(float64(perSec)*w.Seconds()), maxFrame)
	return rate.NewLimiter(rate.Limit(perSec), burst)
}

// realTimeBytes is a second of audio in format f (at 16 kHz, the
// session's default, where the hello declared no rate).
func realTimeBytes(f media.Format) int {
	if f.SampleRate == 0 {
		f.SampleRate = 16000
	}
	return f.BytesPer(time.Second)
}
