package load

import (
	"testing"
	"time"
)

// TestJitterAgainstFrameMS: reply jitter is each gap's distance from the
// callers' frame length (-frame-ms), not from 20 ms, and the reply audio
// is what the frames carried.
func TestJitterAgainstFrameMS(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	start := time.Unix(1_700_000_000, 0)
	turn := &turnRec{id: "c0-t1", stages: map[string]*stageRec{}, sent: start, end: dCompleted, endAt: start.Add(ms(500)),
		firstAudio: start.Add(ms(100)), frames: 4, audio: ms(200), gaps: []time.Duration{ms(60), ms(55), ms(70)}}
	rec := &callerRec{id: 0, turns: []*turnRec{turn}}
	for _, tc := range []struct {
		frameMS int
		max     time.Duration
	}{{60, ms(10)}, {20, ms(50)}} {
		cfg := Config{Callers: 1, Rate: 1, FrameMS: tc.frameMS}.withDefaults()
		r := buildReport(cfg, []*callerRec{rec}, start, start.Add(time.Second))
		if r.Jitter.N != 3 || time.Duration(r.Jitter.Max) != tc.max {
			t.Errorf("frame_ms %d: jitter %+v, want 3 gaps, max %v", tc.frameMS, r.Jitter, tc.max)
		}
		if r.Config.FrameMS != tc.frameMS {
			t.Errorf("report config frame_ms %d, want %d", r.Config.FrameMS, tc.frameMS)
		}
	}
	if got := replyAudioSeconds([]*callerRec{rec}); got != 0.2 {
		t.Errorf("reply audio %v s, want 0.2", got)
	}
	if audioLen(1920, bytesPerSecond("pcm16", 16000)) != ms(60) || audioLen(480, bytesPerSecond("mulaw", 8000)) != ms(60) {
		t.Error("audioLen of 60 ms frames")
	}
}
