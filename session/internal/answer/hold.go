package answer

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
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

// Hold is a call's hold after its session refusal: held once the Fallback
// asked for one while refusing.
type Hold struct {
	mu       sync.Mutex
	refusing bool // the Fallback's Refused runs for the session stage
	held     bool
}

// Start holds the call whose context is ctx, if its Fallback is refusing
// it now (else it returns false and a release that does nothing), until
// release is called, window has passed on clk, or ctx ends; end ends the
// call, once, when the hold ends.
func (h *Hold) Start(ctx context.Context, clk clock.Clock, window time.Duration, end func()) (release func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.refusing {
		return func() {}, false
	}
	h.held = true
	release = sync.OnceFunc(end)
	t := clk.AfterFunc(window, release)
	context.AfterFunc(ctx, func() { t.Stop() })
	return release, true
}

// Refusing brackets the Fallback's Refused of the session stage.
func (h *Hold) Refusing(on bool) {
	h.mu.Lock()
	h.refusing = on
	h.mu.Unlock()
}

// Held reports whether the Fallback asked to hold the refused call.
func (h *Hold) Held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}
