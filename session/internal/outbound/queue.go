// Package outbound is a call's outbound queue and its one writer: every
// message and audio frame the caller hears goes through a Queue, whose
// writer checks each frame's generation and premise right before it is
// written, writes control messages ahead of queued audio, paces audio in
// real time (parking in the engine's shared pacer for prompt audio),
// passes barriers and ends a call whose caller stopped reading. The call
// gives it what is call-specific through Config and Line; the package
// knows nothing of package session.
package outbound

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/internal/pace"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Errors of the outbound queue.
var (
	// ErrSlowReader: the caller stopped reading; the call is closed (1008).
	ErrSlowReader = errors.New("session: caller is not reading (a write stalled)")
	// ErrClosed: the queue takes no more frames (Close, Discard).
	ErrClosed = errors.New("session: outbound queue closed")
	// ErrPremiseGone: an `offer` (or a transport's line) was not queued
	// because the call's state changed since the prompt it belongs to.
	ErrPremiseGone = errors.New("session: the offer's prompt no longer holds")
	// ErrGone: a write to the transport failed; the caller is gone.
	ErrGone = errors.New("session: caller disconnected")
)

// Limits bound what a call may have queued for the caller.
type Limits struct {
	// Frames bounds the stream lane in 20 ms frames (0: 512): a frame
	// counts one per 20 ms of audio it carries, a part counting whole,
	// and at least one, so that a 60 ms frame (hello.audio.frame_ms)
	// counts 3 and the bound is the same audio time whatever the
	// caller's frame length. The control lane holds as many messages
	// beside it.
	Frames int
	Bytes  int // queued payload bytes (0: 1 MiB)
	// Timeout is how long one write may take before the caller counts as
	// not reading (0: 5s). A producer waits for room as long as the writer
	// makes progress: a paced writer fills the queue by design.
	Timeout time.Duration
}

// WithDefaults fills in the defaults of the limits left 0.
func (l Limits) WithDefaults() Limits {
	if l.Frames <= 0 {
		l.Frames = 512
	}
	if l.Bytes <= 0 {
		l.Bytes = 1 << 20
	}
	if l.Timeout <= 0 {
		l.Timeout = 5 * time.Second
	}
	return l
}

// Turn is the reply an audio frame belongs to, as the writer sees it.
// It is an interface of pointer types so that a frame carries it without
// an allocation.
type Turn interface {
	// Silenced reports that the turn lost a lease: its audio is dropped.
	Silenced() bool
	// Sent notes us of its audio written to the caller; end: its
	// audio_end was written (the reply has played).
	Sent(us int64, end bool)
}

// Frame is one queued write. Gen 0 frames (session, disposition, turn_end,
// interrupted, prompt, error) are always written; others only while Gen is
// the call's current generation. Prompt audio (Gen 0) carries the premise
// it was spoken for and is written only while that premise holds
// (premise.go).
type Frame struct {
	Gen     uint64
	Premise uint64       // prompt audio: the call's premise when it was queued; 0 otherwise
	Msg     wire.Message // nil for audio
	Audio   []byte       // binary audio
	Turn    Turn         // the turn an audio frame (or audio_end) belongs to; nil: none
	US      int64        // audio duration in microseconds
	Size    int          // bytes it counts toward Limits.Bytes (0: len(Audio)+64)
	seq     uint64       // a stream-lane frame's place in the lane (Queue.queued)
	Barge   *Barge       // set for an `interrupted` frame (Line.Interrupting)
	Bump    bool         // a message that changes the call's state: the premise moves as it is queued
	Pooled  bool         // Audio is a pooled buffer (promptaudio.FrameBuf), given back once written or dropped
	Voice   bool         // a transport's own line: taken by a closed queue while one is held (HoldVoice)
	End     bool         // audio_end: the turn's audio is all written
}

// Barge is a barge-in, as its `interrupted` frame carries it to the
// writer: kept apart so that every other frame stays small.
type Barge struct {
	Msg      *wire.InterruptedMsg // the frame's message
	Speaking Turn                 // the turn speaking when the barge-in came; nil: none
	At       time.Time            // when it came
}

// frameUnits is what f counts toward Limits.Frames: one per 20 ms
// of audio it carries, a partial 20 ms counting whole (a reply's last
// frame), and at least one. It is computed as f is queued and again as it
// is taken (f.US does not change), which keeps the ring's frames small.
func frameUnits(f *Frame) int {
	const unit = int64(media.FrameDuration / time.Microsecond)
	return max(int((f.US+unit-1)/unit), 1)
}

// control reports whether f goes in the control lane: every message but
// the audio stream's own (audio_start, binary frames, audio_end), which
// keep their order among themselves and are paced.
func (f *Frame) control() bool {
	switch f.Msg.(type) {
	case nil, *wire.AudioStartMsg, *wire.AudioEndMsg:
		return false
	}
	return true
}

// Queue is a call's bounded queue and its single writer. It has two
// lanes: control messages (session, disposition, turn_end, prompt, offer,
// text, ...) are written before any audio still queued, when the event
// happens; audio (the stream lane, the ring) plays in real time behind
// them. Each lane keeps its own order.
type Queue struct {
	cfg     Config
	lim     Limits
	clock   clock.Clock    // the engine's: when the ring grew
	gen     *atomic.Uint64 // the call's current generation
	premise *atomic.Uint64 // the call's current premise (nil: prompts are never cut)
	spoken  *atomic.Uint64 // the premise of the last prompt message queued
	stamps  *stamps        // the premises of messages a transport's line may follow (voice.go); nil: none kept
	line    Line           // the transport, as the writer writes to it; nil until Serve
	w       writerState    // the writer's own, across its runs (writer.go)

	mu     sync.Mutex
	q      []Frame // the stream lane, a ring
	head   int
	n      int
	units  int     // the stream lane's frames in Limits.Frames units
	ctl    []Frame // the control lane, in order; nil when empty
	bytes  int
	closed bool
	ready  chan struct{} // cap 1: frames were added
	urgent chan struct{} // cap 1: a control frame was added (wakes a pacing writer)
	space  chan struct{} // cap 1: frames were removed, and roomWait > 0
	// roomWait counts the pushers waiting for room: a frame taken
	// signals space only when one is.
	roomWait int
	done     chan struct{} // closed by close
	voices   int           // a transport's lines being said (HoldVoice): a closed queue is not finished

	// Barriers (wire.Barrier) of control messages written ahead of audio
	// queued before them: queued counts the stream-lane frames queued so
	// far (a frame's seq), handed is the last of them whose write is
	// over; each barrier closes once handed reaches its at. Under mu.
	queued   uint64
	handed   uint64
	barriers []barrier

	// The writer runs on demand (serve): a goroutine while frames are
	// queued, gone once the queue has stayed empty for Linger.
	write   func(shared bool) bool // the writer's body (true: it parked); nil until serve
	writing bool                   // a writer is running, starting or parked
	writers sync.WaitGroup         // the running (or parked) writer, for wait

	// A writer parked in the engine's shared pacer (package internal/pace) until
	// its next prompt frame is due: no goroutine runs it meanwhile. Each
	// park has an epoch, so that the pacer's entry of an earlier park
	// resumes nothing. Under mu.
	pacer     *pace.Pacer // nil: every writer waits on its own timer
	parked    bool
	parkEpoch uint64

	dropped  atomic.Bool  // discarded: a writer waiting to pace a frame gives up
	grown    time.Time    // last growth of q
	maxBytes atomic.Int64 // high-water mark, for tests and metrics
	nStale   atomic.Int64 // frames dropped as stale
	nCut     atomic.Int64 // prompt frames dropped because their premise ended
}

// barrier is a control message's wire.Barrier, waiting for the
// stream-lane frames queued before it.
type barrier struct {
	at uint64 // the seq of the last frame queued before the message
	ch chan struct{}
}

// Config is what a call gives its queue.
type Config struct {
	Limits Limits
	Clock  clock.Clock    // the engine's
	Gen    *atomic.Uint64 // the call's current generation (required)
	// Premise is the call's current premise and Spoken that of the last
	// prompt message queued (premise.go); nil: prompts are never cut.
	Premise, Spoken *atomic.Uint64
	// Stamps keeps the premises of the messages a transport's line may
	// follow (SaysFor): set for a transport with a voice of its own.
	Stamps bool
	// Pacer parks writers of prompt audio until their frame is due
	// (nil: every writer waits on its own timer).
	Pacer *pace.Pacer
	// Pace writes audio in real time, PaceLead ahead of it.
	Pace     bool
	PaceLead time.Duration
	// ReusableAudio: the transport keeps nothing of an audio frame once
	// SendAudio returns, so a pooled buffer is given back once written.
	ReusableAudio bool
	// Inline says that the transport's writes return once the frame is
	// handed to the connection, never waiting for playback (a WebSocket
	// over TCP). A reply's frame (Gen and Turn set, pushed by its
	// synthesizer or its turn) is then written by its pusher when no
	// writer runs, and a writer goroutine stops as soon as
	// the queue is empty rather than linger: a reply's frames, which come
	// one every 20 ms, cost no goroutine wake-up each (docs/BENCHMARKS.md,
	// section 6). The pusher waits for the write, as it waits for room in
	// a full queue; a frame not yet due is still paced by a writer
	// goroutine.
	Inline bool
}

// New returns an empty queue; it writes nothing until Serve.
func New(cfg Config) *Queue {
	lim := cfg.Limits.WithDefaults()
	o := &Queue{cfg: cfg, lim: lim, clock: cfg.Clock, gen: cfg.Gen, premise: cfg.Premise, spoken: cfg.Spoken, pacer: cfg.Pacer,
		ready: make(chan struct{}, 1), urgent: make(chan struct{}, 1), space: make(chan struct{}, 1), done: make(chan struct{})}
	if cfg.Stamps {
		o.stamps = new(stamps)
	}
	o.w.clock = cfg.Clock
	o.w.brisk = cfg.Inline
	o.w.stall.Clock, o.w.stall.Timeout = cfg.Clock, lim.Timeout
	return o
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Push queues f, waiting for room until ctx ends (the writer ends the call
// when a write stalls). A frame of a generation already gone, or prompt
// audio whose premise ended, is dropped at once. The control lane has room
// for lim.Frames messages of its own: audio filling the stream lane never
// holds a control message back. With Config.Inline, a reply's frame of
// the stream lane that finds no writer running makes the calling
// goroutine the writer until the queue is empty (or a frame is not yet
// due): Push returns once it is written.
func (o *Queue) Push(ctx context.Context, f Frame) error {
	if f.Size == 0 {
		f.Size = len(f.Audio) + 64
	}
	units := frameUnits(&f)
	ctl := f.control()
	for {
		if f.Gen != 0 && f.Gen != o.gen.Load() {
			o.nStale.Add(1)
			return nil
		}
		if f.Premise != 0 && o.premise != nil && f.Premise != o.premise.Load() && !f.End {
			o.nCut.Add(1) // (a cut prompt's audio_end still goes: the writer closes what it began)
			return nil
		}
		o.mu.Lock()
		if o.closed && (!f.Voice || o.finishedLocked()) {
			o.mu.Unlock()
			return ErrClosed
		}
		if ctl && len(o.ctl) < o.lim.Frames {
			if _, ok := f.Msg.(*wire.OfferMsg); ok && o.premise != nil {
				// An offer belongs to the prompt just before it: it is
				// queued only while that prompt's premise holds, and is
				// written only while it still does (premise.go).
				p := o.premise.Load()
				if o.spoken == nil || o.spoken.Load() != p {
					o.mu.Unlock()
					o.nCut.Add(1)
					return ErrPremiseGone
				}
				f.Premise = p
			}
			if b := barrierOf(f.Msg); b != nil {
				// The message overtakes the audio queued so far; a
				// transport that follows it with audio of its own
				// waits for that audio to be handed over first.
				if ch := b.Arm(o.handed != o.queued); ch != nil {
					o.barriers = append(o.barriers, barrier{at: o.queued, ch: ch})
				}
			}
			if f.Bump && o.premise != nil {
				// Moved under mu, as the message is queued: the writer,
				// which takes frames under mu, cannot cut the old
				// prompt's audio and close it before it has this message
				// to write first.
				p := o.premise.Load()
				if !o.stamps.continues(f.Msg, p) {
					p = o.premise.Add(1)
				}
				if pm, ok := f.Msg.(*wire.PromptMsg); ok && o.spoken != nil {
					o.spoken.Store(p)
					pm.SetPremise(p)
				}
			}
			if o.premise != nil {
				o.stamps.note(f.Msg, o.premise.Load())
			}
			o.ctl = append(o.ctl, f)
			o.bytes += f.Size
			start := o.startLocked()
			kick := o.unparkLocked()
			o.mu.Unlock()
			signal(o.ready)
			signal(o.urgent)
			start()
			kick()
			return nil
		}
		// A frame larger than either bound still goes into an empty
		// lane: it would never fit otherwise.
		if !ctl && ((o.units+units <= o.lim.Frames && o.bytes+f.Size <= o.lim.Bytes) || o.n == 0) {
			if o.n == len(o.q) {
				o.grow()
			}
			o.queued++
			f.seq = o.queued
			o.q[(o.head+o.n)%len(o.q)] = f
			o.n++
			o.units += units
			o.bytes += f.Size
			if b := int64(o.bytes); b > o.maxBytes.Load() {
				o.maxBytes.Store(b)
			}
			if o.cfg.Inline && f.Gen != 0 && f.Turn != nil && o.claimLocked() {
				o.mu.Unlock()
				o.runHere()
				return nil
			}
			start := o.startLocked()
			o.mu.Unlock()
			signal(o.ready)
			start()
			return nil
		}
		o.roomWait++
		o.mu.Unlock()
		if err := o.waitRoom(ctx, f.Voice); err != nil {
			return err
		}
	}
}

// waitRoom waits until a frame is removed (or the queue is closed, unless
// voice: a closed queue still takes a transport's line) or ctx ends; the
// caller counted itself in roomWait.
func (o *Queue) waitRoom(ctx context.Context, voice bool) error {
	defer func() {
		o.mu.Lock()
		o.roomWait--
		o.mu.Unlock()
	}()
	done := o.done
	if voice {
		done = nil // a closed queue still takes it (a discard signals space)
	}
	select {
	case <-o.space:
	case <-done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// pop removes the next frame, waiting until one is queued or ctx ends.
func (o *Queue) pop(ctx context.Context) (Frame, bool) {
	f, r := o.take(ctx, nil, 0)
	return f, r == popFrame
}

// Results of take.
const (
	popFrame = iota // a frame was removed
	popEnd          // the queue is closed and drained, or ctx ended
	popIdle         // nothing came within the linger: the writer is to stop
)

// lingerer is the on-demand writer's idle wait: wait arms it before each
// wait for a frame (unless atOnce); release lets go of what the writer
// keeps while it waits, once it is to stop for idleness (called with mu
// held, before another writer can start).
type lingerer interface {
	wait() <-chan time.Time
	idleFor() bool // the wait's channel received: did the wait last the linger?
	// release lets go of the timers, unless the writer is to run again
	// soon (a brisk writer in the middle of a reply); it reports whether
	// it did, and the ring goes with them.
	release() bool
	// atOnce: the writer stops as soon as the queue is empty (wait's
	// channel is always ready).
	atOnce() bool
}

// take is pop for the on-demand writer: when linger is not nil and its
// wait fires first with nothing queued, the writer counts as stopped (the
// next push starts another) and take returns popIdle; a linger that
// stops at once (a brisk or shared writer) does so without a wait.
// written is the stream-lane frame the writer is done with since its last
// take (0: none), noted under the same lock (wrote).
func (o *Queue) take(ctx context.Context, linger lingerer, written uint64) (Frame, int) {
	o.mu.Lock()
	if written != 0 {
		o.wroteLocked(written)
	}
	for {
		if f, ok := o.takeLocked(); ok {
			return f, popFrame // (unlocked)
		}
		if o.finishedLocked() {
			o.mu.Unlock()
			return Frame{}, popEnd
		}
		atOnce := linger != nil && linger.atOnce()
		if atOnce && !o.closed {
			// No wait, no select: a reply's frame written inline comes
			// here after each write (docs/BENCHMARKS.md, section 6).
			o.stopIdleLocked(linger)
			o.mu.Unlock()
			return Frame{}, popIdle
		}
		o.mu.Unlock()
		// A closed queue whose transport's line is still to come keeps
		// its writer (HoldVoice), even one that would stop at once: it
		// waits for the line, or for its release.
		var idle <-chan time.Time
		if linger != nil && !atOnce {
			idle = linger.wait()
		}
	wait:
		select {
		case <-o.ready:
		case <-idle:
			if !linger.idleFor() {
				goto wait // it fired for an earlier wait and is armed for the rest of this one
			}
			o.mu.Lock()
			if o.n == 0 && len(o.ctl) == 0 && !o.closed {
				o.stopIdleLocked(linger)
				o.mu.Unlock()
				return Frame{}, popIdle
			}
			o.mu.Unlock()
		case <-ctx.Done():
			return Frame{}, popEnd
		}
		o.mu.Lock()
	}
}

// stopIdleLocked counts the writer as stopped for idleness.
func (o *Queue) stopIdleLocked(linger lingerer) {
	o.writing = false
	if linger.release() {
		o.q, o.head = nil, 0 // an idle call holds no ring
	}
}

// takeLocked removes the next frame, control lane first, if one is
// queued; it unlocks mu when it does.
func (o *Queue) takeLocked() (Frame, bool) {
	if len(o.ctl) > 0 {
		return o.takeControlLocked(), true
	}
	if o.n == 0 {
		return Frame{}, false
	}
	f := o.q[o.head]
	o.q[o.head] = Frame{}
	o.head = (o.head + 1) % len(o.q)
	o.n--
	o.units -= frameUnits(&f)
	o.bytes -= f.Size
	if o.n == 0 && len(o.q) > keepFrames && o.clock.Now().Sub(o.grown) > shrinkAfter {
		o.q, o.head = nil, 0 // a drained burst gives its ring back
	}
	o.unlockRoom()
	return f, true
}

// takeControl removes the next control frame, if one is queued: the
// writer takes these first, and while it waits to pace audio.
func (o *Queue) takeControl() (Frame, bool) {
	o.mu.Lock()
	if len(o.ctl) == 0 {
		o.mu.Unlock()
		return Frame{}, false
	}
	return o.takeControlLocked(), true
}

// takeControlLocked removes the next control frame, which is queued, and
// unlocks mu.
func (o *Queue) takeControlLocked() Frame {
	f := o.ctl[0]
	o.ctl[0] = Frame{}
	o.ctl = o.ctl[1:]
	if len(o.ctl) == 0 {
		o.ctl = nil // the backing array goes with the last message
	}
	o.bytes -= f.Size
	o.unlockRoom()
	return f
}

// unlockRoom unlocks mu after a frame was removed, and wakes a pusher
// waiting for room if one is (only then: most frames find none).
func (o *Queue) unlockRoom() {
	wake := o.roomWait > 0
	o.mu.Unlock()
	if wake {
		signal(o.space)
	}
}

// serve makes write the queue's writer, run in a goroutine of its own
// whenever frames are queued and no writer is running: an idle call holds
// no writer goroutine (and its stack). write returns when take says
// popEnd or popIdle, or on a failed write. Frames queued before serve are
// written now.
func (o *Queue) serve(write func(shared bool) bool) {
	o.mu.Lock()
	o.write = write
	start := func() {}
	if o.n > 0 || len(o.ctl) > 0 {
		start = o.startLocked()
	}
	o.mu.Unlock()
	start()
}

// startLocked marks a writer as running when none is and frames are
// queued; the function it returns starts it (after mu is released). The
// writer is counted in writers under mu, before close can be called, so
// that wait sees it.
func (o *Queue) startLocked() func() {
	if !o.claimLocked() {
		return func() {}
	}
	write := o.write
	return func() {
		go func() {
			if !write(false) { // a writer that parked is counted until it stops
				o.writers.Done()
			}
		}()
	}
}

// claimLocked marks a writer as running, and counts it, when none is and
// one may start.
func (o *Queue) claimLocked() bool {
	if o.write == nil || o.writing || o.finishedLocked() {
		return false
	}
	o.writing = true
	o.writers.Add(1)
	return true
}

// runHere runs the claimed writer on the calling goroutine, which it does
// not own: the writer never waits on it (it stops, parks or hands over
// instead). It counts the writer as stopped unless it parked.
func (o *Queue) runHere() {
	if !o.write(true) {
		o.writers.Done()
	}
}

// Wait returns once no writer runs; after Close or Discard none starts
// again.
func (o *Queue) Wait() { o.writers.Wait() }

// Close refuses further frames; the writer drains what is queued.
func (o *Queue) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.done)
	}
	signal(o.ready)
	if o.voices > 0 && !o.dropped.Load() {
		// A transport's line is still to come: a writer drains it
		// before wait returns.
		o.startLocked()()
	}
}

// Discard drops what is queued and refuses further frames: the call ended
// and nobody is listening for the rest.
func (o *Queue) Discard() {
	o.mu.Lock()
	for o.n > 0 {
		o.q[o.head] = Frame{}
		o.head = (o.head + 1) % len(o.q)
		o.n--
	}
	o.ctl = nil
	o.bytes, o.units = 0, 0
	o.q, o.head = nil, 0
	o.dropped.Store(true)
	o.releaseLocked()
	kick := o.unparkLocked()
	o.mu.Unlock()
	o.Close()
	signal(o.space)  // wakes a transport's line waiting for room
	signal(o.urgent) // wakes a writer pacing a frame
	kick()           // or resumes a parked one, which stops
}

// park parks the running writer until at, in the shared pacer, unless a
// control message is waiting or the queue was discarded (then it reports
// false and the writer goes on). Its caller ends the writer's goroutine
// without counting the writer as stopped (serve).
func (o *Queue) park(at time.Time) bool {
	o.mu.Lock()
	if len(o.ctl) > 0 || o.dropped.Load() {
		o.mu.Unlock()
		return false
	}
	o.parked = true
	o.parkEpoch++
	epoch := o.parkEpoch
	o.mu.Unlock()
	o.pacer.Park(o, epoch, at)
	return true
}

// Unpark reports whether the writer parked as epoch is still parked, and
// takes it out of its park if so: the caller resumes it (pace.Writer).
func (o *Queue) Unpark(epoch uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.parked || o.parkEpoch != epoch {
		return false
	}
	o.parked = false
	return true
}

// unparkLocked takes a parked writer out of its park; the function it
// returns (called after mu is released) has the pacer resume it now.
func (o *Queue) unparkLocked() func() {
	if !o.parked {
		return func() {}
	}
	o.parked = false
	return func() { o.pacer.Run(o) }
}

// Resume runs the parked writer again, on a worker of the shared pacer;
// it counts the writer as stopped unless it parked again (pace.Writer).
func (o *Queue) Resume() { o.runHere() }

// handOver runs the writer, which was running on the shared pacer, on a
// goroutine of its own (to wait for a reply's frame); it stays counted.
func (o *Queue) handOver() {
	go func() {
		if !o.write(false) {
			o.writers.Done()
		}
	}()
}

// wrote notes that the writer is done with the stream-lane frame seq
// (written, or dropped as stale or cut): the barriers of the messages
// queued behind it and before the next frame are passed.
func (o *Queue) wrote(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wroteLocked(seq)
}

func (o *Queue) wroteLocked(seq uint64) {
	o.handed = max(o.handed, seq)
	for len(o.barriers) > 0 && o.barriers[0].at <= o.handed {
		close(o.barriers[0].ch)
		o.barriers[0] = barrier{}
		o.barriers = o.barriers[1:]
	}
	if len(o.barriers) == 0 {
		o.barriers = nil
	}
}

// release passes every barrier: the writer stopped for good, so nothing
// queued is handed to the transport after this and nobody may wait for it.
func (o *Queue) release() {
	o.mu.Lock()
	o.releaseLocked()
	o.mu.Unlock()
}

func (o *Queue) releaseLocked() {
	for _, b := range o.barriers {
		close(b.ch)
	}
	o.barriers = nil
	o.handed = o.queued // a barrier queued from now on has nothing to wait for
}

// The ring starts empty and doubles on demand up to lim.Frames (a full
// ring of 512 is 56 KiB, more than the rest of an idle call). A ring grown
// past keepFrames for a burst is given back once the writer has drained
// it, unless it grew in the last shrinkAfter: a writer that keeps catching
// up with a fast producer would otherwise regrow the ring on every burst.
// Any ring is given back when the writer stops for want of frames
// (Linger), so an idle call holds none.
const (
	firstFrames = 8
	keepFrames  = 64
	shrinkAfter = time.Second
)

// grow makes room for one more frame, keeping the queued frames in order.
// Called with mu held and o.n == len(o.q) < o.lim.Frames.
func (o *Queue) grow() {
	size := min(max(2*len(o.q), firstFrames), o.lim.Frames)
	q := make([]Frame, size)
	for i := range o.n {
		q[i] = o.q[(o.head+i)%len(o.q)]
	}
	o.q, o.head, o.grown = q, 0, o.clock.Now()
}

// barrierOf returns msg's barrier, for the messages a transport may follow
// with audio of its own (wire.Barrier).
func barrierOf(msg wire.Message) *wire.Barrier {
	switch m := msg.(type) {
	case *wire.OfferMsg:
		return &m.Barrier
	case *wire.FallbackMsg:
		return &m.Barrier
	case *wire.ErrorMsg:
		return &m.Barrier
	}
	return nil
}

// Lane reports the stream lane: the frames queued in it so far (a
// frame's seq), those in it now, their units (Limits.Frames) and the
// audio they hold.
func (o *Queue) Lane() (queued uint64, frames, units int, audio time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.n {
		audio += time.Duration(o.q[(o.head+i)%len(o.q)].US) * time.Microsecond
	}
	return o.queued, o.n, o.units, audio
}
