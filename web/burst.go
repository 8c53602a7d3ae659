package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Burst asks for synthetic callers: Callers calls started at Rate per
// second, each saying Turns turns.
type Burst struct {
	Callers int     `json:"callers"`
	Rate    float64 `json:"rate"`
	Turns   int     `json:"turns"`
}

// Burster starts synthetic callers against the server's own address
// (frontdoor serve wires the load generator, package cmd/frontdoor/load,
// so that the page imports no client). Burst
// runs the callers and returns once all of them have ended or ctx has. It
// may call progress as it goes; the latest progress and the final report
// (anything that encodes as JSON) are shown on the page.
type Burster interface {
	Burst(ctx context.Context, b Burst, progress func(any)) (report any, err error)
}

// BurstFunc adapts a function to Burster.
type BurstFunc func(ctx context.Context, b Burst, progress func(any)) (any, error)

// Burst implements Burster.
func (f BurstFunc) Burst(ctx context.Context, b Burst, progress func(any)) (any, error) {
	return f(ctx, b, progress)
}

// BurstStatus is the body of GET /v1/burst and of a started POST.
type BurstStatus struct {
	ID       int        `json:"id"` // 0: no burst yet
	Running  bool       `json:"running"`
	Burst    Burst      `json:"burst"`
	Started  time.Time  `json:"started,omitzero"`
	Ended    *time.Time `json:"ended,omitempty"`
	Progress any        `json:"progress,omitempty"` // the Burster's latest
	Report   any        `json:"report,omitempty"`
	Error    string     `json:"error,omitempty"`
	Stopped  bool       `json:"stopped,omitempty"` // ended by DELETE or Close
	Enabled  bool       `json:"enabled"`           // a Burster is configured
	Limits   Burst      `json:"limits"`            // the largest burst accepted
	Duration string     `json:"max_duration"`
}

// bursts runs at most one burst at a time. Its goroutine is owned by the
// Page: Close cancels it and waits.
type bursts struct {
	opts Options

	mu     sync.Mutex
	st     BurstStatus
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

func newBursts(o Options) *bursts {
	return &bursts{opts: o}
}

func (b *bursts) status() BurstStatus {
	s := b.st
	s.Enabled = b.opts.Burster != nil
	s.Limits = Burst{Callers: b.opts.MaxCallers, Rate: b.opts.MaxRate, Turns: b.opts.MaxTurns}
	s.Duration = b.opts.MaxDuration.String()
	return s
}

func (b *bursts) get(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	s := b.status()
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, s)
}

// errBadBurst is a burst request outside the limits.
var errBadBurst = errors.New("bad burst")

func (b *bursts) validate(req *Burst) error {
	if req.Turns == 0 {
		req.Turns = 1
	}
	switch {
	case req.Callers < 1 || req.Callers > b.opts.MaxCallers:
		return fmt.Errorf("%w: callers must be in [1, %d]", errBadBurst, b.opts.MaxCallers)
	case !(req.Rate > 0) || req.Rate > b.opts.MaxRate:
		return fmt.Errorf("%w: rate must be in (0, %g] callers per second", errBadBurst, b.opts.MaxRate)
	case req.Turns < 1 || req.Turns > b.opts.MaxTurns:
		return fmt.Errorf("%w: turns must be in [1, %d]", errBadBurst, b.opts.MaxTurns)
	}
	return nil
}

func (b *bursts) post(w http.ResponseWriter, r *http.Request) {
	var req Burst
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", err.Error())
		return
	}
	if err := b.validate(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_field", err.Error())
		return
	}
	if b.opts.Burster == nil {
		writeError(w, http.StatusNotImplemented, "no_burster", "this server has no load generator configured")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		writeError(w, http.StatusServiceUnavailable, "closed", "the page is shutting down")
		return
	case b.st.Running:
		writeError(w, http.StatusConflict, "running", "a burst is already running; stop it first")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.MaxDuration)
	b.cancel = cancel
	b.st = BurstStatus{ID: b.st.ID + 1, Running: true, Burst: req, Started: b.opts.Clock.Now()}
	id := b.st.ID
	b.wg.Add(1)
	go b.run(ctx, cancel, id, req)
	b.opts.Logger.Info("burst started", "id", id, "callers", req.Callers, "rate", req.Rate, "turns", req.Turns)
	writeJSON(w, http.StatusAccepted, b.status())
}

func (b *bursts) run(ctx context.Context, cancel context.CancelFunc, id int, req Burst) {
	defer b.wg.Done()
	defer cancel()
	progress := func(p any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.st.ID == id {
			b.st.Progress = p
		}
	}
	report, err := b.opts.Burster.Burst(ctx, req, progress)
	now := b.opts.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st.ID != id {
		return
	}
	b.st.Running, b.st.Ended, b.st.Report = false, &now, report
	if err != nil {
		b.st.Error = err.Error()
	}
	b.cancel = nil
	b.opts.Logger.Info("burst ended", "id", id, "err", err)
}

func (b *bursts) stop(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	if b.st.Running && b.cancel != nil {
		b.st.Stopped = true
		b.cancel()
	}
	s := b.status()
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, s)
}

func (b *bursts) close() {
	b.mu.Lock()
	b.closed = true
	if b.cancel != nil {
		b.st.Stopped = true
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"type": "error", "code": code, "message": msg})
}
