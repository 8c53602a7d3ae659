package admission

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Await waits for the stage's decision on job id, queued as tk at place
// pos: every `every` on the stage's clock it reads the job's place and
// tells moved when it changed. When ctx ends first, the job is withdrawn
// and Await returns what the withdrawal left, with left true: a job
// admitted meanwhile holds a lease its owner must still release.
func (s *Stage) Await(ctx context.Context, tk stages.Pending, id string, pos int, every time.Duration, moved func(pos int)) (d stages.Disposition, left bool) {
	tick := clock.NewTicker(s.cfg.Clock, every)
	defer tick.Stop()
	for {
		select {
		case <-tk.Done():
			d, _ = tk.Result()
			return d, false
		case <-tick.C:
			if p, ok, _ := tk.Position(ctx); ok && p != pos {
				pos = p
				moved(p)
			}
		case <-ctx.Done():
			if _, err := s.Cancel(ctx, id); err != nil {
				s.cfg.Log.Warn("cancel", "stage", s.cfg.Name, "job", id, "err", err)
			}
			<-tk.Done()
			d, _ = tk.Result()
			return d, true
		}
	}
}

// Offer submits job (its owner's rotation in the stage, r, brought to
// the job's generation first) and waits while it is queued, telling queued
// its place. A store that cannot take it (the rotation or the offer
// failed) refuses it Closed, with the error; work whose ctx ended
// meanwhile (a barge-in or the call's end, not the store) is Cancelled.
// Admitted, it returns the job's ticket (Lost).
func (s *Stage) Offer(ctx context.Context, r *Rotation, job stages.Job, queued func(pos int)) (stages.Disposition, stages.Pending, error) {
	var tk stages.Pending
	d := stages.Closed
	err := s.Rotate(ctx, r, job.Owner, job.Generation)
	if err == nil {
		tk, d, err = s.Submit(ctx, job)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return stages.Cancelled, nil, nil
	case err != nil:
		return stages.Closed, nil, err
	case d == stages.Queued:
		pos, _, _ := tk.Position(ctx)
		queued(pos)
		<-tk.Done() // Rotate and Forget resolve it as cancelled
		d, _ = tk.Result()
	}
	return d, tk, nil
}
