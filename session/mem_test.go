package session_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/memline"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// memEngine is an engine on stub backends, with the rig's limits, that
// calls reach through memline (session.MemEngine, owner_test.go).
var memEngine = session.MemEngine

// call starts a call on a new line and waits for its admission.
func call(t *testing.T, e *session.Engine) *memline.Line {
	t.Helper()
	l := memline.New()
	if !e.Start(context.Background(), l, session.Capabilities{Name: "memory"}, nil) {
		t.Fatal("the engine refused to start a call")
	}
	if m := l.Until(t, sessiontest.IsType("session")); m[len(m)-1].Disposition != "admitted" {
		t.Fatalf("session %+v", m[len(m)-1])
	}
	t.Cleanup(func() { l.Close(wire.CloseNormal, "") })
	return l
}

func stageOf(t *testing.T, e *session.Engine, name string) view.Stage {
	t.Helper()
	v, ok := e.Stages().Stage(name)
	if !ok {
		t.Fatalf("no stage %s", name)
	}
	return v
}

// TestMemBargeInHoldsLease is TestBargeInDuringSynthesis in memory and in
// fake time: after `interrupted`, nothing of the old generation; the
// cancelled synthesis holds its lease exactly until the backend's cleanup
// has run, and only then is another call's waiting turn admitted. With no
// socket and no real wait, every step is exact: synctest.Wait returns once
// every goroutine of the engine is blocked, and the cleanup delay passes
// in fake time.
func TestMemBargeInHoldsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cleanup = 150 * time.Millisecond
		e, synth := memEngine(t, func(c *session.Config, s *stub.Settings) {
			c.Synthesis = stages.Limits{Slots: 1, Waiting: 4, MaxAge: 5 * time.Second}
			s.FrameCount, s.FrameDelay, s.CleanupDelay = 60, 5*time.Millisecond, cleanup
		})
		a, b := call(t, e), call(t, e)
		_ = a.Say(t, `{"type":"turn","id":"a1","text":"tell me a long story"}`)
		a.Until(t, sessiontest.IsType("binary"))
		_ = b.Say(t, `{"type":"turn","id":"b1","text":"hello"}`)
		b.Until(t, func(m sessiontest.Msg) bool {
			return m.Type == "disposition" && m.Stage == session.StageSynthesis && m.Disposition == "queued"
		})

		_ = a.Say(t, `{"type":"barge_in"}`)
		in := a.Until(t, sessiontest.IsType("interrupted"))
		if m := in[len(in)-1]; m.Generation != 2 || len(m.Cancelled) != 1 || m.Cancelled[0] != "a1" {
			t.Fatalf("interrupted %+v", m)
		}
		synctest.Wait()
		if s := stageOf(t, e, session.StageSynthesis); s.Leased != 1 || s.CleanupPending != 1 || s.Queued != 1 {
			t.Fatalf("after interrupted: leased %d, cleanup pending %d, queued %d; want 1, 1, 1", s.Leased, s.CleanupPending, s.Queued)
		}
		time.Sleep(cleanup - time.Millisecond)
		synctest.Wait()
		if s := stageOf(t, e, session.StageSynthesis); s.CleanupPending != 1 || s.Queued != 1 {
			t.Fatalf("1 ms before the cleanup ran: cleanup pending %d, queued %d; want 1, 1", s.CleanupPending, s.Queued)
		}
		b.Until(t, func(m sessiontest.Msg) bool {
			return m.Type == "disposition" && m.Stage == session.StageSynthesis && m.Disposition == "admitted"
		})
		if n := synth.MaxRunning(); n != 1 {
			t.Fatalf("synthesizer ran %d jobs at once with 1 slot", n)
		}

		_ = a.Say(t, `{"type":"turn","id":"a2","text":"short one"}`)
		after := a.Until(t, func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "a2" })
		started := false
		for _, m := range after {
			switch m.Type {
			case "text", "audio_start":
				if m.Generation != 2 {
					t.Fatalf("old generation after interrupted: %+v", m)
				}
				started = started || m.Type == "audio_start"
			case "binary":
				if !started {
					t.Fatalf("audio after interrupted before a2's audio_start: %v", sessiontest.Types(after))
				}
			}
		}
	})
}

// TestMemSessionWaitExpires: a call waiting for a session slot is told it
// expired when, and only when, the stage's maximum wait has passed, and
// its line is closed with 1013 (try again later); the calls admitted before
// it are untouched. In fake time the bound is exact.
func TestMemSessionWaitExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := memEngine(t, func(c *session.Config, _ *stub.Settings) {
			c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
		})
		call(t, e)
		l := memline.New()
		t.Cleanup(func() { l.Close(wire.CloseNormal, "") })
		if !e.Start(context.Background(), l, session.Capabilities{Name: "memory"}, nil) {
			t.Fatal("the engine refused to start a call")
		}
		if m := l.Until(t, sessiontest.IsType("session")); m[len(m)-1].Disposition != "queued" {
			t.Fatalf("second call: %+v, want queued", m[len(m)-1])
		}
		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		if _, _, closed := l.Closed(); closed {
			t.Fatal("closed before its maximum wait had passed")
		}
		m := l.Until(t, func(m sessiontest.Msg) bool { return m.Type == "session" && m.Disposition != "queued" })
		if got := m[len(m)-1].Disposition; got != "expired" {
			t.Fatalf("after the maximum wait: %q, want expired", got)
		}
		synctest.Wait()
		if status, _, closed := l.Closed(); !closed || status != wire.CloseTryLater {
			t.Fatalf("closed %v with %d, want 1013", closed, status)
		}
		if s := stageOf(t, e, session.StageSession); s.Leased != 1 || s.Queued != 0 {
			t.Fatalf("session stage: leased %d queued %d, want 1 and 0", s.Leased, s.Queued)
		}
	})
}
