package callbackstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
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

// TestSQLiteTenantMigrates: a database written before callbacks kept their
// tenant opens with the column added, its rows read with no tenant, and a
// new callback keeps its tenant across a reopen (a queue re-filled from the
// file counts the tenant's share again).
func TestSQLiteTenantMigrates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := sql.Open("sqlite", "file:"+filepath.Join(dir, callbackstore.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.ExecContext(ctx, `CREATE TABLE callbacks (
		ticket TEXT PRIMARY KEY, call TEXT NOT NULL, turn TEXT NOT NULL, number TEXT NOT NULL,
		status TEXT NOT NULL, accepted INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
		operator TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0,
		updated INTEGER NOT NULL, note TEXT NOT NULL DEFAULT '', UNIQUE (call, turn));
		INSERT INTO callbacks (ticket, call, turn, number, status, accepted, updated) VALUES ('cb_old', 'c0', 't', '+15550100', 'pending', 1, 1)`)
	old.Close()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second open finds the column there
		st, err := callbackstore.OpenSQLite(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Get(ctx, "cb_old"); err != nil || got.Tenant != "" {
			t.Fatalf("old row = %+v, %v", got, err)
		}
		c := callbackstore.Callback{Ref: "cb_new", Call: "c1", Turn: "t", Number: "+15550101", Accepted: time.Unix(2, 0), Tenant: "acme"}
		if _, _, err := st.Accept(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Get(ctx, "cb_new"); err != nil || got.Tenant != "acme" {
			t.Fatalf("new row = %+v, %v", got, err)
		}
		st.Close()
	}
}
