package session

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// writerLinger is how long the call's writer waits for a next frame
// before its goroutine ends (the next frame starts another): long enough
// that a reply's frames, or a turn's messages, keep one writer; an idle
// call holds none.
const writerLinger = time.Second

// writerState is what the call's writer keeps from one run of writeLoop to
// the next. Only the running writer touches it; the outbound queue's
// mutex orders one run before the next.
type writerState struct {
	lastGen uint64 // generation of the last frame written
	lastAt  time.Time
	pc      pacer
	idle    *time.Timer

	// The prompt audio being written: its premise (0: none open) and the
	// audio written so far, for the audio_end that closes it if it is cut.
	prompt   uint64
	promptUS int64
}

// wait arms the idle timer for one wait of the writer (lingerer).
func (w *writerState) wait() <-chan time.Time {
	if w.idle == nil {
		w.idle = time.NewTimer(writerLinger)
	} else {
		w.idle.Reset(writerLinger)
	}
	return w.idle.C
}

// release drops the idle timer (it has fired) when the writer stops for
// idleness: an idle call keeps no timer (lingerer).
func (w *writerState) release() { w.idle = nil }

// errWriterDone: the writer's context ended while it paced audio.
var errWriterDone = errors.New("session: writer stopped")

// writeLoop is the call's single writer, started by the outbound queue
// when frames are queued and none runs; it returns when the queue has
// stayed empty for writerLinger, is closed and drained, or ctx ends. The
// generation check right before each write is what keeps an older
// generation off the wire once `interrupted` has been queued; the premise
// check does the same for prompt audio once the call's state changed.
func (c *Call) writeLoop(ctx context.Context) error {
	w := &c.w
	for {
		f, r := c.out.take(ctx, w)
		if r == popIdle {
			return nil // the next push starts another writer, which takes over w
		}
		if r != popFrame { // no writer starts after this one
			if w.idle != nil {
				w.idle.Stop()
			}
			return nil
		}
		if err := c.writeFrame(ctx, f); err != nil {
			if errors.Is(err, errWriterDone) {
				return nil
			}
			return err
		}
	}
}

// writeFrame writes f unless it is stale. Audio is paced; control messages
// queued while it waits for a frame's time are written meanwhile, so that
// none waits behind audio.
func (c *Call) writeFrame(ctx context.Context, f frame) error {
	w := &c.w
	if c.stale(f) {
		return nil
	}
	if cut, err := c.cutPrompt(ctx, f); cut || err != nil {
		return err
	}
	if c.s.cfg.Pace && f.audio != nil {
		due := w.pc.next(time.Duration(f.ms)*time.Microsecond, c.s.cfg.PaceLead)
		if err := c.waitDue(ctx, due); err != nil {
			return err
		}
		if c.stale(f) { // rechecked after the wait
			return nil
		}
		if cut, err := c.cutPrompt(ctx, f); cut || err != nil {
			return err
		}
	}
	if _, ok := f.msg.(*AudioStartMsg); ok {
		w.pc.reset()
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
		if w.lastGen != 0 && w.lastGen < im.Generation && w.lastAt.After(f.bargeAt) {
			d = w.lastAt.Sub(f.bargeAt)
		}
		c.s.m.bargeToLast.Observe(d.Seconds())
	}
	if err := c.send(ctx, f); err != nil {
		return err
	}
	if f.gen != 0 {
		w.lastGen, w.lastAt = f.gen, time.Now()
	}
	if f.premise != 0 && !f.control() { // (an offer carries its prompt's premise too)
		w.notePrompt(f)
	}
	if f.turn != nil {
		f.turn.sentUS.Add(f.ms)
		if f.end {
			f.turn.markPlayed()
		}
	}
	return nil
}

// waitDue waits until due, writing the control messages queued meanwhile.
func (c *Call) waitDue(ctx context.Context, due time.Time) error {
	for {
		wait := time.Until(due)
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			t.Stop()
			return errWriterDone
		case <-c.out.urgent:
			t.Stop()
			for {
				u, ok := c.out.takeControl()
				if !ok {
					break
				}
				if err := c.writeFrame(ctx, u); err != nil {
					return err
				}
			}
		}
	}
}

// send writes one frame to the transport. A write that takes Timeout
// marks the caller as not reading before anything else sees the
// connection fail; at twice that the write gives up and coder/websocket
// drops the connection.
func (c *Call) send(ctx context.Context, f frame) error {
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
	return nil
}

// stale reports (and counts) a frame whose generation is no longer current,
// or audio of a turn that lost a lease (lease.go).
func (c *Call) stale(f frame) bool {
	if (f.gen == 0 || f.gen == c.gen.Load()) && (f.turn == nil || !f.turn.silenced.Load()) {
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

// next reports when the next frame, of length d, is due.
func (p *pacer) next(d, lead time.Duration) time.Time {
	now := time.Now()
	if p.start.IsZero() || now.After(p.start.Add(p.sent)) {
		p.start = now.Add(-p.sent) // start, or rebase after an underrun
	}
	due := p.start.Add(p.sent - lead)
	p.sent += d
	return due
}
