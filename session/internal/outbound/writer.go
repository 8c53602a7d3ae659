package outbound

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/internal/pace"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/internal/stall"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Line is the call as its writer sees it: the transport it writes to,
// and what the call does as the writer writes or drops frames.
type Line interface {
	// Send and SendAudio write one message or audio frame to the caller.
	Send(ctx context.Context, msg wire.Message) error
	SendAudio(ctx context.Context, audio []byte) error
	// Interrupting is called right before b's `interrupted` is written:
	// the call clears the caller's playback and fills in what of
	// b.Speaking was heard. lastOld is how long after the barge-in the
	// writer wrote its last frame of an older generation (0: none).
	Interrupting(ctx context.Context, b *Barge, lastOld time.Duration)
	// Stale is called for each frame dropped as stale.
	Stale()
}

// Serve makes the queue's writer write to line: a goroutine runs it
// whenever frames are queued and none runs, until ctx ends. end is
// called with the error that ends the call: ErrSlowReader once a write
// has taken Limits.Timeout, ErrGone for a failed write; drop is called
// once a write has taken twice that (the connection is to be dropped).
// Frames queued before Serve are written now.
func (o *Queue) Serve(ctx context.Context, line Line, end func(error), drop func()) {
	o.line = line
	o.w.stall.Slow = func() { end(ErrSlowReader) }
	o.w.stall.Drop = drop
	o.serve(func(shared bool) bool {
		parked, err := o.writeLoop(ctx, shared)
		if err != nil {
			end(err)
		}
		return parked
	})
}

// MaxBytes is the most the queue held, in bytes.
func (o *Queue) MaxBytes() int64 { return o.maxBytes.Load() }

// Stale is how many frames were dropped as stale (of a generation gone,
// or of a silenced turn).
func (o *Queue) Stale() int64 { return o.nStale.Load() }

// Linger is how long the call's writer waits for a next frame
// before its goroutine ends (the next frame starts another): long enough
// that a reply's frames, or a turn's messages, keep one writer; an idle
// call holds none.
const Linger = time.Second

// writerState is what the call's writer keeps from one run of writeLoop to
// the next. Only the running writer touches it, but for stall, whose
// timer reads it too; the outbound queue's mutex orders one run before
// the next.
type writerState struct {
	clock   clock.Clock // the engine's (Config.Clock)
	lastGen uint64      // generation of the last frame written
	lastAt  time.Time
	pc      pace.Due
	due     *clock.ChanTimer // the pacer's wait; nil until audio is paced
	held    heldFrame        // the frame to write first when a parked writer runs again
	shared  bool             // this run is on a goroutine it does not own (the pacer's, a pusher's): no wait for a frame
	// brisk (Config.Inline): the writer stops as soon as the queue is
	// empty; in the middle of a reply (midReply) it keeps its ring and
	// timers for the next frame.
	brisk    bool
	midReply bool

	// The idle timer is armed once per run and not per wait: a wait
	// notes when it began, and a timer that fires for an earlier wait is
	// armed again for what is left of this one (idleFor).
	idle      *clock.ChanTimer
	idleArmed bool // idle is pending, or its value is not yet received
	waitStart time.Time

	stall stall.Watch

	// The prompt audio being written: its premise (0: none open) and the
	// audio written so far, for the audio_end that closes it if it is cut.
	prompt   uint64
	promptUS int64
}

// wait notes the start of one wait of the writer and returns the idle
// timer's channel (lingerer).
func (w *writerState) wait() <-chan time.Time {
	w.waitStart = w.clock.Now()
	switch {
	case w.idle == nil:
		w.idle = clock.NewTimer(w.clock, Linger)
	case !w.idleArmed:
		w.idle.Reset(Linger)
	}
	w.idleArmed = true
	return w.idle.C
}

// atOnce: a writer on a goroutine it does not own, or a brisk one, stops
// as soon as the queue is empty (lingerer).
func (w *writerState) atOnce() bool { return w.shared || w.brisk }

// idleFor reports, once the idle timer fired, whether the current wait has
// lasted Linger; if not, the timer fired for an earlier wait and is
// armed again for the rest of this one (lingerer).
func (w *writerState) idleFor() bool {
	w.idleArmed = false
	left := Linger - w.clock.Now().Sub(w.waitStart)
	if left <= 0 {
		return true
	}
	w.idle.Reset(left)
	w.idleArmed = true
	return false
}

// release drops the timers (the idle one has fired) when the writer stops
// for idleness: an idle call keeps none (lingerer). A brisk writer that
// stops between two frames of a reply keeps them.
func (w *writerState) release() bool {
	if w.brisk && w.midReply {
		return false
	}
	w.drop()
	return true
}

// drop lets go of the writer's timers but the idle one, which has fired.
func (w *writerState) drop() {
	w.idle, w.idleArmed = nil, false
	if w.due != nil {
		w.due.Stop()
		w.due = nil
	}
	w.stall.Disarm()
}

// stop lets go of the writer's timers when it ends for good.
func (w *writerState) stop() {
	if w.idle != nil {
		w.idle.Stop()
	}
	w.drop()
}

// Sentinels of the writer.
var (
	// errWriterDone: the writer's context ended while it paced audio.
	errWriterDone = errors.New("session: writer stopped")
	// errParked: the writer parked in the shared pacer (or handed its
	// frame to a goroutine of its own); it runs again from its held frame.
	errParked = errors.New("session: writer parked")
)

// heldFrame is the frame a writer that parked is to write first when it
// runs again, with the time it is due.
type heldFrame struct {
	f   Frame
	due time.Time
	ok  bool
}

// writeLoop is the call's single writer, started by the outbound queue
// when frames are queued and none runs; it returns when the queue has
// stayed empty for Linger, is closed and drained, or ctx ends. The
// generation check right before each write is what keeps an older
// generation off the wire once `interrupted` has been queued; the premise
// check does the same for prompt audio once the call's state changed.
//
// shared: it runs on a goroutine it does not own (runHere): a worker of
// the engine's shared pacer (package internal/pace), resumed from a park,
// or the producer of a reply's frame (Config.Inline). It then never waits: it parks
// again for its next prompt frame, stops as soon as its queue is empty
// (the next push starts a writer), and hands a reply's frame that is not
// due to a goroutine of its own. It reports parked when it parked (or
// handed over): the writer is still running, from its held frame.
func (o *Queue) writeLoop(ctx context.Context, shared bool) (parked bool, err error) {
	w := &o.w
	w.shared = shared
	var seq uint64 // the frame written last, noted by the next take
	if h := w.held; h.ok {
		w.held = heldFrame{}
		if stop, parked, err := o.written(h.f, o.writeAt(ctx, h.f, h.due)); stop {
			return parked, err
		}
		seq = h.f.seq
	}
	for {
		f, r := o.take(ctx, w, seq)
		if r == popIdle {
			return false, nil // the next push starts another writer, which takes over w
		}
		if r != popFrame { // no writer starts after this one
			w.stop()
			o.release()
			return false, nil
		}
		if stop, parked, err := o.written(f, o.writeFrame(ctx, f)); stop {
			return parked, err
		}
		seq = f.seq
	}
}

// written handles what writing f returned: whether the writer stops (or
// parked), and the error that ends the call. A writer that goes on notes
// f as written with its next take.
func (o *Queue) written(f Frame, err error) (stop, parked bool, _ error) {
	if errors.Is(err, errParked) {
		return true, true, nil // w and f belong to the writer that resumes
	}
	if err == nil {
		return false, false, nil
	}
	if f.seq != 0 {
		o.wrote(f.seq)
	}
	o.w.stop()
	o.release()
	if errors.Is(err, errWriterDone) {
		return true, false, nil
	}
	return true, false, err
}

// writeFrame writes f unless it is stale. Audio is paced; control messages
// queued while it waits for a frame's time are written meanwhile, so that
// none waits behind audio.
func (o *Queue) writeFrame(ctx context.Context, f Frame) error {
	w := &o.w
	if o.stale(f) {
		o.recycle(f, false)
		return nil
	}
	if cut, err := o.cutPrompt(ctx, f); cut || err != nil {
		return err
	}
	if o.cfg.Pace && f.Audio != nil {
		now := w.clock.Now()
		due := w.pc.Next(now, time.Duration(f.US)*time.Microsecond, o.cfg.PaceLead)
		if !now.Before(due) {
			return o.writeNow(ctx, f, now) // (one clock read for the pacing and the write)
		}
		return o.writeAt(ctx, f, due)
	}
	return o.writeNow(ctx, f, w.clock.Now())
}

// writeAt writes the audio frame f at due: parked in the shared pacer
// for a prompt's frame (or a goroutine writer's, for a reply's frame met
// on the pacer), waiting on the writer's own timer otherwise.
func (o *Queue) writeAt(ctx context.Context, f Frame, due time.Time) error {
	w := &o.w
	if now := w.clock.Now(); !now.Before(due) {
		return o.writeNow(ctx, f, now) // (a held frame that came due, or one just due)
	}
	switch {
	case o.pacer != nil && f.Premise != 0:
		if dropped, err := o.parkUntil(ctx, f, due); dropped || err != nil {
			return err
		}
		return o.writeNow(ctx, f, w.clock.Now())
	case w.shared:
		// A reply's frames are paced by the call's own writer: this one
		// is handed to a goroutine that waits for it.
		w.held = heldFrame{f: f, due: due, ok: true}
		o.handOver()
		return errParked
	}
	for {
		reached, err := o.waitDue(ctx, due)
		if err != nil {
			return err
		}
		// Rechecked after the wait, and after each control message
		// written meanwhile: an `interrupted` or a message that ends
		// the prompt's premise drops f now, not at its time.
		if o.stale(f) {
			o.recycle(f, false)
			return nil
		}
		if cut, err := o.cutPrompt(ctx, f); cut || err != nil {
			return err
		}
		if reached {
			return o.writeNow(ctx, f, w.clock.Now())
		}
	}
}

// parkUntil writes the control messages queued, then parks the writer in
// the shared pacer until due, unless f is due already; it reports
// whether f was dropped (stale, or its prompt cut). It returns errParked
// once parked: from then on the writer, w and f belong to the pacer's
// worker that resumes it, and the caller returns at once.
func (o *Queue) parkUntil(ctx context.Context, f Frame, due time.Time) (dropped bool, err error) {
	w := &o.w
	for {
		if err := o.writeControl(ctx); err != nil {
			return false, err
		}
		if ctx.Err() != nil || o.dropped.Load() {
			return false, errWriterDone
		}
		// As after a wait on the writer's own timer: an `interrupted` or
		// a message that ended the prompt's premise drops f now.
		if o.stale(f) {
			o.recycle(f, false)
			return true, nil
		}
		if cut, err := o.cutPrompt(ctx, f); cut || err != nil {
			return true, err
		}
		if !w.clock.Now().Before(due) {
			return false, nil
		}
		w.held = heldFrame{f: f, due: due, ok: true}
		if o.park(due) {
			return false, errParked
		}
		w.held = heldFrame{} // a control message came: written first
	}
}

// writeNow writes f, due now (the clock's reading), and notes what it
// wrote.
func (o *Queue) writeNow(ctx context.Context, f Frame, now time.Time) error {
	w := &o.w
	if _, ok := f.Msg.(*wire.AudioStartMsg); ok {
		w.pc.Reset()
	}
	if b := f.Barge; b != nil {
		// How long after the barge-in the last frame of an older
		// generation was written (0: none was).
		var d time.Duration
		if w.lastGen != 0 && w.lastGen < b.Msg.Generation && w.lastAt.After(b.At) {
			d = w.lastAt.Sub(b.At)
		}
		o.line.Interrupting(ctx, b, d)
	}
	err := o.send(ctx, f, now)
	o.recycle(f, true)
	if err != nil {
		return err
	}
	if f.Gen != 0 {
		w.lastGen, w.lastAt = f.Gen, w.clock.Now()
	}
	if !f.control() {
		w.midReply = f.Gen != 0 && !f.End
	} else if f.Barge != nil {
		w.midReply = false
	}
	if f.Premise != 0 && !f.control() { // (an offer carries its prompt's premise too)
		w.notePrompt(f)
	}
	if f.Turn != nil {
		f.Turn.Sent(f.US, f.End)
	}
	return nil
}

// waitDue waits until due, or until control messages were queued
// meanwhile, which it writes; it reports whether due was reached. A
// discarded queue ends the wait: nobody listens for the frame.
func (o *Queue) waitDue(ctx context.Context, due time.Time) (reached bool, err error) {
	w := &o.w
	if !w.armAt(due) {
		return true, nil
	}
	select {
	case <-w.due.C:
		return true, nil
	case <-ctx.Done():
		w.due.Stop()
		return false, errWriterDone
	case <-o.urgent:
		w.due.Stop()
		if o.dropped.Load() {
			return false, errWriterDone
		}
		return false, o.writeControl(ctx)
	}
}

// writeControl writes the control messages queued, ahead of the audio
// frame the writer holds.
func (o *Queue) writeControl(ctx context.Context) error {
	for {
		u, ok := o.takeControl()
		if !ok {
			return nil
		}
		if err := o.writeFrame(ctx, u); err != nil {
			return err
		}
	}
}

// armAt arms w.due to fire at due; it reports false if due has passed.
func (w *writerState) armAt(due time.Time) bool {
	if w.due == nil {
		// A due already passed fires at once, and the wait returns.
		w.due = clock.NewTimerAt(w.clock, due)
		return true
	}
	return w.due.ResetAt(due)
}

// send writes one frame to the transport. A write that takes Timeout
// marks the caller as not reading before anything else sees the
// connection fail; at twice that the connection is dropped, which ends
// the write (package internal/stall).
func (o *Queue) send(ctx context.Context, f Frame, now time.Time) error {
	o.w.stall.Begin(now)
	var err error
	if f.Msg != nil {
		err = o.line.Send(ctx, f.Msg)
	} else {
		err = o.line.SendAudio(ctx, f.Audio)
	}
	stalled := o.w.stall.End()
	if err != nil {
		o.Discard()
		if stalled {
			return ErrSlowReader
		}
		return ErrGone
	}
	return nil
}

// recycle gives f's pooled audio buffer back (promptaudio.PutFrameBuf): always for a
// frame never written, and for one written only if the transport keeps
// nothing of it (Config.ReusableAudio). f.Audio is not read after.
func (o *Queue) recycle(f Frame, written bool) {
	if f.Pooled && (!written || o.cfg.ReusableAudio) {
		promptaudio.PutFrameBuf(f.Audio)
	}
}

// stale reports (and counts) a frame whose generation is no longer current,
// or audio of a turn that lost a lease (Turn.Silenced).
func (o *Queue) stale(f Frame) bool {
	if (f.Gen == 0 || f.Gen == o.gen.Load()) && (f.Turn == nil || !f.Turn.Silenced()) {
		return false
	}
	o.nStale.Add(1)
	o.line.Stale()
	o.w.midReply = false // (a reply cut short)
	return true
}
