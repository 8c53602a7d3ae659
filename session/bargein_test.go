package session

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestBargeInDuringSynthesis: after `interrupted`, not one text,
// audio_start or binary frame of the old generation; the cancelled
// synthesis keeps its lease until the stub's cleanup delay has passed, and
// only then is the next waiting turn (another call's) admitted.
func TestBargeInDuringSynthesis(t *testing.T) {
	const cleanup = 150 * time.Millisecond
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Synthesis = stages.Limits{Slots: 1, Waiting: 4, MaxAge: 5 * time.Second}
		s.FrameCount, s.FrameDelay, s.CleanupDelay = 60, 5*time.Millisecond, cleanup
	})
	a, b := r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "tell me a long story"})
	a.Until(sessiontest.IsType("binary"))
	a.Until(sessiontest.IsType("binary"))

	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "hello"})
	b.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == StageSynthesis && m.Disposition == "queued"
	})

	a.Send(map[string]any{"type": "barge_in"})
	before := a.Until(sessiontest.IsType("interrupted"))
	in := before[len(before)-1]
	if in.Generation != 2 || len(in.Cancelled) != 1 || in.Cancelled[0] != "a1" {
		t.Fatalf("interrupted %+v", in)
	}
	if in.Heard == nil || in.Heard.Turn != "a1" || in.Heard.AudioMS <= 0 {
		t.Fatalf("heard %+v", in.Heard)
	}
	// The lease is still held, for cleanup; b still waits. (The stages
	// are rotated just after `interrupted` is queued, so the lease shows
	// as pending cleanup a moment later.)
	if s := r.stage(StageSynthesis); s.Leased != 1 || s.Queued != 1 {
		t.Fatalf("synthesis right after interrupted: leased %d queued %d", s.Leased, s.Queued)
	}
	sessiontest.WaitFor(t, "the cancelled lease pending cleanup, b still queued", func() bool {
		s := r.stage(StageSynthesis)
		return s.Leased == 1 && s.CleanupPending == 1 && s.Queued == 1
	})
	// b is admitted only after a's synthesis returned.
	b.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == StageSynthesis && m.Disposition == "admitted"
	})
	// That b waited for the cleanup is the state seen above (a's lease
	// pending cleanup while b was queued) and this: never two jobs at once.
	if n := r.Synth.MaxRunning(); n != 1 {
		t.Fatalf("synthesizer ran %d jobs at once with 1 slot", n)
	}

	// Then a speaks again at generation 2; nothing of generation 1 reaches it.
	a.Send(map[string]any{"type": "turn", "id": "a2", "text": "short one"})
	after := a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "a2" })
	sawStart := false
	for _, m := range after {
		switch m.Type {
		case "text", "audio_start":
			if m.Generation != 2 || m.Turn != "a2" {
				t.Fatalf("old generation after interrupted: %+v", m)
			}
			sawStart = sawStart || m.Type == "audio_start"
		case "binary":
			if !sawStart {
				t.Fatalf("binary audio after interrupted before a2's audio_start: %v", sessiontest.Types(after))
			}
		case "turn_end":
			if m.Turn == "a1" && m.Disposition != "cancelled" {
				t.Fatalf("a1 ended %+v", m)
			}
		}
	}
	if got := after[len(after)-1]; got.Disposition != "completed" {
		t.Fatalf("a2 %+v", got)
	}
	var a1End bool
	for _, m := range after {
		a1End = a1End || (m.Type == "turn_end" && m.Turn == "a1")
	}
	if !a1End {
		t.Fatalf("no turn_end for a1: %v", sessiontest.Types(after))
	}
	if r.Engine.m == nil || r.Counter("frontdoor_barge_ins_total") != 1 {
		t.Fatal("barge-in not counted")
	}
}

// TestBargeInQueuedAndPending: a barge-in cancels a turn queued in the
// model stage and one waiting behind it in the call, at once.
func TestBargeInQueuedAndPending(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Model = stages.Limits{Slots: 1, Waiting: 4, MaxAge: 5 * time.Second}
		s.ModelDelay = time.Second
	})
	a, b := r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	b.Send(map[string]any{"type": "turn", "id": "b2", "text": "y"})
	b.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "queued" })
	b.Send(map[string]any{"type": "barge_in"})
	all := b.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "b2" })
	var in sessiontest.Msg
	for _, m := range all {
		if m.Type == "interrupted" {
			in = m
		}
	}
	if len(in.Cancelled) != 2 {
		t.Fatalf("interrupted %+v in %v", in, sessiontest.Types(all))
	}
	if s := r.stage(StageModel); s.Queued != 0 || s.Ledger.CancelledQueued != 1 {
		t.Fatalf("model stage %+v", s)
	}
}

// TestOverdueCleanup: a backend that never confirms its stop keeps its
// lease, reported overdue, until it finally returns. The cleanup timeout
// runs on a manual clock.
func TestOverdueCleanup(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Clock = clock
		c.CleanupTimeout = 30 * time.Millisecond
		s.ModelDelay, s.Hang = time.Hour, true
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	// The model's work must have started: a barge-in between the
	// admission and the start releases the lease at once, with no
	// cleanup to wait for.
	sessiontest.WaitFor(t, "the model running", func() bool { return r.Model.Running() == 1 })
	a.Send(map[string]any{"type": "barge_in"})
	a.Expect("interrupted")
	sessiontest.WaitFor(t, "the cancelled lease pending cleanup", func() bool { return r.stage(StageModel).CleanupPending == 1 })
	if s := r.stage(StageModel); s.CleanupOverdue != 0 {
		t.Fatalf("overdue before the cleanup timeout: %+v", s)
	}
	// The watch arms its timer as the turn's context ends, just after
	// the stage saw the cancel: the clock moves until it fires.
	sessiontest.WaitFor(t, "overdue", func() bool {
		clock.Advance(10 * time.Millisecond)
		return r.stage(StageModel).CleanupOverdue == 1
	})
	s := r.stage(StageModel)
	if s.Leased != 1 || s.CleanupPending != 1 || s.OldestCleanupMS < 30 {
		t.Fatalf("overdue lease not held: %+v", s)
	}
	if r.Counter("frontdoor_stage_cleanup_overdue_total") != 1 {
		t.Fatal("overdue not counted")
	}
	r.Model.Close() // the backend finally returns
	sessiontest.WaitFor(t, "release", func() bool { s := r.stage(StageModel); return s.Leased == 0 && s.CleanupOverdue == 0 })
	m := a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" })
	if end := m[len(m)-1]; end.Disposition != "cancelled" {
		t.Fatalf("turn_end %+v", end)
	}
}

// TestPacedBargeIn: with pacing, reply audio leaves in real time (never
// faster), so a barge-in stops what was not yet played and `heard` reports
// only what was. The pacer runs on a manual clock: frame n of the reply
// is due PaceLead before 20 ms × n, so once the clock has moved 20 ms × k
// exactly the frames due by then have left.
func TestPacedBargeIn(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Clock = clock
		c.Pace = true
		s.FrameCount = 50 // 1 s of audio, produced at once
	})
	lead := r.Engine.cfg.PaceLead
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Expect("audio_start")
	// The whole reply is queued before the clock moves: a frame that
	// reached the writer after its time would restart the pacer's
	// schedule (an underrun) and the frames due would be fewer.
	sessiontest.WaitFor(t, "the reply synthesized", func() bool { return r.Synth.Started() == 1 && r.Synth.Running() == 0 })
	const frame = 20 * time.Millisecond
	steps := readPaced(t, a, clock, lead, 15)
	a.Send(map[string]any{"type": "barge_in"})
	in := a.Expect("interrupted")
	// No frame is due past the 15th until the clock moves again.
	if in.Heard == nil || in.Heard.AudioMS != 300 {
		t.Fatalf("heard %+v after %d steps of %v, want 300 ms", in.Heard, steps, frame)
	}
	if len(in.Cancelled) != 1 || in.Cancelled[0] != "a1" {
		t.Fatalf("interrupted %+v", in)
	}
	if end := a.Expect("turn_end"); end.Disposition != "cancelled" {
		t.Fatalf("turn_end %+v", end)
	}
	// turn_end goes ahead of the audio still queued (the control lane):
	// the writer drops the reply's queued frames as it reaches them.
	clock.Advance(frame)
	sessiontest.WaitFor(t, "the queued reply cut", func() bool {
		return r.Counter("frontdoor_stale_chunks_suppressed_total") > 0
	})
}

// readPaced reads n frames of paced reply audio from a (20 ms each),
// moving clock 20 ms at a time exactly when every frame due by then has
// come: frame k is due lead before 20 ms × k. It returns the steps taken.
func readPaced(t *testing.T, a *sessiontest.Client, clock *stagestest.Clock, lead time.Duration, n int) (steps int) {
	t.Helper()
	const frame = 20 * time.Millisecond
	for frames := 0; frames < n; {
		if due := int((time.Duration(steps)*frame+lead)/frame) + 1; frames == due {
			clock.Advance(frame)
			steps++
			continue
		}
		if m, err := a.Read(); err != nil {
			t.Fatal(err)
		} else if m.Type == "binary" {
			frames++
		}
	}
	return steps
}
