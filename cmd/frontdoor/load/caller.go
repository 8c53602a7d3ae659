package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Caller end states. Each caller ends in exactly one.
const (
	EndRefused   = "refused"   // the session stage refused it before retention
	EndQueued    = "queued"    // still waiting for its session when the run ended
	EndActive    = "active"    // on the line when the run ended
	EndServed    = "served"    // spoke its turns and hung up
	EndExpired   = "expired"   // left the session queue too old (or refused after queueing)
	EndAbandoned = "abandoned" // hung up out of patience
	EndDropped   = "dropped"   // the server ended the call
	EndError     = "error"     // could not connect, or bad protocol
)

// callerRec is what one caller saw.
type callerRec struct {
	id        int
	scheduled time.Time
	started   time.Time // dial began: the actual arrival
	connected time.Time
	answered  bool // the upgrade got an HTTP answer (101 or a refusal)
	session   string
	queued    bool
	sessDisp  string // the session stage's last word
	admitted  time.Time
	left      time.Time // the caller's run returned: hung up, cut or the run ended
	end       string
	err       string
	closeCode int

	turns        []*turnRec
	prompts      []string // reasons
	promptFrames int      // binary frames of prompt speech

	callbackOffered  bool
	callbackAccepted bool
	callbackReply    string
}

// stageRec is one turn in one stage, as the caller saw it.
type stageRec struct {
	first    string    // first disposition
	last     string    // last disposition
	queuedAt time.Time // first seen queued (or offered)
	admitted time.Time
	done     time.Time // lease released (completed or cancelled)
}

// turnRec is one turn.
type turnRec struct {
	id         string
	sent       time.Time
	stages     map[string]*stageRec
	order      []string // stages in the order seen
	firstText  time.Time
	sentEnd    time.Time // the first text delta that ended a sentence
	firstAudio time.Time
	playEnd    time.Time     // when the reply audio received so far has played, from its first frame
	silence    time.Duration // the longest the caller heard nothing inside the reply
	lastAudio  time.Time
	frames     int
	audio      time.Duration   // of the frames received
	gaps       []time.Duration // between consecutive audio frames
	bargeAt    time.Time
	interrupt  time.Time
	staleAfter int // frames or messages of an older generation after `interrupted`
	end        string
	endStage   string
	endAt      time.Time
}

// played follows the caller's playback of the reply: a frame of d that
// arrived at at plays once the audio before it has; one that arrived
// later leaves the caller in silence meanwhile (a gap between sentences).
func (t *turnRec) played(at time.Time, d time.Duration) {
	if !t.playEnd.IsZero() && at.After(t.playEnd) {
		t.silence = max(t.silence, at.Sub(t.playEnd))
	}
	if t.playEnd.Before(at) {
		t.playEnd = at
	}
	t.playEnd = t.playEnd.Add(d)
}

// endsSentence: a text delta that ends with a sentence's mark (a decimal
// point may pass for one: this is a measure, not the server's splitter).
func endsSentence(delta string) bool {
	d := strings.TrimRight(delta, " \t\n\"')")
	return strings.HasSuffix(d, ".") || strings.HasSuffix(d, "!") || strings.HasSuffix(d, "?")
}

func (t *turnRec) stage(name string) *stageRec {
	s := t.stages[name]
	if s == nil {
		s = &stageRec{}
		t.stages[name] = s
		t.order = append(t.order, name)
	}
	return s
}

// event is one thing read from the connection.
type event struct {
	at     time.Time
	msg    *serverMsg
	binary int // bytes of a binary frame
	err    error
}

// caller is one synthetic caller's run.
type caller struct {
	cfg   *Config
	ws    string
	hc    *http.Client
	rec   *callerRec
	rnd   *rand.Rand
	stats *liveStats

	conn   *websocket.Conn
	events *inbox
	// stream sends the caller's audio frames (-stream-audio); streamSlot
	// is the caller's place on it.
	stream     *streamer
	streamSlot int
	gen        uint64 // current generation per `interrupted`
	audGen     uint64 // generation of the audio in progress (audio_start)
	// audPerSec is the bytes a second of the audio in progress, as its
	// audio_start says (encoding and rate).
	audPerSec int
	// A `prompt` is followed by its speech (audio_start, frames,
	// audio_end) under the same turn id: that audio is the server's
	// fallback sentence, not the turn's answer, and counts for neither
	// goodput nor first audio.
	promptNext, inPrompt bool
}

var errEnded = errors.New("load: call ended")

// run dials, waits for the session, speaks the turns and hangs up. Every
// goroutine it starts ends before it returns.
func (c *caller) run(ctx context.Context) {
	c.rec.started = time.Now()
	c.stats.offered.Add(1)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	opts := &websocket.DialOptions{HTTPClient: c.hc}
	if c.cfg.APIKey != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + c.cfg.APIKey}}
	}
	conn, resp, err := websocket.Dial(dctx, c.ws, opts)
	c.rec.answered = resp != nil
	cancel()
	if err != nil {
		c.finish(EndError, fmt.Sprintf("dial: %v", err))
		if ctx.Err() != nil {
			c.rec.end = EndQueued // the run ended before the caller got through
		}
		return
	}
	c.rec.connected = time.Now()
	conn.SetReadLimit(1 << 20)
	c.conn = conn
	c.stats.active.Add(1)
	defer c.stats.active.Add(-1)
	if err := c.hello(ctx); err != nil {
		_ = conn.CloseNow()
		c.finish(EndDropped, err.Error())
		return
	}

	// One reader for the life of the connection; its context is not the
	// run's, because an expiring Read context drops the connection
	// (library-pitfalls.md): the caller closes it instead.
	c.events = newInbox()
	rctx, stopRead := context.WithCancel(context.Background())
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.read(rctx)
	}()
	if c.stream != nil {
		c.stream.add(c)
	}
	defer func() {
		if c.stream != nil {
			c.stream.remove(c)
		}
		// Closing ends a write or read still in progress: neither takes a
		// context that could (see streamer and read).
		_ = conn.CloseNow()
		stopRead()
		<-readDone
	}()
	c.converse(ctx)
}

// hello declares the caller's frame length (-frame-ms) before anything
// else is sent (a hello is only taken first). At 20 ms, the default, it
// sends none, as callers did before: the server's default is the same.
func (c *caller) hello(ctx context.Context) error {
	if c.cfg.FrameMS == int(frame/time.Millisecond) {
		return nil
	}
	return c.send(ctx, helloMsg{Type: "hello", Audio: helloAudio{FrameMS: c.cfg.FrameMS}})
}

func (c *caller) finish(end, msg string) {
	if c.rec.end == "" {
		c.rec.end, c.rec.err = end, msg
	}
}

// read forwards what the server sends until the connection ends (run
// closes it). It reads without a context: coder/websocket arms a
// context.AfterFunc per read for a context that can end, and reply audio
// is 50 reads a second per caller. Every message is read into one buffer
// of the caller's; binary frames are counted, not kept.
func (c *caller) read(ctx context.Context) {
	defer c.events.close()
	var buf []byte
	text := true // the last message was not audio
	for {
		typ, r, err := c.conn.Reader(context.Background())
		if err == nil {
			buf, err = readMessage(r, buf[:0])
		}
		ev := event{at: time.Now(), err: err}
		urgent := err != nil || typ != websocket.MessageBinary || text
		if err == nil {
			if typ == websocket.MessageBinary {
				ev.binary = len(buf)
			} else {
				var m serverMsg
				if jerr := json.Unmarshal(buf, &m); jerr != nil {
					ev.err = fmt.Errorf("load: bad JSON from server: %w", jerr)
				} else {
					ev.msg = &m
				}
			}
			text = typ != websocket.MessageBinary
		}
		if !c.events.put(ctx, ev, urgent) || err != nil {
			return
		}
	}
}

// readMessage appends the rest of r to buf.
func readMessage(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 2048)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (c *caller) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.conn.Write(wctx, websocket.MessageText, b)
}

// next waits for the next event, or the deadline (a zero deadline waits
// for the run to end). ok is false when the wait ended without an event.
func (c *caller) next(ctx context.Context, deadline time.Time) (event, bool) {
	return c.events.wait(ctx, deadline)
}

func (c *caller) converse(ctx context.Context) {
	if !c.waitSession(ctx) {
		return
	}
	if c.cfg.Spread > 0 && c.cfg.Turns > 0 {
		d := time.Duration(c.rnd.Float64() * float64(c.cfg.Spread))
		if !c.idle(ctx, time.Now().Add(d)) {
			return
		}
	}
	for i := range c.cfg.Turns {
		if !c.turn(ctx, i) {
			return
		}
		if i < c.cfg.Turns-1 && c.cfg.Think > 0 {
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

// hangup says goodbye and waits briefly for the server to close.
func (c *caller) hangup(ctx context.Context, end string) {
	c.finish(end, "")
	if err := c.send(ctx, simpleMsg{Type: "hangup"}); err != nil {
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		ev, ok := c.next(ctx, deadline)
		if !ok || ev.err != nil {
			return
		}
		c.observe(ev, nil)
	}
}

// waitSession reads until the session is admitted or refused.
func (c *caller) waitSession(ctx context.Context) bool {
	for {
		ev, ok := c.next(ctx, time.Time{})
		if !ok {
			if c.rec.queued {
				c.finish(EndQueued, "")
			} else {
				c.finish(EndQueued, "no session answer before the run ended")
			}
			return false
		}
		if ev.err != nil {
			c.closed(ev.err)
			if c.rec.queued && refusal(c.rec.sessDisp) {
				c.finish(EndExpired, "")
			} else if refusal(c.rec.sessDisp) {
				c.finish(EndRefused, "")
			}
			c.finish(EndDropped, ev.err.Error())
			return false
		}
		c.observe(ev, nil)
		if ev.msg != nil && ev.msg.Type == "session" {
			switch d := ev.msg.Disposition; {
			case d == dAdmitted:
				c.rec.admitted = ev.at
				return true
			case d == dQueued:
				c.rec.queued = true
			}
		}
	}
}

func (c *caller) closed(err error) {
	if code := websocket.CloseStatus(err); code != -1 {
		c.rec.closeCode = int(code)
	}
}

// idle waits until t, answering what comes in.
func (c *caller) idle(ctx context.Context, t time.Time) bool {
	for {
		ev, ok := c.next(ctx, t)
		if !ok {
			if ctx.Err() != nil {
				c.finish(EndActive, "")
				return false
			}
			return true
		}
		if ev.err != nil {
			c.closed(ev.err)
			c.finish(EndDropped, ev.err.Error())
			return false
		}
		c.observe(ev, nil)
	}
}

// turn speaks turn i and waits for its end.
func (c *caller) turn(ctx context.Context, i int) bool {
	t := &turnRec{id: fmt.Sprintf("c%d-t%d", c.rec.id, i+1), stages: map[string]*stageRec{}}
	c.rec.turns = append(c.rec.turns, t)
	t.sent = time.Now()
	if err := c.send(ctx, turnMsg{Type: "turn", ID: t.id, Text: c.cfg.Text}); err != nil {
		c.finish(EndDropped, err.Error())
		return false
	}
	c.stats.turns.Add(1)
	var bargeAt time.Time
	barge := c.rnd.Float64() < c.cfg.BargeIn
	var patience time.Time
	if c.cfg.Patience > 0 {
		patience = t.sent.Add(c.cfg.Patience)
	}
	for t.end == "" || (!t.bargeAt.IsZero() && t.interrupt.IsZero()) {
		wake := patience
		if barge && !bargeAt.IsZero() && t.bargeAt.IsZero() && (wake.IsZero() || bargeAt.Before(wake)) {
			wake = bargeAt
		}
		ev, ok := c.next(ctx, wake)
		if !ok {
			now := time.Now()
			switch {
			case ctx.Err() != nil:
				c.finish(EndActive, "")
				return false
			case barge && !bargeAt.IsZero() && t.bargeAt.IsZero() && !now.Before(bargeAt):
				t.bargeAt = now
				if err := c.send(ctx, simpleMsg{Type: "barge_in"}); err != nil {
					c.finish(EndDropped, err.Error())
					return false
				}
			case !patience.IsZero() && !now.Before(patience):
				c.hangup(ctx, EndAbandoned)
				return false
			}
			continue
		}
		if ev.err != nil {
			c.closed(ev.err)
			c.finish(EndDropped, ev.err.Error())
			return false
		}
		c.observe(ev, t)
		if barge && bargeAt.IsZero() && !t.firstAudio.IsZero() && t.end == "" {
			bargeAt = t.firstAudio.Add(time.Duration(c.rnd.Float64() * float64(c.cfg.BargeAfter)))
		}
	}
	return true
}

// observe records one event; cur is the turn in progress, if any.
func (c *caller) observe(ev event, cur *turnRec) {
	if ev.binary > 0 {
		if c.inPrompt { // also after turn_end, while the caller holds the line
			c.rec.promptFrames++
			return
		}
		if cur == nil {
			return
		}
		if c.audGen < c.gen {
			cur.staleAfter++ // audio of a generation older than `interrupted`
			c.stats.stale.Add(1)
		}
		if cur.firstAudio.IsZero() {
			cur.firstAudio = ev.at
			if ev.at.Sub(cur.sent) <= c.cfg.Deadline {
				c.stats.good.Add(1)
			}
		} else {
			cur.gaps = append(cur.gaps, ev.at.Sub(cur.lastAudio))
		}
		d := audioLen(ev.binary, c.audPerSec)
		cur.played(ev.at, d)
		cur.lastAudio = ev.at
		cur.frames++
		cur.audio += d
		return
	}
	m := ev.msg
	if m == nil {
		return
	}
	if cur != nil && m.Turn != "" && m.Turn != cur.id {
		cur = c.find(m.Turn)
	}
	switch m.Type {
	case "session":
		c.rec.session, c.rec.sessDisp = m.Session, m.Disposition
		if m.Disposition == dQueued {
			c.rec.queued = true
		}
	case "disposition":
		if cur == nil {
			return
		}
		s := cur.stage(m.Stage)
		if s.first == "" {
			s.first, s.queuedAt = m.Disposition, ev.at
		}
		s.last = m.Disposition
		switch m.Disposition {
		case dAdmitted:
			s.admitted = ev.at
		case dCompleted, dCancelled, dFailed:
			if !s.admitted.IsZero() {
				s.done = ev.at
			}
		}
	case "text":
		if cur != nil && cur.firstText.IsZero() {
			cur.firstText = ev.at
		}
		if cur != nil && cur.sentEnd.IsZero() && endsSentence(m.Delta) {
			cur.sentEnd = ev.at
		}
		if m.Generation < c.gen && cur != nil {
			cur.staleAfter++
			c.stats.stale.Add(1)
		}
	case "audio_start":
		c.inPrompt, c.promptNext = c.promptNext, false
		if c.inPrompt {
			return
		}
		c.audGen = m.Generation
		c.audPerSec = bytesPerSecond(m.Encoding, m.Rate)
		if m.Generation < c.gen && cur != nil {
			cur.staleAfter++
			c.stats.stale.Add(1)
		}
	case "interrupted":
		c.gen = m.Generation
		if cur != nil && cur.interrupt.IsZero() {
			cur.interrupt = ev.at
		}
	case "turn_end":
		if cur != nil && cur.end == "" {
			cur.end, cur.endStage, cur.endAt = m.Disposition, m.Stage, ev.at
		}
	case "audio_end":
		c.inPrompt = false
	case "prompt":
		c.promptNext = true
		c.rec.prompts = append(c.rec.prompts, m.Reason)
	case "offer":
		c.offered(m)
	case "error":
		if m.Code == "synthetic" { // the server refused the synthetic caller's callback
			c.rec.callbackReply = "refused: synthetic"
		}
	case "callback":
		c.rec.callbackReply = m.Disposition
		if c.rec.callbackReply == "" {
			c.rec.callbackReply = m.Reason
		}
	}
}

// bytesPerSecond is a second of mono audio in enc at rate (0: unknown).
func bytesPerSecond(enc string, rate int) int {
	switch enc {
	case "mulaw", "alaw":
		return rate
	case "pcm16", "":
		return 2 * rate
	}
	return 0
}

// audioLen is how long n bytes at perSec play; unknown (0), a frame is
// taken as 20 ms.
func audioLen(n, perSec int) time.Duration {
	if perSec <= 0 {
		return frame
	}
	return time.Duration(int64(n) * int64(time.Second) / int64(perSec))
}

func (c *caller) find(id string) *turnRec {
	for _, t := range c.rec.turns {
		if t.id == id {
			return t
		}
	}
	return nil
}

// offered accepts a callback offer with the configured probability.
func (c *caller) offered(m *serverMsg) {
	for _, o := range m.Kinds {
		if o != "callback" || c.rec.callbackOffered {
			continue
		}
		c.rec.callbackOffered = true
		if c.rnd.Float64() < c.cfg.Callback {
			c.rec.callbackAccepted = true
			_ = c.send(context.Background(), callbackMsg{Type: "callback", Consent: true, Number: callbackNumber, Synthetic: true})
		}
	}
}
