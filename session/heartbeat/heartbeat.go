// Package heartbeat pings a call's WebSocket to find a peer that vanished
// or stopped reading, and closes it within a known bound.
package heartbeat

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Config configures the WebSocket pings that find dead peers. A peer that
// vanished (or stopped reading) keeps its TCP connection looking open for
// many minutes: writes go into kernel buffers, reads wait. A ping it does
// not answer within Timeout closes the connection at once (no close
// handshake: it would not be answered either), which ends its call and
// frees its leases. A peer is therefore found within Interval + Timeout of
// its last answer.
type Config struct {
	Interval time.Duration // between pings (0: no pings)
	Timeout  time.Duration // for the pong (0: Interval)
}

// Default is frontdoor serve's: a dead peer is closed within 25 s
// (docs/SECURITY.md promises 30 s, the call's leases freed at once after).
var Default = Config{Interval: 15 * time.Second, Timeout: 10 * time.Second}

// Bound is the longest a dead peer stays open (0: no heartbeat).
func (h Config) Bound() time.Duration {
	if h.Interval <= 0 {
		return 0
	}
	return h.Interval + h.timeout()
}

func (h Config) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return h.Interval
}

// Pinger is a WebSocket whose reader answers pongs (coder/websocket: Ping
// needs a concurrent Read, which every transport's reader is).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Start pings p every h.Interval on clk until the returned stop is
// called; a ping unanswered within its Timeout logs, calls timedOut (to
// count it) and dead (which must not wait for stop). stop waits for the
// pinging goroutine to end.
func Start(clk clock.Clock, h Config, p Pinger, dead, timedOut func(), log *slog.Logger) (stop func()) {
	if h.Interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := clock.NewTicker(clk, h.Interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// The pong's deadline is the socket's, on the wall clock.
			pctx, pcancel := context.WithTimeout(ctx, h.timeout())
			err := p.Ping(pctx)
			pcancel()
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return
			case errors.Is(err, context.DeadlineExceeded):
				timedOut()
				log.Info("peer did not answer a ping: closing", "timeout", h.timeout())
				dead()
				return
			default: // the connection is gone: its reader ends the call
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Code counts (frontdoor_protocol_errors_total) connections closed because
// their peer did not answer a ping.
const Code = "heartbeat_timeout"
