package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/backend"
)

// writeLoop is the call's single writer. The generation check right before
// each write is what keeps an older generation off the wire once
// `interrupted` has been queued.
func (c *Call) writeLoop(ctx context.Context) error {
	var lastGen uint64
	var lastAt time.Time
	var pc pacer
	for {
		f, ok := c.out.pop(ctx)
		if !ok {
			return nil
		}
		if c.stale(f) {
			continue
		}
		if c.s.cfg.Pace && f.audio != nil {
			if !pc.wait(ctx, time.Duration(f.ms)*time.Microsecond, c.s.cfg.PaceLead) {
				return nil
			}
			if c.stale(f) { // rechecked after the wait
				continue
			}
		}
		if _, ok := f.msg.(*AudioStartMsg); ok {
			pc.reset()
		}
		if im := f.interrupted; im != nil {
			played := c.interruptPlayback(ctx, f.speaking) // clears the caller's playback first
			if f.speaking != nil {
				im.Heard = f.speaking.heard()
				if played != nil {
					im.Heard = played
				}
				c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: im.Heard.Text})
			}
			var d time.Duration
			if lastGen != 0 && lastGen < im.Generation && lastAt.After(f.bargeAt) {
				d = lastAt.Sub(f.bargeAt)
			}
			c.s.m.bargeToLast.Observe(d.Seconds())
		}
		// A write that takes Timeout marks the caller as not reading before
		// anything else sees the connection fail; at twice that the write
		// gives up and coder/websocket drops the connection.
		stall := time.AfterFunc(c.s.cfg.Outbound.Timeout, func() { c.stop(ErrSlowReader) })
		wctx, cancel := context.WithTimeout(ctx, 2*c.s.cfg.Outbound.Timeout)
		var err error
		if f.msg != nil {
			err = c.t.Send(wctx, f.msg)
		} else {
			err = c.t.SendAudio(wctx, f.audio)
		}
		timedOut := !stall.Stop()
		cancel()
		if err != nil {
			c.out.discard()
			if timedOut {
				return ErrSlowReader
			}
			return errGone
		}
		if f.gen != 0 {
			lastGen, lastAt = f.gen, time.Now()
		}
		if f.turn != nil {
			f.turn.sentUS.Add(f.ms)
			if f.end {
				f.turn.markPlayed()
			}
		}
	}
}

// stale reports (and counts) a frame whose generation is no longer current.
func (c *Call) stale(f frame) bool {
	if f.gen == 0 || f.gen == c.gen.Load() {
		return false
	}
	c.out.stale.Add(1)
	c.s.m.stale.Inc()
	return true
}

// pacer releases audio frames in real time: frame n of a reply is due at the
// reply's start plus the duration of the frames before it, less the lead.
// After an underrun (the producer fell behind) the clock restarts from now.
type pacer struct {
	start time.Time
	sent  time.Duration
}

func (p *pacer) reset() { p.start, p.sent = time.Time{}, 0 }

// wait blocks until the next frame of length d is due; false if ctx ended.
func (p *pacer) wait(ctx context.Context, d, lead time.Duration) bool {
	now := time.Now()
	if p.start.IsZero() || now.After(p.start.Add(p.sent)) {
		p.start = now.Add(-p.sent) // start, or rebase after an underrun
	}
	due := p.start.Add(p.sent - lead)
	p.sent += d
	if wait := due.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
