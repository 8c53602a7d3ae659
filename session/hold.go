package session

import (
	"context"
	"sync"
	"time"
)

// A caller refused at the session stage may be offered a fallback and
// given time to answer it (package session/offer's OfferWindow). At 10x
// overload thousands wait so. What such a wait holds is the parked call
// and nothing else: no session slot (it was refused), no tenant slot
// (given back at the refusal, before the Fallback runs), no goroutine of
// its own (the Fallback's Refused returns; the call's admission goroutine
// ends) and no timer goroutine (one timer on the engine's clock, which
// runs nothing until it fires). The call's reader stays, as on any open
// line: it sees the answer, or the caller leaving.

// holdState is a call's hold after its session refusal: held once the
// Fallback asked for one (Sender.Hold) while refusing.
type holdState struct {
	mu       sync.Mutex
	refusing bool // the Fallback's Refused runs for the session stage
	held     bool
}

// Hold implements Sender: while a Fallback refuses the call at the session
// stage, it keeps the call open after Refused returns, until release is
// called (the offer was answered), window has passed on the engine's
// clock, or the caller leaves; the call then closes as refused (1013),
// after the audio queued. Asked at any other time it does nothing: a
// call in conversation is not held.
func (c *Call) Hold(window time.Duration) (release func()) {
	c.hold.mu.Lock()
	defer c.hold.mu.Unlock()
	if !c.hold.refusing {
		return func() {}
	}
	c.hold.held = true
	release = sync.OnceFunc(func() { c.stop(errRefused) })
	t := c.s.cfg.Clock.AfterFunc(window, release)
	context.AfterFunc(c.ctx, func() { t.Stop() })
	c.s.m.HeldRefusals.Inc()
	context.AfterFunc(c.ctx, c.s.m.HeldRefusals.Dec)
	return release
}

// refusing brackets the Fallback's Refused of the session stage.
func (c *Call) refusing(on bool) {
	c.hold.mu.Lock()
	c.hold.refusing = on
	c.hold.mu.Unlock()
}

// held reports whether the Fallback asked to hold the refused call.
func (c *Call) held() bool {
	c.hold.mu.Lock()
	defer c.hold.mu.Unlock()
	return c.hold.held
}
