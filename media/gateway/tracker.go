package gateway

import (
	"strconv"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// maxLive bounds the utterances a Tracker remembers when a gateway never
// echoes their marks.
const maxLive = 64

// Progress is how much of one utterance went out and how much the caller heard.
type Progress struct {
	Utterance string
	// Sent is the audio handed to the gateway.
	Sent time.Duration
	// Played is the audio the caller has heard: all of Sent once the
	// utterance's final mark came back before any clear; after a clear, the
	// part that the gateway had time to play (estimated from the real-time
	// playback clock, never less than what marks confirmed). It is the
	// audio_end_ms to truncate the utterance at, as in the OpenAI Realtime API.
	Played time.Duration
	// Done is set when the final mark came back: played fully, or cleared.
	Done bool
	// Cleared is set when a clear cut the utterance short.
	Cleared bool
}

type utterance struct {
	Progress
	playStart time.Time // when the gateway started (or will start) playing it
	playEnd   time.Time // when the gateway will have played all of it sent so far
	started   bool
	ended     bool // its final mark was sent: all its audio went out
	marks     int  // marks sent and not yet echoed
}

type pendingMark struct {
	utt   string
	upTo  time.Duration // audio of the utterance before the mark
	final bool
}

// Tracker follows outbound audio and marks for one stream. A mark echoed
// before any clear means the audio before it has played; a clear makes the
// gateway echo every pending mark at once, so echoes after a clear mean
// "played or cleared" and the tracker falls back on its playback clock: the
// gateway plays audio in real time from when it arrives, behind whatever it
// still had buffered. All methods are safe for concurrent use.
type Tracker struct {
	now func() time.Time

	mu       sync.Mutex
	utts     map[string]*utterance
	order    []string // live utterances, oldest first
	marks    map[string]pendingMark
	playhead time.Time // when the gateway's buffered audio runs out
	seq      int
}

// NewTracker returns a Tracker reading time from c (clock.System when nil):
// the clock of the call's writer, so that what was heard is told on the
// same time as what was sent.
func NewTracker(c clock.Clock) *Tracker {
	return &Tracker{now: clock.Or(c).Now, utts: map[string]*utterance{}, marks: map[string]pendingMark{}}
}

func (t *Tracker) get(id string) *utterance {
	u, ok := t.utts[id]
	if !ok {
		u = &utterance{Progress: Progress{Utterance: id}}
		t.utts[id] = u
		t.order = append(t.order, id)
		if len(t.order) > maxLive {
			old := t.order[0]
			t.order = t.order[1:]
			delete(t.utts, old)
			for name, m := range t.marks {
				if m.utt == old {
					delete(t.marks, name)
				}
			}
		}
	}
	return u
}

// Sent records that d of utterance id's audio was just handed to the gateway.
func (t *Tracker) Sent(id string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	u := t.get(id)
	start := t.playhead
	if start.Before(now) {
		start = now
	}
	if !u.started {
		u.started, u.playStart = true, start
	}
	t.playhead = start.Add(d)
	u.playEnd = t.playhead
	u.Sent += d
}

// End records that the end of utterance id went out: all its audio was
// handed to the gateway. A final Mark records it too; a dialect without
// marks calls End instead.
func (t *Tracker) End(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(id).ended = true
}

// Mark returns the name of a mark to send now, behind the audio of utterance
// id sent so far. final says it closes the utterance.
func (t *Tracker) Mark(id string, final bool) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.get(id)
	t.seq++
	name := id + "." + strconv.Itoa(t.seq)
	t.marks[name] = pendingMark{utt: id, upTo: u.Sent, final: final}
	u.marks++
	u.ended = u.ended || final
	return name
}

// Echo records a mark the gateway sent back and returns the progress of its
// utterance; ok is false for a name the tracker did not issue.
func (t *Tracker) Echo(name string) (p Progress, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.marks[name]
	if !ok {
		return Progress{}, false
	}
	delete(t.marks, name)
	u, live := t.utts[m.utt]
	if !live {
		return Progress{Utterance: m.utt, Done: true}, true
	}
	u.marks--
	if !u.Cleared {
		u.Played = max(u.Played, m.upTo)
		if m.final {
			u.Done = true
		}
	} else if u.marks == 0 {
		u.Done = true
	}
	return u.Progress, true
}

// Clear records that a clear is being sent now and returns the progress of
// every utterance that had not finished playing, with Played estimated from
// the playback clock. Marks still pending will come back as "cleared".
func (t *Tracker) Clear() []Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var out []Progress
	for _, id := range t.order {
		u := t.utts[id]
		if u.Cleared || u.Done {
			continue
		}
		fully := u.started && !u.playEnd.After(now)
		switch {
		case fully:
			u.Played = u.Sent
		case u.started:
			u.Played = max(u.Played, min(max(now.Sub(u.playStart), 0), u.Sent))
		}
		// An utterance whose end had not gone out is cut by the clear
		// even when all that was sent has played (a sender that fell
		// behind real time): the rest never will.
		u.Cleared = !fully || !u.ended
		if u.marks == 0 {
			u.Done = true
		}
		out = append(out, u.Progress)
	}
	t.playhead = now
	return out
}

// Progress returns what is known of utterance id; the last 64 utterances
// are remembered.
func (t *Tracker) Progress(id string) Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	if u, ok := t.utts[id]; ok {
		return u.Progress
	}
	return Progress{Utterance: id}
}

// DropPending forgets every mark still pending, for gateways that discard
// pending marks on a clear instead of echoing them (Plivo, Asterisk, Vonage):
// an utterance cut by the clear is then done at once, with the Played that
// Clear estimated.
func (t *Tracker) DropPending() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, m := range t.marks {
		delete(t.marks, name)
		if u, ok := t.utts[m.utt]; ok {
			u.marks--
			if u.Cleared {
				u.Done = true
			}
		}
	}
}
