package gatewaytest

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// ErrHungUp is the read error of a Gateway told to hang up.
var ErrHungUp = errors.New("gatewaytest: the server hung up")

// readLoop collects what the server sends and keeps the playback clock:
// audio plays in real time from when it arrives, behind what is buffered.
func (g *Gateway) readLoop() {
	defer g.wg.Done()
	defer g.cancel() // the play loop ends with the connection
	for {
		f, err := g.link.ReadFrame(g.ctx)
		var c gateway.Command
		if err == nil {
			c, err = g.codec.DecodeCommand(f)
		}
		if err == nil && c.Kind == gateway.KindHangup {
			err = ErrHungUp
		}
		if err != nil {
			g.mu.Lock()
			g.readErr = err
			g.hungUp = errors.Is(err, ErrHungUp)
			if g.hungUp {
				g.log = append(g.log, c)
			}
			g.notifyLocked()
			g.mu.Unlock()
			if errors.Is(err, ErrHungUp) {
				_ = g.link.Close()
			}
			return
		}
		g.receive(c)
	}
}

func (g *Gateway) receive(c gateway.Command) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	audio := c.Audio
	c.Audio = nil // kept once, in g.audio
	if len(g.log) < MaxLog {
		g.log = append(g.log, c)
	}
	switch c.Kind {
	case gateway.KindAudio:
		f := g.opts.Start.Format
		d := f.Duration(len(audio))
		if c.Format != f && c.Format.SampleRate != 0 {
			d = c.Format.Duration(len(audio))
		}
		g.playEnd = later(g.playEnd, now).Add(d)
		g.received += d
		g.afterClear += d
		if f.Duration(len(g.audio)) < MaxRecorded {
			g.audio = append(g.audio, audio...)
		}
	case gateway.KindMark:
		g.pending = append(g.pending, pendingMark{name: c.Mark, at: later(g.playEnd, now)})
		g.kickPlayer()
	case gateway.KindClear:
		if g.playEnd.After(now) {
			g.cleared += g.playEnd.Sub(now)
		}
		g.playEnd = now
		g.afterClear = 0
		if g.caps.ClearEchoesMarks {
			for i := range g.pending {
				g.pending[i].at = now
			}
		} else {
			g.pending = nil
		}
		g.kickPlayer()
		// The acknowledgement, where the dialect has one, goes out from its
		// own goroutine: Send may wait on the link while this holds g.mu.
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			_ = g.Send(g.ctx, gateway.Event{Kind: gateway.KindInfo, Info: gateway.InfoCleared})
		}()
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
		if len(due) > 0 {
			// Recorded before sending: the server may act on the echo
			// (and hang up) before the write returns.
			g.echoed = append(g.echoed, due...)
			g.notifyLocked()
		}
		g.mu.Unlock()
		for _, name := range due {
			if err := g.Send(g.ctx, gateway.Event{Kind: gateway.KindMark, Mark: name}); err != nil {
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
	Log      []gateway.Command // the commands from the server, in order (the first MaxLog; audio without its bytes, see Audio)
	Echoed   []string          // marks echoed back, in order
	Received time.Duration     // audio received
	Heard    time.Duration     // audio played or still to play (not dropped by a clear)
	// AfterClear is the audio received since the last clear (all of it
	// before any).
	AfterClear time.Duration
	HungUp     bool  // the server sent its hang-up command
	Err        error // why the connection ended, if it has
}

// Count returns how many commands of kind k the log holds.
func (s Snapshot) Count(k gateway.Kind) int {
	n := 0
	for _, c := range s.Log {
		if c.Kind == k {
			n++
		}
	}
	return n
}

// Snapshot returns a copy of what the gateway has seen.
func (g *Gateway) Snapshot() Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Snapshot{
		Log:    append([]gateway.Command(nil), g.log...),
		Echoed: append([]string(nil), g.echoed...), Received: g.received,
		Heard: g.received - g.cleared, AfterClear: g.afterClear, HungUp: g.hungUp, Err: g.readErr,
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

// Audio returns a copy of the audio received, in the stream's format (the
// first MaxRecorded of it).
func (g *Gateway) Audio() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]byte(nil), g.audio...)
}
