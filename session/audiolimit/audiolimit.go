// Package audiolimit bounds the caller audio of one call, on every
// transport: the largest frame, and the rate over a window.
package audiolimit

import (
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/frontdoorhq/frontdoor/media"
)

// Limits bound the caller audio of one call, on every transport
// (binary frames of /v1/session, Twilio media payloads, WebRTC packets).
type Limits struct {
	// MaxFrame is the largest audio frame accepted (0: DefaultMaxFrame).
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
	// DefaultWindow): the allowance is a token bucket of MaxRate ×
	// Window bytes. The default lets a client send a recording of some
	// 40 s at once (tests, uploads) and still cuts a flood within a second.
	Window time.Duration
}

// DefaultWindow is the default Limits.Window.
const DefaultWindow = 10 * time.Second

// DefaultMaxFrame is the default Limits.MaxFrame: 32 KiB, about
// a third of a second of 48 kHz PCM16, a second at 16 kHz.
const DefaultMaxFrame = 32 << 10

// Code is the session ErrorMsg code sent before a call is closed (1008)
// for sending audio faster than Limits.MaxRate.
const Code = "audio_rate"

// ErrRate ends a call whose caller sends audio faster than its limit.
var ErrRate = errors.New("session: caller audio over its rate")

// Frame is the largest frame accepted.
func (l Limits) Frame() int {
	if l.MaxFrame <= 0 {
		return DefaultMaxFrame
	}
	return l.MaxFrame
}

// NewLimiter is a call's allowance of caller audio in format f: a token
// bucket of l.MaxRate bytes a second holding a window's worth (at least
// one frame).
func (l Limits) NewLimiter(f media.Format) *rate.Limiter {
	return newLimiter(l.MaxRate, l.Window, l.Frame(), f)
}

func newLimiter(perSec int, w time.Duration, maxFrame int, f media.Format) *rate.Limiter {
	if perSec <= 0 {
		perSec = 4 * realTimeBytes(f)
	}
	if w <= 0 {
		w = DefaultWindow
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
