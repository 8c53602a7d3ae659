package session

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
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
	a, b := r.admitted(), r.admitted()
	a.send(map[string]any{"type": "turn", "id": "a1", "text": "tell me a long story"})
	a.until(isType("binary"))
	a.until(isType("binary"))

	b.send(map[string]any{"type": "turn", "id": "b1", "text": "hello"})
	b.until(func(m msg) bool {
		return m.Type == "disposition" && m.Stage == StageSynthesis && m.Disposition == "queued"
	})

	a.send(map[string]any{"type": "barge_in"})
	before := a.until(isType("interrupted"))
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
	waitFor(t, "the cancelled lease pending cleanup, b still queued", func() bool {
		s := r.stage(StageSynthesis)
		return s.Leased == 1 && s.CleanupPending == 1 && s.Queued == 1
	})
	// b is admitted only after a's synthesis returned.
	b.until(func(m msg) bool {
		return m.Type == "disposition" && m.Stage == StageSynthesis && m.Disposition == "admitted"
	})
	// That b waited for the cleanup is the state seen above (a's lease
	// pending cleanup while b was queued) and this: never two jobs at once.
	if n := r.synth.MaxRunning(); n != 1 {
		t.Fatalf("synthesizer ran %d jobs at once with 1 slot", n)
	}

	// Then a speaks again at generation 2; nothing of generation 1 reaches it.
	a.send(map[string]any{"type": "turn", "id": "a2", "text": "short one"})
	after := a.until(func(m msg) bool { return m.Type == "turn_end" && m.Turn == "a2" })
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
				t.Fatalf("binary audio after interrupted before a2's audio_start: %v", types(after))
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
		t.Fatalf("no turn_end for a1: %v", types(after))
	}
	if r.srv.m == nil || counter(t, r, "frontdoor_barge_ins_total") != 1 {
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
	a, b := r.admitted(), r.admitted()
	a.send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.until(func(m msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	b.send(map[string]any{"type": "turn", "id": "b2", "text": "y"})
	b.until(func(m msg) bool { return m.Type == "disposition" && m.Disposition == "queued" })
	b.send(map[string]any{"type": "barge_in"})
	all := b.until(func(m msg) bool { return m.Type == "turn_end" && m.Turn == "b2" })
	var in msg
	for _, m := range all {
		if m.Type == "interrupted" {
			in = m
		}
	}
	if len(in.Cancelled) != 2 {
		t.Fatalf("interrupted %+v in %v", in, types(all))
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
	a := r.admitted()
	a.send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.until(func(m msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	// The model's work must have started: a barge-in between the
	// admission and the start releases the lease at once, with no
	// cleanup to wait for.
	waitFor(t, "the model running", func() bool { return r.model.Running() == 1 })
	a.send(map[string]any{"type": "barge_in"})
	a.expect("interrupted")
	waitFor(t, "the cancelled lease pending cleanup", func() bool { return r.stage(StageModel).CleanupPending == 1 })
	if s := r.stage(StageModel); s.CleanupOverdue != 0 {
		t.Fatalf("overdue before the cleanup timeout: %+v", s)
	}
	// The watch arms its timer as the turn's context ends, just after
	// the stage saw the cancel: the clock moves until it fires.
	waitFor(t, "overdue", func() bool {
		clock.Advance(10 * time.Millisecond)
		return r.stage(StageModel).CleanupOverdue == 1
	})
	s := r.stage(StageModel)
	if s.Leased != 1 || s.CleanupPending != 1 || s.OldestCleanupMS < 30 {
		t.Fatalf("overdue lease not held: %+v", s)
	}
	if counter(t, r, "frontdoor_stage_cleanup_overdue_total") != 1 {
		t.Fatal("overdue not counted")
	}
	r.model.Close() // the backend finally returns
	waitFor(t, "release", func() bool { s := r.stage(StageModel); return s.Leased == 0 && s.CleanupOverdue == 0 })
	m := a.until(func(m msg) bool { return m.Type == "turn_end" })
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
	lead := r.srv.cfg.PaceLead
	a := r.admitted()
	a.send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.expect("audio_start")
	// The whole reply is queued before the clock moves: a frame that
	// reached the writer after its time would restart the pacer's
	// schedule (an underrun) and the frames due would be fewer.
	waitFor(t, "the reply synthesized", func() bool { return r.synth.Started() == 1 && r.synth.Running() == 0 })
	const frame = 20 * time.Millisecond
	var frames, steps int
	for frames < 15 {
		due := int((time.Duration(steps)*frame+lead)/frame) + 1 // frames due by now
		if frames == due {
			clock.Advance(frame)
			steps++
			continue
		}
		if m, err := a.read(); err != nil {
			t.Fatal(err)
		} else if m.Type == "binary" {
			frames++
		}
	}
	a.send(map[string]any{"type": "barge_in"})
	in := a.expect("interrupted")
	// No frame is due past the 15th until the clock moves again.
	if in.Heard == nil || in.Heard.AudioMS != 300 {
		t.Fatalf("heard %+v after %d steps of %v, want 300 ms", in.Heard, steps, frame)
	}
	if len(in.Cancelled) != 1 || in.Cancelled[0] != "a1" {
		t.Fatalf("interrupted %+v", in)
	}
	if end := a.expect("turn_end"); end.Disposition != "cancelled" {
		t.Fatalf("turn_end %+v", end)
	}
	// turn_end goes ahead of the audio still queued (the control lane):
	// the writer drops the reply's queued frames as it reaches them.
	clock.Advance(frame)
	waitFor(t, "the queued reply cut", func() bool {
		return counter(t, r, "frontdoor_stale_chunks_suppressed_total") > 0
	})
}
