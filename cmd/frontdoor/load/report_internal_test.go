package load

import (
	"testing"
	"time"
)

// TestReportReplyBeforeSent: a phone caller's reply can be read before
// its writer stamps the last frame it sent (two goroutines, under load:
// 390 ms before, with a 300 ms deadline, in TestTwilioCallerQueued). The report counts it as heard at once, in the
// first bucket, instead of indexing its histogram below zero (a panic
// seen once in a -race -count=10 run of TestTwilioCallerQueued).
func TestReportReplyBeforeSent(t *testing.T) {
	sent := time.Unix(1e9, 0)
	tr := &turnRec{id: "c1-t1", sent: sent, firstAudio: sent.Add(-390 * time.Millisecond), end: dCompleted, endAt: sent.Add(time.Second),
		stages: map[string]*stageRec{}}
	var r Report
	r.turns(Config{Deadline: 300 * time.Millisecond}, []*callerRec{{id: 1, turns: []*turnRec{tr}}})
	if r.Hist.FirstAud[0] != 1 {
		t.Errorf("first-audio histogram %v, want the reply in the first bucket", r.Hist.FirstAud[:3])
	}
	if r.Goodput.Good != 1 {
		t.Errorf("goodput %+v, want the reply counted good", r.Goodput)
	}
}
