package load_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
)

// TestFrameMSScripted: with -frame-ms 60 a native caller's first message
// is a hello asking for 60 ms frames, the audio it streams comes in 60 ms
// frames (1,920 bytes of 16 kHz PCM16), and the reply audio it reports is
// the frames' audio by their bytes, the last shorter. The server is
// scripted: it answers the turn once a frame of caller audio has come, so
// the outcome is exact.
func TestFrameMSScripted(t *testing.T) {
	ts, heard := nativeScript(t, func(p *nativePeer) {
		p.send(map[string]any{"type": "session", "disposition": "admitted", "session": "s1"})
		turn := p.readType("turn")
		if turn == nil {
			return
		}
		for { // a frame of caller audio before the answer
			m, err := p.recv()
			if err != nil {
				return
			}
			if m == nil {
				break
			}
		}
		id := turn["id"]
		p.send(map[string]any{"type": "audio_start", "turn": id, "generation": 1, "encoding": "pcm16", "rate": 16000})
		for _, n := range []int{1920, 1920, 640} { // 140 ms
			p.audio(n)
		}
		p.send(map[string]any{"type": "audio_end", "turn": id, "generation": 1, "audio_ms": 140})
		p.send(map[string]any{"type": "turn_end", "turn": id, "generation": 1, "disposition": "completed"})
		p.hangUp()
	})

	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: 1, Rate: 1, Turns: 1,
		StreamAudio: true, FrameMS: 60, Deadline: time.Second, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hello := heard.first("hello")
	heard.mu.Lock()
	defer heard.mu.Unlock()
	sent, callerFrames := heard.order, heard.binary
	audio, _ := hello["audio"].(map[string]any)
	if len(sent) == 0 || sent[0] != "hello" || audio["frame_ms"] != 60.0 {
		t.Errorf("the caller sent %v, the hello %v: want a hello with audio.frame_ms 60 first", sent, hello)
	}
	if len(callerFrames) == 0 {
		t.Error("no caller audio")
	}
	for _, n := range callerFrames {
		if n != 1920 {
			t.Fatalf("caller frames of %v bytes, want 1920 (60 ms of 16 kHz PCM16)", callerFrames)
		}
	}
	if r.CPU.ReplyAudioSeconds != 0.14 || r.Jitter.N != 2 || r.Config.FrameMS != 60 {
		t.Errorf("reply audio %v s, %d gaps, frame_ms %d: want 0.14 s in 3 frames of -frame-ms 60",
			r.CPU.ReplyAudioSeconds, r.Jitter.N, r.Config.FrameMS)
	}
	if !strings.Contains(r.Summary(), "jitter |gap-60ms|") {
		t.Errorf("summary does not measure jitter against 60 ms:\n%s", r.Summary())
	}
}

// TestFrameMSRun: against the real server, callers of -frame-ms 60 that
// stream audio get every reply in 60 ms frames: fast's 100 ms replies are
// one frame of 60 ms and one of 40, and the audio received is exactly the
// replies'.
func TestFrameMSRun(t *testing.T) {
	ts := startServer(t, serverOpts{session: roomy(4), model: roomy(4), synt: roomy(4), stub: fast})
	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: 2, Rate: 100, Arrival: load.Burst,
		BurstSize: 2, Turns: 2, Think: 10 * time.Millisecond, Hold: 100 * time.Millisecond, BargeIn: 0,
		StreamAudio: true, FrameMS: 60, Deadline: time.Second, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	if r.Turns.ByEnd["completed"] != 4 || r.Goodput.Untyped != 0 || r.BargeIn.StaleAfter != 0 {
		t.Fatalf("want 4 completed turns:\n%s", r.Summary())
	}
	if r.CPU.ReplyAudioSeconds != 0.4 || r.Jitter.N != 4 {
		t.Errorf("%v s of reply audio in %d gaps, want 4 replies of 100 ms in 2 frames each", r.CPU.ReplyAudioSeconds, r.Jitter.N)
	}
}
