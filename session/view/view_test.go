package view

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

type source struct {
	sn  stages.Snapshot
	err error
}

func (s source) Name() string { return "model" }
func (s source) Snapshot(context.Context) (stages.Snapshot, error) {
	return s.sn, s.err
}
func (s source) Waiting(context.Context) ([]stages.Waiter, error) {
	return []stages.Waiter{{ID: "t1", Owner: "c1", Position: 1, Age: 1500 * time.Millisecond}}, nil
}
func (s source) CleanupTimeout() time.Duration { return 2 * time.Second }
func (s source) Overdue() int64                { return 1 }
func (s source) Quarantined() bool             { return true }

// Read reports a stage's snapshot, what the server adds to it and its
// waiting list; a snapshot that could not be read is reported with why.
func TestRead(t *testing.T) {
	sn := stages.Snapshot{Limits: stages.Limits{Slots: 4, Waiting: 8, MaxAge: 3 * time.Second}, Queued: 1, Leased: 4,
		CleanupPending: 1, OldestCleanup: 2500 * time.Millisecond, Owners: 5}
	for _, readErr := range []error{nil, stages.ErrUnavailable} {
		v, err := Read(context.Background(), source{sn, readErr})
		if !errors.Is(err, readErr) || (v.Error != "") != (readErr != nil) {
			t.Fatalf("error %v, Error %q; want %v", err, v.Error, readErr)
		}
		want := Stage{Name: "model", Slots: 4, QueueLimit: 8, MaxWaitMS: 3000, CleanupTimeoutMS: 2000, Queued: 1, Leased: 4,
			CleanupPending: 1, OldestCleanupMS: 2500, CleanupOverdue: 1, Quarantined: true, Owners: 5,
			Waiting: []Waiter{{ID: "t1", Owner: "c1", Position: 1, AgeMS: 1500}}, Snapshot: sn, Error: v.Error}
		if v.Name != want.Name || v.Slots != want.Slots || v.QueueLimit != want.QueueLimit || v.MaxWaitMS != want.MaxWaitMS ||
			v.CleanupTimeoutMS != want.CleanupTimeoutMS || v.Queued != want.Queued || v.Leased != want.Leased ||
			v.CleanupPending != want.CleanupPending || v.OldestCleanupMS != want.OldestCleanupMS ||
			v.CleanupOverdue != want.CleanupOverdue || !v.Quarantined || v.Owners != want.Owners ||
			len(v.Waiting) != 1 || v.Waiting[0] != want.Waiting[0] {
			t.Fatalf("read %+v\nwant %+v", v, want)
		}
	}
}
