// Package view is what GET /v1/stages reports of an engine: every stage's
// limits, inventory, cleanup, ledger and waiting list, and the calls in
// progress by transport.
package view

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Stage is one stage as /v1/stages reports it.
type Stage struct {
	Name             string          `json:"name"`
	Slots            int             `json:"slots"`
	QueueLimit       int             `json:"queue_limit"`
	MaxWaitMS        int64           `json:"max_wait_ms"`
	CleanupTimeoutMS int64           `json:"cleanup_timeout_ms"`
	Closed           bool            `json:"closed"`
	Queued           int             `json:"queued"`
	Leased           int             `json:"leased"`
	CleanupPending   int             `json:"cleanup_pending"`
	OldestCleanupMS  int64           `json:"oldest_cleanup_ms"`
	CleanupOverdue   int64           `json:"cleanup_overdue"`
	Quarantined      bool            `json:"quarantined"`
	OldestQueuedMS   int64           `json:"oldest_queued_ms"`
	Owners           int             `json:"owners"`
	Ledger           stages.Ledger   `json:"ledger"`
	Waiting          []Waiter        `json:"waiting"`
	Snapshot         stages.Snapshot `json:"snapshot"`
	// Error says why the stage could not be read just now (a fleet store
	// that does not answer): the figures are the last seen.
	Error string `json:"error,omitempty"`
}

// Waiter is one waiting ticket.
type Waiter struct {
	ID       string `json:"id"`
	Owner    string `json:"owner"`
	Position int    `json:"position"`
	AgeMS    int64  `json:"age_ms"`
}

// Stages is the body of GET /v1/stages.
type Stages struct {
	Draining bool `json:"draining"`
	// Calls counts the calls in progress; CallsByTransport splits them by
	// the transport that carries them (session.Capabilities.Name, TransportOther
	// for none), listing only transports with calls in progress.
	Calls            int            `json:"calls"`
	CallsByTransport map[string]int `json:"calls_by_transport"`
	Stages           []Stage        `json:"stages"`
	At               time.Time      `json:"at"`
}

// Stage returns the named stage's view, or false.
func (v Stages) Stage(name string) (Stage, bool) {
	for _, s := range v.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return Stage{}, false
}

// TransportOther is the name the calls of a transport that declared no
// Capabilities.Name are counted under.
const TransportOther = "other"

// TransportName is the name calls of a transport that declared name are
// counted under.
func TransportName(name string) string {
	if name == "" {
		return TransportOther
	}
	return name
}

// Source is one stage as a server keeps it (the engine's admission.Stage):
// its snapshot, the last one seen with an error while it cannot be read,
// its waiting work, and what the server adds to the gate's figures.
type Source interface {
	Name() string
	Snapshot(ctx context.Context) (stages.Snapshot, error)
	Waiting(ctx context.Context) ([]stages.Waiter, error)
	CleanupTimeout() time.Duration
	Overdue() int64
	Quarantined() bool
}

// Read reports src as /v1/stages shows it. Its error is the snapshot's:
// the figures are then the last seen, closed, and Error says why.
func Read(ctx context.Context, src Source) (Stage, error) {
	sn, err := src.Snapshot(ctx)
	v := Stage{
		Name:             src.Name(),
		Slots:            sn.Limits.Slots,
		QueueLimit:       sn.Limits.Waiting,
		MaxWaitMS:        sn.Limits.MaxAge.Milliseconds(),
		CleanupTimeoutMS: src.CleanupTimeout().Milliseconds(),
		Closed:           sn.Closed,
		Queued:           sn.Queued,
		Leased:           sn.Leased,
		CleanupPending:   sn.CleanupPending,
		OldestCleanupMS:  sn.OldestCleanup.Milliseconds(),
		CleanupOverdue:   src.Overdue(),
		Quarantined:      src.Quarantined(),
		OldestQueuedMS:   sn.OldestQueued.Milliseconds(),
		Owners:           sn.Owners,
		Ledger:           sn.Ledger,
		Waiting:          []Waiter{},
		Snapshot:         sn,
	}
	if err != nil {
		v.Error = err.Error()
	}
	waiting, _ := src.Waiting(ctx)
	for _, w := range waiting {
		v.Waiting = append(v.Waiting, Waiter{ID: w.ID, Owner: w.Owner, Position: w.Position, AgeMS: w.Age.Milliseconds()})
	}
	return v, err
}
