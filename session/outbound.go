package session

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
	errOutClosed  = errors.New("session: outbound queue closed")
	// ErrPremiseGone: an `offer` was not queued because the call's state
	// changed since the prompt it belongs to (premise.go).
	ErrPremiseGone = errors.New("session: the offer's prompt no longer holds")
)

// OutboundLimits bound what a call may have queued for the caller.
type OutboundLimits struct {
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

func (l OutboundLimits) withDefaults() OutboundLimits {
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

// frame is one queued write. gen 0 frames (session, disposition, turn_end,
// interrupted, prompt, error) are always written; others only while gen is
// the call's current generation. Prompt audio (gen 0) carries the premise
// it was spoken for and is written only while that premise holds
// (premise.go).
type frame struct {
	gen     uint64
	premise uint64       // prompt audio: the call's premise when it was queued; 0 otherwise
	bump    bool         // a message that changes the call's state: the premise moves as it is queued
	pooled  bool         // audio is a pooled buffer (promptaudio.FrameBuf), given back once written or dropped
	voice   bool         // a transport's own line (Voice.Say): taken by a closed queue while one is held
	msg     wire.Message // nil for audio
	audio   []byte       // binary audio
	turn    *turn        // the turn an audio frame (or audio_end) belongs to
	end     bool         // audio_end: the turn's audio is all written
	ms      int64        // audio duration in microseconds
	size    int
	seq     uint64 // a stream-lane frame's place in the lane (outbound.queued)

	interrupted *wire.InterruptedMsg // set for an interrupted frame
	speaking    *turn                // the turn speaking when the barge-in came
	bargeAt     time.Time
}

// frameUnits is what f counts toward OutboundLimits.Frames: one per 20 ms
// of audio it carries, a partial 20 ms counting whole (a reply's last
// frame), and at least one. It is computed as f is queued and again as it
// is taken (f.ms does not change), which keeps the ring's frames small.
func frameUnits(f *frame) int {
	const unit = int64(media.FrameDuration / time.Microsecond)
	return max(int((f.ms+unit-1)/unit), 1)
}

// control reports whether f goes in the control lane: every message but
// the audio stream's own (audio_start, binary frames, audio_end), which
// keep their order among themselves and are paced.
func (f *frame) control() bool {
	switch f.msg.(type) {
	case nil, *wire.AudioStartMsg, *wire.AudioEndMsg:
		return false
	}
	return true
}

// outbound is a call's bounded queue and its single writer. It has two
// lanes: control messages (session, disposition, turn_end, prompt, offer,
// text, ...) are written before any audio still queued, when the event
// happens; audio (the stream lane, the ring) plays in real time behind
// them. Each lane keeps its own order.
type outbound struct {
	lim     OutboundLimits
	clock   clock.Clock    // the engine's: when the ring grew
	gen     *atomic.Uint64 // the call's current generation
	premise *atomic.Uint64 // the call's current premise (nil: prompts are never cut)
	spoken  *atomic.Uint64 // the premise of the last prompt message queued
	stamps  *stamps        // the premises of messages a transport's line may follow (menuaudio.go); nil: none kept

	mu     sync.Mutex
	q      []frame // the stream lane, a ring
	head   int
	n      int
	units  int     // the stream lane's frames in OutboundLimits.Frames units
	ctl    []frame // the control lane, in order; nil when empty
	bytes  int
	closed bool
	ready  chan struct{} // cap 1: frames were added
	urgent chan struct{} // cap 1: a control frame was added (wakes a pacing writer)
	space  chan struct{} // cap 1: frames were removed
	done   chan struct{} // closed by close
	voices int           // a transport's lines being said (Voice.Keep): a closed queue is not finished

	// Barriers (wire.Barrier) of control messages written ahead of audio
	// queued before them: queued counts the stream-lane frames queued so
	// far (a frame's seq), handed is the last of them whose write is
	// over; each barrier closes once handed reaches its at. Under mu.
	queued   uint64
	handed   uint64
	barriers []barrier

	// The writer runs on demand (serve): a goroutine while frames are
	// queued, gone once the queue has stayed empty for writerLinger.
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
	stale    atomic.Int64 // frames dropped as stale
	cut      atomic.Int64 // prompt frames dropped because their premise ended
}

// barrier is a control message's wire.Barrier, waiting for the
// stream-lane frames queued before it.
type barrier struct {
	at uint64 // the seq of the last frame queued before the message
	ch chan struct{}
}

func newOutbound(lim OutboundLimits, gen *atomic.Uint64, clock clock.Clock) *outbound {
	lim = lim.withDefaults()
	return &outbound{lim: lim, clock: clock, gen: gen,
		ready: make(chan struct{}, 1), urgent: make(chan struct{}, 1), space: make(chan struct{}, 1), done: make(chan struct{})}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues f, waiting for room until ctx ends (the writer ends the call
// when a write stalls). A frame of a generation already gone, or prompt
// audio whose premise ended, is dropped at once. The control lane has room
// for lim.Frames messages of its own: audio filling the stream lane never
// holds a control message back.
func (o *outbound) push(ctx context.Context, f frame) error {
	if f.size == 0 {
		f.size = len(f.audio) + 64
	}
	units := frameUnits(&f)
	ctl := f.control()
	for {
		if f.gen != 0 && f.gen != o.gen.Load() {
			o.stale.Add(1)
			return nil
		}
		if f.premise != 0 && o.premise != nil && f.premise != o.premise.Load() && !f.end {
			o.cut.Add(1) // (a cut prompt's audio_end still goes: the writer closes what it began)
			return nil
		}
		o.mu.Lock()
		if o.closed && (!f.voice || o.finishedLocked()) {
			o.mu.Unlock()
			return errOutClosed
		}
		if ctl && len(o.ctl) < o.lim.Frames {
			if _, ok := f.msg.(*wire.OfferMsg); ok && o.premise != nil {
				// An offer belongs to the prompt just before it: it is
				// queued only while that prompt's premise holds, and is
				// written only while it still does (premise.go).
				p := o.premise.Load()
				if o.spoken == nil || o.spoken.Load() != p {
					o.mu.Unlock()
					o.cut.Add(1)
					return ErrPremiseGone
				}
				f.premise = p
			}
			if b := barrierOf(f.msg); b != nil {
				// The message overtakes the audio queued so far; a
				// transport that follows it with audio of its own
				// waits for that audio to be handed over first.
				if ch := b.Arm(o.handed != o.queued); ch != nil {
					o.barriers = append(o.barriers, barrier{at: o.queued, ch: ch})
				}
			}
			if f.bump && o.premise != nil {
				// Moved under mu, as the message is queued: the writer,
				// which takes frames under mu, cannot cut the old
				// prompt's audio and close it before it has this message
				// to write first.
				p := o.premise.Load()
				if !o.stamps.continues(f.msg, p) {
					p = o.premise.Add(1)
				}
				if pm, ok := f.msg.(*wire.PromptMsg); ok && o.spoken != nil {
					o.spoken.Store(p)
					pm.SetPremise(p)
				}
			}
			if o.premise != nil {
				o.stamps.note(f.msg, o.premise.Load())
			}
			o.ctl = append(o.ctl, f)
			o.bytes += f.size
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
		if !ctl && ((o.units+units <= o.lim.Frames && o.bytes+f.size <= o.lim.Bytes) || o.n == 0) {
			if o.n == len(o.q) {
				o.grow()
			}
			o.queued++
			f.seq = o.queued
			o.q[(o.head+o.n)%len(o.q)] = f
			o.n++
			o.units += units
			o.bytes += f.size
			if b := int64(o.bytes); b > o.maxBytes.Load() {
				o.maxBytes.Store(b)
			}
			start := o.startLocked()
			o.mu.Unlock()
			signal(o.ready)
			start()
			return nil
		}
		o.mu.Unlock()
		done := o.done
		if f.voice {
			done = nil // a closed queue still takes it (a discard signals space)
		}
		select {
		case <-o.space:
		case <-done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// pop removes the next frame, waiting until one is queued or ctx ends.
func (o *outbound) pop(ctx context.Context) (frame, bool) {
	f, r := o.take(ctx, nil)
	return f, r == popFrame
}

// Results of take.
const (
	popFrame = iota // a frame was removed
	popEnd          // the queue is closed and drained, or ctx ended
	popIdle         // nothing came within the linger: the writer is to stop
)

// lingerer is the on-demand writer's idle wait: wait arms it before each
// wait for a frame; release lets go of what the writer keeps while it
// waits, once it is to stop for idleness (called with mu held, before
// another writer can start).
type lingerer interface {
	wait() <-chan time.Time
	idleFor() bool // the wait's channel received: did the wait last the linger?
	release()
}

// take is pop for the on-demand writer: when linger is not nil and its
// wait fires first with nothing queued, the writer counts as stopped (the
// next push starts another) and take returns popIdle.
func (o *outbound) take(ctx context.Context, linger lingerer) (frame, int) {
	for {
		if f, ok := o.takeControl(); ok {
			return f, popFrame
		}
		o.mu.Lock()
		if o.n > 0 {
			f := o.q[o.head]
			o.q[o.head] = frame{}
			o.head = (o.head + 1) % len(o.q)
			o.n--
			o.units -= frameUnits(&f)
			o.bytes -= f.size
			if o.n == 0 && len(o.q) > keepFrames && o.clock.Now().Sub(o.grown) > shrinkAfter {
				o.q, o.head = nil, 0 // a drained burst gives its ring back
			}
			o.mu.Unlock()
			signal(o.space)
			return f, popFrame
		}
		closed := o.finishedLocked()
		o.mu.Unlock()
		if closed {
			return frame{}, popEnd
		}
		var idle <-chan time.Time
		if linger != nil {
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
				o.writing = false
				o.q, o.head = nil, 0 // an idle call holds no ring
				linger.release()
				o.mu.Unlock()
				return frame{}, popIdle
			}
			o.mu.Unlock()
		case <-ctx.Done():
			return frame{}, popEnd
		}
	}
}

// takeControl removes the next control frame, if one is queued: the
// writer takes these first, and while it waits to pace audio.
func (o *outbound) takeControl() (frame, bool) {
	o.mu.Lock()
	if len(o.ctl) == 0 {
		o.mu.Unlock()
		return frame{}, false
	}
	f := o.ctl[0]
	o.ctl[0] = frame{}
	o.ctl = o.ctl[1:]
	if len(o.ctl) == 0 {
		o.ctl = nil // the backing array goes with the last message
	}
	o.bytes -= f.size
	o.mu.Unlock()
	signal(o.space)
	return f, true
}

// serve makes write the queue's writer, run in a goroutine of its own
// whenever frames are queued and no writer is running: an idle call holds
// no writer goroutine (and its stack). write returns when take says
// popEnd or popIdle, or on a failed write. Frames queued before serve are
// written now.
func (o *outbound) serve(write func(shared bool) bool) {
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
func (o *outbound) startLocked() func() {
	if o.write == nil || o.writing || o.finishedLocked() {
		return func() {}
	}
	o.writing = true
	o.writers.Add(1)
	write := o.write
	return func() {
		go func() {
			if !write(false) { // a writer that parked is counted until it stops
				o.writers.Done()
			}
		}()
	}
}

// wait returns once no writer runs; after close or discard none starts
// again.
func (o *outbound) wait() { o.writers.Wait() }

// close refuses further frames; the writer drains what is queued.
func (o *outbound) close() {
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

// discard drops what is queued and refuses further frames: the call ended
// and nobody is listening for the rest.
func (o *outbound) discard() {
	o.mu.Lock()
	for o.n > 0 {
		o.q[o.head] = frame{}
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
	o.close()
	signal(o.space)  // wakes a transport's line waiting for room
	signal(o.urgent) // wakes a writer pacing a frame
	kick()           // or resumes a parked one, which stops
}

// park parks the running writer until at, in the shared pacer, unless a
// control message is waiting or the queue was discarded (then it reports
// false and the writer goes on). Its caller ends the writer's goroutine
// without counting the writer as stopped (serve).
func (o *outbound) park(at time.Time) bool {
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
// takes it out of its park if so: the caller resumes it.
func (o *outbound) Unpark(epoch uint64) bool {
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
func (o *outbound) unparkLocked() func() {
	if !o.parked {
		return func() {}
	}
	o.parked = false
	return func() { o.pacer.Run(o) }
}

// Resume runs the parked writer again, on a worker of the shared pacer;
// it counts the writer as stopped unless it parked again.
func (o *outbound) Resume() {
	if !o.write(true) {
		o.writers.Done()
	}
}

// handOver runs the writer, which was running on the shared pacer, on a
// goroutine of its own (to wait for a reply's frame); it stays counted.
func (o *outbound) handOver() {
	go func() {
		if !o.write(false) {
			o.writers.Done()
		}
	}()
}

// wrote notes that the writer is done with the stream-lane frame seq
// (written, or dropped as stale or cut): the barriers of the messages
// queued behind it and before the next frame are passed.
func (o *outbound) wrote(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
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
func (o *outbound) release() {
	o.mu.Lock()
	o.releaseLocked()
	o.mu.Unlock()
}

func (o *outbound) releaseLocked() {
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
// (writerLinger), so an idle call holds none.
const (
	firstFrames = 8
	keepFrames  = 64
	shrinkAfter = time.Second
)

// grow makes room for one more frame, keeping the queued frames in order.
// Called with mu held and o.n == len(o.q) < o.lim.Frames.
func (o *outbound) grow() {
	size := min(max(2*len(o.q), firstFrames), o.lim.Frames)
	q := make([]frame, size)
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
