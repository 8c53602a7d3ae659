package session

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/metrics"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestQuarantine: a model backend whose cleanups go overdue twice in a row
// is quarantined: new turns are refused closed with the closed prompt,
// /v1/stages and /readyz say so, the overdue leases stay held; once the
// backend returns, every overdue cleanup is confirmed and the stage reopens.
func TestQuarantine(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.CleanupTimeout = 30 * time.Millisecond
		c.QuarantineAfter = 2
		c.Model.Slots = 4
		s.ModelDelay, s.Hang = time.Hour, true
	})
	a := r.Admitted()
	for i, id := range []string{"a1", "a2"} {
		a.Send(map[string]any{"type": "turn", "id": id, "text": "x"})
		a.Until(func(m sessiontest.Msg) bool {
			return m.Type == "disposition" && m.Disposition == "admitted" && m.Turn == id
		})
		// Barge in only once the backend is running: work cancelled between
		// admission and its start is released at once, never overdue.
		sessiontest.WaitFor(t, "model running", func() bool { return r.Model.Running() == i+1 })
		a.Send(map[string]any{"type": "barge_in"})
		a.Expect("interrupted")
		sessiontest.WaitFor(t, "overdue", func() bool { return r.stage(StageModel).CleanupOverdue == int64(i+1) })
		if i == 0 && r.stage(StageModel).Quarantined {
			t.Fatal("quarantined after one overdue cleanup")
		}
	}
	sessiontest.WaitFor(t, "quarantine", func() bool { return r.stage(StageModel).Quarantined })
	s := r.stage(StageModel)
	if !s.Closed || s.Leased != 2 || s.CleanupOverdue != 2 {
		t.Fatalf("quarantined stage %+v: want closed with both overdue leases held", s)
	}
	if code, body := get(t, r.HTTP.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "quarantined: model") {
		t.Fatalf("/readyz %d %q during quarantine", code, body)
	}
	if r.Counter("frontdoor_stage_quarantined") != 1 {
		t.Fatal("quarantine gauge not 1")
	}

	a.Send(map[string]any{"type": "turn", "id": "a3", "text": "x"})
	got := a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "a3" })
	var refused, prompt bool
	for _, m := range got {
		refused = refused || (m.Type == "disposition" && m.Turn == "a3" && m.Stage == StageModel && m.Disposition == "closed")
		prompt = prompt || (m.Type == "prompt" && m.Reason == "closed" && m.Text != "")
	}
	if !refused || !prompt || got[len(got)-1].Disposition != "closed" {
		t.Fatalf("turn during quarantine: %v, want model closed with a prompt", sessiontest.Types(got))
	}
	if s := r.stage(StageModel); s.Leased != 2 {
		t.Fatalf("leases %d during quarantine, want the 2 overdue held", s.Leased)
	}

	r.Model.Close() // the backend returns at last: every overdue cleanup confirmed
	sessiontest.WaitFor(t, "reopen", func() bool { s := r.stage(StageModel); return !s.Quarantined && s.Leased == 0 })
	if s := r.stage(StageModel); s.Closed || s.CleanupOverdue != 0 {
		t.Fatalf("after the cleanups: %+v", s)
	}
	if code, _ := get(t, r.HTTP.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d after the quarantine", code)
	}
	a.Send(map[string]any{"type": "turn", "id": "a4", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Turn == "a4" && m.Stage == StageModel && m.Disposition == "admitted"
	})
}

// TestQuarantineStreak: only late cleanups in a row count; one on time
// ends the run; with the policy off nothing is quarantined.
func TestQuarantineStreak(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after int
		steps string // l: late, o: on time, c: an overdue one confirmed
		want  bool
	}{
		{"off", 0, "lllll", false},
		{"two in a row", 2, "ll", true},
		{"broken run", 2, "lol", false},
		{"three after a break", 3, "llolll", true},
		{"reopens when none overdue", 2, "llcc", false},
		{"stays while one is overdue", 2, "llc", true},
		{"quarantined again", 2, "llccll", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			st := &stage{name: StageModel, log: slog.New(slog.NewTextHandler(io.Discard, nil)), m: metrics.New(reg), timeout: time.Second, clock: stages.SystemClock}
			st.q.after = tc.after
			for _, c := range tc.steps {
				switch c {
				case 'l':
					st.overdue.Add(1)
					st.cleanupLate()
				case 'o':
					st.cleanupOnTime()
				case 'c':
					st.overdue.Add(-1)
					st.cleanupConfirmed()
				}
			}
			if got := st.quarantined(); got != tc.want {
				t.Fatalf("quarantined %v, want %v", got, tc.want)
			}
		})
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
