package fallback_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestBookingLimits: callbacks are capped per caller address, per tenant
// and per phone number over the booking period; a refused booking costs
// nothing; the caps count afresh once the period has passed; handoffs
// count against the same address and tenant caps.
func TestBookingLimits(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	cfg := testConfig(t.TempDir())
	cfg.CallbackQueue = 100
	cfg.HandoffQueue = 10
	cfg.Bookings = fallback.BookingLimits{PerSource: 2, PerTenant: 3, PerNumber: 1, Period: time.Hour}
	s := newService(t, cfg, clock)
	ctx := context.Background()
	n := 0
	book := func(source, tenant, number string) stages.Disposition {
		n++
		req := request(fmt.Sprintf("call-%d", n), "t1", number)
		req.Source, req.Tenant = source, tenant
		res, err := s.RequestCallback(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Disposition
	}
	for i, tc := range []struct {
		source, tenant, number string
		advance                time.Duration
		want                   stages.Disposition
	}{
		{source: "192.0.2.1", number: "+15550100001", want: stages.Queued},
		{source: "192.0.2.1", number: "+15550100002", want: stages.Queued},
		{source: "192.0.2.1", number: "+15550100003", want: stages.Overloaded}, // the address's cap
		{source: "192.0.2.2", number: "+15550100001", want: stages.Overloaded}, // the number's
		{source: "192.0.2.2", number: "+15550100004", want: stages.Queued},     // the refusal cost it nothing
		{source: "192.0.2.3", tenant: "acme", number: "+15550100005", want: stages.Queued},
		{source: "192.0.2.4", tenant: "acme", number: "+15550100006", want: stages.Queued},
		{source: "192.0.2.5", tenant: "acme", number: "+15550100007", want: stages.Queued},
		{source: "192.0.2.6", tenant: "acme", number: "+15550100008", want: stages.Overloaded}, // the tenant's
		{source: "192.0.2.6", tenant: "beta", number: "+15550100008", want: stages.Queued},
		{advance: time.Hour, source: "192.0.2.1", number: "+15550100001", want: stages.Queued}, // a new period
	} {
		clock.Advance(tc.advance)
		if got := book(tc.source, tc.tenant, tc.number); got != tc.want {
			t.Errorf("booking %d (%s %s %s): %v, want %v", i, tc.source, tc.tenant, tc.number, got, tc.want)
		}
	}
	if got := s.BookingsRefused(); got["per_source"] != 1 || got["per_number"] != 1 || got["per_tenant"] != 1 {
		t.Errorf("refused by bound: %v, want one of each", got)
	}
	// A handoff counts against the same address cap.
	h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-h", Turn: "t1", Source: "192.0.2.1"})
	if err != nil || h == nil || d != stages.Queued {
		t.Fatalf("a handoff within the address's cap: %v %v", d, err)
	}
	if h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-h2", Turn: "t1", Source: "192.0.2.1"}); err != nil || h != nil || d != stages.Overloaded {
		t.Fatalf("a handoff over the address's cap: %v %v, want overloaded", d, err)
	}
}

// TestBookingFloodFromOneClient: one client offering arbitrary numbers
// books only its cap of callbacks; the queue keeps room for every other
// refused caller.
func TestBookingFloodFromOneClient(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CallbackQueue = 1000
	cfg.Bookings = fallback.DefaultBookingLimits
	s := newService(t, cfg, stagestest.NewClock(epoch))
	ctx := context.Background()
	queued := 0
	for i := range 1000 {
		req := request(fmt.Sprintf("flood-%d", i), "t1", fmt.Sprintf("+1555%07d", i))
		req.Source = "198.51.100.7"
		if res, err := s.RequestCallback(ctx, req); err != nil {
			t.Fatal(err)
		} else if res.Disposition == stages.Queued {
			queued++
		}
	}
	if queued != fallback.DefaultBookingLimits.PerSource {
		t.Fatalf("one client booked %d callbacks, want its cap of %d", queued, fallback.DefaultBookingLimits.PerSource)
	}
	req := request("another", "t1", "+15559999999")
	req.Source = "198.51.100.8"
	if res, err := s.RequestCallback(ctx, req); err != nil || res.Disposition != stages.Queued {
		t.Fatalf("another caller after the flood: %v %v, want queued", res.Disposition, err)
	}
}
