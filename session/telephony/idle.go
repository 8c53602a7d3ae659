package telephony

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// idleWatch is the heartbeat of a transport with no ping of its own
// (AudioSocket): a peer that sends nothing for bound — no audio, no
// message of any kind — is taken for dead and dead is called, which
// closes its connection and so ends its call and frees its leases. A live
// Asterisk sends a frame every 20 ms for as long as the channel is up.
//
// Each frame only stores the clock's time; the one timer is armed for the
// moment the peer would have been silent for bound, and re-armed from the
// last frame when it fires early, so a peer is found within bound of its
// last frame, with no timer work per frame.
type idleWatch struct {
	clock clock.Clock
	bound time.Duration
	dead  func()
	last  atomic.Int64 // the clock's UnixNano at the last frame

	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
}

// watchIdle starts watching; the caller calls stop when the connection
// ends (dead is not called after stop returns, unless already running).
func watchIdle(clock clock.Clock, bound time.Duration, dead func()) *idleWatch {
	w := &idleWatch{clock: clock, bound: bound, dead: dead}
	w.touch()
	w.mu.Lock()
	w.timer = clock.AfterFunc(bound, w.fire)
	w.mu.Unlock()
	return w
}

// touch records a frame from the peer.
func (w *idleWatch) touch() { w.last.Store(w.clock.Now().UnixNano()) }

func (w *idleWatch) fire() {
	idle := w.clock.Now().Sub(time.Unix(0, w.last.Load()))
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if idle < w.bound {
		w.timer = w.clock.AfterFunc(w.bound-idle, w.fire)
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	w.dead()
}

// stop ends the watch.
func (w *idleWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// watchedLink is a Link whose every frame read touches an idleWatch.
type watchedLink struct {
	gateway.Link
	w *idleWatch
}

func (l watchedLink) ReadFrame(ctx context.Context) (gateway.Frame, error) {
	f, err := l.Link.ReadFrame(ctx)
	if err == nil {
		l.w.touch()
	}
	return f, err
}
