package gateway

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// fakeClock is a clock.Clock a test moves by hand; a Tracker arms no timers.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func (c *fakeClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("a Tracker arms no timers")
}

const ms = time.Millisecond

// sendPaced sends n 20 ms frames of utterance id, one per 20 ms of clock.
func sendPaced(tr *Tracker, c *fakeClock, id string, n int) {
	for range n {
		tr.Sent(id, 20*ms)
		c.advance(20 * ms)
	}
}

func TestTrackerPlayedFully(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTracker(c)
	sendPaced(tr, c, "u1", 50)
	name := tr.Mark("u1", true)
	p, ok := tr.Echo(name)
	if !ok || !p.Done || p.Cleared || p.Sent != time.Second || p.Played != time.Second {
		t.Fatalf("Echo = %+v, %v", p, ok)
	}
	if got := tr.Progress("u1"); got != p {
		t.Fatalf("Progress = %+v", got)
	}
	if _, ok := tr.Echo("nobody.9"); ok {
		t.Fatal("unknown mark accepted")
	}
}

func TestTrackerClearMidUtterance(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTracker(c)
	sendPaced(tr, c, "u1", 10) // 200 ms, played
	n1 := tr.Mark("u1", true)
	tr.Echo(n1)
	// u2: 1 s sent in a burst (say the gateway buffers), then barge-in after 300 ms.
	for range 50 {
		tr.Sent("u2", 20*ms)
	}
	n2 := tr.Mark("u2", true)
	c.advance(300 * ms)
	ps := tr.Clear()
	if len(ps) != 1 || ps[0].Utterance != "u2" || !ps[0].Cleared || ps[0].Played != 300*ms || ps[0].Sent != time.Second || ps[0].Done {
		t.Fatalf("Clear = %+v", ps)
	}
	// Clear makes the gateway echo the pending mark: it means cleared, not played.
	p, _ := tr.Echo(n2)
	if !p.Done || !p.Cleared || p.Played != 300*ms {
		t.Fatalf("echo after clear = %+v", p)
	}
}

// TestTrackerClearBehindRealTime: a sender that fell behind real time
// (a busy process) has had all it sent played when the clear comes, but
// the utterance's end had not gone out: the clear cut it, at what was sent.
func TestTrackerClearBehindRealTime(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTracker(c)
	for range 10 { // 200 ms of audio over 400 ms
		tr.Sent("u1", 20*ms)
		c.advance(40 * ms)
	}
	ps := tr.Clear()
	if len(ps) != 1 || !ps[0].Cleared || !ps[0].Done || ps[0].Played != 200*ms || ps[0].Sent != 200*ms {
		t.Fatalf("Clear = %+v", ps)
	}
}

func TestTrackerQueuedBehindPlaying(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTracker(c)
	// 400 ms of u1 and 400 ms of u2 arrive at once: u2 plays after u1.
	for range 20 {
		tr.Sent("u1", 20*ms)
	}
	for range 20 {
		tr.Sent("u2", 20*ms)
	}
	tr.Mark("u1", true)
	c.advance(500 * ms)
	ps := tr.Clear()
	if len(ps) != 2 {
		t.Fatalf("Clear = %+v", ps)
	}
	if ps[0].Played != 400*ms || ps[0].Cleared {
		t.Errorf("u1 = %+v, want fully played, not cleared", ps[0])
	}
	if ps[1].Played != 100*ms || !ps[1].Cleared || !ps[1].Done {
		t.Errorf("u2 = %+v, want 100 ms played, cleared, done (no marks pending)", ps[1])
	}
}

func TestTrackerBounded(t *testing.T) {
	tr := NewTracker(nil)
	for i := range 1000 {
		id := "u" + string(rune('a'+i%26)) + time.Duration(i).String()
		tr.Sent(id, 20*ms)
		tr.Mark(id, true)
	}
	if len(tr.utts) > maxLive || len(tr.marks) > maxLive || len(tr.order) > maxLive {
		t.Fatalf("tracker grew: %d utterances, %d marks", len(tr.utts), len(tr.marks))
	}
}
