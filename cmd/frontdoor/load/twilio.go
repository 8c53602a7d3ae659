package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// A Twilio caller plays the gateway's side of a Media Streams call
// (docs/TELEPHONY.md): it sends connected and start, then a 20 ms µ-law
// media frame on a real-time clock for as long as the call lasts (silence,
// or synthetic speech while it talks), keeps a playback clock for the
// reply audio it receives, echoes each mark once the audio before it has
// played, and drops what it has buffered on clear.
//
// The wire carries only audio, marks and clear, so the caller infers what
// the native protocol states:
//
//   - Admission. Nothing says "admitted". A caller that hears nothing for
//     Config.Settle after start takes itself as admitted; one that hears
//     audio first has heard the queue prompt (or the refusal's). A close
//     with 1013 before any reply has played to its end is the session
//     stage's refusal, of a kind the caller cannot tell: refused at once
//     and expired in the queue both hear prompts (and, from a server with
//     the fallback service, a keypad menu) and then 1013, so the report
//     counts them together (dRefused) and checks their sum against the
//     server's ledger. The turns such a caller spoke were not heard (the
//     server ignores the audio of a caller it has not admitted) and are not
//     counted. A caller that heard a prompt and was then answered was
//     queued.
//   - Turns. A turn is Config.Utterance of speech; the server takes it when
//     500 ms of quiet have followed, with its Born at the end of the speech,
//     so the turn counts as sent at its last speech frame. The audio that
//     follows is its reply (first audio, jitter); the mark after it ends the
//     turn as completed. A refused turn's spoken prompt cannot be told from
//     an answer on this wire (the report warns when the server refused
//     turns).
//   - Barge-in. Speech over a reply: the caller's next turn, spoken while the
//     reply plays. The server's clear ends the interrupted turn as
//     cancelled; any media after the clear and before the new speech has
//     ended (plus 400 ms: the server cannot answer sooner) is the
//     interrupted reply's, and counts as stale.
//   - A caller that heard a prompt and no reply yet may still be queued, and
//     its speech ignored: it says its turn again after 2 × Deadline of
//     silence, until a reply comes or the call closes.
type twilioCaller struct {
	*caller
	// wire sends what the conversation sends besides audio: the caller
	// itself on the Twilio wire, sipWire for a SIP caller (sip.go).
	wire interface {
		echo(name string) error
		sendStop() error
	}
	sid, callSID string
	in           chan twEvent
	timer        *time.Timer
	play         playback
	line         line
	said         <-chan struct{} // closes when the utterance in progress has gone out
	saying       *turnRec        // whose utterance that is
	stopLine     func()

	wmu   sync.Mutex // orders sequence numbers as they go on the wire
	seq   int64
	chunk int64
	out   []byte

	// The sender's scratch space.
	ulaw []byte
	pcm  [frameSamples]int16

	start       time.Time // start sent
	spoken      bool      // the caller has begun to speak
	queued      bool      // it heard audio before it spoke
	prompts     int       // utterances heard that answered no turn
	replyMark   string    // the mark that ended the latest reply
	replyPlayed time.Time // when a reply first played to its end
	cur         *turnRec  // the turn whose reply is awaited or playing
	barged      *turnRec  // the turn the latest barge-in interrupts
	bargeBy     *turnRec  // the turn spoken over it
	staleFrom   time.Time // the latest clear
	staleUntil  time.Time
	staleOpen   bool // the barge-in is still being spoken
}

// twKind is the kind of a twEvent.
type twKind int

const (
	twMedia  twKind = iota + 1 // reply or prompt audio
	twMark                     // a mark from the server
	twClear                    // clear
	twSaid                     // the caller's utterance has gone out
	twPlayed                   // a mark's audio has played: it was echoed
)

type twEvent struct {
	at   time.Time
	kind twKind
	n    int    // µ-law bytes of media
	mark string // mark name
	err  error
}

// Bounds and timings of a Twilio caller.
const (
	accountSid = "AC00000000000000000000000000000000"
	// staleMargin: after a barge-in utterance ends the server waits 500 ms
	// of quiet before the new turn exists, so no media before then can be
	// the new reply's.
	staleMargin = 400 * time.Millisecond
	// confirmGrace: a refused caller is closed (1013) as soon as its
	// prompt's mark has come back; a close that long after a reply played
	// is not a refusal.
	confirmGrace = 300 * time.Millisecond
	maxPending   = 64   // marks awaiting playback
	maxGaps      = 3000 // reply frame gaps kept per turn (a minute of audio)
	maxPrompts   = 64   // prompts recorded per caller
	// promptSpoken is the reason recorded for a prompt heard as audio: the
	// Twilio wire does not say why it was spoken.
	promptSpoken = "spoken"
)

// run dials /v1/twilio, speaks as a gateway until the call ends and hangs
// up with stop. Every goroutine it starts ends before it returns.
func (c *twilioCaller) run(ctx context.Context) {
	c.rec.started = time.Now()
	c.stats.offered.Add(1)
	c.wire = c
	c.sid = fmt.Sprintf("MZ%032x", c.rec.id)
	c.callSID = fmt.Sprintf("CA%032x", c.rec.id)
	h := http.Header{}
	if tok := c.cfg.TwilioAuthToken; tok != "" {
		u := c.cfg.TwilioURL
		if u == "" {
			u = c.ws
		}
		h.Set("X-Twilio-Signature", twilioSignature(tok, u))
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, resp, err := websocket.Dial(dctx, c.ws, &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h})
	c.rec.answered = resp != nil
	cancel()
	if err != nil {
		c.finish(EndError, fmt.Sprintf("dial: %v", err))
		if ctx.Err() != nil {
			c.rec.end = EndQueued
		}
		return
	}
	c.rec.connected = time.Now()
	conn.SetReadLimit(twMaxMessage)
	c.conn = conn
	c.stats.active.Add(1)
	defer c.stats.active.Add(-1)

	c.in = make(chan twEvent, 64)
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	c.stopLine = func() {}
	rctx, stopRead := context.WithCancel(context.Background())
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.read(rctx)
	}()
	defer func() {
		_ = conn.CloseNow() // first: it unblocks a sender stuck in a write
		c.stopLine()
		stopRead()
		<-readDone
	}()
	if err := c.greet(); err != nil {
		c.finish(EndDropped, err.Error())
		return
	}
	// The sender's context is its own: a write whose context ends drops the
	// connection (library-pitfalls.md), and the caller must be able to say
	// stop after the sender has ended.
	lctx, stop := context.WithCancel(context.Background())
	lineDone := make(chan struct{})
	go func() {
		defer close(lineDone)
		c.stream(lctx)
	}()
	var once sync.Once
	c.stopLine = func() { once.Do(func() { stop(); <-lineDone }) }
	c.converse(ctx)
}

// greet sends connected and start.
func (c *twilioCaller) greet() error {
	b, _ := json.Marshal(twConnected{Event: "connected", Protocol: "Call", Version: "1.0.0"})
	if err := c.write(b); err != nil {
		return err
	}
	c.start = time.Now()
	return c.sendJSON(func(seq string) any {
		return twStart{Event: "start", SequenceNumber: seq, StreamSid: c.sid, Start: twStartBody{
			StreamSid: c.sid, AccountSid: accountSid, CallSid: c.callSID,
			Tracks:           []string{"inbound"},
			CustomParameters: map[string]string{"caller": fmt.Sprintf("+155501%02d", c.rec.id%100)},
			MediaFormat:      twFormat{Encoding: "audio/x-mulaw", SampleRate: telephonyRate, Channels: 1},
		}}
	})
}

func (c *twilioCaller) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// sendJSON sends the message msg builds around the next sequence number.
func (c *twilioCaller) sendJSON(msg func(seq string) any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	b, err := json.Marshal(msg(strconv.FormatInt(c.seq, 10)))
	if err != nil {
		return err
	}
	return c.write(b)
}

func (c *twilioCaller) sendMedia(ulaw []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	c.chunk++
	c.out = appendMedia(c.out[:0], c.seq, c.chunk, (c.chunk-1)*frame.Milliseconds(), c.sid, ulaw)
	// No context, as the native callers' frames: coder/websocket arms no
	// context.AfterFunc and no timer per frame. A frame the server does
	// not take blocks until it does, or until run closes the connection.
	return c.conn.Write(context.Background(), websocket.MessageText, c.out)
}

func (c *twilioCaller) echo(name string) error {
	return c.sendJSON(func(seq string) any {
		return twMarkEcho{Event: "mark", SequenceNumber: seq, StreamSid: c.sid, Mark: twName{Name: name}}
	})
}

func (c *twilioCaller) sendStop() error {
	return c.sendJSON(func(seq string) any {
		return twStop{Event: "stop", SequenceNumber: seq, StreamSid: c.sid,
			Stop: twStopBody{AccountSid: accountSid, CallSid: c.callSID}}
	})
}

// stream sends a frame every 20 ms, speech or silence, until ctx ends or a
// write fails.
func (c *twilioCaller) stream(ctx context.Context) {
	t := time.NewTicker(frame)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var utt int
		c.ulaw, utt = c.line.next(c.ulaw[:0], &c.pcm)
		err := c.sendMedia(c.ulaw)
		c.line.sent(utt, time.Now())
		if err != nil {
			return
		}
	}
}

// read forwards what the server sends until the connection ends or breaks
// the protocol.
func (c *twilioCaller) read(ctx context.Context) {
	defer close(c.in)
	buf := make([]byte, 512)
	var data []byte // every message is read into it
	for {
		// No context: coder/websocket would arm a context.AfterFunc per
		// read; run closes the connection to end a read.
		typ, r, err := c.conn.Reader(context.Background())
		if err == nil {
			data, err = readMessage(r, data[:0])
		}
		ev := twEvent{at: time.Now(), err: err}
		if err == nil {
			if typ != websocket.MessageText {
				ev.err = fmt.Errorf("%w: a binary frame (a gateway takes text only)", errTwilioWire)
			} else {
				ev.kind, ev.n, ev.mark, ev.err = decodeOutbound(data, c.sid, buf)
			}
		}
		select {
		case c.in <- ev:
		case <-ctx.Done():
			return
		}
		if ev.err != nil {
			return
		}
	}
}

// wait returns the next event: something the server sent, the end of the
// caller's utterance (twSaid) or a mark echoed once its audio has played
// (twPlayed). ok is false when until passes (zero: no limit) or ctx ends.
func (c *twilioCaller) wait(ctx context.Context, until time.Time) (twEvent, bool) {
	for {
		now := time.Now()
		if name, ok := c.play.pop(now); ok {
			_ = c.wire.echo(name) // a failed write shows as the connection's end
			return twEvent{at: now, kind: twPlayed, mark: name}, true
		}
		if !until.IsZero() && !now.Before(until) {
			return twEvent{}, false
		}
		wake := until
		if d := c.play.next(); !d.IsZero() && (wake.IsZero() || d.Before(wake)) {
			wake = d
		}
		var timeout <-chan time.Time
		if !wake.IsZero() {
			c.timer.Reset(wake.Sub(now))
			timeout = c.timer.C
		}
		select {
		case ev, ok := <-c.in:
			c.timer.Stop()
			if !ok {
				return twEvent{at: time.Now(), err: errEnded}, true
			}
			return ev, true
		case <-c.said:
			c.timer.Stop()
			c.said = nil
			return twEvent{at: time.Now(), kind: twSaid}, true
		case <-timeout:
		case <-ctx.Done():
			c.timer.Stop()
			return twEvent{}, false
		}
	}
}

func (c *twilioCaller) converse(ctx context.Context) {
	if !c.admit(ctx) {
		return
	}
	var next *turnRec
	for i := range c.cfg.Turns {
		t := next
		if t == nil {
			t = c.newTurn(i)
			c.say(t)
		}
		var ok bool
		if next, ok = c.turn(ctx, i, t); !ok {
			return
		}
		if next == nil && i < c.cfg.Turns-1 && c.cfg.Think > 0 {
			d := time.Duration(c.rnd.ExpFloat64() * float64(c.cfg.Think))
			if !c.idle(ctx, time.Now().Add(d)) {
				return
			}
		}
	}
	if c.cfg.Hold > 0 && !c.idle(ctx, time.Now().Add(c.cfg.Hold)) {
		return
	}
	c.hangup(ctx, EndServed)
}

// admit listens after start until the session shows itself: quiet for
// Settle (admitted, or queued if a prompt was heard first), or a close.
func (c *twilioCaller) admit(ctx context.Context) bool {
	for {
		until := later(c.start, c.play.end).Add(c.cfg.Settle)
		ev, ok := c.wait(ctx, until)
		if !ok {
			if ctx.Err() != nil {
				if c.queued {
					c.rec.queued, c.rec.sessDisp = true, dQueued
				}
				c.finish(EndQueued, "")
				return false
			}
			if c.play.pending() {
				continue
			}
			if c.queued {
				c.rec.queued, c.rec.sessDisp = true, dQueued
			} else {
				c.rec.sessDisp, c.rec.admitted = dAdmitted, time.Now()
			}
			return true
		}
		if ev.err != nil {
			c.lost(ev.err)
			return false
		}
		c.observe(ev)
	}
}

func (c *twilioCaller) newTurn(i int) *turnRec {
	return &turnRec{id: fmt.Sprintf("c%d-t%d", c.rec.id, i+1), stages: map[string]*stageRec{}}
}

// say puts t's speech on the line.
func (c *twilioCaller) say(t *turnRec) {
	c.spoken = true
	c.saying = t
	c.said = c.line.say(max(int(c.cfg.Utterance/frame), 1))
}

// spoke records that the utterance on the line has gone out: its turn is
// sent (Born at its last speech frame, as the server reckons it).
func (c *twilioCaller) spoke() {
	first, last := c.line.times()
	t := c.saying
	c.saying = nil
	t.sent = last
	if t == c.bargeBy && c.barged != nil {
		c.barged.bargeAt = first
	}
	if c.staleOpen {
		c.staleOpen, c.staleUntil = false, last.Add(staleMargin)
	}
	if n := len(c.rec.turns); n == 0 || c.rec.turns[n-1] != t {
		c.rec.turns = append(c.rec.turns, t)
		c.stats.turns.Add(1)
	}
	c.cur = t
}

// speak waits until t's utterance has gone out.
func (c *twilioCaller) speak(ctx context.Context, t *turnRec) bool {
	for c.saying == t {
		ev, ok := c.wait(ctx, time.Time{})
		if !ok {
			c.runEnded()
			return false
		}
		if ev.err != nil {
			c.lost(ev.err)
			return false
		}
		c.observe(ev)
	}
	return true
}

// turn waits for t's speech to go out and its reply to play. When the
// caller barges in, it returns the next turn, already being spoken.
func (c *twilioCaller) turn(ctx context.Context, i int, t *turnRec) (next *turnRec, ok bool) {
	if !c.speak(ctx, t) {
		return nil, false
	}
	barge := c.rnd.Float64() < c.cfg.BargeIn && i+1 < c.cfg.Turns
	var bargeAt, patience, retry time.Time
	if c.cfg.Patience > 0 {
		patience = t.sent.Add(c.cfg.Patience)
	}
	probing := func() bool { return c.replyPlayed.IsZero() && c.prompts > 0 && t.firstAudio.IsZero() }
	retry = t.sent.Add(2 * c.cfg.Deadline)
	for {
		if t.end != "" && !c.play.pending() {
			return nil, true // the reply has played (its mark echoed), or was cleared
		}
		wake := patience
		consider := func(w time.Time) {
			if !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
				wake = w
			}
		}
		consider(bargeAt)
		if probing() {
			consider(retry)
		}
		ev, ok := c.wait(ctx, wake)
		if !ok {
			if ctx.Err() != nil {
				c.runEnded()
				return nil, false
			}
			now := time.Now()
			switch {
			case !bargeAt.IsZero() && !now.Before(bargeAt):
				bargeAt = time.Time{}
				if t.end == "" { // still speaking: talk over it
					t.bargeAt, c.barged = now, t
					n := c.newTurn(i + 1)
					c.bargeBy = n
					c.say(n)
					return n, true
				}
			case probing() && !now.Before(retry):
				c.say(t) // perhaps still queued, and not heard: again
				if !c.speak(ctx, t) {
					return nil, false
				}
				retry = t.sent.Add(2 * c.cfg.Deadline)
			case !patience.IsZero() && !now.Before(patience):
				c.hangup(ctx, EndAbandoned)
				return nil, false
			}
			continue
		}
		if ev.err != nil {
			c.lost(ev.err)
			return nil, false
		}
		c.observe(ev)
		if barge && !t.firstAudio.IsZero() && t.end == "" {
			barge = false
			bargeAt = t.firstAudio.Add(time.Duration(c.rnd.Float64() * float64(c.cfg.BargeAfter)))
		}
	}
}

// idle waits until t, answering what comes in.
func (c *twilioCaller) idle(ctx context.Context, t time.Time) bool {
	for {
		ev, ok := c.wait(ctx, t)
		if !ok {
			if ctx.Err() != nil {
				c.runEnded()
				return false
			}
			return true
		}
		if ev.err != nil {
			c.lost(ev.err)
			return false
		}
		c.observe(ev)
	}
}

// hangup stops the caller's audio, says stop and waits briefly for the
// server to close.
func (c *twilioCaller) hangup(ctx context.Context, end string) {
	c.stopLine()
	if err := c.wire.sendStop(); err == nil {
		deadline := time.Now().Add(2 * time.Second)
		for {
			ev, ok := c.wait(ctx, deadline)
			if !ok {
				break
			}
			if ev.err != nil {
				c.closed(ev.err)
				if c.refusedByClose() {
					c.refusedSession()
					return
				}
				break
			}
			c.observe(ev)
		}
	}
	c.finish(end, "")
}

func (c *twilioCaller) runEnded() {
	if c.rec.sessDisp == dQueued {
		c.finish(EndQueued, "")
		return
	}
	c.finish(EndActive, "")
}

// lost handles the end of the connection.
func (c *twilioCaller) lost(err error) {
	c.closed(err)
	if c.refusedByClose() {
		c.refusedSession()
		return
	}
	c.finish(EndDropped, err.Error())
}

// refusedByClose reports whether the close was the session stage's refusal: 1013
// before any reply played to its end (after that, 1013 means the server
// was closing down).
func (c *twilioCaller) refusedByClose() bool {
	return c.rec.closeCode == int(websocket.StatusTryAgainLater) &&
		(c.replyPlayed.IsZero() || time.Since(c.replyPlayed) < confirmGrace)
}

// refusedSession records the session stage's refusal: the audio heard was
// prompts, and the turns spoken were never heard.
func (c *twilioCaller) refusedSession() {
	for _, t := range c.rec.turns {
		c.stats.turns.Add(-1)
		if !t.firstAudio.IsZero() && t.firstAudio.Sub(t.sent) <= c.cfg.Deadline {
			c.stats.good.Add(-1)
		}
		c.rec.promptFrames += t.frames
		if t.end == dCompleted && len(c.rec.prompts) < maxPrompts {
			c.rec.prompts = append(c.rec.prompts, promptSpoken)
		}
	}
	c.rec.turns, c.cur = nil, nil
	c.rec.queued = false // whether it waited first does not show
	c.rec.sessDisp, c.rec.end, c.rec.err = dRefused, EndRefused, ""
}

// observe records one event.
func (c *twilioCaller) observe(ev twEvent) {
	switch ev.kind {
	case twMedia:
		c.play.media(ev.at, time.Duration(ev.n)*time.Second/telephonyRate)
		if c.stale(ev.at) {
			c.barged.staleAfter++
			c.stats.stale.Add(1)
			return
		}
		t := c.cur
		if t == nil || t.end != "" {
			c.rec.promptFrames++ // audio that answers no turn: a prompt
			if !c.spoken {
				c.queued = true
			}
			return
		}
		if t.firstAudio.IsZero() {
			t.firstAudio = ev.at
			if ev.at.Sub(t.sent) <= c.cfg.Deadline {
				c.stats.good.Add(1)
			}
		} else if len(t.gaps) < maxGaps {
			t.gaps = append(t.gaps, ev.at.Sub(t.lastAudio))
		}
		t.lastAudio = ev.at
		t.frames++
		t.audio += frame
	case twMark:
		c.play.mark(ev.at, ev.mark)
		if c.stale(ev.at) {
			return
		}
		for _, t := range []*turnRec{c.barged, c.cur} {
			if t != nil && t.end == "" && !t.firstAudio.IsZero() {
				t.end, t.endAt = dCompleted, ev.at
				c.replyMark = ev.mark
				return
			}
		}
		c.prompts++
		if len(c.rec.prompts) < maxPrompts {
			c.rec.prompts = append(c.rec.prompts, promptSpoken)
		}
	case twClear:
		c.play.clear(ev.at)
		if b := c.barged; b != nil && b.interrupt.IsZero() {
			b.interrupt = ev.at
			b.end, b.endAt = dCancelled, ev.at
			c.staleFrom = ev.at
			if c.saying == c.bargeBy {
				c.staleOpen = true
			} else {
				c.staleOpen, c.staleUntil = false, later(ev.at, c.bargeBy.sent.Add(staleMargin))
			}
			return
		}
		if t := c.cur; t != nil && t.end == "" {
			t.end, t.endAt = dCancelled, ev.at // a clear the caller did not ask for
		}
	case twSaid:
		c.spoke()
	case twPlayed:
		if ev.mark == c.replyMark && c.replyPlayed.IsZero() {
			c.replyPlayed = ev.at
			if c.rec.sessDisp == dQueued {
				c.rec.sessDisp, c.rec.admitted = dAdmitted, ev.at
			}
		}
	}
}

// stale reports whether media at at is the interrupted reply's: after a
// clear, before the barge-in's speech has ended (and the server could
// answer it).
func (c *twilioCaller) stale(at time.Time) bool {
	if c.staleFrom.IsZero() || at.Before(c.staleFrom) || c.barged == nil {
		return false
	}
	return c.staleOpen || at.Before(c.staleUntil)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// playback is the gateway's buffer: reply audio plays in real time from
// when it arrives, behind what is still buffered, and a mark is due when
// the audio before it has played. clear empties the buffer and makes
// every pending mark due at once.
type playback struct {
	end   time.Time // when the buffered audio will have played
	marks []pendingMark
}

type pendingMark struct {
	name string
	at   time.Time
}

func (p *playback) media(now time.Time, d time.Duration) { p.end = later(p.end, now).Add(d) }

func (p *playback) mark(now time.Time, name string) {
	at := later(p.end, now)
	if len(p.marks) >= maxPending {
		// Overrun: echo what is pending at once rather than grow. Due
		// times stay in order, as after a clear.
		for i := range p.marks {
			p.marks[i].at = now
		}
	}
	p.marks = append(p.marks, pendingMark{name: name, at: at})
}

func (p *playback) clear(now time.Time) {
	p.end = now
	for i := range p.marks {
		p.marks[i].at = now
	}
}

// pop returns a mark that is due at now. Due times never decrease along
// the queue, so the first is the next.
func (p *playback) pop(now time.Time) (string, bool) {
	if len(p.marks) == 0 || p.marks[0].at.After(now) {
		return "", false
	}
	name := p.marks[0].name
	p.marks = p.marks[1:]
	if len(p.marks) == 0 {
		p.marks = nil
	}
	return name, true
}

func (p *playback) next() time.Time {
	if len(p.marks) == 0 {
		return time.Time{}
	}
	return p.marks[0].at
}

// pending reports whether marks wait for their audio to play.
func (p *playback) pending() bool { return len(p.marks) > 0 }

// line is the caller's microphone: the utterance it is saying, if any.
type line struct {
	mu          sync.Mutex
	voice       voice
	utt         int // serial of the latest utterance
	left        int // its frames still to send
	first, last time.Time
	done        chan struct{}
}

// say starts an utterance of n frames; the channel closes once its last
// frame has gone out.
func (l *line) say(n int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.utt++
	l.left = n
	l.first, l.last = time.Time{}, time.Time{}
	l.done = make(chan struct{})
	return l.done
}

// next appends the next frame to dst: speech of utterance utt, or silence
// (utt 0).
func (l *line) next(dst []byte, pcm *[frameSamples]int16) ([]byte, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left == 0 {
		return append(dst, silenceFrame[:]...), 0
	}
	l.left--
	return l.voice.frame(dst, pcm), l.utt
}

// sent records that a frame of utterance utt went out at t.
func (l *line) sent(utt int, t time.Time) {
	if utt == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if utt != l.utt {
		return
	}
	if l.first.IsZero() {
		l.first = t
	}
	if l.left == 0 && l.last.IsZero() {
		l.last = t
		close(l.done)
	}
}

func (l *line) times() (first, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, l.last
}
