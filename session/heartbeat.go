package session

import (
	"log/slog"

	"github.com/frontdoorhq/frontdoor/session/heartbeat"
)

// StartHeartbeat pings p every Config.Heartbeat.Interval until the
// returned stop is called (package heartbeat); a ping unanswered within
// its Timeout logs, counts and calls dead (which must not wait for stop).
// A transport on a WebSocket starts it with its call.
func (s *Engine) StartHeartbeat(p heartbeat.Pinger, dead func(), log *slog.Logger) (stop func()) {
	return heartbeat.Start(s.cfg.Clock, s.cfg.Heartbeat, p, dead,
		func() { s.m.ProtocolErrs.WithLabelValues(heartbeat.Code).Inc() }, log)
}
