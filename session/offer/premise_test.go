package offer

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestPromptPremiseManualClock: a caller queued at the session stage hears
// the queued prompt (5 s of paced audio). When its wait expires (the
// manual clock passes the 1 s maximum), `session` expired is the very next
// message of the call, ahead of the rest of that audio: from then on no
// frame of the queued prompt is written, its audio_end says it was cut at
// what was sent, and the expired prompt follows with its own audio, its
// offer ahead of that audio.
func TestPromptPremiseManualClock(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	wire, after, _ := withOffersPrompt(t, 250) // 5 s
	r := newRig(t, wire, after, func(c *session.Config, s *stub.Settings) {
		c.Clock = clock
		c.Pace = true
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	})
	r.Admitted()
	b := r.Dial()
	q := b.Until(sessiontest.IsType("audio_start"))
	if s := sessiontest.LastOf(q, "session"); s.Disposition != "queued" || sessiontest.LastOf(q, "prompt").Reason != "queued" {
		t.Fatalf("queued: %v", sessiontest.Types(q))
	}
	// Some of the queued prompt is out: the pacer runs on the manual
	// clock too, and lets out the frames due by its time (PaceLead ahead).
	const frame = 20 * time.Millisecond
	lead := 60 * time.Millisecond // session.Config's default PaceLead
	var moved time.Duration
	for n := 0; n < 10; {
		if due := int((moved+lead)/frame) + 1; n == due {
			clock.Advance(frame)
			moved += frame
			continue
		}
		m, err := b.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == "binary" {
			n++
		}
	}
	clock.Advance(time.Second + time.Millisecond - moved) // the wait expires (strictly after its max wait)

	all := b.Until(func(m sessiontest.Msg) bool { return m.Type == "session" })
	if s := all[len(all)-1]; s.Disposition != "expired" {
		t.Fatalf("after expiry: %v", sessiontest.Types(all))
	}
	for _, m := range all[:len(all)-1] {
		if m.Type != "binary" { // frames written before the expiry, none after
			t.Fatalf("before session expired: %v", sessiontest.Types(all))
		}
	}
	// Then, in whatever order the two lanes interleave: the queued prompt's
	// audio_end (cut), the expired prompt and its offer, and the expired
	// prompt's audio; never a frame of the queued prompt, and the offer
	// before the expired prompt's 5 s of audio have played.
	var cut, offer, spoken bool
	var seen []sessiontest.Msg
	for !(cut && offer && spoken) {
		m, err := b.Read()
		if err != nil {
			t.Fatalf("read: %v after %v", err, sessiontest.Types(seen))
		}
		seen = append(seen, m)
		switch m.Type {
		case "binary":
			if !cut {
				t.Fatalf("queued prompt audio after session expired: %v", sessiontest.Types(seen))
			}
			spoken = true
		case "audio_end":
			if cut {
				t.Fatalf("the expired prompt's audio played before its offer: %v", sessiontest.Types(seen))
			}
			if m.Turn != "prompt" || !m.Cut || m.AudioMS < 100 || m.AudioMS >= 5000 {
				t.Fatalf("the queued prompt's audio_end %+v, want cut after 100 ms and before 5 s", m)
			}
			cut = true
		case "prompt":
			if m.Reason != "expired" || m.Stage != session.StageSession {
				t.Fatalf("prompt %+v", m)
			}
		case "offer":
			if sessiontest.LastOf(seen, "prompt").Type == "" {
				t.Fatalf("offer before its prompt: %v", sessiontest.Types(seen))
			}
			offer = true
		}
	}
}
