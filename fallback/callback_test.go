package fallback_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testConfig(dir string) fallback.Config {
	cfg := fallback.DefaultConfig()
	cfg.DataDir = dir
	cfg.CallbackSlots, cfg.CallbackQueue = 1, 2
	cfg.CallbackMaxWait, cfg.CallbackLease = time.Hour, time.Minute
	cfg.HandoffSlots, cfg.HandoffQueue, cfg.HandoffMaxWait = 1, 2, 2*time.Minute
	return cfg
}

func newService(t *testing.T, cfg fallback.Config, clock clock.Clock, opts ...fallback.Option) *fallback.Service {
	t.Helper()
	cfg.Clock = clock
	s, err := fallback.New(context.Background(), cfg, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func request(call, turn, number string) fallback.CallbackRequest {
	return fallback.CallbackRequest{Call: call, Turn: turn, Number: number, Consent: true}
}

func TestCallbackValidation(t *testing.T) {
	s := newService(t, testConfig(t.TempDir()), stagestest.NewClock(epoch))
	ctx := context.Background()
	tests := []struct {
		name string
		req  fallback.CallbackRequest
		want error
	}{
		{"no consent", fallback.CallbackRequest{Call: "c1", Turn: "t1", Number: "+15550100"}, fallback.ErrConsent},
		{"no number", request("c1", "t1", ""), fallback.ErrNumber},
		{"not E.164", request("c1", "t1", "5550100"), fallback.ErrNumber},
		{"letters", request("c1", "t1", "+1555CALLME"), fallback.ErrNumber},
		{"leading zero", request("c1", "t1", "+05550100"), fallback.ErrNumber},
		{"too long", request("c1", "t1", "+155501000000000000"), fallback.ErrNumber},
		{"no turn", request("c1", "", "+15550100"), fallback.ErrRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.RequestCallback(ctx, tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if res.Ref != "" {
				t.Fatalf("ticket %q issued for a bad request", res.Ref)
			}
		})
	}
	if list, _ := s.ListCallbacks(ctx, 0); len(list) != 0 {
		t.Fatalf("bad requests stored %d callbacks", len(list))
	}
	if got := s.Snapshot(prompt.KindCallback).Ledger.Offered; got != 0 {
		t.Fatalf("bad requests reached the stage: offered %d", got)
	}
}

func TestCallbackQueueFullIsTruthfulRefusal(t *testing.T) {
	s := newService(t, testConfig(t.TempDir()), stagestest.NewClock(epoch))
	ctx := context.Background()
	for i, turn := range []string{"t1", "t2"} {
		res, err := s.RequestCallback(ctx, request("c1", turn, "+1 555 0100"))
		if err != nil || res.Disposition != stages.Queued || res.Ref == "" {
			t.Fatalf("callback %d: %+v, %v", i, res, err)
		}
	}
	if slices.Contains(s.Available(), prompt.KindCallback) {
		t.Fatal("callback still offered with the queue full")
	}
	res, err := s.RequestCallback(ctx, request("c2", "t1", "+15550101"))
	if err != nil || res.Disposition != stages.Overloaded || res.Ref != "" {
		t.Fatalf("full queue: %+v, %v; want Overloaded, no ticket, no error", res, err)
	}
	p := prompt.For(prompt.StageCallback, res.Disposition, s.Available())
	if p.Text == prompt.For(prompt.StageCallback, stages.Queued, nil).Text {
		t.Fatal("refusal prompt says the callback is booked")
	}
	if got := s.Snapshot(prompt.KindCallback).Ledger.Refused.Overloaded; got != 1 {
		t.Fatalf("ledger refused overloaded = %d, want 1", got)
	}
	if list, _ := s.ListCallbacks(ctx, 0); len(list) != 2 {
		t.Fatalf("stored %d callbacks, want 2", len(list))
	}
}

func TestCallbackIdempotent(t *testing.T) {
	s := newService(t, testConfig(t.TempDir()), stagestest.NewClock(epoch))
	ctx := context.Background()
	a, err := s.RequestCallback(ctx, request("c1", "t1", "+15550123"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RequestCallback(ctx, request("c1", "t1", "+15550123"))
	if err != nil || b != a {
		t.Fatalf("retry = %+v, %v; want %+v", b, err, a)
	}
	if got := s.Snapshot(prompt.KindCallback).Queued; got != 1 {
		t.Fatalf("queued %d, want 1", got)
	}
}

func TestCallbackSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	clock := stagestest.NewClock(epoch)
	ctx := context.Background()
	cfg := testConfig(dir)
	cfg.Clock = clock
	s1, err := fallback.New(ctx, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s1.RequestCallback(ctx, request("c1", "t1", "+15550123"))
	b, _ := s1.RequestCallback(ctx, request("c2", "t1", "+15550124"))
	s1.Close()

	s2 := newService(t, testConfig(dir), clock)
	snap := s2.Snapshot(prompt.KindCallback)
	if snap.Queued != 2 {
		t.Fatalf("after restart the stage holds %d, want 2 (the bound must hold)", snap.Queued)
	}
	if res, _ := s2.RequestCallback(ctx, request("c3", "t1", "+15550125")); res.Disposition != stages.Overloaded {
		t.Fatalf("after restart a third callback got %v, want overloaded", res.Disposition)
	}
	if res, _ := s2.RequestCallback(ctx, request("c1", "t1", "+15550123")); res.Ref != a.Ref {
		t.Fatalf("retry after restart got ticket %q, want %q", res.Ref, a.Ref)
	}
	c, err := s2.ClaimCallback(ctx, "op1")
	if err != nil || c.Ref != a.Ref || c.Number != "+15550123" {
		t.Fatalf("claim = %+v, %v; want the oldest, %s", c, err, a.Ref)
	}
	_ = b
}

func TestCallbackClaimLeaseExpiryReturnsToQueue(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s := newService(t, testConfig(t.TempDir()), clock)
	ctx := context.Background()
	a, _ := s.RequestCallback(ctx, request("c1", "t1", "+15550123"))
	c, err := s.ClaimCallback(ctx, "op1")
	if err != nil || c.Ref != a.Ref || c.Attempt != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if _, err := s.ClaimCallback(ctx, "op2"); !errors.Is(err, fallback.ErrNoneWaiting) {
		t.Fatalf("second claim: %v, want ErrNoneWaiting", err)
	}
	clock.Advance(time.Minute + time.Second) // the lease runs out
	got, _ := s.Store().Get(ctx, a.Ref)
	if got.Status != fallback.StatusPending {
		t.Fatalf("after the lease, status %s, want pending", got.Status)
	}
	if s.Stats().LeasesReturned != 1 {
		t.Fatalf("leases returned = %d", s.Stats().LeasesReturned)
	}
	// The late operator's completion is fenced off.
	if _, err := s.FinishCallback(ctx, a.Ref, 1, fallback.StatusCompleted, "late"); !errors.Is(err, fallback.ErrLeaseLost) {
		t.Fatalf("late complete: %v, want ErrLeaseLost", err)
	}
	c2, err := s.ClaimCallback(ctx, "op2")
	if err != nil || c2.Ref != a.Ref || c2.Attempt != 2 {
		t.Fatalf("reclaim = %+v, %v", c2, err)
	}
	done, err := s.FinishCallback(ctx, a.Ref, 2, fallback.StatusCompleted, "spoke to caller")
	if err != nil || done.Status != fallback.StatusCompleted {
		t.Fatalf("complete = %+v, %v", done, err)
	}
	snap := s.Snapshot(prompt.KindCallback)
	if snap.Queued != 0 || snap.Leased != 0 || snap.Owners != 0 {
		t.Fatalf("stage after completion: %+v", snap)
	}
	if err := snap.Ledger.Check(snap.Queued, snap.Leased); err != nil {
		t.Fatal(err)
	}
}

func TestCallbackExpiresUnclaimed(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s := newService(t, testConfig(t.TempDir()), clock)
	ctx := context.Background()
	a, _ := s.RequestCallback(ctx, request("c1", "t1", "+15550123"))
	clock.Advance(time.Hour + time.Second)
	got, _ := s.Store().Get(ctx, a.Ref)
	if got.Status != fallback.StatusExpired {
		t.Fatalf("status %s, want expired", got.Status)
	}
	if snap := s.Snapshot(prompt.KindCallback); snap.Ledger.Expired != 1 || snap.Queued != 0 {
		t.Fatalf("stage: %+v", snap)
	}
}

// failingStore fails every Accept, as a full disk would.
type failingStore struct{ fallback.CallbackStore }

func (failingStore) Accept(context.Context, fallback.Callback) (fallback.Callback, bool, error) {
	return fallback.Callback{}, false, errors.New("disk full")
}

func TestCallbackStoreFailureIsNotEstablished(t *testing.T) {
	st, err := fallback.OpenSQLite(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newService(t, testConfig(""), stagestest.NewClock(epoch), fallback.WithStore(failingStore{st}))
	res, err := s.RequestCallback(context.Background(), request("c1", "t1", "+15550123"))
	if !errors.Is(err, fallback.ErrNotEstablished) || res.Ref != "" {
		t.Fatalf("= %+v, %v; want ErrNotEstablished and no ticket", res, err)
	}
	if s.Stats().NotEstablished != 1 {
		t.Fatal("failure not recorded")
	}
	if snap := s.Snapshot(prompt.KindCallback); snap.Queued != 0 {
		t.Fatalf("the failed callback still holds a place: %+v", snap)
	}
	p := prompt.Failed(prompt.StageCallback, s.Available())
	if p.Reason != prompt.ReasonFailed {
		t.Fatal(p)
	}
}

func TestRedact(t *testing.T) {
	if got := fallback.Redact("+15550123"); got != "+155****23" {
		t.Fatalf("Redact = %q", got)
	}
}
