package callbackstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/callbackstore"
)

// TestSQLiteTransitions: every change is one conditional statement on the
// real file, so a repeated accept keeps the first callback, a second claim
// finds it claimed, a superseded attempt cannot finish it, and a reopened
// store reads what the first one wrote.
func TestSQLiteTransitions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := callbackstore.OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := callbackstore.Callback{Ref: "cb_1", Call: "c", Turn: "t", Number: "+15550123", Accepted: now}
	if got, created, err := st.Accept(ctx, c); err != nil || !created || got.Status != callbackstore.StatusPending {
		t.Fatalf("Accept = %+v, %v, %v", got, created, err)
	}
	c.Ref = "cb_2"
	if got, created, err := st.Accept(ctx, c); err != nil || created || got.Ref != "cb_1" {
		t.Fatalf("repeated Accept = %+v, %v, %v; want cb_1 again", got, created, err)
	}
	claimed, err := st.Claim(ctx, "cb_1", "op", now, now.Add(time.Minute))
	if err != nil || claimed.Attempt != 1 {
		t.Fatalf("Claim = %+v, %v", claimed, err)
	}
	if _, err := st.Claim(ctx, "cb_1", "op2", now, now.Add(time.Minute)); !errors.Is(err, callbackstore.ErrNotLive) {
		t.Fatalf("second Claim: %v, want ErrNotLive", err)
	}
	if err := st.Return(ctx, "cb_1", 1, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "cb_1", "op2", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, "cb_1", 1, callbackstore.StatusCompleted, "", now); !errors.Is(err, callbackstore.ErrLeaseLost) {
		t.Fatalf("Finish with the superseded attempt: %v, want ErrLeaseLost", err)
	}
	if _, err := st.Get(ctx, "nope"); !errors.Is(err, callbackstore.ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
	if _, err := st.Finish(ctx, "cb_1", 2, callbackstore.StatusFailed, "no answer", now); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = callbackstore.OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Get(ctx, "cb_1")
	if err != nil || got.Status != callbackstore.StatusFailed || got.Note != "no answer" || got.Attempt != 2 || !got.Accepted.Equal(now) {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
}
