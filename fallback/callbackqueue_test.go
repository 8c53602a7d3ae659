package fallback_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestCallbackFailedCountsFailed: a callback the operator gave up on is
// counted failed in the callback stage's ledger, in process as in the
// fleet's queue (it was counted completed).
func TestCallbackFailedCountsFailed(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s := newService(t, testConfig(t.TempDir()), clock)
	ctx := context.Background()
	if _, err := s.RequestCallback(ctx, request("c1", "t1", "+15550123")); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimCallback(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishCallback(ctx, c.Ref, c.Attempt, fallback.StatusFailed, "no answer"); err != nil {
		t.Fatal(err)
	}
	sn := s.Snapshot(prompt.KindCallback)
	if sn.Ledger.Failed != 1 || sn.Ledger.Completed != 0 {
		t.Fatalf("ledger %+v: want one failed, none completed", sn.Ledger)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		t.Fatal(err)
	}
}

// TestCallbackClaimFinishedElsewhereFreesSlot: a claim finished by another
// process on the same file (frontdoor callbacks, on the SQLite store) frees
// its claim slot once its lease runs out here. It stayed held until a
// restart: the lease's return found the claim gone and left the gate as
// it was.
func TestCallbackClaimFinishedElsewhereFreesSlot(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	dir := t.TempDir()
	s := newService(t, testConfig(dir), clock)
	ctx := context.Background()
	other, err := fallback.OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := s.RequestCallback(ctx, request("c1", "t1", "+15550123")); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimCallback(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Finish(ctx, c.Ref, c.Attempt, fallback.StatusCompleted, "by the command", epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestCallback(ctx, request("c2", "t1", "+15550124")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute + time.Second) // the first claim's lease runs out
	if c2, err := s.ClaimCallback(ctx, "op2"); err != nil || c2.Call != "c2" {
		t.Fatalf("claim after the lease = %+v, %v; want c2 (the slot is free)", c2, err)
	}
	sn := s.Snapshot(prompt.KindCallback)
	if sn.Leased != 1 || sn.Queued != 0 {
		t.Fatalf("stage %+v: want the one claim of c2", sn)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		t.Fatal(err)
	}
}

// newLocalQueue is this process's callback queue over a SQLite file, with
// testConfig's limits and a minute's lease.
func newLocalQueue(t *testing.T, clock *stagestest.Clock) fallback.CallbackQueue {
	t.Helper()
	ctx := context.Background()
	st, err := fallback.OpenSQLite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	q, err := fallback.NewLocalCallbackQueue(ctx, st, testConfig("").CallbackLimits(), time.Minute, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Stop)
	return q
}

// TestLocalCallbackNextNamesHead: a claim naming a callback takes it only
// at the head of this process's queue, within the claim slots.
func TestLocalCallbackNextNamesHead(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	ctx := context.Background()
	q := newLocalQueue(t, clock)
	for i, ref := range []string{"cb_1", "cb_2"} {
		if _, _, err := q.Accept(ctx, fallback.Callback{Ref: ref, Call: ref, Turn: "t", Accepted: epoch.Add(time.Duration(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Next(ctx, "op", "cb_2", epoch); !errors.Is(err, fallback.ErrNotNext) {
		t.Fatalf("Next(cb_2) behind cb_1: %v, want ErrNotNext", err)
	}
	if _, err := q.Next(ctx, "op", "cb_none", epoch); !errors.Is(err, fallback.ErrNotFound) {
		t.Fatalf("Next(cb_none): %v, want ErrNotFound", err)
	}
	if c, err := q.Next(ctx, "op", "cb_1", epoch); err != nil || c.Ref != "cb_1" || c.Attempt != 1 {
		t.Fatalf("Next(cb_1) = %+v, %v", c, err)
	}
	if _, err := q.Next(ctx, "op", "cb_1", epoch); !errors.Is(err, fallback.ErrNotLive) {
		t.Fatalf("Next(cb_1) claimed: %v, want ErrNotLive", err)
	}
	if _, err := q.Next(ctx, "op", "cb_2", epoch); !errors.Is(err, fallback.ErrSlotsBusy) {
		t.Fatalf("Next(cb_2) with the one slot held: %v, want ErrSlotsBusy", err)
	}
}

// TestLocalCallbackExpireThroughGate: Expire through this process's queue
// frees the callback's waiting place at once (counted cancelled in the
// gate's ledger: the gate did not decide it); it stayed taken until the
// callback's deadline. The gate expires the other at its deadline, and
// Expire then finds it expired.
func TestLocalCallbackExpireThroughGate(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	ctx := context.Background()
	q := newLocalQueue(t, clock) // two waiting places, an hour's wait
	for _, ref := range []string{"cb_1", "cb_2"} {
		if _, _, err := q.Accept(ctx, fallback.Callback{Ref: ref, Call: ref, Turn: "t", Accepted: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Expire(ctx, "cb_2", epoch); err != nil {
		t.Fatal(err)
	}
	if !q.Room() {
		t.Fatal("no room after cb_2 expired")
	}
	clock.Advance(time.Hour + time.Second)
	if err := q.Expire(ctx, "cb_1", clock.Now()); !errors.Is(err, fallback.ErrNotLive) {
		t.Fatalf("Expire after the gate expired it: %v, want ErrNotLive", err)
	}
	for _, ref := range []string{"cb_1", "cb_2"} {
		if c, err := q.Get(ctx, ref); err != nil || c.Status != fallback.StatusExpired {
			t.Fatalf("%s = %+v, %v; want expired", ref, c, err)
		}
	}
	sn, _ := q.Snapshot(ctx, clock.Now())
	if sn.Queued != 0 || sn.Ledger.Expired != 1 || sn.Ledger.CancelledQueued != 1 {
		t.Fatalf("stage %+v: want empty, one expired by the gate, one cancelled", sn)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		t.Fatal(err)
	}
}

// TestLocalCallbackReturnFreesSlot: a claim given back through this
// process's queue frees its slot at once, and the callback can be claimed
// again; the slot stayed held until the lease ran out.
func TestLocalCallbackReturnFreesSlot(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	ctx := context.Background()
	q := newLocalQueue(t, clock) // one claim slot
	if _, _, err := q.Accept(ctx, fallback.Callback{Ref: "cb_1", Call: "c1", Turn: "t", Accepted: epoch}); err != nil {
		t.Fatal(err)
	}
	c, err := q.Next(ctx, "op", "", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Return(ctx, c.Ref, c.Attempt, epoch); err != nil {
		t.Fatal(err)
	}
	if again, err := q.Next(ctx, "op2", "", epoch); err != nil || again.Ref != "cb_1" || again.Attempt != 2 {
		t.Fatalf("Next after Return = %+v, %v; want cb_1, attempt 2", again, err)
	}
	sn, _ := q.Snapshot(ctx, epoch)
	if sn.Leased != 1 || sn.Queued != 0 {
		t.Fatalf("stage %+v: want the one claim", sn)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		t.Fatal(err)
	}
}
