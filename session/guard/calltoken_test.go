package guard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCallTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ct := &CallTokens{Secret: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now }, MaxUsed: 2}
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
	other := &CallTokens{Secret: []byte(strings.Repeat("x", 32)), Now: ct.Now}
	forged, _ := other.Mint("acme", time.Minute)
	payload, _, _ := strings.Cut(tok, ".")
	_, sig, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{"forged": forged, "spliced": payload + "." + sig, "empty": "", "no sig": payload} {
		if _, err := ct.Redeem(bad); !errors.Is(err, ErrCallToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	late, _ := ct.Mint("acme", time.Minute)
	now = now.Add(time.Minute)
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
