package session

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

func TestNormalTurn(t *testing.T) {
	r := newRig(t)
	c := r.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "good morning"})
	all := c.Until(sessiontest.IsType("turn_end"))
	end := all[len(all)-1]
	if end.Disposition != "completed" || end.Turn != "t1" {
		t.Fatalf("turn_end %+v", end)
	}
	var text strings.Builder
	var frames, bytes int
	for _, m := range all {
		switch m.Type {
		case "text":
			text.WriteString(m.Delta)
		case "binary":
			frames++
			bytes += m.Bytes
		}
	}
	if want := strings.Join(r.Model.Deltas("good morning"), ""); text.String() != want {
		t.Fatalf("text %q, want %q", text.String(), want)
	}
	if frames != 5 || bytes != 5*640 {
		t.Fatalf("%d frames %d bytes", frames, bytes)
	}
	// A turn streams: synthesis of the first sentence starts while the
	// model still writes, and dispositions do not wait behind the text
	// and audio in the call's writer, so the two stages' dispositions
	// interleave by timing. What is fixed is each stage's own order,
	// audio after synthesis is admitted, and the turn's end after all.
	got := sessiontest.Types(all)
	for _, stage := range []string{"model", "synthesis"} {
		var seen []string
		for _, s := range got {
			if rest, ok := strings.CutPrefix(s, "disposition:"+stage+":"); ok {
				seen = append(seen, rest)
			}
		}
		if !slices.Equal(seen, []string{"queued", "admitted", "completed"}) {
			t.Fatalf("%s dispositions %v in %v", stage, seen, got)
		}
	}
	at := func(s string) int { return slices.Index(got, s) }
	if at("audio_start") < at("disposition:synthesis:admitted") ||
		at("audio_end") > at("turn_end:completed") ||
		at("turn_end:completed") != len(got)-1 {
		t.Fatalf("sequence %v", got)
	}
	c.Send(map[string]any{"type": "hangup"})
	if _, err := c.Read(); err == nil {
		t.Fatal("connection still open after hangup")
	}
	sessiontest.WaitFor(t, "call end", func() bool { return r.Engine.Calls() == 0 })
	for _, name := range []string{StageSession, StageModel, StageSynthesis} {
		s := r.stage(name)
		if s.Leased != 0 || s.Queued != 0 || s.Owners != 0 {
			t.Errorf("%s after hangup: %+v", name, s)
		}
		if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
			t.Error(err)
		}
	}
}

// TestTurnsQueueInOrder: a turn sent while another runs waits behind it;
// each gets its own turn_end, in order.
func TestTurnsQueueInOrder(t *testing.T) {
	r := newRig(t)
	c := r.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "one"})
	c.Send(map[string]any{"type": "turn", "id": "t2", "text": "two"})
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "again"})
	all := c.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "t2" })
	var ends []string
	started := map[string]bool{}
	for _, m := range all {
		switch m.Type {
		case "turn_end":
			ends = append(ends, m.Turn+":"+m.Disposition)
		case "text":
			started[m.Turn] = true
			if m.Turn == "t2" && len(ends) == 0 {
				t.Fatalf("t2 spoke before t1 ended: %v", sessiontest.Types(all))
			}
		case "error":
			if m.Code != wire.CodeDuplicate {
				t.Fatalf("error %+v", m)
			}
		}
	}
	if !slices.Equal(ends, []string{"t1:completed", "t2:completed"}) {
		t.Fatalf("turn ends %v", ends)
	}
}

func TestTooManyTurns(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.MaxTurnsInFlight = 2
		s.ModelDelay = 200 * time.Millisecond
	})
	c := r.Admitted()
	for _, id := range []string{"a", "b", "c"} {
		c.Send(map[string]any{"type": "turn", "id": id, "text": "x"})
	}
	if m := c.Expect("error"); m.Code != wire.CodeTooManyTurns {
		t.Fatalf("%+v", m)
	}
}

// TestBackendFailure: a failing backend ends the turn as failed, typed,
// with a prompt, and the lease is released.
func TestBackendFailure(t *testing.T) {
	var mu sync.Mutex
	var seen []string // OnBackend's calls, "stage error-kind"
	r := newRig(t, func(c *Config, s *stub.Settings) {
		s.FailRate = 1
		c.OnBackend = func(stage string, err error) {
			mu.Lock()
			seen = append(seen, stage+" "+string(backend.KindOf(err)))
			mu.Unlock()
		}
	})
	c := r.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	all := c.Until(sessiontest.IsType("turn_end"))
	d, p, end := sessiontest.LastOf(all, "disposition"), sessiontest.LastOf(all, "prompt"), sessiontest.LastOf(all, "turn_end")
	if d.Disposition != "failed" || d.Error != "unavailable" || p.Reason != wire.TurnFailed ||
		end.Disposition != wire.TurnFailed || end.Stage != StageModel || end.Error != "unavailable" {
		t.Fatalf("%v %+v %+v %+v", sessiontest.Types(all), d, p, end)
	}
	// The backend had started: the prompt says it failed while working.
	if want := prompt.Of(prompt.Outcome{Stage: StageModel, Reason: wire.TurnFailed, Started: true}, nil).Text; p.Text != want {
		t.Fatalf("prompt %q, want %q", p.Text, want)
	}
	if s := r.stage(StageModel); s.Leased != 0 {
		t.Fatalf("lease left %+v", s)
	}
	// A failure everywhere: the stage's ledger counts it failed, never
	// completed, and still balances; /metrics says the same.
	s := r.stage(StageModel)
	if l := s.Ledger; l.Failed != 1 || l.Completed != 0 {
		t.Fatalf("model ledger %+v: want failed 1, completed 0", l)
	}
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, r.HTTP.URL+"/metrics")
	for _, line := range []string{
		`frontdoor_stage_dispositions_total{disposition="failed",stage="model"} 1`,
		`frontdoor_stage_dispositions_total{disposition="completed",stage="model"} 0`,
		`frontdoor_turns_total{disposition="failed"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	// The backend's failure was reported, for /readyz (Config.OnBackend).
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "model unavailable" {
		t.Errorf("OnBackend saw %q, want the model's failure", seen)
	}
}
