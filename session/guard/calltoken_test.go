package guard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestCallTokens(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	ct := &CallTokens{Secret: []byte(strings.Repeat("k", 32)), Clock: clock, MaxUsed: 2}
	tok, err := ct.Mint("acme", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ten, err := ct.Redeem(tok); err != nil || ten != "acme" {
		t.Fatalf("first redeem: %q %v", ten, err)
	}
	if _, err := ct.Redeem(tok); !errors.Is(err, ErrCallTokenReplayed) {
		t.Fatalf("replay: %v", err)
	}
	other := &CallTokens{Secret: []byte(strings.Repeat("x", 32)), Clock: clock}
	forged, _ := other.Mint("acme", time.Minute)
	payload, _, _ := strings.Cut(tok, ".")
	_, sig, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{"forged": forged, "spliced": payload + "." + sig, "empty": "", "no sig": payload} {
		if _, err := ct.Redeem(bad); !errors.Is(err, ErrCallToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A token lives exactly its ttl on the clock: good a second before,
	// expired at it.
	late, _ := ct.Mint("acme", time.Minute)
	last, _ := ct.Mint("acme", time.Minute)
	clock.Advance(time.Minute - time.Second)
	if _, err := ct.Redeem(last); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := ct.Redeem(late); !errors.Is(err, ErrCallTokenExpired) {
		t.Fatalf("expired: %v", err)
	}
	// The used set is bounded: expired entries make room; live ones refuse.
	a, _ := ct.Mint("acme", time.Minute)
	b, _ := ct.Mint("acme", time.Minute)
	c, _ := ct.Mint("acme", time.Minute)
	if _, err := ct.Redeem(a); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Redeem(b); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Redeem(c); !errors.Is(err, ErrCallTokenBusy) {
		t.Fatalf("over MaxUsed: %v", err)
	}
	if _, err := ct.Mint("bad tenant", time.Minute); err == nil {
		t.Fatal("bad tenant minted")
	}
	if _, err := ct.Mint("acme", 2*time.Hour); err == nil {
		t.Fatal("ttl over the maximum minted")
	}
}
