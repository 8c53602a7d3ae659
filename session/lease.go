package session

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/stages"
)

// ErrLeaseLost is the cause of a backend context cancelled because its
// lease was lost: the slot may already be someone else's, so the work must
// stop. The turn fails with the kind "unavailable" (the store could not
// keep the lease), not as a barge-in.
var ErrLeaseLost = admission.ErrLeaseLost

// errSessionLost ends a call whose session lease was lost (fleet mode: its
// replica could not renew it for a TTL, or the renewal was fenced): its
// line may already be another caller's, so it may not go on talking.
var errSessionLost = errors.New("session: session lease lost")

// watchSessionLease ends the call when its session lease is lost, after a
// short true prompt that offers nothing (the call is ending): "Something
// went wrong on our side, so I cannot take your call right now. Please try
// again in a few minutes." It returns when the call ends.
func (c *Call) watchSessionLease(ctx context.Context, lost <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-lost:
	}
	c.log.Warn("session lease lost: ending the call")
	// The call stops talking first (its turns' contexts end with ctx);
	// its end waits for this watcher, so the prompt still goes out, then
	// the connection closes.
	c.stop(errSessionLost)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionLostPrompt)
	defer cancel()
	c.s.refuse(sctx, Refusal{Call: c.id, Stage: StageSession, Reason: string(backend.KindUnavailable), Final: true}, c)
}

// sessionLostPrompt bounds the prompt of a call whose session lease was
// lost: its rendering and queueing (it plays while the connection closes).
// It is a context deadline for a synthesizer's process or socket, on the
// wall clock.
const sessionLostPrompt = 2 * time.Second

// holdLease runs work under the lease id of t's job in st, on ctx (t's,
// or one derived from it), with the lease lost (lost closed) stopping the
// work as a barge-in stops its output: what it queued is not written (the
// writer checks before each frame). t's end, not ctx's, tells a stopped
// turn from a failed one (admission.Stage.Hold).
func (c *Call) holdLease(ctx context.Context, t *turn, st *stage, id string, lost <-chan struct{}, work func(context.Context) error) (stages.Disposition, error) {
	return st.Hold(ctx, admission.Lease{ID: id, Lost: lost, OnLost: func() { t.silenced.Store(true) }, Owner: t.ctx, Log: c.log}, work)
}
