package redisqueue_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// bookingReplica is one frontdoor's fallback service in fleet mode, its
// booking caps counted on the shared Redis as serve wires them.
func bookingReplica(t *testing.T, srv *redistest.Server, cfg fallback.Config) *fallback.Service {
	t.Helper()
	rdb := srv.Client(t)
	svc, err := fallback.New(context.Background(), cfg, nil, nil,
		fallback.WithStore(redisqueue.NewCallbackStore(rdb, "callbacks", cfg)),
		fallback.WithHandoffQueue(redisqueue.NewHandoffQueue(rdb, "handoffs", cfg, handoffTTL)),
		fallback.WithBookingCounter(redisqueue.NewBookings(rdb, "bookings")))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.AgentHandler(nil))
	t.Cleanup(func() { hs.Close(); svc.Close() })
	return svc
}

// TestFleetBookingCaps: with two replicas on one Redis, the caps per caller
// address, per tenant and per phone number hold for the fleet, not once
// per replica; a refused booking costs nothing; handoffs count against the
// same address cap; a new window counts afresh.
func TestFleetBookingCaps(t *testing.T) {
	srv := redistest.Start(t)
	cfg := handoffConfig()
	cfg.CallbackQueue = 100
	cfg.Bookings = fallback.BookingLimits{PerSource: 2, PerTenant: 3, PerNumber: 1, Period: time.Hour}
	replicas := []*fallback.Service{bookingReplica(t, srv, cfg), bookingReplica(t, srv, cfg)}
	ctx := context.Background()
	n := 0
	book := func(r int, source, tenant, number string) stages.Disposition {
		t.Helper()
		n++
		res, err := replicas[r].RequestCallback(ctx, fallback.CallbackRequest{
			Call: fmt.Sprintf("call-%d", n), Turn: "t1", Number: number, Consent: true, Source: source, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		return res.Disposition
	}
	for i, tc := range []struct {
		replica                int
		source, tenant, number string
		want                   stages.Disposition
	}{
		{0, "192.0.2.1", "", "+15550100001", stages.Queued},
		{1, "192.0.2.1", "", "+15550100002", stages.Queued},
		{1, "192.0.2.1", "", "+15550100003", stages.Overloaded}, // the address's cap, fleet-wide
		{0, "192.0.2.1", "", "+15550100003", stages.Overloaded},
		{0, "192.0.2.2", "", "+15550100001", stages.Overloaded}, // the number's, booked on the other replica
		{1, "192.0.2.2", "", "+15550100004", stages.Queued},     // the refusals cost nothing
		{0, "192.0.2.3", "acme", "+15550100005", stages.Queued},
		{1, "192.0.2.4", "acme", "+15550100006", stages.Queued},
		{0, "192.0.2.5", "acme", "+15550100007", stages.Queued},
		{1, "192.0.2.6", "acme", "+15550100008", stages.Overloaded}, // the tenant's
		{1, "192.0.2.6", "beta", "+15550100008", stages.Queued},
	} {
		if got := book(tc.replica, tc.source, tc.tenant, tc.number); got != tc.want {
			t.Errorf("booking %d on replica %d (%s %s %s): %v, want %v", i, tc.replica, tc.source, tc.tenant, tc.number, got, tc.want)
		}
	}
	refused := map[string]uint64{}
	for _, r := range replicas {
		for k, v := range r.BookingsRefused() {
			refused[k] += v
		}
	}
	if refused["per_source"] != 2 || refused["per_number"] != 1 || refused["per_tenant"] != 1 {
		t.Errorf("refused by bound across the replicas: %v", refused)
	}
	// A handoff from the same address, on either replica, meets the same cap.
	if h, d, err := replicas[1].RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-h", Turn: "t1", Source: "192.0.2.2"}); err != nil || h == nil || d != stages.Queued {
		t.Fatalf("a handoff within the address's cap: %v %v", d, err)
	} else {
		defer h.Cancel()
	}
	if h, d, err := replicas[0].RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-h2", Turn: "t1", Source: "192.0.2.2"}); err != nil || h != nil || d != stages.Overloaded {
		t.Fatalf("a handoff over the address's cap on the other replica: %v %v, want overloaded", d, err)
	}
}

// TestFleetBookingWindow: a key counts only for its window, by the Redis
// server's clock, and then holds no memory in Redis.
func TestFleetBookingWindow(t *testing.T) {
	srv := redistest.Start(t)
	b := redisqueue.NewBookings(srv.Client(t), "bookings")
	ctx := context.Background()
	ks := []fallback.BookingKey{{Key: "s:192.0.2.9", Max: 1}, {Key: "n:+15550100009", Max: 5}}
	const period = 300 * time.Millisecond
	if full, err := b.Reserve(ctx, ks, period); err != nil || full != -1 {
		t.Fatalf("first booking: %d, %v", full, err)
	}
	if full, err := b.Reserve(ctx, ks, period); err != nil || full != 0 {
		t.Fatalf("second booking: %d, %v; want the address's cap (0)", full, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		full, err := b.Reserve(ctx, ks, period)
		if err != nil {
			t.Fatal(err)
		}
		if full == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the window never ended")
		}
		time.Sleep(period / 3)
	}
	keys, err := srv.Client(t).Keys(ctx, "fdbk:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, "192.0.2.9") || strings.Contains(k, "15550100009") {
			t.Errorf("key %q names the address or number", k)
		}
		if ttl := srv.Client(t).PTTL(ctx, k).Val(); ttl <= 0 || ttl > period {
			t.Errorf("key %q lives %v, want at most its window", k, ttl)
		}
	}
	// Released bookings are given back; a release never goes below zero.
	if err := b.Release(ctx, ks); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, ks); err != nil {
		t.Fatal(err)
	}
	if full, err := b.Reserve(ctx, ks, period); err != nil || full != -1 {
		t.Fatalf("after the release: %d, %v", full, err)
	}
}

// TestFleetBookingRedisDown: a replica that cannot reach the counter
// refuses the booking as Closed (fail closed), and says why.
func TestFleetBookingRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	cfg := handoffConfig()
	cfg.Bookings = fallback.BookingLimits{PerSource: 2, Period: time.Hour}
	svc := bookingReplica(t, srv, cfg)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := svc.RequestCallback(ctx, fallback.CallbackRequest{Call: "c", Turn: "t1", Number: "+15550100001", Consent: true, Source: "192.0.2.1"})
	if err != nil || res.Disposition != stages.Closed {
		t.Fatalf("booking with Redis down: %+v %v, want closed", res, err)
	}
	if got := svc.BookingsRefused()["unavailable"]; got != 1 {
		t.Fatalf("refused as unavailable: %d", got)
	}
}
