package main

import (
	"flag"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/audiolimit"
	"github.com/frontdoorhq/frontdoor/session/heartbeat"
	"github.com/frontdoorhq/frontdoor/session/tenant"
)

// callerLimits are serve's flags for caller audio limits and backend
// quarantine (docs/SECURITY.md).
type callerLimits struct {
	audio      audiolimit.Limits
	quarantine int
	heartbeat  heartbeat.Config
	// tenants are the guard's tenant caps (serve_guard.go), which the
	// engine applies on every transport.
	tenants tenant.Limits
}

func callerLimitFlags(fs *flag.FlagSet) *callerLimits {
	l := &callerLimits{}
	fs.IntVar(&l.audio.MaxFrame, "audio-max-frame", audiolimit.DefaultMaxFrame, "largest caller audio frame in bytes (a larger frame is dropped and answered with error too_large)")
	fs.IntVar(&l.audio.MaxRate, "audio-max-rate", 0, "caller audio allowed in bytes per second over -audio-window (over it: error audio_rate, close 1008); 0: four times the call's real-time rate")
	fs.DurationVar(&l.audio.Window, "audio-window", audiolimit.DefaultWindow, "how far caller audio may run ahead of -audio-max-rate")
	fs.IntVar(&l.quarantine, "quarantine-after", 0, "quarantine a backend stage whose cleanups exceed -cleanup-timeout this many times in a row: new work refused closed, /readyz 503, leases held, until every overdue cleanup is confirmed (0: off)")
	fs.DurationVar(&l.heartbeat.Interval, "ws-ping-interval", heartbeat.Default.Interval, "ping every WebSocket (/v1/session, /v1/twilio, /v1/webrtc signalling) this often to find dead peers (0: no pings)")
	fs.DurationVar(&l.heartbeat.Timeout, "ws-ping-timeout", heartbeat.Default.Timeout, "a peer that does not answer a ping within this is dropped, its call ended and its leases freed")
	return l
}

// apply puts the limits in the session server's configuration.
func (l *callerLimits) apply(c *session.Config) {
	c.Audio = l.audio
	c.QuarantineAfter = l.quarantine
	c.Heartbeat = l.heartbeat
	c.Tenants = l.tenants
}
