package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The server's GET /v1/stages, as far as the load generator reads it.
type (
	stagesView struct {
		Calls  int         `json:"calls"`
		Stages []stageView `json:"stages"`
	}
	stageView struct {
		Name           string `json:"name"`
		Slots          int    `json:"slots"`
		QueueLimit     int    `json:"queue_limit"`
		MaxWaitMS      int64  `json:"max_wait_ms"`
		Queued         int    `json:"queued"`
		Leased         int    `json:"leased"`
		CleanupPending int    `json:"cleanup_pending"`
		Ledger         Ledger `json:"ledger"`
	}
)

// Ledger is a server stage's conservation ledger (GET /v1/stages).
type Ledger struct {
	Offered           uint64  `json:"offered"`
	Refused           Refused `json:"refused"`
	Queued            uint64  `json:"queued"`
	Admitted          uint64  `json:"admitted"`
	Expired           uint64  `json:"expired"`
	CancelledQueued   uint64  `json:"cancelled_queued"`
	CancelledActive   uint64  `json:"cancelled_active"`
	Completed         uint64  `json:"completed"`
	Failed            uint64  `json:"failed,omitempty"` // released after the backend failed
	ReleasedCancelled uint64  `json:"released_cancelled"`
}

// Refused counts offers refused before retention, by disposition.
type Refused struct {
	Stale      uint64 `json:"stale"`
	OutOfOrder uint64 `json:"out_of_order"`
	Expired    uint64 `json:"expired"`
	Closed     uint64 `json:"closed"`
	Overloaded uint64 `json:"overloaded"`
	// Unknown are refusals whose kind the callers could not tell (the
	// Twilio wire does not say); the server's own ledger never has any.
	Unknown uint64 `json:"unknown,omitempty"`
}

// Total is the number of refused offers.
func (r Refused) Total() uint64 {
	return r.Stale + r.OutOfOrder + r.Expired + r.Closed + r.Overloaded + r.Unknown
}

// Terminal is the number of identities in a terminal state.
func (l Ledger) Terminal() uint64 {
	return l.Expired + l.CancelledQueued + l.Completed + l.Failed + l.ReleasedCancelled
}

func (l Ledger) sub(o Ledger) Ledger {
	return Ledger{Offered: l.Offered - o.Offered,
		Refused: Refused{Stale: l.Refused.Stale - o.Refused.Stale, OutOfOrder: l.Refused.OutOfOrder - o.Refused.OutOfOrder,
			Expired: l.Refused.Expired - o.Refused.Expired, Closed: l.Refused.Closed - o.Refused.Closed,
			Overloaded: l.Refused.Overloaded - o.Refused.Overloaded, Unknown: l.Refused.Unknown - o.Refused.Unknown},
		Queued: l.Queued - o.Queued, Admitted: l.Admitted - o.Admitted, Expired: l.Expired - o.Expired,
		CancelledQueued: l.CancelledQueued - o.CancelledQueued, CancelledActive: l.CancelledActive - o.CancelledActive,
		Completed: l.Completed - o.Completed, Failed: l.Failed - o.Failed, ReleasedCancelled: l.ReleasedCancelled - o.ReleasedCancelled}
}

type server struct {
	base string
	hc   *http.Client
}

func (s *server) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, nil
}

func (s *server) stages(ctx context.Context) (*stagesView, error) {
	b, err := s.get(ctx, "/v1/stages")
	if err != nil {
		return nil, err
	}
	var v stagesView
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("/v1/stages: %w", err)
	}
	return &v, nil
}

// settle reads /v1/stages until no work is queued or leased (cancelled
// work may still be cleaning up after the callers left), or wait passes.
func (s *server) settle(ctx context.Context, wait time.Duration) (*stagesView, error) {
	deadline := time.Now().Add(wait)
	for {
		v, err := s.stages(ctx)
		if err != nil {
			return nil, err
		}
		busy := v.Calls > 0
		for _, st := range v.Stages {
			busy = busy || st.Queued > 0 || st.Leased > 0
		}
		if !busy || time.Now().After(deadline) || ctx.Err() != nil {
			return v, nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// scrape is what the load generator reads of GET /metrics (Prometheus text).
type scrape struct {
	barge  map[float64]float64 // barge-in histogram: upper bound -> cumulative count
	cpu    float64             // process_cpu_seconds_total
	hasCPU bool
}

// metrics scrapes the barge-in histogram's buckets and the process's CPU
// counter from GET /metrics.
func (s *server) metrics(ctx context.Context) (scrape, error) {
	out := scrape{barge: map[float64]float64{}}
	b, err := s.get(ctx, "/metrics")
	if err != nil {
		return out, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const name = "frontdoor_barge_in_last_old_write_seconds_bucket{le=\""
	const cpu = "process_cpu_seconds_total "
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, cpu) {
			if v, err := strconv.ParseFloat(strings.TrimSpace(line[len(cpu):]), 64); err == nil {
				out.cpu, out.hasCPU = v, true
			}
			continue
		}
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		q := strings.IndexByte(rest, '"')
		sp := strings.LastIndexByte(rest, ' ')
		if q < 0 || sp < 0 {
			continue
		}
		le, err1 := strconv.ParseFloat(rest[:q], 64)
		if rest[:q] == "+Inf" {
			le, err1 = math.Inf(1), nil
		}
		n, err2 := strconv.ParseFloat(rest[sp+1:], 64)
		if err1 == nil && err2 == nil {
			out.barge[le] = n
		}
	}
	return out, nil
}

// BargeInMetric is the server's time from a barge-in received to the last
// write of an older generation, over the run (a histogram: quantiles are
// bucket upper bounds).
type BargeInMetric struct {
	Count   int     `json:"count"`
	P50Max  float64 `json:"p50_le_ms"`
	P99Max  float64 `json:"p99_le_ms"`
	Missing bool    `json:"missing,omitempty"`
	// Buckets are the run's cumulative counts by upper bound (ms; -1 for
	// +Inf), so that the whole distribution is in the report.
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	LE    float64 `json:"le_ms"`
	Count int     `json:"count"`
}

func bargeMetric(before, after map[float64]float64) BargeInMetric {
	if len(after) == 0 {
		return BargeInMetric{Missing: true}
	}
	les := make([]float64, 0, len(after))
	for le := range after {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	m := BargeInMetric{Count: int(total)}
	q := func(p float64) float64 {
		for _, le := range les {
			if after[le]-before[le] >= p*total {
				if math.IsInf(le, 1) {
					return -1 // above every bucket
				}
				return le * 1000
			}
		}
		return -1
	}
	if total > 0 {
		m.P50Max, m.P99Max = q(0.5), q(0.99)
		for _, le := range les {
			b := Bucket{LE: le * 1000, Count: int(after[le] - before[le])}
			if math.IsInf(le, 1) {
				b.LE = -1
			}
			m.Buckets = append(m.Buckets, b)
		}
	}
	return m
}
