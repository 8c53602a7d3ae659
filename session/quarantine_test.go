package session

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
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
