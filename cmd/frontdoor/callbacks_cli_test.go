package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestCallbacksCLI: on a data directory holding booked callbacks (as a
// server killed mid-call leaves it: fallback's TestCallbacksSurviveKill9),
// `frontdoor callbacks` lists them with their numbers redacted, claims the
// oldest for an operator and completes it.
func TestCallbacksCLI(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cfg := fallback.DefaultConfig()
	cfg.DataDir = data
	ctx := context.Background()
	svc, err := fallback.New(ctx, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for i, n := range []string{"+15550100", "+15550101", "+15550123"} {
		res, err := svc.RequestCallback(ctx, fallback.CallbackRequest{Call: "call" + string(rune('a'+i)), Turn: "t1", Number: n, Consent: true})
		if err != nil || res.Disposition != stages.Queued {
			t.Fatalf("callback %d: %+v, %v", i, res, err)
		}
		refs[res.Ref] = true
	}
	svc.Close()

	bin := buildOnce(t)
	out, err := exec.Command(bin, "callbacks", "list", "-data-dir", data, "-json").Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var list []fallback.Callback
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("list output %q: %v", out, err)
	}
	if len(list) != len(refs) {
		t.Fatalf("%d callbacks listed, want %d", len(list), len(refs))
	}
	for _, c := range list {
		if !refs[c.Ref] || c.Status != fallback.StatusPending {
			t.Errorf("listed %+v", c)
		}
	}
	if strings.Contains(string(out), "+15550100") {
		t.Error("list shows a number unredacted")
	}

	out, err = exec.Command(bin, "callbacks", "claim", "-data-dir", data, "-operator", "op1", "-json").Output()
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	var c fallback.Callback
	if err := json.Unmarshal(out, &c); err != nil || c.Number != "+15550100" || c.Attempt != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	out, err = exec.Command(bin, "callbacks", "complete", "-data-dir", data, "-attempt", "1", "-note", "done", c.Ref).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed") {
		t.Fatalf("complete: %v\n%s", err, out)
	}
}
