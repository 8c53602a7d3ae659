package session

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

// ErrLeaseLost is the cause of a backend context cancelled because its
// lease was lost: the slot may already be someone else's, so the work must
// stop. The turn fails with the kind "unavailable" (the store could not
// keep the lease), not as a barge-in.
var ErrLeaseLost = errors.New("session: lease lost while the work ran")

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

// holdLease is st.hold on ctx (t's, or one derived from it) with the
// work's context also cancelled (cause ErrLeaseLost) when lost, the lease
// admit returned for t, is closed. The release that
// follows is refused as fenced when the store expired the lease; hold logs
// that quietly. Work that returned without error keeps its result even if
// the lease was lost just after.
func (c *Call) holdLease(ctx context.Context, t *turn, st *stage, id string, lost <-chan struct{}, work func(context.Context) error) (disp stages.Disposition, err error) {
	defer func() {
		if disp == 0 {
			// The release failed (fenced, or the store did not answer):
			// the stage's work has still ended here, and the lease runs out
			// by its TTL. 0 is not a disposition a caller can be sent.
			disp = stages.Completed
			if err != nil && t.ctx.Err() == nil {
				disp = stages.Failed
			}
		}
	}()
	if lost == nil {
		return st.hold(ctx, id, work)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() { // ends when the lease is lost or holdLease returns
		defer close(watched)
		select {
		case <-lost:
			// Its output stops as a barge-in's does: what it queued is
			// not written (the writer checks before each frame).
			t.silenced.Store(true)
			cancel(ErrLeaseLost)
		case <-ctx.Done():
		}
	}()
	disp, err = st.hold(ctx, id, work)
	wasLost := errors.Is(context.Cause(ctx), ErrLeaseLost)
	cancel(context.Canceled)
	<-watched
	if err != nil && wasLost && t.ctx.Err() == nil {
		c.log.Warn("lease lost: work stopped", "stage", st.name, "job", id)
		err = &backend.Error{Kind: backend.KindUnavailable, Backend: "store", Op: "lease", Err: ErrLeaseLost}
	}
	return disp, err
}
