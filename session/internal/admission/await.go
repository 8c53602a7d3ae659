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
