package redisstage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// TestTenantsFleetWide: two replicas share a tenant's cap of calls at
// once and its turn budget; a released place is free again at once; a
// dead replica's place (its renewals stopped) lapses after the lease TTL,
// and not before; the tenant "" is never capped.
func TestTenantsFleetWide(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	opt := redisstage.TenantOptions{Sessions: 2, TurnsPerMinute: 6, TurnBurst: 2, LeaseTTL: 600 * time.Millisecond}
	deadClient := redis.NewClient(redistest.Options(srv.Addr))
	dead := redisstage.NewTenants(deadClient, opt)
	live := redisstage.NewTenants(srv.Client(t), opt)
	defer live.Wait()

	held, err := dead.EnterCall(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := live.EnterCall(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.EnterCall(ctx, "acme"); !errors.Is(err, redisstage.ErrTenantFull) {
		t.Fatalf("acme's third call across two replicas: %v, want ErrTenantFull", err)
	}
	if r, err := live.EnterCall(ctx, "beta"); err != nil {
		t.Fatalf("beta: %v", err)
	} else {
		r()
	}
	for range 5 {
		if r, err := live.EnterCall(ctx, ""); err != nil {
			t.Fatalf("no tenant: %v", err)
		} else {
			r()
		}
	}
	mine()
	if again, err := live.EnterCall(ctx, "acme"); err != nil {
		t.Fatalf("after a release: %v", err)
	} else {
		mine = again
	}
	defer mine()

	// The turn budget: a burst of 2 spent across both replicas.
	for i, tn := range []*redisstage.Tenants{dead, live, live} {
		err := tn.AllowTurn(ctx, "acme")
		if want := i < 2; (err == nil) != want {
			t.Fatalf("turn %d: %v", i, err)
		}
		if i == 2 && !errors.Is(err, redisstage.ErrTurnRate) {
			t.Fatalf("turn %d: %v, want ErrTurnRate", i, err)
		}
	}

	// The dead replica stops renewing (its client is gone): its place
	// still counts for a while, then lapses.
	deadClient.Close()
	if _, err := live.EnterCall(ctx, "acme"); !errors.Is(err, redisstage.ErrTenantFull) {
		t.Fatalf("right after the replica died: %v, want its place still held", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := live.EnterCall(ctx, "acme")
		if err == nil {
			r()
			break
		}
		if !errors.Is(err, redisstage.ErrTenantFull) || time.Now().After(deadline) {
			t.Fatalf("the dead replica's place never lapsed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	held()
	dead.Wait()
}
