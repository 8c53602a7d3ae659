package twiliotest

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/twilio"
)

// readLoop collects what frontdoor sends and keeps the playback clock: audio
// plays in real time from when it arrives, behind what is still buffered.
func (g *Gateway) readLoop() {
	defer g.wg.Done()
	defer g.cancel() // the play loop ends with the connection
	for {
		typ, data, err := g.ws.Read(g.ctx)
		if err == nil && typ != websocket.MessageText {
			err = errBinary
		}
		var o *twilio.Outbound
		if err == nil {
			o, err = twilio.DecodeOutbound(g.opts.Dialect, data)
		}
		if err != nil {
			g.mu.Lock()
			g.readErr = err
			g.notifyLocked()
			g.mu.Unlock()
			return
		}
		g.receive(*o)
	}
}

func (g *Gateway) receive(o twilio.Outbound) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	g.log = append(g.log, o)
	switch o.Event {
	case twilio.EventMedia:
		d := media.Telephony.Duration(len(o.Payload))
		g.playEnd = later(g.playEnd, now).Add(d)
		g.received += d
	case twilio.EventMark:
		g.pending = append(g.pending, pendingMark{name: o.Mark, at: later(g.playEnd, now)})
		g.kickPlayer()
	case twilio.EventClear:
		if g.playEnd.After(now) {
			g.cleared += g.playEnd.Sub(now)
		}
		g.playEnd = now
		for i := range g.pending {
			g.pending[i].at = now
		}
		g.kickPlayer()
	}
	g.notifyLocked()
}

// playLoop echoes each mark when the audio before it has played.
func (g *Gateway) playLoop() {
	defer g.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		g.mu.Lock()
		now := time.Now()
		var due []string
		for len(g.pending) > 0 && !g.pending[0].at.After(now) {
			due = append(due, g.pending[0].name)
			g.pending = g.pending[1:]
		}
		wait := time.Hour
		if len(g.pending) > 0 {
			wait = g.pending[0].at.Sub(now)
		}
		g.mu.Unlock()
		for _, name := range due {
			// Recorded before sending: frontdoor may act on the echo (and
			// hang up) before the write returns.
			g.mu.Lock()
			g.echoed = append(g.echoed, name)
			g.notifyLocked()
			g.mu.Unlock()
			m := &twilio.Message{Event: twilio.EventMark, StreamSID: g.opts.StreamSID, Mark: &twilio.Mark{Name: name}}
			if err := g.send(g.ctx, m); err != nil {
				return
			}
		}
		if len(due) > 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-g.ctx.Done():
			return
		case <-g.kick:
		case <-timer.C:
		}
	}
}

func (g *Gateway) kickPlayer() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func (g *Gateway) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Snapshot is what the gateway has seen so far.
type Snapshot struct {
	Log      []twilio.Outbound // every message from frontdoor, in order
	Echoed   []string          // marks echoed back, in order
	Received time.Duration     // outbound audio received
	Heard    time.Duration     // outbound audio played or still to play (not cleared)
	Err      error             // why the connection ended, if it has
}

// Snapshot returns a copy of what the gateway has seen.
func (g *Gateway) Snapshot() Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Snapshot{
		Log: append([]twilio.Outbound(nil), g.log...), Echoed: append([]string(nil), g.echoed...),
		Received: g.received, Heard: g.received - g.cleared, Err: g.readErr,
	}
}

// Wait blocks until cond holds for a snapshot, ctx ends, or the connection
// ends with cond still false.
func (g *Gateway) Wait(ctx context.Context, cond func(Snapshot) bool) (Snapshot, error) {
	for {
		g.mu.Lock()
		ch := g.changed
		g.mu.Unlock()
		s := g.Snapshot()
		if cond(s) {
			return s, nil
		}
		if s.Err != nil {
			return s, s.Err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-ch:
		}
	}
}
