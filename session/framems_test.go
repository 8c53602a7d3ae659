package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// frameHello is a hello declaring enc at rate with frames of frameMS (a
// field left out when zero).
func frameHello(enc string, rate, frameMS int) map[string]any {
	audio := map[string]any{}
	if enc != "" {
		audio["encoding"] = enc
	}
	if rate != 0 {
		audio["rate"] = rate
	}
	if frameMS != 0 {
		audio["frame_ms"] = frameMS
	}
	return map[string]any{"type": "hello", "audio": audio}
}

// binaries lists the byte lengths of the binary frames in ms.
func binaries(ms []sessiontest.Msg) []int {
	var n []int
	for _, m := range ms {
		if m.Type == "binary" {
			n = append(n, m.Bytes)
		}
	}
	return n
}

// wantFrames is the byte lengths of total of audio in frames of frameMS
// (0: 20) in bytesPer bytes a sample at rate: full frames and a shorter
// last one.
func wantFrames(total time.Duration, frameMS, rate, bytesPer int) []int {
	d := time.Duration(max(frameMS, 20)) * time.Millisecond
	size := func(d time.Duration) int { return int(int64(rate)*int64(d)/int64(time.Second)) * bytesPer }
	var n []int
	for ; total > 0; total -= d {
		n = append(n, size(min(d, total)))
	}
	return n
}

// TestNativeFrameMS: a caller that declares hello.audio.frame_ms gets its
// reply in binary frames that long, in its encoding and at its rate; the
// last frame carries the rest (the stub's 140 ms reply is not a multiple
// of 60 ms), and audio_end says the whole reply. Without frame_ms, or with
// 0 or 20, frames are 20 ms as before.
func TestNativeFrameMS(t *testing.T) {
	const reply = 140 * time.Millisecond // 7 stub frames of 20 ms at 16 kHz
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 8, Waiting: 4, MaxAge: 5 * time.Second}
		s.FrameCount = 7
	})
	for _, tc := range []struct {
		hello   map[string]any // nil: none
		enc     string
		frameMS int
		bytes   int // per sample
	}{
		{nil, "pcm16", 0, 2},
		{frameHello("pcm16", 16000, 0), "pcm16", 0, 2},
		{frameHello("pcm16", 16000, 20), "pcm16", 20, 2},
		{frameHello("pcm16", 16000, 60), "pcm16", 60, 2},
		{frameHello("", 0, 40), "pcm16", 40, 2}, // the synthesizer's rate, as without a hello
		{frameHello("mulaw", 16000, 120), "mulaw", 120, 1},
		{frameHello("alaw", 16000, 100), "alaw", 100, 1},
	} {
		t.Run(fmt.Sprint(tc.enc, "/", tc.frameMS), func(t *testing.T) {
			c := r.Dial()
			if tc.hello != nil {
				c.Send(tc.hello)
			}
			if m := c.Expect("session"); m.Disposition != "admitted" {
				t.Fatalf("session %+v", m)
			}
			c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
			as := c.Expect("audio_start")
			if as.Encoding != tc.enc || as.Rate != 16000 {
				t.Fatalf("audio_start %+v, want %s/16000", as, tc.enc)
			}
			all := c.Until(sessiontest.IsType("audio_end"))
			got, want := binaries(all), wantFrames(reply, tc.frameMS, 16000, tc.bytes)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("binary frames of %v bytes, want %v", got, want)
			}
			if end := all[len(all)-1]; end.AudioMS != reply.Milliseconds() {
				t.Fatalf("audio_end %+v, want %d ms", end, reply.Milliseconds())
			}
			c.Send(map[string]any{"type": "hangup"})
		})
	}
}

// TestNativeFrameMSResampled: frames at a rate the synthesizer does not
// speak are frame_ms long too (the resampler decides only the last).
func TestNativeFrameMSResampled(t *testing.T) {
	r := newRig(t, func(_ *Config, s *stub.Settings) { s.FrameCount = 25 }) // 500 ms at 16 kHz
	c := r.Dial()
	c.Send(frameHello("mulaw", 8000, 80))
	c.Expect("session")
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	if as := c.Expect("audio_start"); as.Rate != 8000 {
		t.Fatalf("audio_start %+v", as)
	}
	got := binaries(c.Until(sessiontest.IsType("audio_end")))
	const full = 8000 * 80 / 1000 // µ-law: a byte a sample
	if len(got) < 6 {
		t.Fatalf("frames %v: want 500 ms in frames of 80 ms", got)
	}
	for i, n := range got {
		if (i < len(got)-1 && n != full) || n <= 0 || n > full {
			t.Fatalf("frames %v: want %d bytes each, the last at most that", got, full)
		}
	}
}

// TestHelloFrameMSRefused: a frame_ms that is not 0 or a multiple of 20
// from 20 to 120 is answered with error bad_field, as the hello's other
// bad audio fields are, and the hello is dropped; a good hello after it
// still counts (the call goes on) and its frame_ms holds.
func TestHelloFrameMSRefused(t *testing.T) {
	r := newRig(t)
	c := r.Dial()
	admitted := false // the session message may come among the errors
	for _, v := range []string{"10", "30", "50", "140", "-20", "1000", "60.5", "1e30", `"60"`, "9223372036854775808"} {
		c.SendRaw(`{"type":"hello","audio":{"encoding":"pcm16","rate":16000,"frame_ms":` + v + `}}`)
		m := c.Until(func(m sessiontest.Msg) bool { return m.Type == "error" })
		for _, x := range m {
			admitted = admitted || x.Type == "session"
		}
		if e := m[len(m)-1]; e.Code != wire.CodeBadField {
			t.Fatalf("frame_ms %s: %+v, want error bad_field", v, e)
		}
	}
	c.Send(frameHello("pcm16", 16000, 60))
	if !admitted {
		c.Expect("session") // a turn before it is refused as not_admitted
	}
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	all := c.Until(sessiontest.IsType("audio_end"))
	for _, m := range all {
		if m.Type == "error" {
			t.Fatalf("the good hello was refused: %+v", m)
		}
	}
	if got, want := binaries(all), wantFrames(100*time.Millisecond, 60, 16000, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
}

// TestPacedBargeInLongFrames is TestPacedBargeIn with frame_ms 60: frame
// n of the reply is due PaceLead before 60 ms × n on the manual clock, so
// once it has moved 60 ms × k exactly the frames due have left, each of
// 60 ms. After `interrupted` not one frame of the reply follows (the next
// audio is the next turn's, after its audio_start), and heard.audio_ms is
// exactly the frames written.
func TestPacedBargeInLongFrames(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Clock = clock
		c.Pace = true
		s.FrameCount = 50 // 1 s of audio, produced at once
	})
	const frame = 60 * time.Millisecond
	const size = 16000 * 60 / 1000 * 2 // 60 ms of 16 kHz PCM16
	lead := r.Engine.cfg.PaceLead
	a := r.Dial()
	a.Send(frameHello("pcm16", 16000, 60))
	a.Expect("session")
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Expect("audio_start")
	// The whole reply is queued before the clock moves (TestPacedBargeIn).
	sessiontest.WaitFor(t, "the reply synthesized", func() bool { return r.Synth.Started() == 1 && r.Synth.Running() == 0 })
	var frames, steps int
	for frames < 5 {
		due := int((time.Duration(steps)*frame+lead)/frame) + 1 // frames due by now
		if frames == due {
			clock.Advance(frame)
			steps++
			continue
		}
		m, err := a.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == "binary" {
			if m.Bytes != size {
				t.Fatalf("frame %d of %d bytes, want %d", frames, m.Bytes, size)
			}
			frames++
		}
	}
	a.Send(map[string]any{"type": "barge_in"})
	in := a.Expect("interrupted")
	if in.Heard == nil || in.Heard.AudioMS != 300 {
		t.Fatalf("heard %+v after 5 frames of 60 ms, want 300 ms", in.Heard)
	}
	sessiontest.WaitFor(t, "the queued reply cut", func() bool {
		return r.Counter("frontdoor_stale_chunks_suppressed_total") > 0
	})
	// The next turn's audio_start and its first two frames (due at once,
	// within the lead) come with the clock still; nothing binary before.
	a.Send(map[string]any{"type": "turn", "id": "a2", "text": "y"})
	after := a.Until(func(m sessiontest.Msg) bool { return m.Type == "audio_start" && m.Turn == "a2" })
	if n := binaries(after); len(n) != 0 {
		t.Fatalf("%d frames after interrupted, before a2's audio: %v", len(n), sessiontest.Types(after))
	}
	if as := after[len(after)-1]; as.Generation != 2 {
		t.Fatalf("a2's audio_start %+v", as)
	}
	var a1End bool
	for _, m := range after {
		a1End = a1End || (m.Type == "turn_end" && m.Turn == "a1" && m.Disposition == "cancelled")
	}
	for n := 0; n < 2; {
		m, err := a.Read()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type == "binary" && m.Bytes != size:
			t.Fatalf("a2's frame of %d bytes, want %d", m.Bytes, size)
		case m.Type == "binary":
			n++
		case m.Type == "turn_end" && m.Turn == "a1":
			a1End = m.Disposition == "cancelled"
		}
	}
	if !a1End {
		// a1's turn_end is not ordered against a2's frames; it may follow
		// them, and a2 has no frame more until the clock moves.
		end := a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "a1" })
		if n := binaries(end); len(n) != 0 {
			t.Fatalf("%d frames of a2 before their time: %v", len(n), sessiontest.Types(end))
		}
		a1End = end[len(end)-1].Disposition == "cancelled"
	}
	if !a1End {
		t.Fatal("a1 did not end cancelled")
	}
}

// queuedAudio is the stream lane of the engine's one call: the frames
// queued in it so far (a frame's seq), those in it now, their units and
// the audio they hold.
func queuedAudio(e *Engine) (queued uint64, frames, units int, audio time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for c := range e.calls {
		queued, frames, units, audio = c.out.Lane()
	}
	return queued, frames, units, audio
}

// TestOutboundBoundIsAudioTime: the outbound queue's frame bound counts a
// frame of frame_ms 60 as three, so that it holds the same audio time as
// at 20 ms framing, not three times as much. The writer is paced on a
// manual clock, so the synthesizer's 2 s reply fills the queue and waits
// for room: the writer has written the frames due at once (within the
// lead) and holds the next until its time.
func TestOutboundBoundIsAudioTime(t *testing.T) {
	const bound = 30 // units of 20 ms: 600 ms of audio
	for _, frameMS := range []int{20, 60} {
		t.Run(fmt.Sprint(frameMS), func(t *testing.T) {
			clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
			r := newRig(t, func(c *Config, s *stub.Settings) {
				c.Clock = clock
				c.Pace = true
				c.Outbound = OutboundLimits{Frames: bound}
				s.FrameCount = 100
			})
			frame := time.Duration(frameMS) * time.Millisecond
			due := int(r.Engine.cfg.PaceLead/frame) + 1 // frames written before the clock moves
			inQueue := bound * 20 / frameMS
			a := r.Dial()
			a.Send(frameHello("pcm16", 16000, frameMS))
			a.Expect("session")
			a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
			a.Expect("audio_start")
			// audio_start, the frames due, the one the writer holds, and
			// a full queue behind it.
			full := uint64(1 + due + 1 + inQueue)
			sessiontest.WaitFor(t, "the queue full", func() bool {
				q, _, units, _ := queuedAudio(r.Engine)
				return q >= full && units == bound
			})
			q, frames, _, audio := queuedAudio(r.Engine)
			if q != full || frames != inQueue || audio != bound*20*time.Millisecond {
				t.Fatalf("full queue: %d frames of %v audio (%d queued in all), want %d frames of %v (%d)",
					frames, audio, q, inQueue, bound*20*time.Millisecond, full)
			}
			if r.Synth.Running() != 1 {
				t.Fatal("the synthesizer is not waiting for room")
			}
			for n := 0; n < due; {
				if m, err := a.Read(); err != nil {
					t.Fatal(err)
				} else if m.Type == "binary" {
					n++
				}
			}
			// The clock moves a frame: the held frame leaves, and exactly
			// one more is queued in the room it made.
			clock.Advance(frame)
			a.Expect("binary")
			sessiontest.WaitFor(t, "the next frame queued", func() bool {
				q, _, units, _ := queuedAudio(r.Engine)
				return q == full+1 && units == bound
			})
			a.Send(map[string]any{"type": "hangup"})
		})
	}
}

// audioPrompts is a Fallback that speaks its prompts as audio: a fixed
// rendering, shared by every call as the prompt cache shares it.
type audioPrompts struct {
	Prompts
	audio backend.Audio
}

func (f audioPrompts) Refused(ctx context.Context, r Refusal, out Sender) {
	pm := &wire.PromptMsg{Type: "prompt", Reason: r.Outcome().Reason, Stage: r.Stage, Text: PromptText(r)}
	if out.Send(ctx, pm) == nil {
		_ = out.SendAudio(ctx, r.Turn, pm, f.audio)
	}
}

func (audioPrompts) SpeaksPrompts() bool { return true }

// TestPromptAudioFrameMS: prompt audio, encoded once in 20 ms frames and
// shared, reaches a caller of frame_ms 60 in 60 ms windows of it (the last
// shorter), and one of 20 ms framing in 20 ms frames, from the one
// encoding.
func TestPromptAudioFrameMS(t *testing.T) {
	tone := promptTone(16000, 250*time.Millisecond)
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Fallback = audioPrompts{audio: tone}
		s.FailRate = 1 // every turn fails: its prompt is spoken
	})
	for _, frameMS := range []int{60, 20} {
		c := r.Dial()
		c.Send(frameHello("pcm16", 16000, frameMS))
		c.Expect("session")
		c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
		all := c.Until(sessiontest.IsType("audio_end"))
		if got, want := binaries(all), wantFrames(250*time.Millisecond, frameMS, 16000, 2); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("frame_ms %d: prompt frames %v, want %v", frameMS, got, want)
		}
		if end := all[len(all)-1]; end.AudioMS != 250 || end.Cut {
			t.Fatalf("frame_ms %d: audio_end %+v", frameMS, end)
		}
		c.Send(map[string]any{"type": "hangup"})
	}
	if n := promptaudio.Shared.Encodings(&tone.Samples[0]); n != 1 {
		t.Fatalf("the rendering is encoded %d times, want once for both framings", n)
	}
}
